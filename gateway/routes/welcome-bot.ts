// POST /realm/test_welcome_bot_custom_message (Zulip's
// zerver/views/welcome_bot_custom_message.py, FL 416): an administrator
// previews the organization's custom welcome text, sent to themselves by
// Welcome Bot exactly as a new user would get it. The conversation checks
// again that the acting user is an administrator (the only one the gateway
// may have Welcome Bot write to).

import { dmConvRef, realmRef } from "../../actors/index.ts";
import { WELCOME_BOT_ID } from "../../actors/realm/system-bot.ts";
import { errors } from "../../actors/errors.ts";
import { WELCOME_MESSAGE_CUSTOM_TEXT_MAX } from "../../actors/realm/realm-properties.ts";
import { customWelcomeMessage } from "../../actors/realm/welcome-messages.ts";
import { defineRoute, p, param, type RouteDef } from "../index.ts";

const ROLE_ADMINISTRATOR = 200;

const testWelcomeBotCustomMessage = defineRoute({
  method: "POST",
  path: "/realm/test_welcome_bot_custom_message",
  auth: "required",
  params: {
    welcome_message_custom_text: param(p.string({ maxLength: WELCOME_MESSAGE_CUSTOM_TEXT_MAX }), {
      required: true,
    }),
  },
  async handler(req) {
    const caller = req.caller!;
    if (caller.role > ROLE_ADMINISTRATOR) throw errors.mustBeAdmin();
    const text = req.params.welcome_message_custom_text;
    if (text.length === 0) throw errors.messageEmpty();
    const info = await req.call(realmRef(req.realmId), "publicInfo", {});
    const sent = (await req.call(dmConvRef(req.realmId, [caller.userId, WELCOME_BOT_ID]), "send", {
      content: customWelcomeMessage(info.name, text),
      client: "Internal",
      welcome_bot: true,
      read_by_sender: false,
    })) as { id: number };
    return { message_id: sent.id };
  },
});

export const welcomeBotRoutes: RouteDef[] = [testWelcomeBotCustomMessage];
