// A channel's first_message_id (FL 256): the id of its oldest message,
// kept by the directory (Channel.firstMessageId) and told to it by the
// channel's conversation, which alone knows its messages.
//
// Cost: a send asks the directory only when the conversation had no
// message (Zulip sets the field at the first send, without an event); a
// removal or a move asks it only when the conversation's oldest message
// goes or a moved-in message is older than the oldest. Then the directory
// journals the new value and sends Zulip's `stream` `update` event
// (property "first_message_id") to those who may see the channel, as
// Zulip's check_update_first_message_id does after a deletion. The
// directory's side is channel-directory/first-message.ts.

import { channelDirectoryRef, isDmKey } from "../addresses.ts";
import type { ActorContext } from "../types.ts";
import { idsRange, type ConvState } from "./conversation-state.ts";

/** A channel conversation's first send: the directory records its id (one write, once). */
export async function firstMessageSent(ctx: ActorContext, state: ConvState, id: number): Promise<void> {
  if (isDmKey(state.key) || state.count !== 0) return;
  await ctx.call(channelDirectoryRef(state.realmId), "setFirstMessageId", {
    stream_id: Number(state.key),
    message_id: id,
    event: false,
  });
}

/**
 * Before `removed` leave the conversation (`state` still holds them): when
 * its oldest message is among them, the directory gets the oldest one that
 * stays. Reads at most removed.length + 1 ids.
 */
export async function firstMessageRemoved(
  ctx: ActorContext,
  state: ConvState,
  removed: readonly number[],
): Promise<void> {
  if (isDmKey(state.key) || !removed.length) return;
  const gone = new Set(removed);
  const ids = await idsRange(ctx, state, null, { limit: gone.size + 1 });
  if (!ids.length || !gone.has(ids[0]!)) return;
  const next = ids.find((id) => !gone.has(id)) ?? null;
  await ctx.call(channelDirectoryRef(state.realmId), "setFirstMessageId", {
    stream_id: Number(state.key),
    message_id: next,
    event: true,
  });
}

/** Before `added` (moved in) join the conversation: an older message becomes the first. */
export async function firstMessageAdded(
  ctx: ActorContext,
  state: ConvState,
  added: readonly number[],
): Promise<void> {
  if (isDmKey(state.key) || !added.length) return;
  const oldest = added.reduce((a, b) => (b < a ? b : a));
  const [first] = await idsRange(ctx, state, null, { limit: 1 });
  if (first !== undefined && first < oldest) return;
  await ctx.call(channelDirectoryRef(state.realmId), "setFirstMessageId", {
    stream_id: Number(state.key),
    message_id: oldest,
    event: true,
  });
}
