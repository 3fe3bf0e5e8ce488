// Lookups, checks and event builders about the realm's users, shared by the
// realm actor's handlers (member-handlers.ts, bots, invites, profile fields,
// presence...). It imports no handler file, so any of them may import it.

import { errors } from "../errors.ts";
import type { Caller, Obj, OutEvent } from "../types.ts";
import { ROLE_OWNER, emailKey, isAdminRole, mediumAvatarUrl } from "../user/index.ts";
import { apiEmail, avatarUrlFor, canSeeDeliveryEmail, findByEmail } from "./members.ts";
import type { DirEntry, RealmState } from "./state.ts";

export function requireCreated(state: RealmState): void {
  if (!state.created) throw errors.invalidSubdomain();
}

export function memberById(state: RealmState, userId: number): DirEntry | undefined {
  const key = state.emailById[String(userId)];
  return key === undefined ? undefined : state.users[key];
}

/** The caller's own directory entry (authoritative for their role), or null for a spectator. */
export function viewerOf(state: RealmState, caller: Caller | null): DirEntry | null {
  if (caller === null) return null;
  const me = caller.realmId === state.realmId ? memberById(state, caller.userId) : undefined;
  if (!me || !me.isActive) throw errors.accessDenied();
  return me;
}

/** The caller as an acting user: must be signed in and active. */
export function actorOf(state: RealmState, caller: Caller | null): DirEntry {
  const me = viewerOf(state, caller);
  if (me === null) throw errors.notLoggedIn();
  return me;
}

/**
 * Bots from the index (active or not): those `ownerId` owns, or every bot
 * of the realm (`ownerId` null), by id. Costs what they are, not what the
 * organization is.
 */
export function botsOf(state: RealmState, ownerId: number | null): DirEntry[] {
  const ids = ownerId === null ? state.userIndex.bots : state.userIndex.botsByOwner.get(ownerId);
  const out: DirEntry[] = [];
  for (const id of ids ?? []) {
    const u = memberById(state, id);
    if (u) out.push(u);
  }
  return out.sort((a, b) => a.userId - b.userId);
}

/** The active bots `owner` owns, by id (none for a bot): deactivated with their owner. */
export function activeBotsOwnedBy(state: RealmState, owner: DirEntry): DirEntry[] {
  return owner.isBot ? [] : botsOf(state, owner.userId).filter((u) => u.isActive);
}

/** Every active user: the recipients of realm-wide events (Zulip's active_user_ids). */
export function activeIds(state: RealmState): number[] {
  return [...state.userIndex.active];
}

export function activeAdminIds(state: RealmState): number[] {
  return [...state.userIndex.activeAdmins];
}

/** Zulip's check_last_owner: the target is the realm's only active human owner. */
export function isLastOwner(state: RealmState, target: DirEntry): boolean {
  if (target.role !== ROLE_OWNER || target.isBot) return false;
  // Owners are among the active administrators (the index), not the whole organization.
  for (const id of state.userIndex.activeAdmins) {
    const u = id === target.userId ? undefined : memberById(state, id);
    if (u && !u.isBot && u.role === ROLE_OWNER) return false;
  }
  return true;
}

/** Zulip's can_admin_user: administrators, and a bot's owner for that bot. */
export function canAdmin(me: DirEntry, target: DirEntry): boolean {
  return (target.isBot && target.botOwnerId === me.userId) || isAdminRole(me.role);
}

interface Access {
  allowDeactivated?: boolean;
  allowBots?: boolean;
  forAdmin?: boolean;
}

/** A user named by id or by email (the id wins when both are given). */
export interface Target {
  userId?: number;
  email?: string;
}

/** Zulip's access_user_by_id / access_user_by_email, in its order of checks. */
export function accessUser(state: RealmState, who: Target, me: DirEntry | null, a: Access): DirEntry {
  const { userId, email } = who;
  let target: DirEntry | undefined;
  if (userId !== undefined) target = memberById(state, userId);
  else if (email !== undefined) target = findByEmail(state, me, email);
  if (!target) throw errors.noSuchUser();
  if (target.isBot && !a.allowBots) throw errors.noSuchUser();
  if (!target.isActive && !a.allowDeactivated) throw errors.userDeactivated();
  if (a.forAdmin && (me === null || !canAdmin(me, target))) throw errors.insufficientPermission();
  return target;
}

export function updateEvent(userId: number, person: Obj): Obj {
  return { type: "realm_user", op: "update", person: { user_id: userId, ...person } };
}

export function invalidate(state: RealmState, target: DirEntry): { subject: string; data: Obj } {
  return { subject: "auth.invalidate", data: { realmId: state.realmId, email: emailKey(target.email) } };
}

/** What the group directory knows of a user (see syncGroupMember). */
export function groupView(u: DirEntry): { userId: number; role: number; isActive: boolean; isBot: boolean } {
  return { userId: u.userId, role: u.role, isActive: u.isActive, isBot: u.isBot };
}

/**
 * The events of an email change (Zulip's do_change_user_delivery_email):
 * delivery_email to those allowed to see it, new_email to everyone when the
 * API email is the real one, and the avatar, since a gravatar follows the
 * address.
 */
export function emailChangeEvents(state: RealmState, target: DirEntry, email: string): OutEvent[] {
  const moved: DirEntry = { ...target, email };
  const active = Object.values(state.users).filter((u) => u.isActive);
  const events: OutEvent[] = [
    {
      event: updateEvent(target.userId, { delivery_email: email }),
      userIds: active.filter((v) => canSeeDeliveryEmail(v, moved)).map((v) => v.userId),
    },
  ];
  const everyone = active.map((u) => u.userId);
  if (apiEmail(state, moved) === email) {
    events.push({ event: updateEvent(target.userId, { new_email: email }), userIds: everyone });
  }
  // A gravatar follows the address: everyone hears of it, each with the URL
  // of the address they may know (those who may not see it get the same
  // dummy-based URL again).
  if (target.avatarSource !== "J") events.push(...avatarEvents(state, moved, active, () => true));
  return events;
}

/** realm_user avatar updates for `viewers`, one event per distinct URL (see avatarUrlFor). */
export function avatarEvents(
  state: RealmState,
  target: DirEntry,
  viewers: DirEntry[],
  include: (viewer: DirEntry, url: string) => boolean,
): OutEvent[] {
  const byUrl = new Map<string, number[]>();
  for (const v of viewers) {
    const url = avatarUrlFor(state, v, target);
    if (!include(v, url)) continue;
    const ids = byUrl.get(url);
    if (ids) ids.push(v.userId);
    else byUrl.set(url, [v.userId]);
  }
  return [...byUrl].map(([url, userIds]) => ({
    event: updateEvent(target.userId, {
      avatar_source: target.avatarSource ?? "G",
      avatar_url: url,
      avatar_url_medium: mediumAvatarUrl(url),
      avatar_version: target.avatarVersion,
    }),
    userIds,
  }));
}

/** Who hears about a bot: its owner and the administrators (Zulip's bot_owner_user_ids). */
export function botAudience(state: RealmState, bot: DirEntry): number[] {
  const ids = new Set(activeAdminIds(state));
  if (bot.botOwnerId !== null) ids.add(bot.botOwnerId);
  return [...ids];
}
