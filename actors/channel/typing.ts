// Typing notifications, the channel kind's part (Zulip's zerver/views/typing.py
// and zerver/actions/typing.py): the directory's leaf read of a channel for
// POST /typing, and POST /messages/{id}/typing on the message's conversation.
//
// Nothing here is durable: a decision carries events and no facts, so no
// journal append happens. Zulip's server keeps no typing state either (no
// expiry timer, no stop after silence): clients expire a start after
// server_typing_started_expiry_period_milliseconds.

import { errors } from "../errors.ts";
import { realmRef } from "../realm/index.ts";
import type { ActorContext, Handler, Obj } from "../types.ts";
import { userRef } from "../user/index.ts";
import { accessibleIds, canAccessContent, historyProtected, type RosterEntry } from "./access.ts";
import { audience, me, msgOf } from "./conversation-handlers.ts";
import { checkContentEdit, messageLimits } from "./edit-rules.ts";
import { isDmKey, type ConvState } from "./conversation-state.ts";
import { contentAccessViaGroups } from "./directory-handlers.ts";
import type { DirState } from "./state.ts";

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
 * Leaf read for POST /typing to a channel (access_stream_by_id_for_message):
 * `ok` false for an unknown or archived channel or one whose content the
 * user cannot access ("Invalid channel ID"); else its can_send_message_group
 * and its active subscribers, or null past the typing size limit (counting
 * subscriptions, so the realm need not be asked about a large channel).
 */
const typingChannel: Handler<DirState> = async (state, args, ctx) => {
  const ch = state.channels[String(args.stream_id)];
  const u = { userId: Number(args.userId), role: Number(args.role) } as RosterEntry;
  if (!ch || ch.isArchived) return { reply: { ok: false } as Obj };
  // Content access through the channel's groups (FL 354) only when the cheap checks fail.
  if (!canAccessContent(state, ch, u) && !(await contentAccessViaGroups(ctx, state, ch, u.userId)))
    return { reply: { ok: false } as Obj };
  const subs = state.subs[String(ch.id)];
  const subscribers: number[] = [];
  let large = false;
  if (subs) {
    for (const [id, s] of Object.entries(subs)) {
      if (!s.active) continue;
      if (subscribers.length === MAX_CHANNEL_SIZE_FOR_TYPING) {
        large = true;
        break;
      }
      subscribers.push(Number(id));
    }
  }
  return {
    reply: {
      ok: true,
      canSend: structuredClone(ch.groups.can_send_message_group!) as Obj[string],
      subscribers: large ? null : subscribers,
    },
  };
};

export const typingDirectoryHandlers: Record<string, Handler<DirState>> = { typingChannel };

/**
 * POST /messages/{id}/typing: access_message for modifying, then
 * validate_user_can_edit_message with no grace (the sender, within the
 * content edit limit), then the editor's own send_*_typing_notifications.
 */
const editTyping: Handler<ConvState> = async (state, args, ctx, caller) => {
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
  const op = args.op === "stop" ? "stop" : "start";
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

export const typingConversationHandlers: Record<string, Handler<ConvState>> = { editTyping };
