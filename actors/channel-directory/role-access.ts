// A role change can change which channels a user sees (a guest sees only
// its subscriptions and web-public channels, members every public one,
// administrators private ones too). Since Zulip 8.0 (FL 205) the user's
// clients hear of it: stream create events for the channels that came into
// view, with a peer_add per channel so they learn the subscribers, and a
// stream delete for those that went out of view. The realm changes the role
// and the gateway then calls `roleAccessChanged` here with the old role (the
// realm may not call the directory inside its own turn: the directory reads
// the realm's roster).

import { errors } from "../errors.ts";
import type { Obj, OutEvent } from "../types.ts";
import { Turn, canSeeMetadata, isAdmin, isGuest, type RosterEntry } from "./access.ts";
import { formatChannel } from "./format.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";
import { activeSubscriberIds, type Channel, type DirState } from "./state.ts";

/** Who may see a channel's subscriber list (access.ts peerAudience's rule, for one user). */
function seesSubscribers(state: DirState, ch: Channel, u: RosterEntry): boolean {
  if (ch.isWebPublic || isAdmin(u.role)) return true;
  if (activeSubscriberIds(state, ch.id).includes(u.userId)) return true;
  return !ch.inviteOnly && !isGuest(u.role);
}

/** {userId, oldRole}: the user whose role changed (the roster already has the new one). */
const roleAccessChanged: DirHandler<"roleAccessChanged"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const { userId, oldRole } = args;
  // Only who may change roles asks (an administrator, or one who just gave up the role).
  const me = t.users.get(caller?.userId ?? -1);
  if (!me || !me.isActive || (!isAdmin(me.role) && me.userId !== userId)) throw errors.mustBeAdmin();
  const now = t.users.get(userId);
  if (!now || !now.isActive || now.role === oldRole) return { reply: {} };
  const before: RosterEntry = { ...now, role: oldRole };

  const gained: Channel[] = [];
  const lost: number[] = [];
  for (const ch of Object.values(state.channels)) {
    if (ch.isArchived) continue;
    const was = canSeeMetadata(state, ch, before, t);
    const is = canSeeMetadata(state, ch, now, t);
    if (is && !was) gained.push(ch);
    else if (was && !is) lost.push(ch.id);
  }
  gained.sort((a, b) => a.id - b.id);
  lost.sort((a, b) => a - b);

  const events: OutEvent[] = [];
  const to = [userId];
  if (gained.length) {
    events.push({
      event: { type: "stream", op: "create", streams: gained.map((ch) => formatChannel(state, ch, t.sys)) },
      userIds: to,
    });
    for (const ch of gained) {
      const subs = activeSubscriberIds(state, ch.id);
      if (!subs.length || !seesSubscribers(state, ch, now)) continue;
      events.push({
        event: { type: "subscription", op: "peer_add", stream_ids: [ch.id], user_ids: subs },
        userIds: to,
      });
    }
  }
  if (lost.length) {
    const event: Obj = {
      type: "stream",
      op: "delete",
      stream_ids: lost,
      streams: lost.map((id) => ({ stream_id: id })),
    };
    events.push({ event, userIds: to });
  }
  return { events, reply: {} };
};

export const roleAccessDirectoryHandlers: DirHandlers<"roleAccessChanged"> = { roleAccessChanged };
