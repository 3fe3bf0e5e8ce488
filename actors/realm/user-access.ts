// Restricted user access on the realm's side (Zulip's
// check_can_access_user, get_user_dicts_in_realm and
// get_data_for_inaccessible_user; feature levels 225, 232, 314). The
// realm formats users but does not know subscriptions: the gateway first
// asks the channel directory (actors/channel/user-access.ts) and the
// caller's user actor (DM peers), and passes the answer as `access`. The
// realm applies it only to a viewer its own directory shows as a guest.

import { fakeEmailDomain } from "./members.ts";
import { ROLE_GUEST } from "../user/index.ts";
import type { Obj } from "../types.ts";
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
export function accessFilter(viewer: DirEntry | null, args: Obj): ((t: DirEntry) => boolean) | null {
  const access = args.access as Partial<AccessArg> | undefined;
  if (viewer === null || viewer.role !== ROLE_GUEST || access === undefined || access === null) return null;
  const channel = idSet(access.channelPeers);
  const dm = idSet(access.dmPeers);
  return (t) =>
    t.userId === viewer.userId || t.isBot || dm.has(t.userId) || (t.isActive && channel.has(t.userId));
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
