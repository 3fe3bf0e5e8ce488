// The user actor: one per user (ref.key = user id). It owns the profile,
// personal settings, status and password hash.
//
// Calls between actors go one way to avoid turn deadlocks: the realm actor
// calls a user only to `create` a freshly allocated id; a user calls the
// realm only for leaf methods (memberContext, resolveTargets, authAttempt,
// authAdmitted, authSucceeded) that never call back; and a user calls
// another user only for the leaf `applySettings`.

import { own } from "../dict.ts";
import { checkEmoji, resolveEmojiName } from "../emoji/index.ts";
import { errors } from "../errors.ts";
import { legacySettingEvents } from "./legacy-setting-events.ts";
import { userRef, realmRef } from "../addresses.ts";
import { defineBehavior, handlersOf, type DecisionOf, type HandlerOf, type MethodOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj, OutEvent, Value } from "../types.ts";
import { emailSyncHandlers } from "./email-sync.ts";
import { applyFlagFact, flagHandlers } from "./flags.ts";
import { markReadHandlers } from "./mark-read.ts";
import { formatUser, formatUserSettings, formatUserStatus, settingValue } from "./format.ts";
import { hashPassword, verifyPassword } from "./password.ts";
import { deviceHandlers } from "./devices.ts";
import { applyDraftFact, draftHandlers } from "./drafts.ts";
import { applyScheduledFact, scheduledMessageHandlers } from "./scheduled-messages.ts";
import { reminderHandlers } from "./reminders.ts";
import { pushTokenHandlers } from "./push-tokens.ts";
import { exportConsentHandlers } from "./export-consent.ts";
import { pushTestHandlers } from "./push-test.ts";
import { pushNotifyHandlers } from "./push-notify.ts";
import { savedSnippetHandlers } from "./saved-snippets.ts";
import { applyNavigationViewFact, navigationViewHandlers } from "./navigation-views.ts";
import { alertWordHandlers } from "./alert-words.ts";
import { mutedUserHandlers } from "./muted-users.ts";
import { sentMessageHandlers } from "./sent-messages.ts";
import { readReceiptHandlers } from "./read-receipts.ts";
import { autoTopicHandlers } from "./auto-topics.ts";
import { registerStateHandlers } from "./register-state.ts";
import { dmPeerHandlers } from "./dm-peers.ts";
import { withholdGuestCopies } from "./guest-access.ts";
import { mirrorReceivesTyping, typingHandlers } from "./typing.ts";
import { topicHandlers } from "./topics.ts";
import { userProtocol, type StatusChange, type UserProtocol } from "./protocol.ts";
import { LANGUAGES, SECURITY_SENSITIVE_SETTINGS, SETTINGS, checkSetting, checkTimezone } from "./settings.ts";
import {
  applyUserFact,
  initialUser,
  userFromSnapshot,
  userToSnapshot,
  type UserFact,
  type UserState,
} from "./state.ts";
import {
  argString,
  checkFullName,
  isAdminRole,
  isStrongPassword,
  isValidEmail,
  optBool,
  optIntList,
  optObj,
  emailKey,
} from "./validate.ts";

type H<M extends MethodOf<UserProtocol>> = HandlerOf<UserState, UserProtocol, M>;

/** What the realm tells a user actor for a change with realm-wide effects. */
interface MemberContext {
  nameChangesDisabled: boolean;
  emailChangesDisabled: boolean;
  /** For a memberContext asked with `email`: who holds it, if anyone. */
  emailHolder: "active" | "deactivated" | null;
  /** The realm's active guests (absent from older nodes' replies). */
  activeGuestIds?: number[];
}

/** What the realm's syncMember answers. */
interface SyncReply {
  /** The realm's active guests (absent from older nodes' replies). */
  activeGuestIds?: number[];
  apiEmail: string;
  changed: string[];
}

const STATUS_TEXT_MAX = 60;
const PERSONAL_FIELDS = ["full_name", "email", "old_password", "new_password", "timezone"];

function fact(f: UserFact): Obj {
  return f as unknown as Obj;
}

function requireCreated(state: UserState): void {
  if (!state.created) throw errors.noSuchUser();
}

/** Methods an end user may call on their own actor only. */
function requireSelf(state: UserState, caller: Caller | null): void {
  requireCreated(state);
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId)) {
    throw errors.accessDenied();
  }
}

/** Internal methods (gateway login flow, realm, CLI): never an end user's direct call. */
function requireInternal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

async function memberContext(state: UserState, ctx: ActorContext, email?: string): Promise<MemberContext> {
  return await ctx.call(realmRef(state.realmId), "memberContext", email === undefined ? {} : { email });
}

function settingEvent(name: string, value: Value): Obj {
  const event: Obj = { type: "user_settings", op: "update", property: name, value };
  if (name === "default_language" && typeof value === "string")
    event.language_name = own(LANGUAGES, value) ?? value;
  return event;
}

/**
 * Settings changes that differ from the current values, as a fact and the
 * user_settings events for the user's own queues.
 */
async function settingsDecision(
  state: UserState,
  ctx: ActorContext,
  values: Obj,
  bySelf: boolean,
  skipEdited: boolean,
) {
  const changed: Obj = {};
  for (const [name, value] of Object.entries(values)) {
    if (skipEdited && state.selfEdited.includes(name)) continue;
    if (settingValue(state, name) !== value) changed[name] = value;
  }
  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  if (Object.keys(changed).length) {
    facts.push(fact({ type: "settings", values: changed, bySelf }));
    for (const [name, value] of Object.entries(changed)) {
      events.push({ event: settingEvent(name, value), userIds: [state.userId] });
    }
    events.push(...(await legacySettingEvents(state, ctx, changed)));
  }
  return { facts, events };
}

// ---- create -----------------------------------------------------------------

const create: H<"create"> = async (state, args, ctx, caller) => {
  requireInternal(caller);
  const email = args.email;
  if (state.created) {
    // A retried create (the realm's call timed out after we committed) is a
    // no-op with the same answer; anything else is a caller bug.
    if (emailKey(state.email) !== emailKey(email)) throw errors.internal();
    return { reply: { userId: state.userId, apiKey: state.apiKey, person: formatUser(state) } };
  }
  const password = args.password;
  const f: UserFact = {
    type: "created",
    email,
    fullName: args.fullName,
    role: args.role ?? 400,
    isBot: args.isBot ?? false,
    botType: args.botType ?? null,
    botOwnerId: args.botOwnerId ?? null,
    apiKey: args.apiKey,
    passwordHash: password ? await hashPassword(password) : null,
    // The realm's directory entry carries the same instant.
    dateJoined: args.dateJoined ?? ctx.now(),
    ...(args.avatarSource === "J" ? { avatarSource: "J" } : {}),
  };
  const facts = [fact(f)];
  // A human's first settings are the realm's defaults for new users.
  const initial: Obj = {};
  for (const [name, value] of Object.entries(args.settings ?? {}))
    if (Object.hasOwn(SETTINGS, name)) initial[name] = checkSetting(name, value);
  if (Object.keys(initial).length) facts.push(fact({ type: "settings", values: initial, bySelf: false }));
  let after = structuredClone(state);
  for (const x of facts) after = applyUserFact(after, x);
  return { facts, reply: { userId: state.userId, apiKey: f.apiKey, person: formatUser(after) } };
};

// ---- reads ------------------------------------------------------------------

// The user object with the real address: for the user themself and internal callers only.
const profile: H<"profile"> = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: formatUser(state) };
};

const userSettings: H<"userSettings"> = (state) => {
  requireCreated(state);
  return { reply: formatUserSettings(state) };
};

const userStatus: H<"userStatus"> = (state) => {
  requireCreated(state);
  return { reply: formatUserStatus(state) };
};

// ---- login (POST /fetch_api_key, after the realm's `login` step) -----------

const login: H<"login"> = async (state, args, ctx, caller) => {
  requireInternal(caller);
  const password = args.password;
  if (!state.created || password === "") throw errors.authenticationFailed();
  if (!state.isActive) throw errors.userDeactivatedLogin();
  // Only an attempt the realm's `login` counted against the rate limit gets a password check.
  const realm = realmRef(state.realmId);
  const { admitted } = await ctx.call(realm, "authAdmitted", { email: state.email });
  if (!admitted) throw errors.authenticationFailed();
  if (!(await verifyPassword(password, state.passwordHash))) throw errors.authenticationFailed();
  // Zulip clears the username's rate-limit record on success.
  await ctx.call(realm, "authSucceeded", { email: state.email });
  return { reply: { api_key: state.apiKey, email: state.email, user_id: state.userId } };
};

// ---- PATCH /settings --------------------------------------------------------

/** Type and value checks of every passed parameter, before any change. */
function checkSettingsArgs(args: Obj): { settings: Obj; personal: Obj } {
  const settings: Obj = {};
  const personal: Obj = {};
  for (const [name, value] of Object.entries(args)) {
    if (name === "target_users" || value === undefined) continue;
    if (name === "timezone") personal.timezone = checkTimezone(value);
    else if (PERSONAL_FIELDS.includes(name)) personal[name] = argString(args, name);
    else if (Object.hasOwn(SETTINGS, name)) settings[name] = checkSetting(name, value);
    else throw errors.badRequest(`Unknown setting '${name}'`);
  }
  return { settings, personal };
}

function parseTargetUsers(raw: Obj) {
  const userIds = optIntList(raw, "user_ids") ?? [];
  const groupIds = optIntList(raw, "group_ids") ?? [];
  const skip = optBool(raw, "skip_if_already_edited");
  if (skip === undefined) throw errors.missingArgument("target_users.skip_if_already_edited");
  if (!userIds.length && !groupIds.length) throw errors.targetUsersEmpty();
  return { userIds, groupIds, skip };
}

async function updateOthers(
  state: UserState,
  raw: Obj,
  settings: Obj,
  personal: Obj,
  ctx: ActorContext,
  caller: Caller | null,
): Promise<DecisionOf<Record<string, never>>> {
  const target = parseTargetUsers(raw);
  if (!isAdminRole(caller ? caller.role : state.role)) throw errors.mustBeAdmin();
  for (const name of ["email", "new_password", "timezone"]) {
    if (personal[name] !== undefined) throw errors.cannotChangeForOthers();
  }
  for (const name of Object.keys(settings)) {
    if (SECURITY_SENSITIVE_SETTINGS.has(name)) throw errors.cannotChangeForOthers();
  }
  // full_name and old_password are not user settings: Zulip ignores them here.
  const resolved = await ctx.call(realmRef(state.realmId), "resolveTargets", {
    userIds: target.userIds,
    groupIds: target.groupIds,
  });
  let own: { facts?: Obj[]; events?: OutEvent[] } = {};
  for (const userId of resolved.userIds) {
    if (userId === state.userId) {
      own = await settingsDecision(state, ctx, settings, false, target.skip);
      await mirrorReceivesTyping(ctx, state, own.facts ?? []);
    } else {
      await ctx.call(
        userRef(state.realmId, userId),
        "applySettings",
        { values: settings, skipIfAlreadyEdited: target.skip },
        caller ?? { realmId: state.realmId, userId: state.userId, role: state.role, isBot: state.isBot },
      );
    }
  }
  return { ...own, reply: {} };
}

const updateSettings: H<"updateSettings"> = async (state, args, ctx, caller) => {
  requireSelf(state, caller);
  if (state.isBot) throw errors.botsNotAllowed();
  const { settings, personal } = checkSettingsArgs(args);
  const targetUsers = optObj(args, "target_users");
  if (targetUsers) return updateOthers(state, targetUsers, settings, personal, ctx, caller);

  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  const realmWide: Obj[] = [];
  const handoffs: { subject: string; data: Obj }[] = [];

  // Passwords: Zulip authenticates old_password through the rate-limited
  // login backend, so wrong guesses here count against the same limit.
  if (typeof personal.new_password === "string") {
    const oldPassword = typeof personal.old_password === "string" ? personal.old_password : "";
    const realm = realmRef(state.realmId);
    const attempt = await ctx.call(realm, "authAttempt", { email: state.email });
    if (!attempt.allowed) throw errors.tooManyAttempts(Math.trunc(attempt.retryAfter));
    if (oldPassword === "" || !(await verifyPassword(oldPassword, state.passwordHash))) {
      throw errors.wrongPassword();
    }
    await ctx.call(realm, "authSucceeded", { email: state.email });
    if (!isStrongPassword(personal.new_password)) throw errors.newPasswordTooWeak();
    facts.push(fact({ type: "password", passwordHash: await hashPassword(personal.new_password) }));
  }

  // The realm's directory is the authority for the name and the role (an
  // administrator may have changed them), so compare against it, not our copy.
  const callerIsAdmin = isAdminRole(caller ? caller.role : state.role);
  const wantsEmail = typeof personal.email === "string" && personal.email.trim() !== state.email;
  const wantsName = typeof personal.full_name === "string";
  const wantsTimezone = typeof personal.timezone === "string" && personal.timezone !== state.timezone;
  const newVisibility = settings.email_address_visibility;
  const wantsVisibility =
    typeof newVisibility === "number" && newVisibility !== settingValue(state, "email_address_visibility");
  const needsRealm = wantsEmail || wantsName || wantsTimezone;
  const newEmail = wantsEmail ? (personal.email as string).trim() : undefined;
  const realm = needsRealm ? await memberContext(state, ctx, newEmail) : null;

  if (newEmail !== undefined && realm) {
    // Zulip starts a confirmation here and changes the address only when
    // the link in the mail to the new address is opened. We send no mail,
    // so after the same checks the address stays as it is; the reply is
    // Zulip's (a plain success).
    if (realm.emailChangesDisabled && !callerIsAdmin) throw errors.emailChangesDisabled();
    if (!isValidEmail(newEmail)) throw errors.invalidAddress();
    if (realm.emailHolder === "active") throw errors.alreadyHasAccount();
    if (realm.emailHolder === "deactivated") throw errors.accountDeactivatedEmail();
  }

  const sync: { fullName?: string; timezone?: string; emailVisibility?: number } = {};
  if (wantsName && realm && !(realm.nameChangesDisabled && !callerIsAdmin)) {
    // (Zulip silently skips name changes that the realm disables for non-admins.)
    sync.fullName = checkFullName(personal.full_name as string);
  }
  if (wantsTimezone) sync.timezone = personal.timezone as string;
  if (wantsVisibility) sync.emailVisibility = newVisibility;

  // FL 312: the administrators hear of a changed export consent.
  const consent = settings.allow_private_data_export;
  if (typeof consent === "boolean" && consent !== settingValue(state, "allow_private_data_export")) {
    const { ids } = await ctx.call(realmRef(state.realmId), "exportConsentAudience", {});
    events.push({
      event: { type: "realm_export_consent", user_id: state.userId, consented: consent },
      userIds: ids,
    });
  }
  const own = await settingsDecision(state, ctx, settings, true, false);
  await mirrorReceivesTyping(ctx, state, own.facts);
  facts.push(...own.facts);
  events.push(...own.events);

  if (Object.keys(sync).length) {
    const synced: SyncReply = await ctx.call(realmRef(state.realmId), "syncMember", {
      userId: state.userId,
      ...sync,
    });
    const changed = new Set(synced.changed);
    if (changed.has("fullName")) {
      const name = sync.fullName as string;
      facts.push(fact({ type: "fullName", fullName: name }));
      realmWide.push({
        type: "realm_user",
        op: "update",
        person: { user_id: state.userId, full_name: name },
      });
    }
    if (wantsTimezone) {
      const tz = personal.timezone as string;
      facts.push(fact({ type: "timezone", timezone: tz }));
      events.push({ event: settingEvent("timezone", tz), userIds: [state.userId] });
      events.push(...(await legacySettingEvents(state, ctx, { timezone: tz }, !wantsVisibility)));
      realmWide.push({
        type: "realm_user",
        op: "update",
        person: { user_id: state.userId, timezone: tz, email: synced.apiEmail },
      });
    }
    // An email_address_visibility change's realm_user events (new_email,
    // delivery_email, avatar) come from the realm's syncMember, which knows
    // every viewer's role.
    const wide: OutEvent[] = realmWide.map((event) => ({ event, userIds: [], everyone: true }));
    events.push(...wide);
    // Not to guests who cannot access the user (FL 228).
    const guests = new Set(synced.activeGuestIds ?? []);
    handoffs.push(...(await withholdGuestCopies(ctx, state.realmId, state.userId, guests, wide)));
  }
  return { facts, events, handoffs, reply: {} };
};

/** An administrator's target_users change reaching one target (calls only the realm's syncMember). */
const applySettings: H<"applySettings"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  if (!caller || !isAdminRole(caller.role) || caller.realmId !== state.realmId) throw errors.mustBeAdmin();
  const values: Obj = {};
  for (const [name, value] of Object.entries(args.values)) {
    if (SECURITY_SENSITIVE_SETTINGS.has(name)) throw errors.cannotChangeForOthers();
    values[name] = checkSetting(name, value);
  }
  // Settings do not apply to bots; the realm already filtered them out.
  if (state.isBot) return { reply: {} };
  const { facts, events } = await settingsDecision(
    state,
    ctx,
    values,
    false,
    args.skipIfAlreadyEdited ?? false,
  );
  await mirrorReceivesTyping(ctx, state, facts);
  return { facts, events, reply: {} };
};

// ---- POST /users/me/status --------------------------------------------------

const updateStatus: H<"updateStatus"> = async (state, args, ctx, caller) => {
  requireSelf(state, caller);
  if (state.isBot) throw errors.botsNotAllowed();
  return statusDecision(state, args, ctx);
};

// ---- POST /users/{user_id}/status --------------------------------------------
// An administrator (or, since feature level 473, an administrator's bot) sets
// another user's status. The realm has already vetted the target
// (adminStatusTarget); this repeats the role check so that no other caller
// reaches it.

const updateStatusByAdmin: H<"updateStatusByAdmin"> = (state, args, ctx, caller) => {
  if (!state.created) throw errors.noSuchUser();
  if (!caller || caller.realmId !== state.realmId || !isAdminRole(caller.role)) throw errors.mustBeAdmin();
  if (state.isBot) throw errors.noSuchUser();
  // Zulip's admin form has no `away` (that is the user's presence setting): the args have none.
  const { status_text, emoji_name, emoji_code, reaction_type } = args;
  return statusDecision(state, { status_text, emoji_name, emoji_code, reaction_type }, ctx);
};

/** A status change as the user's own or an administrator's request asked it (`away` only from the user). */
async function statusDecision(
  state: UserState,
  args: StatusChange,
  ctx: ActorContext,
): Promise<DecisionOf<Record<string, never>>> {
  const away = args.away;
  const rawText = args.status_text;
  const emojiName = args.emoji_name;
  let emojiCode = args.emoji_code;
  let reactionType = args.reaction_type;

  // Zulip strips before measuring; the limit counts code points.
  const statusText = rawText?.trim();
  if (statusText !== undefined && [...statusText].length > STATUS_TEXT_MAX) {
    throw errors.tooLong("status_text", STATUS_TEXT_MAX);
  }
  if (away === undefined && statusText === undefined && emojiName === undefined) throw errors.noNewValues();

  const realm = await memberContext(state, ctx);
  if (emojiName === "") {
    // An empty name clears the emoji.
    emojiCode = "";
    reactionType = "unicode_emoji";
  } else if (emojiName !== undefined) {
    if (emojiCode === undefined || reactionType === undefined) {
      const data = await resolveEmojiName(ctx, state.realmId, emojiName);
      emojiCode ??= data.emojiCode;
      reactionType ??= data.reactionType;
    }
    await checkEmoji(ctx, state.realmId, emojiName, emojiCode, reactionType);
  } else if (emojiCode !== undefined || reactionType !== undefined) {
    throw errors.emojiNameRequired();
  }

  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  if (away !== undefined) {
    // `away` is the deprecated inverse of presence_enabled.
    const own = await settingsDecision(state, ctx, { presence_enabled: !away }, true, false);
    facts.push(...own.facts);
    events.push(...own.events);
  }
  const statusFact: UserFact = { type: "status" };
  if (statusText !== undefined) statusFact.statusText = statusText;
  if (emojiName !== undefined) {
    statusFact.emojiName = emojiName;
    statusFact.emojiCode = emojiCode!;
    statusFact.reactionType = reactionType!;
  }
  facts.push(fact(statusFact));

  // Zulip's event carries the fields the client passed.
  const event: Obj = { type: "user_status", user_id: state.userId };
  if (away !== undefined) event.away = away;
  if (statusText !== undefined) event.status_text = statusText;
  if (emojiName !== undefined) {
    event.emoji_name = emojiName;
    event.emoji_code = emojiCode!;
    event.reaction_type = reactionType!;
  }
  const statusEvent: OutEvent = { event, userIds: [], everyone: true };
  events.push(statusEvent);
  // Not to guests who cannot access the user (FL 228).
  const guests = new Set(realm.activeGuestIds ?? []);
  const handoffs = await withholdGuestCopies(ctx, state.realmId, state.userId, guests, [statusEvent]);
  return { facts, events, handoffs, reply: {} };
}

export const userBehavior = defineBehavior<UserState, UserProtocol>({
  kind: "user",
  protocol: userProtocol,
  initial: initialUser,
  // Message flags (flags.ts), drafts (drafts.ts) and scheduled messages fold their own facts; applyUserFact ignores them.
  apply: (state, f) =>
    applyNavigationViewFact(
      applyScheduledFact(applyDraftFact(applyFlagFact(applyUserFact(state, f), f), f), f),
      f,
    ),
  toSnapshot: userToSnapshot,
  fromSnapshot: userFromSnapshot,
  handlers: handlersOf<UserState, UserProtocol>()({
    create,
    profile,
    userSettings,
    userStatus,
    login,
    updateSettings,
    applySettings,
    updateStatus,
    ...flagHandlers,
    ...topicHandlers,
    ...savedSnippetHandlers,
    ...pushTokenHandlers,
    ...exportConsentHandlers,
    ...pushTestHandlers,
    ...pushNotifyHandlers,
    ...deviceHandlers,
    ...emailSyncHandlers,
    ...sentMessageHandlers,
    ...markReadHandlers,
    ...readReceiptHandlers,
    ...registerStateHandlers,
    ...dmPeerHandlers,
    ...typingHandlers,
    ...draftHandlers,
    ...alertWordHandlers,
    ...mutedUserHandlers,
    ...scheduledMessageHandlers,
    ...autoTopicHandlers,
    ...reminderHandlers,
    ...navigationViewHandlers,
    updateStatusByAdmin,
  }),
  // A conversation's history read asks for the caller's flags of the ids it
  // visits: answered from the last durable state (every flag change
  // acknowledged before the read began is in it), beside the user's
  // pending writes (a busy sender's deliveries), never making them commit
  // early. Flag facts copy what they keep (applyFlagFact).
  readers: ["messageFlags"] satisfies MethodOf<UserProtocol>[],
  // The committed copy is taken by the first read, not at every activation:
  // most user actors are activated for writes (deliveries, settings) only.
  servesReaders: () => false,
});
