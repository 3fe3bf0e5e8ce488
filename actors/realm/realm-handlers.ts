// Handlers of one organization's realm actor (ref.key "realm").
//
// This actor is the one place every authenticated request may reach, so its
// turns stay short: it never hashes a password and never waits on a user
// actor except to `create` a user id it just allocated (which nobody else
// can be talking to yet). User actors call it only for leaf methods.

import { activeGuestIds } from "./user-access.ts";
import { activeIds } from "./member-helpers.ts";
import { createHash, timingSafeEqual } from "node:crypto";
import { errors } from "../errors.ts";
import { checkUniqueName } from "./unique-names.ts";
import { groupDirectoryRef } from "../group/index.ts";
import type { Caller, Obj } from "../types.ts";
import {
  ROLES,
  ROLE_MEMBER,
  ROLE_OWNER,
  checkFullName,
  emailKey,
  isAdminRole,
  isStrongPassword,
  isValidEmail,
} from "../user/index.ts";
import { REALM_SETTING_DEFAULTS, realmSetting } from "./defaults.ts";
import { botHandlers } from "./bot-handlers.ts";
import { profileFieldHandlers } from "./profile-fields.ts";
import { memberHandlers } from "./member-handlers.ts";
import { presenceHandlers } from "./presence-handlers.ts";
import type { RealmHandler } from "./handler.ts";
import type { DirEntry, RealmFact, RealmState } from "./state.ts";
import { addUser } from "./add-user.ts";
import { firstLoginDecision } from "./first-login.ts";
import { defaultsHandoff } from "./member-handoffs.ts";
import { welcomeHandoff } from "./welcome-messages.ts";

function fact(f: RealmFact): Obj {
  return f as unknown as Obj;
}

function requireCreated(state: RealmState): void {
  if (!state.created) throw errors.invalidSubdomain();
}

/** Methods for the gateway's own flows, other actors and the CLI, never an end user's call. */
function requireInternal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

function entryById(state: RealmState, userId: number): DirEntry | undefined {
  const key = state.emailById[String(userId)];
  return key === undefined ? undefined : state.users[key];
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A plain rendering of the description until the markdown processor exists. */
export function renderDescription(markdown: string): string {
  const paragraphs = markdown
    .trim()
    .split(/\n\s*\n/)
    .filter((p) => p.trim() !== "");
  return paragraphs.map((p) => `<p>${escapeHtml(p.trim()).replace(/\n/g, "<br>\n")}</p>`).join("\n");
}

/** Zulip's gravatar realm icon (get_realm_icon_url with no uploaded icon). */
function realmIconUrl(state: RealmState): string {
  const hash = createHash("md5").update(state.host.toLowerCase()).digest("hex");
  return `https://secure.gravatar.com/avatar/${hash}?d=identicon`;
}

// ---- creation -----------------------------------------------------------------

/** Create the organization and its owner; idempotent (CLI, directory). */
const create: RealmHandler<"create"> = async (state, args, ctx, caller) => {
  requireInternal(caller);
  const ownerEmail = args.ownerEmail;
  const prior: RealmFact[] = [];
  if (!state.created) {
    prior.push({
      type: "created",
      name: args.name,
      description: args.description ?? "",
      host: args.host.toLowerCase(),
      dateCreated: ctx.now(),
      settings: { ...REALM_SETTING_DEFAULTS },
    });
  }
  const existing = state.users[emailKey(ownerEmail)];
  if (existing) {
    return {
      facts: prior.map(fact),
      reply: { realmId: state.realmId, userId: existing.userId, apiKey: existing.apiKey },
    };
  }
  if (!isValidEmail(ownerEmail)) throw errors.badNameOrUsername();
  const decision = await addUser(
    state,
    ctx,
    {
      email: ownerEmail,
      password: args.ownerPassword,
      fullName: checkFullName(args.ownerName),
      role: ROLE_OWNER,
      canCreateUsers: true,
    },
    prior,
  );
  const { userId, apiKey } = decision.reply!;
  return { ...decision, reply: { realmId: state.realmId, userId, apiKey } };
};

/**
 * POST /users (with a caller), or the CLI (without one, any role).
 * Checks and texts follow Zulip's create_user_backend, in its order.
 */
const createUser: RealmHandler<"createUser"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  const { email, password } = args;
  const fullNameRaw = args.fullName;
  let role = ROLE_MEMBER;
  if (caller) {
    // Our own directory is authoritative for the caller's role.
    const me = caller.realmId === state.realmId ? entryById(state, caller.userId) : undefined;
    if (!me || !isAdminRole(me.role)) throw errors.mustBeAdmin();
    if (!me.canCreateUsers) throw errors.notAuthorizedToCreateUsers();
  } else {
    role = args.role ?? ROLE_MEMBER;
    if (!ROLES.includes(role)) throw errors.invalid("role");
  }
  const fullName = checkFullName(fullNameRaw);
  checkUniqueName(state, fullName, null);
  // Zulip's CreateUserForm: a valid email and a name within the length limit.
  if (!isValidEmail(email)) throw errors.badNameOrUsername();
  if (state.users[emailKey(email)]) throw errors.emailInUse(email);
  if (!isStrongPassword(password)) throw errors.passwordTooWeak();
  // Zulip grants can_create_users only by server command; we give it to
  // administrators created by the CLI (and the bootstrap owner).
  const decision = await addUser(state, ctx, {
    email,
    password,
    fullName,
    role,
    canCreateUsers: !caller && isAdminRole(role),
    awaitingFirstLogin: caller !== null,
  });
  const reply = decision.reply!;
  if (!caller) return { ...decision, reply };
  // Zulip's Welcome Bot greets a user an administrator created (the CLI's accounts are not greeted),
  // within the request, as Zulip does: a client that registers a queue for the
  // new user after the reply finds the greeting in its history, never as a late event.
  // Zulip subscribes a new human user to the realm's default channels
  // (member-handoffs.ts); the CLI's create-user asks the directory itself.
  return {
    ...decision,
    handoffs: [welcomeHandoff(state, reply.userId, role), defaultsHandoff(state.realmId, reply.userId)],
    replyAfterHandoffs: true,
    reply: { user_id: reply.userId },
  };
};

// ---- authentication ---------------------------------------------------------

/**
 * The gateway's credential check for HTTP Basic: the presented key is
 * compared here, in constant time, and only the account's state goes back
 * (no API key ever travels to a gateway). Null for an unknown email and for
 * a wrong key alike, which the gateway answers "Invalid API key".
 */
const authVerify: RealmHandler<"authVerify"> = (state, args) => {
  const entry = state.users[emailKey(args.email)];
  const presented = args.apiKey;
  if (!state.created || !entry || !sameKey(entry.apiKey, presented)) return { reply: null };
  return {
    reply: {
      userId: entry.userId,
      role: entry.role,
      isBot: entry.isBot,
      botType: entry.botType,
      isActive: entry.isActive,
      realmDeactivated: state.deactivated,
    },
  };
};

/** Digests first: equal lengths for timingSafeEqual, and no early exit on a length mismatch. */
function sameKey(stored: string, presented: string): boolean {
  const a = createHash("sha256").update(stored, "utf8").digest();
  const b = createHash("sha256").update(presented, "utf8").digest();
  return timingSafeEqual(a, b);
}

/** CLI: a user's id and API key by email. */
const apiKey: RealmHandler<"apiKey"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const entry = state.users[emailKey(args.email)];
  return { reply: entry ? { userId: entry.userId, apiKey: entry.apiKey } : null };
};

/**
 * First step of POST /fetch_api_key: Zulip's checks up to the password,
 * in its order (email syntax, rate limit, empty password, account state).
 * The route then asks the user actor to verify the password.
 */
const login: RealmHandler<"login"> = (state, args, ctx, caller) => {
  requireInternal(caller);
  const username = args.username;
  if (!isValidEmail(username)) throw errors.invalidLoginEmail();
  const attempt = state.attempts.attempt(username, ctx.now());
  if (!attempt.allowed) throw errors.rateLimited(attempt.retryAfter);
  if (args.emptyPassword === true) throw errors.authenticationFailed();
  const entry = state.users[emailKey(username)];
  if (!state.created || !entry) throw errors.authenticationFailed();
  if (!entry.isActive) throw errors.userDeactivatedLogin();
  if (state.deactivated) throw errors.realmDeactivatedLogin();
  state.attempts.admit(username, ctx.now());
  return { reply: { userId: entry.userId } };
};

/** The user actor's login: may it check a password for this attempt (one `login` let through)? */
const authAdmitted: RealmHandler<"authAdmitted"> = (state, args, ctx, caller) => {
  requireInternal(caller);
  return { reply: { admitted: state.attempts.consume(args.email, ctx.now()) } };
};

/** A password check elsewhere (PATCH /settings) counting against the same limit. */
const authAttempt: RealmHandler<"authAttempt"> = (state, args, ctx, caller) => {
  requireInternal(caller);
  return { reply: state.attempts.attempt(args.email, ctx.now()) };
};

const authSucceeded: RealmHandler<"authSucceeded"> = (state, args, ctx, caller) => {
  requireInternal(caller);
  state.attempts.clear(args.email);
  return firstLoginDecision(state, args.email, ctx.now());
};

// ---- leaf reads for user actors -----------------------------------------------

const memberContext: RealmHandler<"memberContext"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  requireCreated(state);
  const email = args.email;
  const holder = email === undefined ? undefined : state.users[emailKey(email)];
  return {
    reply: {
      nameChangesDisabled: realmSetting(state, "name_changes_disabled") === true,
      emailChangesDisabled: realmSetting(state, "email_changes_disabled") === true,
      realmEmoji: Object.fromEntries(Object.entries(state.realmEmoji).map(([k, v]) => [k, { ...v }])),
      emailHolder: holder ? (holder.isActive ? "active" : "deactivated") : null,
      // Restricted user access: whom the user actor's events about its user may skip.
      activeGuestIds: activeGuestIds(state),
    },
  };
};

/**
 * PATCH /settings target_users: user and group ids -> the human users to
 * change. Deactivated users are included (Zulip does, so reactivated users
 * keep the change); bots are dropped.
 */
const resolveTargets: RealmHandler<"resolveTargets"> = async (state, args, ctx, caller) => {
  requireInternal(caller);
  requireCreated(state);
  const groupIds = args.groupIds ?? [];
  const out = new Set<number>();
  if (groupIds.length) {
    // Group members, transitively (realm -> group directory, a leaf call).
    const r = await ctx.call(groupDirectoryRef(state.realmId), "expandGroups", { groupIds });
    for (const id of r.userIds) if (!entryById(state, id)?.isBot) out.add(id);
  }
  for (const id of args.userIds ?? []) {
    const entry = entryById(state, id);
    if (!entry) throw errors.invalidUserId(id);
    if (!entry.isBot) out.add(id);
  }
  return { reply: { userIds: [...out] } };
};

const userIds: RealmHandler<"userIds"> = (state) => {
  requireCreated(state);
  return { reply: { userIds: activeIds(state) } };
};

/** What GET /server_settings shows about the organization. */
const publicInfo: RealmHandler<"publicInfo"> = (state) => {
  requireCreated(state);
  return {
    reply: {
      realmId: state.realmId,
      name: state.name,
      description: renderDescription(state.description),
      icon: realmIconUrl(state),
      host: state.host,
      webPublicAccessEnabled: realmSetting(state, "enable_spectator_access") === true,
    },
  };
};

export const realmHandlers = {
  create,
  createUser,
  authVerify,
  apiKey,
  login,
  authAttempt,
  authAdmitted,
  authSucceeded,
  memberContext,
  resolveTargets,
  userIds,
  publicInfo,
  ...memberHandlers,
  ...botHandlers,
  ...profileFieldHandlers,
  ...presenceHandlers,
};
