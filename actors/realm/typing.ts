// A leaf read for typing notifications (Zulip's zerver/actions/typing.py):
// who a notification names and who hears it. The realm holds every user's
// activation and, mirrored by the user actors (syncMember), their
// receives_typing_notifications, so one turn answers without fetching the
// roster. Calls nobody: user and channel actors call it inside their turns.

import { errors } from "../errors.ts";
import { memberById, requireCreated } from "./member-helpers.ts";
import { apiEmail } from "./members.ts";
import type { RealmHandler } from "./handler.ts";
import type { ReplyOfRealm } from "./protocol.ts";
import { systemBotEntry } from "./system-bot.ts";

/** Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS: larger channels get no typing events. */
export const MAX_CHANNEL_SIZE_FOR_TYPING = 100;

/**
 * args: `senderId`; `userIds`, the conversation's users; `validate` (a
 * direct message's `to`): an unknown id is "Invalid user ID <id>" and the
 * reply lists `recipients`, else unknown ids are skipped; `channel` (a
 * channel's subscribers): more than MAX_CHANNEL_SIZE_FOR_TYPING active ones
 * notify nobody. `notify`: the active users among them who receive typing
 * notifications.
 */
const typingAudience: RealmHandler<"typingAudience"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  requireCreated(state);
  const validate = args.validate === true;
  const recipients: { user_id: number; email: string }[] = [];
  let notify: number[] = [];
  let active = 0;
  for (const id of args.userIds) {
    const bot = systemBotEntry(id);
    if (bot) {
      // A cross-realm bot names the conversation; it has no queue to notify.
      if (validate) recipients.push({ user_id: id, email: bot.email });
      continue;
    }
    const u = memberById(state, id);
    if (!u) {
      if (validate) throw errors.typingInvalidUserId(id);
      continue;
    }
    if (validate) recipients.push({ user_id: id, email: apiEmail(state, u) });
    if (!u.isActive) continue;
    active++;
    if (u.receivesTyping !== false) notify.push(id);
  }
  if (args.channel === true && active > MAX_CHANNEL_SIZE_FOR_TYPING) notify = [];
  const sender = memberById(state, args.senderId);
  if (!sender) throw errors.accessDenied();
  const reply: ReplyOfRealm<"typingAudience"> = {
    sender: { user_id: sender.userId, email: apiEmail(state, sender) },
    notify,
  };
  if (validate) reply.recipients = recipients;
  return { reply };
};

export const typingRealmHandlers = { typingAudience };
