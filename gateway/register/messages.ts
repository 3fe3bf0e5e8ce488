// /register: max_message_id ("message"), unread_msgs ("message" with
// "update_message_flags") and user_topics ("user_topic"), from the
// caller's user actor (its message flag index and topic policies).

import { EMPTY_TOPIC_DISPLAY_NAME, channelDirectoryRef, userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import { channelRows } from "../received.ts";
import type { RegisterArea } from "./types.ts";

interface Unread {
  id: number;
  conv: string;
  topic: string;
  sender: number;
  mentioned: boolean;
  /** A channel or topic wildcard mention (Zulip's *_wildcard_mentioned flags). */
  wildcard?: boolean;
  /** In a muted channel or topic (rowMuted). */
  muted?: boolean;
}

/** Zulip's UserTopic.VisibilityPolicy values. */
const MUTED = 1;
const UNMUTED = 2;
const FOLLOWED = 3;

/**
 * Zulip's is_row_muted for unread_msgs: a message of a muted channel is
 * muted unless its topic is unmuted or followed; one of a muted topic is
 * muted. `policies` is keyed "<channel id>:<lower-cased topic>".
 */
function rowMuted(
  mutedChannels: ReadonlySet<string>,
  policies: ReadonlyMap<string, number>,
  u: Unread,
): boolean {
  if (u.conv.startsWith("dm:")) return false;
  const policy = policies.get(`${u.conv}:${u.topic.toLowerCase()}`) ?? 0;
  if (mutedChannels.has(u.conv)) return policy !== UNMUTED && policy !== FOLLOWED;
  return policy === MUTED;
}

/** Zulip caps unread_msgs at MAX_UNREAD_MESSAGES. */
const MAX_UNREAD_MESSAGES = 50000;

export function formatUnreads(items: Unread[], me: number): Obj {
  const kept = items.slice(-MAX_UNREAD_MESSAGES);
  const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
  const pms = new Map<number, { other_user_id: number; sender_id: number; unread_message_ids: number[] }>();
  const huddles = new Map<string, { user_ids_string: string; unread_message_ids: number[] }>();
  const mentions: number[] = [];
  // Since FL 213 `count` leaves out muted channel messages (an unmuted or
  // followed topic of a muted channel is not muted), and a wildcard
  // mention counts in `mentions` only where it is not muted.
  let count = 0;
  for (const u of kept) {
    if (!u.muted) count++;
    if (u.mentioned || (u.wildcard && !u.muted)) mentions.push(u.id);
    if (!u.conv.startsWith("dm:")) {
      const key = `${u.conv}:${u.topic}`;
      const e = streams.get(key) ?? { stream_id: Number(u.conv), topic: u.topic, unread_message_ids: [] };
      e.unread_message_ids.push(u.id);
      streams.set(key, e);
      continue;
    }
    const ids = u.conv.slice(3).split(",").map(Number);
    if (ids.length <= 2) {
      const other = ids.find((i) => i !== me) ?? me;
      const e = pms.get(other) ?? { other_user_id: other, sender_id: other, unread_message_ids: [] };
      e.unread_message_ids.push(u.id);
      pms.set(other, e);
    } else {
      const key = ids.join(",");
      const e = huddles.get(key) ?? { user_ids_string: key, unread_message_ids: [] };
      e.unread_message_ids.push(u.id);
      huddles.set(key, e);
    }
  }
  return {
    count,
    pms: [...pms.values()],
    streams: [...streams.values()],
    huddles: [...huddles.values()],
    mentions,
    old_unreads_missing: items.length > kept.length,
  } as unknown as Obj;
}

export const messagesArea: RegisterArea = {
  fetchTypes: ["message", "update_message_flags", "user_topic"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    const me = ctx.caller.userId;
    const ref = userRef(ctx.realmId, me);
    const [max, unread, narrow] = await Promise.all([
      ctx.call(ref, "maxMessageId", {}),
      ctx.call(ref, "unreads", {}),
      ctx.call(channelDirectoryRef(ctx.realmId), "narrowContext", {}),
    ]);
    const spanned = Object.keys(narrow.spans ?? {});
    // Received rows above the read-through marks, without an entry, are unread too.
    const parts = await channelRows(ctx, spanned, (conv) => ({
      after: unread.readThrough[conv] ?? 0,
    }));
    let maxId = max.max_message_id;
    const unreads: Unread[] = unread.items;
    for (const part of parts) {
      if (part.lastReceived > maxId) maxId = part.lastReceived;
      const entries = new Set(unread.entries[part.conv] ?? []);
      for (const [id, conv, topic, sender] of part.rows)
        if (!entries.has(id)) unreads.push({ id, conv, topic, sender, mentioned: false });
    }
    if (parts.length) unreads.sort((a, b) => a.id - b.id);
    const topics = await ctx.call(ref, "userTopics", {});
    const mutedChannels = new Set((narrow.muted ?? []).map(String));
    const policies = new Map<string, number>();
    for (const t of topics.user_topics)
      policies.set(`${t.stream_id}:${t.topic_name.toLowerCase()}`, t.visibility_policy);
    for (const u of unreads) u.muted = rowMuted(mutedChannels, policies, u);
    // Without empty_topic_name, the empty topic reads as realm_empty_topic_display_name.
    const emptyName = ctx.params.client_capabilities.empty_topic_name ? "" : EMPTY_TOPIC_DISPLAY_NAME;
    const items = unreads.map((u) => (u.topic === "" ? { ...u, topic: emptyName } : u));
    const userTopics = topics.user_topics.map((t) =>
      t.topic_name === "" ? { ...t, topic_name: emptyName } : t,
    );
    return {
      max_message_id: maxId,
      unread_msgs: formatUnreads(items, me),
      user_topics: userTopics,
    };
  },
};
