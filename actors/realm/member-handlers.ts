// User administration on the realm actor: GET /users (one turn for the whole
// list), PATCH /users/{id}, deactivation and reactivation. The realm is the
// authority for role and activation, so the owner-count rules are checked
// and applied in one turn, and deactivating a user's bots happens in the
// same fact batch as the user: there is no cross-actor step to retry.
// Checks and texts follow Zulip's zerver/views/users.py (access_user_by_id,
// update_user_backend, deactivate_user_backend, reactivate_user_backend).

import { errors } from "../errors.ts";
import { syncGroupMember } from "../group/index.ts";
import type { DecisionOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj, OutEvent } from "../types.ts";
import {
  ROLES,
  ROLE_GUEST,
  ROLE_OWNER,
  checkFullName,
  emailKey,
  generateApiKey,
  isAdminRole,
  isValidEmail,
} from "../user/index.ts";
import { realmSetting } from "./defaults.ts";
import { apiEmail, avatarUrlFor, canSeeDeliveryEmail, formatMember, type FormatOptions } from "./members.ts";
import {
  accessUser,
  actorOf,
  avatarEvents,
  botAudience,
  activeBotsOwnedBy,
  emailChangeEvents,
  groupView,
  invalidate,
  isLastOwner,
  memberById,
  requireCreated,
  updateEvent,
  viewerOf,
} from "./member-helpers.ts";
import { revokeInvitesBy } from "./invites.ts";
import { accessFilter, activeGuestIds, unknownUser, withholdFromGuests } from "./user-access.ts";
import { checkUniqueName } from "./unique-names.ts";
import { emailHandoff, goneHandoff, keyHandoff, roleHandoff } from "./member-handoffs.ts";
import { profileDataDecision } from "./profile-fields.ts";
import { formatSystemBot, systemBotEntry } from "./system-bot.ts";
import type { RealmHandler } from "./handler.ts";
import type { DirEntry, MemberChanges, RealmFact, RealmState } from "./state.ts";

function fact(f: RealmFact): Obj {
  return f as unknown as Obj;
}

function formatOptions(args: {
  clientGravatar?: boolean;
  includeCustomProfileFields?: boolean;
}): FormatOptions {
  return {
    clientGravatar: args.clientGravatar ?? true,
    includeCustomProfileFields: args.includeCustomProfileFields ?? false,
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
const getMembers: RealmHandler<"getMembers"> = (state, args, _ctx, caller) => {
  const viewer = viewerForRead(state, caller);
  const opts = formatOptions(args);
  const ids = args.userIds;
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
  const can = accessFilter(viewer, args);
  if (can === null) return { reply: { members: targets.map((t) => formatMember(state, t, viewer, opts)) } };
  // Inaccessible users are left out, or (register without the
  // user_list_incomplete capability) replaced by "Unknown user" placeholders.
  const placeholders = args.unknownPlaceholders ?? false;
  const members: Obj[] = [];
  for (const t of targets) {
    if (can(t)) members.push(formatMember(state, t, viewer, opts));
    else if (placeholders) members.push(unknownUser(state, t.userId));
  }
  return { reply: { members } };
};

/** GET /users/{user_id}, GET /users/{email}, GET /users/me. */
const getMember: RealmHandler<"getMember"> = (state, args, _ctx, caller) => {
  const viewer = viewerForRead(state, caller);
  // Zulip's access_user_by_id_including_cross_realm: the system bots answer too.
  const bot = systemBotEntry(args.userId, args.email);
  if (bot) return { reply: { user: formatSystemBot(state, bot, viewer === null) } };
  const target = accessUser(state, args, viewer, { allowDeactivated: true, allowBots: true });
  // Zulip's access_user_common: a user the guest may not access is refused.
  if (accessFilter(viewer, args)?.(target) === false) throw errors.insufficientPermission();
  return { reply: { user: formatMember(state, target, viewer, formatOptions(args)) } };
};

// ---- changes ------------------------------------------------------------------

/**
 * new_email: only an owner holding Zulip's can_change_user_emails special
 * permission; the address is checked like a self-service change
 * (validate_email_is_valid, validate_email_not_already_in_realm).
 * Returns the new address, or undefined when nothing changes.
 */
function checkNewEmail(state: RealmState, me: DirEntry, target: DirEntry, raw: string | undefined) {
  if (raw === undefined) return undefined;
  if (me.role !== ROLE_OWNER || me.canChangeUserEmails !== true) throw errors.notAuthorizedToChangeEmails();
  if (raw === target.email) return undefined;
  if (!isValidEmail(raw)) throw errors.invalidAddress();
  const holder = state.users[emailKey(raw)];
  if (holder && holder.userId !== target.userId) {
    throw holder.isActive ? errors.alreadyHasAccount() : errors.accountDeactivatedEmail();
  }
  return raw;
}

/**
 * The events of an email_address_visibility change (Zulip's
 * do_change_user_setting): delivery_email to those who gain access, null to
 * those who lose it; new_email to everyone when the API email switches
 * between real and dummy; and, since the gravatar URL each viewer gets
 * follows the address they may know, the new URL to those whose URL changed.
 */
function visibilityChangeEvents(state: RealmState, before: DirEntry, after: DirEntry): OutEvent[] {
  const active = Object.values(state.users).filter((u) => u.isActive);
  const gained: number[] = [];
  const lost: number[] = [];
  for (const v of active) {
    const could = canSeeDeliveryEmail(v, before);
    const can = canSeeDeliveryEmail(v, after);
    if (could !== can) (can ? gained : lost).push(v.userId);
  }
  const events: OutEvent[] = [];
  if (gained.length)
    events.push({ event: updateEvent(after.userId, { delivery_email: after.email }), userIds: gained });
  if (lost.length) events.push({ event: updateEvent(after.userId, { delivery_email: null }), userIds: lost });
  const newApiEmail = apiEmail(state, after);
  if (newApiEmail !== apiEmail(state, before)) {
    events.push({
      event: updateEvent(after.userId, { new_email: newApiEmail }),
      userIds: active.map((u) => u.userId),
    });
  }
  events.push(...avatarEvents(state, after, active, (v, url) => url !== avatarUrlFor(state, v, before)));
  return events;
}

/** PATCH /users/{user_id} and /users/{email}: full_name, role, profile_data and new_email. */
const updateMember: RealmHandler<"updateMember"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  const target = accessUser(state, args, me, { allowDeactivated: true, allowBots: true, forAdmin: true });
  const { role, fullName: fullNameRaw } = args;
  if (role !== undefined && !ROLES.includes(role)) throw errors.invalid("role");

  const changes: MemberChanges = {};
  if (role !== undefined && role !== target.role) {
    if ((role === ROLE_OWNER || target.role === ROLE_OWNER) && me.role !== ROLE_OWNER)
      throw errors.mustBeOwner();
    if (!isAdminRole(me.role)) throw errors.mustBeAdmin();
    if (target.role === ROLE_OWNER && isLastOwner(state, target)) throw errors.cannotRemoveOnlyOwner();
    // The API contract's error table: a role change that makes a guest an
    // administrator (or owner) is refused; promote to member first.
    if (target.role === ROLE_GUEST && isAdminRole(role)) throw errors.guestsCannotBeAdmins();
    changes.role = role;
  }
  // Zulip ignores an unchanged or blank name; administrators are not bound
  // by name_changes_disabled.
  if (fullNameRaw !== undefined && fullNameRaw !== target.fullName && fullNameRaw.trim() !== "") {
    const name = checkFullName(fullNameRaw);
    if (name !== target.fullName) {
      checkUniqueName(state, name, target.userId);
      changes.fullName = name;
    }
  }
  // Every check runs before any change: a refused part changes nothing.
  const newEmail = checkNewEmail(state, me, target, args.newEmail);
  // profile_data: an administrator may set any field; empty values remove.
  const profile =
    args.profileData === undefined
      ? { facts: [], events: [] }
      : profileDataDecision(state, target, me, args.profileData, true);

  const facts: Obj[] = [];
  const events: OutEvent[] = [...profile.events];
  const notices: { subject: string; data: Obj }[] = [];
  // What follows in other actors, once this turn is journaled (member-handoffs.ts).
  const follow: { subject: string; data: Obj }[] = [];
  if (Object.keys(changes).length)
    facts.push(fact({ type: "memberUpdated", userId: target.userId, changes }));
  facts.push(...profile.facts);
  // Events about the target reach only those who may access them (FL 228).
  const aboutTarget: OutEvent[] = [...profile.events];
  if (changes.role !== undefined) {
    aboutTarget.push({
      event: updateEvent(target.userId, { role: changes.role }),
      userIds: [],
      everyone: true,
    });
    events.push(aboutTarget.at(-1)!);
    // System-group membership follows the role (realm -> group, one-way).
    await syncGroupMember(ctx, state.realmId, { ...groupView(target), role: changes.role });
    // The gateway caches each caller's role; a role change must reach it now.
    notices.push(invalidate(state, target));
    // The channel directory tells the user of its changed channel view (FL 205).
    follow.push(roleHandoff(state.realmId, target.userId, target.role));
  }
  if (changes.fullName !== undefined) {
    aboutTarget.push({
      event: updateEvent(target.userId, { full_name: changes.fullName }),
      userIds: [],
      everyone: true,
    });
    events.push(aboutTarget.at(-1)!);
  }
  // Since feature level 474 a bot's name is news for realm_user only.
  if (target.isBot && changes.role !== undefined) {
    events.push({
      event: { type: "realm_bot", op: "update", bot: { user_id: target.userId, role: changes.role } },
      userIds: botAudience(state, target),
    });
  }
  if (newEmail !== undefined) {
    facts.push(fact({ type: "memberEmailChanged", userId: target.userId, email: newEmail }));
    const emailEvents = emailChangeEvents(state, target, newEmail);
    events.push(...emailEvents);
    aboutTarget.push(...emailEvents);
    // Credentials cached under the old address die on every gateway now.
    if (!notices.length) notices.push(invalidate(state, target));
    notices.push({ subject: "auth.invalidate", data: { realmId: state.realmId, email: emailKey(newEmail) } });
    // The user actor keeps a copy of the address and resyncs it (it reads ours).
    follow.push(emailHandoff(state.realmId, target.userId));
  }
  const handoffs = [...(await withholdFromGuests(state, ctx, target, aboutTarget)), ...follow];
  return {
    facts,
    events,
    notices,
    handoffs,
    // The reply comes after them, so a client finds their effects once it
    // has the answer; a role change's channel events after its realm_user event.
    replyAfterHandoffs: follow.length > 0,
    replyAfterEvents: changes.role !== undefined,
    reply: {},
  };
};

/** Facts, events and notices that deactivate `target` (and, for a human, their active bots first). */
export async function deactivation(
  state: RealmState,
  target: DirEntry,
  ctx: ActorContext,
): Promise<DecisionOf<Record<string, never>>> {
  const victims = [...activeBotsOwnedBy(state, target), target];
  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  const notices: { subject: string; data: Obj }[] = [];
  const handoffs: { subject: string; data: Obj }[] = [];
  for (const v of victims) {
    const { groupIds = [] } = await syncGroupMember(ctx, state.realmId, { ...groupView(v), isActive: false });
    facts.push(fact({ type: "memberUpdated", userId: v.userId, changes: { isActive: false } }));
    // No realm_bot event since feature level 474: realm_user carries it.
    const gone: OutEvent = {
      event: updateEvent(v.userId, { is_active: false }),
      userIds: [],
      everyone: true,
    };
    events.push(gone);
    const withheld = await withholdFromGuests(state, ctx, v, [gone]);
    // Zulip (FL 303): the guests who lose access to the user also hear
    // that the user left each of their groups; the relay sends `others`
    // to the candidates who share no channel with the user.
    for (const h of withheld)
      h.data.others = groupIds.map((id) => ({
        type: "user_group",
        op: "remove_members",
        group_id: id,
        user_ids: [v.userId],
      }));
    handoffs.push(...withheld);
    // API keys of deactivated accounts stop working on every gateway at once.
    notices.push(invalidate(state, v));
  }
  const revoked = revokeInvitesBy(state, target.userId);
  facts.push(...revoked.facts);
  events.push(...revoked.events);
  // The channel directory tells who may see their channels that they left
  // (peer_remove, FL 377), before the request answers (member-handoffs.ts).
  handoffs.push(
    goneHandoff(
      state.realmId,
      victims.map((v) => v.userId),
    ),
  );
  return { facts, events, notices, handoffs, replyAfterHandoffs: true, reply: {} };
}

/** DELETE /users/{user_id} (humans only, like Zulip; bots go through DELETE /bots/{id}). */
const deactivateMember: RealmHandler<"deactivateMember"> = (state, args, ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  const target = accessUser(state, args, me, { forAdmin: true });
  if (target.role === ROLE_OWNER && me.role !== ROLE_OWNER) throw errors.mustBeOwner();
  if (isLastOwner(state, target)) throw errors.cannotDeactivateOnlyOwner();
  return deactivation(state, target, ctx);
};

/** DELETE /users/me. */
const deactivateSelf: RealmHandler<"deactivateSelf"> = (state, _args, ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  if (state.userIndex.active.size === 1) throw errors.cannotDeactivateLastUser(false);
  if (isLastOwner(state, me)) throw errors.cannotDeactivateLastUser(true);
  return deactivation(state, me, ctx);
};

/** POST /users/{user_id}/reactivate. Reactivating an active user changes nothing. */
const reactivateMember: RealmHandler<"reactivateMember"> = async (state, args, ctx, caller) => {
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
  // No realm_bot event since feature level 474: realm_user carries it.
  const events: OutEvent[] = [
    // Every active user, and the user coming back.
    { event: updateEvent(target.userId, { is_active: true }), userIds: [target.userId], everyone: true },
  ];
  // Not to guests who cannot access the user (FL 303).
  const handoffs = await withholdFromGuests(state, ctx, target, [events[0]!]);
  return {
    facts: [fact({ type: "memberUpdated", userId: target.userId, changes: { isActive: true } })],
    events,
    notices: [invalidate(state, target)],
    handoffs,
    reply: {},
  };
};

/**
 * Leaf for the user actor: its own name, timezone and email visibility
 * changed (PATCH /settings), so the directory's user objects follow.
 * Returns the active user ids for the user actor's realm_user events.
 */
const syncMember: RealmHandler<"syncMember"> = async (state, args, ctx, caller) => {
  if (caller) throw errors.accessDenied();
  requireCreated(state);
  const target = accessUser(state, args, null, { allowDeactivated: true, allowBots: true });
  const changes: MemberChanges = {};
  const { fullName, timezone, emailVisibility: visibility, receivesTyping } = args;
  if (fullName !== undefined && fullName !== target.fullName) {
    checkUniqueName(state, fullName, target.userId);
    changes.fullName = fullName;
  }
  if (timezone !== undefined && timezone !== target.timezone) changes.timezone = timezone;
  if (visibility !== undefined && visibility !== target.emailVisibility) changes.emailVisibility = visibility;
  if (receivesTyping !== undefined && receivesTyping !== (target.receivesTyping ?? true))
    changes.receivesTyping = receivesTyping;
  const after: DirEntry = { ...target, ...changes };
  const reply = {
    // Restricted user access: whom the user actor's realm_user events may skip.
    activeGuestIds: activeGuestIds(state),
    apiEmail: apiEmail(state, after),
    changed: Object.keys(changes),
  };
  if (Object.keys(changes).length === 0) return { reply };
  // The visibility events come from here, where every viewer's role is known.
  const events = changes.emailVisibility === undefined ? [] : visibilityChangeEvents(state, target, after);
  // Not to guests who cannot access the user (FL 228).
  const handoffs = await withholdFromGuests(state, ctx, target, events);
  return {
    facts: [fact({ type: "memberUpdated", userId: target.userId, changes })],
    events,
    reply,
    handoffs,
  };
};

/** Leaf for the user actor's syncEmail: the authoritative delivery email of a user. */
const memberEmail: RealmHandler<"memberEmail"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  requireCreated(state);
  const target = memberById(state, args.userId);
  if (!target) throw errors.noSuchUser();
  return { reply: { email: target.email } };
};

/**
 * POST /users/me/api_key/regenerate (Zulip's regenerate_api_key; bots may
 * call it for themselves too). The notice makes every gateway drop its
 * cached record, so the old key fails at once everywhere.
 */
const regenerateOwnKey: RealmHandler<"regenerateOwnKey"> = (state, _args, _ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  const apiKey = generateApiKey();
  // A bot's new key is no event since feature level 474 (GET /bots/{id}/api_key reads it).
  const events: OutEvent[] = [];
  return {
    facts: [fact({ type: "memberUpdated", userId: me.userId, changes: { apiKey } })],
    events,
    notices: [invalidate(state, me)],
    // Level 492: the E2EE push devices go with the old key, before the reply (member-handoffs.ts).
    handoffs: [keyHandoff(state.realmId, me.userId)],
    replyAfterHandoffs: true,
    reply: { api_key: apiKey },
  };
};

export const memberHandlers = {
  regenerateOwnKey,
  memberEmail,
  getMembers,
  getMember,
  updateMember,
  deactivateMember,
  deactivateSelf,
  reactivateMember,
  syncMember,
};
