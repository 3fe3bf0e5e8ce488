// Typing notifications, the conversation's part (Zulip's zerver/views/typing.py
// and zerver/actions/typing.py): POST /messages/{id}/typing on the message's
// conversation. The directory's leaf read of a channel for POST /typing is in
// channel-directory/typing.ts.
//
// Nothing here is durable: a decision carries events and no facts, so no
// journal append happens. Zulip's server keeps no typing state either (no
// expiry timer, no stop after silence): clients expire a start after
// server_typing_started_expiry_period_milliseconds.

import { errors } from "../errors.ts";
import type { ActorContext, Obj } from "../types.ts";
import { userRef } from "../user/index.ts";
import { isDmKey, realmRef } from "../addresses.ts";
import { historyProtected } from "../channel-directory/index.ts";
import { accessibleIds } from "./received.ts";
import { audience, me, msgOf } from "./conversation-handlers.ts";
import { checkContentEdit, messageLimits } from "./edit-rules.ts";
import type { ConvHandler, ConvHandlers } from "./protocol.ts";

/** Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS (the realm's typingAudience applies it). */
const MAX_CHANNEL_SIZE_FOR_TYPING = 100;

export interface TypingAudience {
  sender: { user_id: number; email: string };
  notify: number[];
  recipients?: Obj[];
}

/** The realm's leaf answer: who is named and who hears (see actors/realm/typing.ts). */
export async function typingAudience(
  ctx: ActorContext,
  realmId: number,
  senderId: number,
  userIds: number[],
  opts: { validate?: boolean; channel?: boolean },
): Promise<TypingAudience> {
  return await ctx.call(realmRef(realmId), "typingAudience", {
    senderId,
    userIds,
    validate: opts.validate === true,
    channel: opts.channel === true,
  });
}

/**
 * POST /messages/{id}/typing: access_message for modifying, then
 * validate_user_can_edit_message with no grace (the sender, within the
 * content edit limit), then the editor's own send_*_typing_notifications.
 */
const editTyping: ConvHandler<"editTyping"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  const m = await msgOf(ctx, state, args.message_id);
  const { userIds: participants, ch } = await audience(ctx, state, c);
  if (
    ch &&
    !(await accessibleIds(ctx, state.realmId, c.userId, state.key, historyProtected(ch), [m.id])).length
  )
    throw errors.invalidMessages();
  // The realm's allow_message_editing and edit limit (FL 138), without the edit's grace.
  checkContentEdit(await messageLimits(ctx, state.realmId), c, m, Math.floor(ctx.now() / 1000), 0);
  const own = await ctx.call(userRef(state.realmId, c.userId), "typingSettings", {});
  const op = args.op;
  const event: Obj = { type: "typing_edit_message", op, sender_id: c.userId, message_id: m.id };
  let notify: number[];
  if (ch && !isDmKey(state.key)) {
    if (!own.stream) throw errors.typingDisabledChannel();
    // channelAudience adds the editor; typing goes to subscribers only.
    const subscribers = ch.subscribers;
    notify =
      subscribers.length > MAX_CHANNEL_SIZE_FOR_TYPING
        ? []
        : (await typingAudience(ctx, state.realmId, c.userId, subscribers, { channel: true })).notify;
    event.recipient = { type: "channel", channel_id: ch.stream_id, topic: m.topic };
  } else {
    if (!own.direct) throw errors.typingDisabledDirect();
    notify = (await typingAudience(ctx, state.realmId, c.userId, participants, {})).notify;
    event.recipient = { type: "direct", user_ids: notify };
  }
  return notify.length ? { events: [{ event, userIds: notify }], reply: {} } : { reply: {} };
};

export const typingConversationHandlers: ConvHandlers<"editTyping"> = { editTyping };
