// The gateway's half of received rows (actors/channel/received.ts): a
// channel message the caller received has no entry in their user actor
// unless its flags changed; the channels' conversations list those rows
// (`receivedRows`, within the caller's subscription spans) and the flags
// follow from the user actor's read-through marks. Used where a request
// spans channels: narrows not bound to one channel, unread counts,
// marking read, and finding messages by id.

import { channelConvRef, channelDirectoryRef, userRef } from "../actors/index.ts";
import type { ChannelProtocol } from "../actors/channel/index.ts";
import type { ArgsOf, TypedCall } from "../actors/protocol.ts";

/** What asks: a route's request or a /register area's context (both carry the realm and `call`). */
export interface Asker {
  readonly realmId: number;
  readonly call: TypedCall;
}

/** One received row: id, conversation key (channel id), topic, sender. */
export type ReceivedRow = [number, string, string, number];

export interface ChannelRows {
  conv: string;
  rows: ReceivedRow[];
  newest: number;
  lastReceived: number;
  topicExists: boolean;
}

/** The channels (ids as conversation keys) where the caller has subscription spans. */
export async function spannedChannels(a: Asker): Promise<string[]> {
  const r = await a.call(channelDirectoryRef(a.realmId), "narrowContext", {});
  return Object.keys(r.spans ?? {});
}

/**
 * The caller's received rows of each channel in `convs`, one call per
 * channel, all at once. `args` per channel: {after?, topic?, ids?}.
 */
export async function channelRows(
  a: Asker,
  convs: string[],
  args: (conv: string) => ArgsOf<ChannelProtocol, "receivedRows">,
): Promise<ChannelRows[]> {
  return Promise.all(
    convs.map(async (conv) => {
      const r = await a.call(channelConvRef(a.realmId, Number(conv)), "receivedRows", args(conv));
      return {
        conv,
        rows: r.rows.map(([id, topic, sender]): ReceivedRow => [id, conv, topic, sender]),
        newest: r.newest,
        lastReceived: r.lastReceived,
        topicExists: r.topicExists,
      };
    }),
  );
}

/** A received row's flags when it has no entry. */
export function receivedFlags(readThrough: Record<string, number>, conv: string, id: number): string[] {
  return id <= (readThrough[conv] ?? 0) ? ["read"] : [];
}

/**
 * The user's received rows that are unread (above the read-through
 * marks), in `convs` (every spanned channel when null), of one topic when
 * given; with each channel's newest id (to read it through) and whether
 * the topic has any received row.
 */
export async function unreadRows(
  a: Asker,
  userId: number,
  convs: string[] | null,
  topic?: string,
): Promise<{ rows: ReceivedRow[]; newest: Record<string, number>; topicExists: boolean }> {
  const [r, spanned] = await Promise.all([
    a.call(userRef(a.realmId, userId), "unreads", {}),
    spannedChannels(a),
  ]);
  const wanted = convs ? spanned.filter((c) => convs.includes(c)) : spanned;
  const parts = await channelRows(a, wanted, (conv) => ({
    after: r.readThrough[conv] ?? 0,
    ...(topic === undefined ? {} : { topic }),
  }));
  const newest: Record<string, number> = {};
  for (const p of parts) if (p.newest) newest[p.conv] = p.newest;
  return { rows: parts.flatMap((p) => p.rows), newest, topicExists: parts.some((p) => p.topicExists) };
}
