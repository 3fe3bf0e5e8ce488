// Restricted user access on the realm's side (Zulip's
// check_can_access_user, get_user_dicts_in_realm and
// get_data_for_inaccessible_user; feature levels 225, 232, 314). The
// realm formats users but does not know subscriptions: the gateway first
// asks the channel directory (actors/channel-directory/user-access.ts) and the
// caller's user actor (DM peers), and passes the answer as `access`. The
// realm applies it only to a viewer its own directory shows as a guest.

import { SYSTEM_GROUP_ID, groupDirectoryRef } from "../group/index.ts";
import type { ActorContext, Obj, OutEvent } from "../types.ts";
import { ROLE_GUEST, withholdGuestCopies } from "../user/index.ts";
import { fakeEmailDomain } from "./members.ts";
import type { DirEntry, RealmState } from "./state.ts";

/** The gateway's answer for a restricted guest: ids from shared channels and from DM conversations. */
export interface AccessArg {
  channelPeers: number[];
  dmPeers: number[];
}

function idSet(raw: unknown): Set<number> {
  const out = new Set<number>();
  if (Array.isArray(raw)) for (const v of raw) if (typeof v === "number") out.add(v);
  return out;
}

/**
 * Whether `viewer` may see a user, or null when they may see everyone
 * (spectators, non-guests, and guests of an unrestricted realm: no set is
 * built for them). Bots are visible to all; channel peers only while
 * active (Zulip counts subscriptions of active users only), DM peers even
 * once deactivated.
 */
export function accessFilter(
  viewer: DirEntry | null,
  args: { access?: AccessArg },
): ((t: DirEntry) => boolean) | null {
  const access = args.access;
  if (viewer === null || viewer.role !== ROLE_GUEST || access === undefined) return null;
  const channel = idSet(access.channelPeers);
  const dm = idSet(access.dmPeers);
  return (t) =>
    t.userId === viewer.userId || t.isBot || dm.has(t.userId) || (t.isActive && channel.has(t.userId));
}

// Not member-handlers' memberById: importing it here would close an import cycle.
function roleOf(state: RealmState, userId: number): number | undefined {
  const key = state.emailById[String(userId)];
  return key === undefined ? undefined : state.users[key]?.role;
}

/** Zulip's INACCESSIBLE_USER_NAME. */
export const UNKNOWN_USER_NAME = "Unknown user";

/**
 * The placeholder Zulip sends for a user the viewer may not access
 * (get_data_for_inaccessible_user): only the id varies.
 */
export function unknownUser(state: Pick<RealmState, "host">, userId: number): Obj {
  return {
    email: `user${userId}@${fakeEmailDomain(state.host)}`,
    user_id: userId,
    avatar_version: 1,
    is_admin: false,
    is_owner: false,
    is_guest: false,
    role: 400,
    is_bot: false,
    full_name: UNKNOWN_USER_NAME,
    timezone: "",
    is_active: true,
    date_joined: "1970-01-01T00:00:00+00:00",
    delivery_email: null,
    avatar_url: "/static/images/unknown-user-avatar.png",
    profile_data: {},
    is_imported_stub: false,
  };
}

/**
 * Zulip's get_user_ids_who_can_access_user for events the realm emits
 * about `subject` (feature levels 228, 303): when the realm restricts
 * guests, the guests among each event's recipients are taken out, and a
 * hand-off asks the channel directory (which the realm may not call) to
 * send the event to those of them who share a channel with the subject.
 * Nothing is asked of anyone when no guest is among the recipients.
 */
export async function withholdFromGuests(
  state: RealmState,
  ctx: ActorContext,
  subject: DirEntry,
  events: OutEvent[],
): Promise<{ subject: string; data: Obj }[]> {
  if (subject.isBot) return [];
  const guests = new Set<number>();
  for (const e of events) {
    if (e.everyone) for (const id of state.userIndex.activeGuests) guests.add(id);
    for (const id of e.userIds) if (roleOf(state, id) === ROLE_GUEST) guests.add(id);
  }
  return withholdGuestCopies(ctx, state.realmId, subject.userId, guests, events);
}

/** The active guests (for a user actor's events about its user: memberContext). */
export function activeGuestIds(state: RealmState): number[] {
  return [...state.userIndex.activeGuests];
}

/**
 * Marks a realm_user add that carries an "Unknown user" placeholder: the
 * queue drops it for clients with the user_list_incomplete capability and
 * strips the mark for the others (actors/queue/shape.ts).
 */
export const UNKNOWN_USER_ADD = "inaccessible_placeholder";

/**
 * The realm_user add events for a new human user (Zulip's
 * notify_created_user): the user object to everyone who may access it;
 * a restricted guest, who shares nothing with a user that has just been
 * created, gets the placeholder or nothing (feature level 232). Guests
 * sharing a default channel then hear of the real user from the channel
 * directory (actors/channel-directory/user-access.ts accessChangeEvents).
 */
export async function newUserAddEvents(
  state: RealmState,
  ctx: ActorContext,
  userId: number,
  person: Obj,
): Promise<OutEvent[]> {
  // Every active user, and the new one.
  const full: OutEvent = {
    event: { type: "realm_user", op: "add", person },
    userIds: [userId],
    everyone: true,
  };
  const guests = new Set([...state.userIndex.activeGuests].filter((id) => id !== userId));
  if (!guests.size) return [full];
  const value = await ctx.call(groupDirectoryRef(state.realmId), "realmSetting", {
    name: "can_access_all_users_group",
  });
  if (value === SYSTEM_GROUP_ID["role:everyone"]) return [full];
  full.except = [...guests];
  const placeholder: Obj = { type: "realm_user", op: "add", person: unknownUser(state, userId) };
  placeholder[UNKNOWN_USER_ADD] = true;
  return [full, { event: placeholder, userIds: [...guests] }];
}
