// User administration on the realm actor: GET /users (one turn for the whole
// list), PATCH /users/{id}, deactivation and reactivation. The realm is the
// authority for role and activation, so the owner-count rules are checked
// and applied in one turn, and deactivating a user's bots happens in the
// same fact batch as the user: there is no cross-actor step to retry.
// Checks and texts follow Zulip's zerver/views/users.py (access_user_by_id,
// update_user_backend, deactivate_user_backend, reactivate_user_backend).

import { errors } from "../errors.ts";
import { syncGroupMember } from "../group/index.ts";
import type { ActorContext, Caller, Decision, Handler, Obj, OutEvent } from "../types.ts";
import {
  ROLES,
  ROLE_OWNER,
  checkFullName,
  emailKey,
  isAdminRole,
  optBool,
  optInt,
  optIntList,
  optString,
} from "../user/index.ts";
import { realmSetting } from "./defaults.ts";
import { apiEmail, formatMember, type FormatOptions } from "./members.ts";
import { profileDataDecision } from "./profile-fields.ts";
import type { DirEntry, MemberChanges, RealmFact, RealmState } from "./state.ts";

function fact(f: RealmFact): Obj {
  return f as unknown as Obj;
}

export function requireCreated(state: RealmState): void {
  if (!state.created) throw errors.invalidSubdomain();
}

export function memberById(state: RealmState, userId: number): DirEntry | undefined {
  const key = state.emailById[String(userId)];
  return key === undefined ? undefined : state.users[key];
}

/** The caller's own directory entry (authoritative for their role), or null for a spectator. */
function viewerOf(state: RealmState, caller: Caller | null): DirEntry | null {
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

export function activeIds(state: RealmState): number[] {
  const out: number[] = [];
  for (const u of Object.values(state.users)) if (u.isActive) out.push(u.userId);
  return out;
}

export function activeAdminIds(state: RealmState): number[] {
  const out: number[] = [];
  for (const u of Object.values(state.users)) if (u.isActive && isAdminRole(u.role)) out.push(u.userId);
  return out;
}

/** Zulip's check_last_owner: the target is the realm's only active human owner. */
export function isLastOwner(state: RealmState, target: DirEntry): boolean {
  if (target.role !== ROLE_OWNER || target.isBot) return false;
  for (const u of Object.values(state.users)) {
    if (u.isActive && !u.isBot && u.role === ROLE_OWNER && u.userId !== target.userId) return false;
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

/** Zulip's access_user_by_id / access_user_by_email, in its order of checks. */
function accessUser(state: RealmState, args: Obj, me: DirEntry | null, a: Access): DirEntry {
  const userId = optInt(args, "userId");
  const email = optString(args, "email");
  let target: DirEntry | undefined;
  if (userId !== undefined) target = memberById(state, userId);
  else if (email !== undefined) target = findByApiEmail(state, email);
  if (!target) throw errors.noSuchUser();
  if (target.isBot && !a.allowBots) throw errors.noSuchUser();
  if (!target.isActive && !a.allowDeactivated) throw errors.userDeactivated();
  if (a.forAdmin && (me === null || !canAdmin(me, target))) throw errors.insufficientPermission();
  return target;
}

/** By real email, or by the dummy user<id>@<host> address clients see when it is hidden. */
function findByApiEmail(state: RealmState, email: string): DirEntry | undefined {
  const direct = state.users[emailKey(email)];
  if (direct) return direct;
  const m = /^user(\d+)@(.+)$/i.exec(email.trim());
  if (!m || m[2]!.toLowerCase() !== state.host.toLowerCase()) return undefined;
  const target = memberById(state, Number(m[1]));
  return target && apiEmail(state, target) !== target.email ? target : undefined;
}

function formatOptions(args: Obj): FormatOptions {
  return {
    clientGravatar: optBool(args, "clientGravatar") ?? true,
    includeCustomProfileFields: optBool(args, "includeCustomProfileFields") ?? false,
  };
}

/** Spectators may read users only where the realm enables public access. */
function viewerForRead(state: RealmState, caller: Caller | null): DirEntry | null {
  requireCreated(state);
  if (caller === null && realmSetting(state, "enable_spectator_access") !== true) throw errors.notLoggedIn();
  return viewerOf(state, caller);
}

// ---- reads --------------------------------------------------------------------

/** GET /users: every user (or the listed ids) in one turn. */
const getMembers: Handler<RealmState> = (state, args, _ctx, caller) => {
  const viewer = viewerForRead(state, caller);
  const opts = formatOptions(args);
  const ids = optIntList(args, "userIds");
  let targets: DirEntry[];
  if (ids === undefined) {
    targets = Object.values(state.users);
  } else {
    targets = [];
    for (const id of ids) {
      const t = memberById(state, id);
      if (!t) throw errors.invalidUserId(id);
      targets.push(t);
    }
  }
  targets.sort((a, b) => a.userId - b.userId);
  return { reply: { members: targets.map((t) => formatMember(state, t, viewer, opts)) } };
};

/** GET /users/{user_id}, GET /users/{email}, GET /users/me. */
const getMember: Handler<RealmState> = (state, args, _ctx, caller) => {
  const viewer = viewerForRead(state, caller);
  const target = accessUser(state, args, viewer, { allowDeactivated: true, allowBots: true });
  return { reply: { user: formatMember(state, target, viewer, formatOptions(args)) } };
};

// ---- changes ------------------------------------------------------------------

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

/** PATCH /users/{user_id} and /users/{email}: full_name and role. */
const updateMember: Handler<RealmState> = async (state, args, ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  const target = accessUser(state, args, me, { allowDeactivated: true, allowBots: true, forAdmin: true });
  const role = optInt(args, "role");
  const fullNameRaw = optString(args, "fullName");
  if (role !== undefined && !ROLES.includes(role)) throw errors.invalid("role");

  const changes: MemberChanges = {};
  if (role !== undefined && role !== target.role) {
    if ((role === ROLE_OWNER || target.role === ROLE_OWNER) && me.role !== ROLE_OWNER)
      throw errors.mustBeOwner();
    if (!isAdminRole(me.role)) throw errors.mustBeAdmin();
    if (target.role === ROLE_OWNER && isLastOwner(state, target)) throw errors.cannotRemoveOnlyOwner();
    changes.role = role;
  }
  // Zulip ignores an unchanged or blank name; administrators are not bound
  // by name_changes_disabled.
  if (fullNameRaw !== undefined && fullNameRaw !== target.fullName && fullNameRaw.trim() !== "") {
    const name = checkFullName(fullNameRaw);
    if (name !== target.fullName) changes.fullName = name;
  }
  // profile_data: an administrator may set any field; empty values remove.
  const profile =
    args.profileData === undefined
      ? { facts: [], events: [] }
      : profileDataDecision(state, target, me, args.profileData, true);
  if (Object.keys(changes).length === 0) return { facts: profile.facts, events: profile.events, reply: {} };

  const recipients = activeIds(state);
  const events: OutEvent[] = [...profile.events];
  if (changes.role !== undefined) {
    events.push({ event: updateEvent(target.userId, { role: changes.role }), userIds: recipients });
  }
  if (changes.fullName !== undefined) {
    events.push({ event: updateEvent(target.userId, { full_name: changes.fullName }), userIds: recipients });
  }
  if (changes.role !== undefined) {
    // System-group membership follows the role (realm -> group, one-way).
    await syncGroupMember(ctx, state.realmId, { ...groupView(target), role: changes.role });
  }
  if (target.isBot) {
    const botEvent: Obj = { user_id: target.userId };
    if (changes.fullName !== undefined) botEvent.full_name = changes.fullName;
    if (changes.role !== undefined) botEvent.role = changes.role;
    events.push({
      event: { type: "realm_bot", op: "update", bot: botEvent },
      userIds: botAudience(state, target),
    });
  }
  return {
    facts: [fact({ type: "memberUpdated", userId: target.userId, changes }), ...profile.facts],
    events,
    // The gateway caches each caller's role; a role change must reach it now.
    notices: changes.role !== undefined ? [invalidate(state, target)] : [],
    reply: {},
  };
};

/** Who hears about a bot: its owner and the administrators (Zulip's bot_owner_user_ids). */
export function botAudience(state: RealmState, bot: DirEntry): number[] {
  const ids = new Set(activeAdminIds(state));
  if (bot.botOwnerId !== null) ids.add(bot.botOwnerId);
  return [...ids];
}

/** Facts, events and notices that deactivate `target` (and, for a human, their active bots first). */
export async function deactivation(
  state: RealmState,
  target: DirEntry,
  ctx: ActorContext,
): Promise<Decision> {
  const victims: DirEntry[] = [];
  if (!target.isBot) {
    for (const u of Object.values(state.users)) {
      if (u.isBot && u.isActive && u.botOwnerId === target.userId) victims.push(u);
    }
  }
  victims.push(target);
  const recipients = activeIds(state);
  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  const notices: { subject: string; data: Obj }[] = [];
  for (const v of victims) {
    await syncGroupMember(ctx, state.realmId, { ...groupView(v), isActive: false });
    facts.push(fact({ type: "memberUpdated", userId: v.userId, changes: { isActive: false } }));
    events.push({ event: updateEvent(v.userId, { is_active: false }), userIds: recipients });
    if (v.isBot) {
      events.push({
        event: { type: "realm_bot", op: "update", bot: { user_id: v.userId, is_active: false } },
        userIds: botAudience(state, v),
      });
    }
    // API keys of deactivated accounts stop working on every gateway at once.
    notices.push(invalidate(state, v));
  }
  return { facts, events, notices, reply: {} };
}

/** DELETE /users/{user_id} (humans only, like Zulip; bots go through DELETE /bots/{id}). */
const deactivateMember: Handler<RealmState> = (state, args, ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  const target = accessUser(state, args, me, { forAdmin: true });
  if (target.role === ROLE_OWNER && me.role !== ROLE_OWNER) throw errors.mustBeOwner();
  if (isLastOwner(state, target)) throw errors.cannotDeactivateOnlyOwner();
  return deactivation(state, target, ctx);
};

/** DELETE /users/me. */
const deactivateSelf: Handler<RealmState> = (state, _args, ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  if (activeIds(state).length === 1) throw errors.cannotDeactivateLastUser(false);
  if (isLastOwner(state, me)) throw errors.cannotDeactivateLastUser(true);
  return deactivation(state, me, ctx);
};

/** POST /users/{user_id}/reactivate. Reactivating an active user changes nothing. */
const reactivateMember: Handler<RealmState> = async (state, args, ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  const target = accessUser(state, args, me, { allowDeactivated: true, allowBots: true, forAdmin: true });
  if (target.isActive) return { reply: {} };
  if (target.isBot && target.botOwnerId !== null) {
    // A bot needs an active owner (Zulip reassigns or refuses; we refuse).
    const owner = memberById(state, target.botOwnerId);
    if (!owner || !owner.isActive) throw errors.userDeactivated();
  }
  await syncGroupMember(ctx, state.realmId, { ...groupView(target), isActive: true });
  const recipients = [...activeIds(state), target.userId];
  const events: OutEvent[] = [
    { event: updateEvent(target.userId, { is_active: true }), userIds: recipients },
  ];
  if (target.isBot) {
    events.push({
      event: { type: "realm_bot", op: "update", bot: { user_id: target.userId, is_active: true } },
      userIds: botAudience(state, target),
    });
  }
  return {
    facts: [fact({ type: "memberUpdated", userId: target.userId, changes: { isActive: true } })],
    events,
    notices: [invalidate(state, target)],
    reply: {},
  };
};

/**
 * Leaf for the user actor: its own name, timezone and email visibility
 * changed (PATCH /settings), so the directory's user objects follow.
 * Returns the active user ids for the user actor's realm_user events.
 */
const syncMember: Handler<RealmState> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  requireCreated(state);
  const target = accessUser(state, args, null, { allowDeactivated: true, allowBots: true });
  const changes: MemberChanges = {};
  const fullName = optString(args, "fullName");
  const timezone = optString(args, "timezone");
  const visibility = optInt(args, "emailVisibility");
  if (fullName !== undefined && fullName !== target.fullName) changes.fullName = fullName;
  if (timezone !== undefined && timezone !== target.timezone) changes.timezone = timezone;
  if (visibility !== undefined && visibility !== target.emailVisibility) changes.emailVisibility = visibility;
  const reply = {
    activeUserIds: activeIds(state),
    apiEmail: apiEmail(state, { ...target, ...changes }),
    oldApiEmail: apiEmail(state, target),
    changed: Object.keys(changes),
  };
  if (Object.keys(changes).length === 0) return { reply };
  return { facts: [fact({ type: "memberUpdated", userId: target.userId, changes })], reply };
};

export const memberHandlers: Record<string, Handler<RealmState>> = {
  getMembers,
  getMember,
  updateMember,
  deactivateMember,
  deactivateSelf,
  reactivateMember,
  syncMember,
};
