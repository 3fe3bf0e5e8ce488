// Received rows: the channel messages a user received, without a row per
// recipient. A send stores nothing for an ordinary recipient; whether a
// user received a message of a channel follows from the user's
// subscription spans (the directory's `Sub.spans`: message-id ranges while
// subscribed) and its flags from the user actor's read-through mark and
// entries (actors/user/flags.ts FlagHolder). This module puts the two
// together where a conversation needs the caller's flags, and gives the
// gateway the received rows of one channel (`receivedRows`).
//
// Calls: the directory's leaves `userSpans` / `channelSpans` /
// `readContext` (channel-directory/received.ts) and the user actor's leaf
// `messageFlags`; conversations call only leaves, as before. All of them
// are readers of their kinds, so a history read waits for no writer.

import { errors } from "../errors.ts";
import { lowerBound } from "../sorted-ids.ts";
import type { ActorContext, Caller } from "../types.ts";
import { userRef, type FlagsWithReadThrough } from "../user/index.ts";
import { channelDirectoryRef, isDmKey } from "../addresses.ts";
import { inSpans, type Span } from "../spans.ts";
import { allIds, getMsgs, idsRange, type ConvState, type Reader } from "./conversation-state.ts";
import type { ConvHandler, ConvHandlers, Row } from "./protocol.ts";

/** The caller's own flags of messages of this conversation: by ids, or only the unread ones. */
export type FlagSource = (
  q: { ids: number[] } | { unread: true } | { all: true },
) => Promise<Record<string, readonly string[]>>;

function me(caller: Caller | null): Caller {
  if (!caller) throw errors.accessDenied();
  return caller;
}

/** The user's spans in this channel (none for DMs: every DM row is delivered). */
export async function userSpans(ctx: ActorContext, state: ConvState, userId: number): Promise<Span[]> {
  return spansIn(ctx, state.realmId, state.key, userId);
}

async function spansIn(ctx: ActorContext, realmId: number, conv: string, userId: number): Promise<Span[]> {
  if (isDmKey(conv)) return [];
  const r = await ctx.call(channelDirectoryRef(realmId), "userSpans", { stream_id: Number(conv), userId });
  return r.spans;
}

/** Those of `ids` (messages of channel `conv`) the user received, entries or received rows. */
export async function receivedIds(
  ctx: ActorContext,
  realmId: number,
  conv: string,
  userId: number,
  ids: readonly number[],
): Promise<Set<number>> {
  const [own, spans] = await Promise.all([
    ctx.call(userRef(realmId, userId), "messageFlags", { conv, ids: [...ids] }),
    spansIn(ctx, realmId, conv, userId),
  ]);
  return new Set(ids.filter((id) => Object.hasOwn(own, String(id)) || inSpans(spans, id)));
}

/**
 * Those of `ids` (messages of conversation `conv`, a channel the user has
 * content access to) the user may read: all of them, or in a channel with
 * protected history only those the user received (Zulip's
 * bulk_access_stream_messages_query). Order kept. One call to the user
 * actor (a leaf), visiting only `ids`.
 */
export async function accessibleIds(
  ctx: ActorContext,
  realmId: number,
  userId: number,
  conv: string,
  isProtected: boolean,
  ids: readonly number[],
): Promise<number[]> {
  if (!isProtected || !ids.length) return [...ids];
  const got = await receivedIds(ctx, realmId, conv, userId, ids);
  return ids.filter((id) => got.has(id));
}

/** Every user's spans in this channel: {user id: spans}. */
export async function channelSpans(ctx: ActorContext, state: ConvState): Promise<Map<number, Span[]>> {
  const out = new Map<number, Span[]>();
  if (isDmKey(state.key)) return out;
  const r = await ctx.call(channelDirectoryRef(state.realmId), "channelSpans", {
    stream_id: Number(state.key),
  });
  for (const [uid, spans] of Object.entries(r.spans)) out.set(Number(uid), spans);
  return out;
}

/**
 * The conversation's ids (or one topic's) in the spans and above `after`,
 * ascending: a store range read per span, O(the ids read).
 */
export async function storedIdsInSpans(
  reader: Reader,
  state: ConvState,
  topic: string | null,
  spans: readonly Span[],
  after = 0,
): Promise<number[]> {
  const out: number[] = [];
  for (const [from, to] of spans) {
    const lo = Math.max(from, after + 1) - 1;
    if (to !== null && to <= lo + 1) continue;
    for (const id of await allIds(reader, state, topic, lo, to ?? undefined)) out.push(id);
  }
  return spans.length > 1 ? [...new Set(out)].sort((a, b) => a - b) : out;
}

/** Ids of `pool` (ascending) in the spans and above `after`. */
export function idsInSpans(pool: readonly number[], spans: readonly Span[], after = 0): number[] {
  const out: number[] = [];
  for (const [from, to] of spans) {
    let i = lowerBound(pool, Math.max(from, after + 1));
    for (; i < pool.length && (to === null || pool[i]! < to); i++) out.push(pool[i]!);
  }
  return spans.length > 1 ? [...new Set(out)].sort((a, b) => a - b) : out;
}

/**
 * The caller's flags in this conversation: the user's entries, and for a
 * message in the caller's spans without one, the flags of a received row.
 * `known`: the caller's spans, when the read has them already (readContext).
 */
export function receivedFlagSource(
  ctx: ActorContext,
  state: ConvState,
  userId: number,
  known?: Span[],
): FlagSource {
  let spans: Promise<Span[]> | null = known ? Promise.resolve(known) : null;
  const spansOnce = () => (spans ??= userSpans(ctx, state, userId));
  // With withReadThrough the reply is the FlagsWithReadThrough form.
  const own = async (q: { ids?: number[]; unread?: boolean }) =>
    (await ctx.call(userRef(state.realmId, userId), "messageFlags", {
      conv: state.key,
      withReadThrough: true,
      ...q,
    })) as FlagsWithReadThrough;
  return async (q) => {
    const [mine, s] = await Promise.all([
      own("ids" in q ? { ids: q.ids } : "unread" in q ? { unread: true } : {}),
      spansOnce(),
    ]);
    const out = mine.flags;
    if (!s.length) return out;
    const rt = mine.readThrough;
    if ("ids" in q) {
      for (const id of q.ids)
        if (!out[String(id)] && inSpans(s, id)) out[String(id)] = id <= rt ? ["read"] : [];
    } else if ("unread" in q) {
      const read = new Set(mine.read);
      for (const id of await storedIdsInSpans(ctx, state, null, s, rt))
        if (!out[String(id)] && !read.has(id)) out[String(id)] = [];
    } else {
      for (const id of await storedIdsInSpans(ctx, state, null, s))
        if (!out[String(id)]) out[String(id)] = id <= rt ? ["read"] : [];
    }
    return out;
  };
}

/**
 * The caller's received rows of this channel, [[id, topic, sender]]
 * ascending: {after?: only ids above it, topic?: one topic
 * (case-insensitive), ids?: only these}. {rows, newest (the channel's
 * newest id, 0 when empty), topicExists (with topic: some row of it),
 * lastReceived (the newest id the caller received here, 0 when none)}.
 * The gateway adds the flags (read-through mark, entries).
 */
const receivedRows: ConvHandler<"receivedRows"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  if (isDmKey(state.key)) throw errors.internal();
  const spans = await userSpans(ctx, state, c.userId);
  const after = args.after ?? 0;
  const topic = args.topic;
  // By ids: only those walk, not the channel.
  let ids = args.ids
    ? [...new Set(args.ids)].filter((id) => inSpans(spans, id)).sort((a, b) => a - b)
    : await storedIdsInSpans(ctx, state, topic ?? null, spans);
  const found = await getMsgs(ctx, state, ids);
  const msgs = found.filter((m) => m !== null);
  ids = msgs.map((m) => m.id);
  const topicExists = topic !== undefined && ids.length > 0;
  const start = after ? lowerBound(ids, after + 1) : 0;
  const rows = msgs.slice(start).map((m): Row => [m.id, m.topic, m.senderId]);
  // The newest message, and the newest the caller received here (0: none).
  const [newest, ...lasts] = await Promise.all([
    idsRange(ctx, state, null, { limit: 1, reverse: true }),
    ...spans.map(([from, to]) =>
      idsRange(ctx, state, null, { limit: 1, reverse: true, ...(to === null ? {} : { before: to }) }).then(
        ([id]) => (id !== undefined && id >= from ? id : 0),
      ),
    ),
  ]);
  const lastReceived = Math.max(0, ...lasts);
  return { reply: { rows, newest: newest[0] ?? 0, topicExists, lastReceived } };
};

export const receivedConversationHandlers: ConvHandlers<"receivedRows"> = { receivedRows };
