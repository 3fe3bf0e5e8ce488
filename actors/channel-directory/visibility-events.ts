// Events for users who newly gain sight of an existing channel: a `stream`
// create event (Zulip's send_stream_creation_events_for_previously_inaccessible_streams
// on subscribe, feature level 192) and, when a private channel turns public,
// `peer_add` with its subscribers for users who could not see them
// (do_change_stream_permission, feature level 134).

import type { OutEvent } from "../types.ts";
import { type Turn, isAdmin, isGuest, metadataAudience, peerAudience } from "./access.ts";
import { formatChannel } from "./format.ts";
import { activeSubscriberIds, type Channel, type DirState } from "./state.ts";

/**
 * Users just subscribed to existing channels (`byChannel`: channel id ->
 * user ids) who could not see the channel unsubscribed: guests on a public
 * channel, non-administrators on a private one. Each gets the channel's
 * create event before its subscription event.
 */
export function newSubscriberCreateEvents(
  t: Turn,
  s: DirState,
  byChannel: Map<number, number[]>,
): OutEvent[] {
  const events: OutEvent[] = [];
  for (const [channelId, userIds] of byChannel) {
    const ch = s.channels[String(channelId)]!;
    if (ch.isWebPublic) continue;
    const blind = userIds.filter((id) => {
      const u = t.users.get(id);
      return u !== undefined && (ch.inviteOnly ? !isAdmin(u.role) : isGuest(u.role));
    });
    if (blind.length)
      events.push({
        event: { type: "stream", op: "create", streams: [formatChannel(s, ch, t.sys)] },
        userIds: blind,
      });
  }
  return events;
}

/**
 * After a channel's access changed (`before`/`after` states of the same
 * channel): its create event to users who can see it now and could not
 * before, and its subscribers to users who can see them now and could not.
 */
export function gainedAccessEvents(
  t: Turn,
  before: DirState,
  oldCh: Channel,
  after: DirState,
  newCh: Channel,
): OutEvent[] {
  const events: OutEvent[] = [];
  const saw = new Set(metadataAudience(t, before, oldCh));
  const sees = metadataAudience(t, after, newCh).filter((id) => !saw.has(id));
  if (sees.length)
    events.push({
      event: { type: "stream", op: "create", streams: [formatChannel(after, newCh, t.sys)] },
      userIds: sees,
    });
  const subscribers = activeSubscriberIds(after, newCh.id);
  const knew = new Set(peerAudience(t, before, oldCh, new Set()));
  const learns = peerAudience(t, after, newCh, new Set()).filter((id) => !knew.has(id));
  if (subscribers.length && learns.length)
    events.push({
      event: {
        type: "subscription",
        op: "peer_add",
        stream_ids: [newCh.id],
        user_ids: [...subscribers].sort((a, b) => a - b),
      },
      userIds: learns,
    });
  return events;
}
