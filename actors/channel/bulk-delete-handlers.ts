// Deleting many messages of one conversation at once, for DELETE
// /users/{id} with `actions` (Zulip's delete_deactivated_user_messages).
// The gateway coordinates: it finds what the user sent (the user actor's
// `sentMessages`), sorts it by scope with the directory's
// `publicChannelIds` (actors/channel-directory/bulk-delete-handlers.ts),
// and calls `removeMany` on each conversation. Both are leaves or call
// only leaves (the directory's sendContext, user actors' messagesDeleted),
// like the single-message `remove`.

import { errors } from "../errors.ts";
import type { Caller, Obj, OutEvent } from "../types.ts";
import { uploadsDirectoryRef } from "../uploads/index.ts";
import { userRef } from "../user/index.ts";
import { isDmKey } from "../addresses.ts";
import { sendContext } from "./channel-info.ts";
import { getMsgs, removedFacts, removeWrites, type Msg } from "./conversation-state.ts";
import { historyProtected } from "../channel-directory/index.ts";
import { accessibleIds } from "./received.ts";
import { firstMessageRemoved } from "./first-message.ts";
import type { ConvHandler, ConvHandlers } from "./protocol.ts";

/** Internal callers, or an administrator of this realm acting through the gateway. */
function requireAdminOrInternal(realmId: number, caller: Caller | null): void {
  if (caller && (caller.realmId !== realmId || caller.role > 200)) throw errors.accessDenied();
}

/**
 * {ids} -> {deleted}: drop those of `ids` that are messages of this
 * conversation (others are skipped, so a retry is harmless), remove them
 * from the recipients' flag indexes, and send delete_message: one event per
 * topic in a channel (the event names one topic), one for a DM conversation.
 */
export const removeMany: ConvHandler<"removeMany"> = async (state, args, ctx, caller) => {
  requireAdminOrInternal(state.realmId, caller);
  const sorted = [...new Set(args.ids)].sort((a, b) => a - b);
  const msgs = (await getMsgs(ctx, state, sorted)).filter((m): m is Msg => m !== null);
  if (!msgs.length) return { reply: { deleted: [] } };
  const ids = msgs.map((m) => m.id);
  const senders = msgs.map((m) => m.senderId);
  let audience: number[];
  let streamId: number | null = null;
  let isProtected = false;
  if (isDmKey(state.key)) {
    audience = state.key.slice(3).split(",").map(Number);
  } else {
    const ch = await sendContext(ctx, state.realmId, Number(state.key));
    streamId = ch.stream_id;
    audience = ch.subscribers;
    isProtected = historyProtected(ch);
  }
  // The senders keep their rows even after unsubscribing; those go too.
  const userIds = [...new Set([...audience, ...senders])];
  // With protected history each user hears only of the messages they
  // received (FL 457), read before messagesDeleted clears the rows.
  const received = isProtected
    ? await Promise.all(
        userIds.map(
          async (uid) => new Set(await accessibleIds(ctx, state.realmId, uid, state.key, true, ids)),
        ),
      )
    : null;
  await Promise.all(userIds.map((uid) => ctx.call(userRef(state.realmId, uid), "messagesDeleted", { ids })));
  // The attachments they linked drop them (Zulip's attachment update event).
  await ctx.call(uploadsDirectoryRef(state.realmId), "messagesRemoved", { ids });
  await firstMessageRemoved(ctx, state, ids);
  const events: OutEvent[] = [];
  if (streamId === null) {
    events.push({ event: { type: "delete_message", message_type: "private", message_ids: ids }, userIds });
  } else {
    const byTopic = new Map<string, number[]>();
    for (const m of msgs) {
      const topic = m.topic;
      const list = byTopic.get(topic) ?? [];
      list.push(m.id);
      byTopic.set(topic, list);
    }
    for (const [topic, list] of byTopic) {
      // Users who may see the same ids share one event.
      const byIds = new Map<string, { ids: number[]; users: number[] }>();
      userIds.forEach((uid, i) => {
        const mine = received ? list.filter((id) => received[i]!.has(id)) : list;
        if (!mine.length) return;
        const key = mine.join(",");
        const group = byIds.get(key) ?? byIds.set(key, { ids: mine, users: [] }).get(key)!;
        group.users.push(uid);
      });
      for (const g of byIds.values()) {
        const event: Obj = {
          type: "delete_message",
          message_type: "stream",
          message_ids: g.ids,
          stream_id: streamId,
          topic,
        };
        events.push({ event, userIds: g.users });
      }
    }
  }
  return {
    facts: removedFacts(msgs),
    writes: removeWrites(state, msgs),
    events,
    reply: { deleted: ids },
  };
};

export const bulkDeleteConversationHandlers: ConvHandlers<"removeMany"> = { removeMany };
