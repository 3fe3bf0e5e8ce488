// Bulk mark-as-read (Zulip's deprecated POST /mark_all_as_read,
// /mark_stream_as_read, /mark_topic_as_read): one turn of the user actor
// over the user's own flag entries (Zulip's UserMessage rows), so only
// messages the user received change and no historical rows appear, as in
// a channel with protected history.
//
// The channel handler asks the channel directory's leaf `contentAccess`
// (Zulip's access_stream_by_id), as the topic-policy handlers do; so it is
// not a leaf itself, and conversation actors never call it.

import { channelDirectoryRef } from "../addresses.ts";
import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { Caller, Obj } from "../types.ts";
import { FLAG_BITS, flagDecision, msgsOf } from "./flags.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "markAllAsRead" | "markChannelAsRead">;

/** Zulip's realm_empty_topic_display_name, which names the empty topic here. */
const EMPTY_TOPIC_DISPLAY_NAME = "general chat";

function requireSelf(state: UserState, caller: Caller | null): Caller {
  if (!state.created || !caller || caller.userId !== state.userId || caller.realmId !== state.realmId)
    throw errors.accessDenied();
  return caller;
}

/**
 * POST /mark_all_as_read: every unread entry becomes read. Zulip batches
 * against a timeout; one pass here always finishes, so `complete` is
 * true. The event carries no ids and `all: true`, and goes out even when
 * nothing was unread (Zulip's do_mark_all_as_read).
 */
const markAllAsRead: Handlers["markAllAsRead"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const m = msgsOf(state);
  const read = FLAG_BITS.read!;
  const changed = m.ids.filter((id) => !(m.entries[String(id)]![1] & read));
  const d = flagDecision(state, changed, "read", "add", { complete: true });
  const marks = readThroughFact(args.newest);
  if (marks) d.facts = [...(d.facts ?? []), marks];
  const event: Obj = {
    type: "update_message_flags",
    op: "add",
    operation: "add",
    flag: "read",
    messages: [],
    all: true,
  };
  return { ...d, events: [{ event, userIds: [state.userId] }] };
};

/**
 * POST /mark_stream_as_read and /mark_topic_as_read: {stream_id, topic?}.
 * The caller needs content access to the channel ("Invalid channel ID"
 * otherwise, unknown and archived channels included); a named topic must
 * be one the user has a message in, compared case-insensitively ("No such
 * topic '<name>'"). The event lists the ids that changed, ascending, and
 * is sent only when some did.
 */
const markChannelAsRead: Handlers["markChannelAsRead"] = async (state, args, ctx, caller) => {
  const c = requireSelf(state, caller);
  const streamId = args.stream_id;
  const access = await ctx.call(channelDirectoryRef(state.realmId), "contentAccess", {
    stream_id: streamId,
    userId: c.userId,
    role: c.role,
  });
  if (!access.ok) throw errors.invalidChannelId();

  const conv = String(streamId);
  const hasTopic = args.topic !== undefined;
  const raw = args.topic ?? "";
  // The documented meaning of the display name: the empty topic.
  const topic = raw === EMPTY_TOPIC_DISPLAY_NAME ? "" : raw;
  const wanted = topic.toLowerCase();
  const m = msgsOf(state);
  const read = FLAG_BITS.read!;
  let found = false;
  const changed: number[] = [];
  for (const id of m.ids) {
    const e = m.entries[String(id)]!;
    if (e[0] !== conv) continue;
    if (hasTopic && e[2].toLowerCase() !== wanted) continue;
    found = true;
    if (!(e[1] & read)) changed.push(id);
  }
  // Received rows without an entry (the gateway located the unread ones).
  const received = args.received ?? [];
  // A topic's rows become entries, read; a whole channel is read through its newest id instead.
  const fresh: [number, string, number, string, number][] = [];
  const seen = new Set(changed);
  for (const [id, rconv, rtopic, sender] of received) {
    if (rconv !== conv || m.entries[String(id)] || seen.has(id)) continue;
    if (hasTopic && rtopic.toLowerCase() !== wanted) continue;
    found = true;
    seen.add(id);
    changed.push(id);
    if (hasTopic) fresh.push([id, conv, read, rtopic, sender]);
  }
  if (hasTopic && !found && args.topicExists !== true) throw errors.noSuchTopic(topic);
  changed.sort((a, b) => a - b);
  fresh.sort((a, b) => a[0] - b[0]);
  const d = flagDecision(state, changed, "read", "add", {}, fresh);
  if (!hasTopic) {
    const marks = readThroughFact(args.newest);
    if (marks) d.facts = [...(d.facts ?? []), marks];
  }
  return d;
};

/** `newest` {conv: id}: the conversations' newest ids, now read through. */
function readThroughFact(newest: Record<string, number> | undefined): Obj | null {
  if (!newest) return null;
  const convs: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const [conv, id] of Object.entries(newest)) convs[conv] = id;
  return Object.keys(convs).length ? { type: "readThrough", convs } : null;
}

export const markReadHandlers: Handlers = {
  markAllAsRead,
  markChannelAsRead,
};
