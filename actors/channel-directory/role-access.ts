// A role change can change which channels a user sees (a guest sees only
// its subscriptions and web-public channels, members every public one,
// administrators private ones too). Since Zulip 8.0 (FL 205) the user's
// clients hear of it: stream create events for the channels that came into
// view, with a peer_add per channel so they learn the subscribers, and a
// stream delete for those that went out of view. The realm's updateMember
// turn changes the role and journals a MEMBER_ROLE hand-off
// (actors/realm/member-handoffs.ts) that calls `roleAccessChanged` here,
// internal only, once the role is in the realm's roster (the realm may not
// call the directory inside its own turn: the directory reads the roster).

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

/**
 * {userId, oldRole}: the user whose role changed (the roster already has
 * the new one). The directory journals the role whose view it told
 * (`roleSeen`) and tells the difference from that one, so a hand-off given
 * again, or one that arrives after a later change's, tells nothing twice:
 * `oldRole` only stands in for a user it never told of.
 */
const roleAccessChanged: DirHandler<"roleAccessChanged"> = async (state, args, ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const t = await Turn.load(ctx, state.realmId, state);
  const { userId } = args;
  const now = t.users.get(userId);
  if (!now) return { reply: {} };
  const recorded = state.roleSeen?.[String(userId)];
  const told = recorded ?? args.oldRole;
  const seen: Obj[] = [{ type: "roleSeen", userId, role: now.role }];
  if (now.role === told) return recorded === undefined ? { facts: seen, reply: {} } : { reply: {} };
  // A deactivated user's clients are gone; its next view starts from the role it has now.
  if (!now.isActive) return { facts: seen, reply: {} };
  const before: RosterEntry = { ...now, role: told };

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
  return { facts: seen, events, reply: {} };
};

export const roleAccessDirectoryHandlers: DirHandlers<"roleAccessChanged"> = { roleAccessChanged };
