// A leaf read for the outgoing-webhook worker (webhook/worker.ts): what it
// needs to deliver for one bot. Internal only (caller null): the reply
// carries the service token, which clients see only through the bot
// audience's replies and events (bot-handlers.ts).

import { errors } from "../errors.ts";
import { memberById } from "./member-helpers.ts";
import type { RealmHandler } from "./handler.ts";
import type { WebhookBotReply } from "./protocol.ts";

const webhookBot: RealmHandler<"webhookBot"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created) throw errors.invalidSubdomain();
  const bot = memberById(state, args.botId);
  if (!bot || !bot.isBot) return { reply: { found: false } };
  const owner = bot.botOwnerId === null ? undefined : memberById(state, bot.botOwnerId);
  const reply: WebhookBotReply = {
    found: true,
    botId: bot.userId,
    email: bot.email,
    fullName: bot.fullName,
    role: bot.role,
    isActive: bot.isActive,
    botType: bot.botType,
    ownerId: owner && owner.isActive ? owner.userId : null,
    ownerEmail: owner && owner.isActive ? owner.email : null,
    realmHost: state.host,
    service: bot.service
      ? { baseUrl: bot.service.baseUrl, interface: bot.service.interface, token: bot.service.token }
      : null,
  };
  return { reply };
};

export const webhookRealmHandlers = { webhookBot };
