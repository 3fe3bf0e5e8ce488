// A channel's is_recently_active (FL 323), as Zulip derives it: false once
// no message was sent to it in the last 180 days (Zulip's daily
// check_update_all_streams_active_status), true again at the next send.
//
// Design: the directory keeps the UNIX day of each channel's newest send
// (Channel.lastMessageDay). Every send already reads the channel from the
// directory (sendContext, which returns that day and the flag), so a send
// pays only an in-memory comparison; it asks the directory to record the
// day when it differs, i.e. one durable write per channel per day of
// traffic, and that write also turns an inactive channel active again
// (with the event). The sweep (`sweepRecentlyActive`) rides on the
// retention worker's schedule and reads only the directory: O(channels).
// Deleting a channel's newest messages does not move the day back (Zulip
// looks at the messages left; this keeps the sweep free of conversation reads).
//
// This is the directory's side; the send's is actors/channel/recently-active.ts.

import { errors } from "../errors.ts";
import type { Obj, OutEvent } from "../types.ts";
import { Turn, metadataAudience } from "./access.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";
import type { Channel, DirState } from "./state.ts";

const DAY_SECONDS = 86400;
/** Zulip's Stream.LAST_ACTIVITY_DAYS_BEFORE_FOR_ACTIVE. */
export const RECENTLY_ACTIVE_DAYS = 180;

function internalOnly(origin: string | undefined): void {
  if (origin === "external") throw errors.accessDenied();
}

function activeEvent(t: Turn, state: DirState, ch: Channel, value: boolean): OutEvent {
  const event: Obj = {
    type: "stream",
    op: "update",
    stream_id: ch.id,
    name: ch.name,
    property: "is_recently_active",
    value,
  };
  return { event, userIds: metadataAudience(t, state, ch) };
}

/** Directory, internal: {stream_id, day}: a message was sent to the channel on `day`. */
const recordMessageDay: DirHandler<"recordMessageDay"> = async (state, args, ctx) => {
  internalOnly(ctx.origin);
  const ch = state.channels[String(args.stream_id)];
  const { day } = args;
  if (!ch) return { reply: {} };
  const wasActive = ch.isRecentlyActive !== false;
  if (wasActive && ch.lastMessageDay !== undefined && ch.lastMessageDay !== null && ch.lastMessageDay >= day)
    return { reply: {} };
  const facts = [
    { type: "channelChanged", channelId: ch.id, changes: { lastMessageDay: day, isRecentlyActive: true } },
  ];
  if (wasActive) return { facts, reply: {} };
  const t = await Turn.load(ctx, state.realmId, state);
  return { facts, events: [activeEvent(t, state, ch, true)], reply: {} };
};

/**
 * Directory, internal: {now} (ms) -> {inactive: ids}: channels with no send
 * in the last RECENTLY_ACTIVE_DAYS turn inactive, with Zulip's event to
 * those who may see them. A channel whose day is unknown (state from before
 * the day was kept) counts from this sweep on, so none turns inactive early.
 */
const sweepRecentlyActive: DirHandler<"sweepRecentlyActive"> = async (state, args, ctx) => {
  internalOnly(ctx.origin);
  const now = Math.floor(args.now / 1000);
  const today = Math.floor(now / DAY_SECONDS);
  const cutoff = now - RECENTLY_ACTIVE_DAYS * DAY_SECONDS;
  const facts: Obj[] = [];
  const stale: Channel[] = [];
  for (const ch of Object.values(state.channels)) {
    if (ch.isRecentlyActive === false) continue;
    if (ch.lastMessageDay === undefined) {
      facts.push({ type: "channelChanged", channelId: ch.id, changes: { lastMessageDay: today } });
      continue;
    }
    // The day's last second still before the cutoff: no message since. A
    // channel that never had a message counts from its creation, as Zulip's
    // job leaves channels created within the period active.
    const last = ch.lastMessageDay === null ? Math.floor(ch.dateCreated / DAY_SECONDS) : ch.lastMessageDay;
    if ((last + 1) * DAY_SECONDS <= cutoff) {
      facts.push({ type: "channelChanged", channelId: ch.id, changes: { isRecentlyActive: false } });
      stale.push(ch);
    }
  }
  if (!facts.length) return { reply: { inactive: [] } };
  const t = stale.length ? await Turn.load(ctx, state.realmId, state) : null;
  return {
    facts,
    events: stale.map((ch) => activeEvent(t!, state, ch, false)),
    reply: { inactive: stale.map((ch) => ch.id) },
  };
};

export const recentlyActiveDirectoryHandlers: DirHandlers<"recordMessageDay" | "sweepRecentlyActive"> = {
  recordMessageDay,
  sweepRecentlyActive,
};
