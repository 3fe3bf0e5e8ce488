// Invitations (Zulip's PreregistrationUser and MultiuseInvite with their
// Confirmation keys): GET/POST /invites, POST /invites/multiuse, revoking,
// resending, and accepting one on the sign-up page. The realm owns them
// because it owns the members an invitation turns into: accepting checks
// the key and creates the user in one turn, so a single-use invitation
// makes exactly one account.
//
// The actor never touches the network: an email to send and the follow-up
// of a sign-up (channels, groups, the referrer's notice) leave as durable
// hand-offs to the node's invite worker (cluster/invite-worker.ts), which
// sends the mail over SMTP and calls the channel and group directories.
// The channel and group checks of a new invitation run before this actor
// is called (the gateway asks those directories), since they call the
// realm themselves and a realm turn must never wait on them.

import { randomBytes } from "node:crypto";
import { dict, own } from "../dict.ts";
import { errors } from "../errors.ts";
import { isUserInGroupSetting, realmGroupSetting } from "../permissions/index.ts";
import type { ArgsOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj, OutEvent } from "../types.ts";
import {
  ROLE_ADMINISTRATOR,
  ROLE_GUEST,
  ROLE_OWNER,
  checkFullName,
  emailKey,
  isAdminRole,
  isStrongPassword,
  isValidEmail,
} from "../user/index.ts";
import { realmSetting } from "./defaults.ts";
import { actorOf, requireCreated } from "./member-helpers.ts";
import { addUser } from "./add-user.ts";
import type { RealmHandler } from "./handler.ts";
import type { RealmProtocol } from "./protocol.ts";
import type {
  DirEntry,
  EmailInvite,
  InviteBase,
  InviteState,
  MultiuseInvite,
  RealmFact,
  RealmState,
} from "./state.ts";
import { welcomeHandoff } from "./welcome-messages.ts";

/** Hand-off subjects of the node's invite worker. */
export const INVITE_EMAIL = "invite.email";
export const INVITE_ACCEPTED = "invite.accepted";

/** Zulip's INVITATION_LINK_VALIDITY_DAYS (10) in minutes: the default expiry. */
export const INVITATION_LINK_VALIDITY_MINUTES = 10 * 24 * 60;
/**
 * Invitations sent per organization in 24 hours (Zulip's
 * INVITES_DEFAULT_REALM_DAILY_MAX). Zulip applies it only on servers with
 * open realm creation; here always, since every email costs a real send.
 */
export const INVITES_DAILY_MAX = 100;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Zulip's INVITES_MIN_USER_AGE_DAYS: how old an account must be to invite into an open organization. */
const INVITES_MIN_USER_AGE_DAYS = 3;
/** Latest expiry accepted (year 9999, Python's datetime limit). */
const MAX_EXPIRY_MS = 253402300799000;

/** Roles an invitation may grant (Zulip's PreregistrationUser.INVITE_AS). */
export const INVITE_AS = [100, 200, 300, 400, 600];

const PENDING = 0;
const USED = 1;
const REVOKED = 2;

export type InviteFact =
  | { type: "invitesAdded"; invites: EmailInvite[]; at: number }
  | { type: "multiuseInviteAdded"; invite: MultiuseInvite }
  | { type: "inviteRevoked"; id: number; multiuse: boolean }
  | { type: "inviteResent"; id: number; at: number }
  | { type: "inviteUsed"; id: number };

const INVITE_FACTS = new Set([
  "invitesAdded",
  "multiuseInviteAdded",
  "inviteRevoked",
  "inviteResent",
  "inviteUsed",
]);

export function isInviteFact(fact: { type: string }): fact is InviteFact {
  return INVITE_FACTS.has(fact.type);
}

function emptyInvites(): InviteState {
  return { email: {}, multiuse: {}, keys: dict(), sent: [] };
}

function noteSent(s: InviteState, at: number, count: number): void {
  // The window moves with the facts' own times, so replay folds the same way.
  let drop = 0;
  while (drop < s.sent.length && s.sent[drop]! <= at - DAY_MS) drop++;
  if (drop) s.sent = s.sent.slice(drop);
  for (let i = 0; i < count; i++) s.sent.push(at);
}

export function applyInviteFact(state: { invites?: InviteState }, fact: InviteFact): void {
  const s = (state.invites ??= emptyInvites());
  switch (fact.type) {
    case "invitesAdded":
      for (const inv of fact.invites) {
        s.email[String(inv.id)] = { ...inv, streamIds: [...inv.streamIds], groupIds: [...inv.groupIds] };
        s.keys[inv.key] = { multiuse: false, id: inv.id };
      }
      noteSent(s, fact.at, fact.invites.length);
      break;
    case "multiuseInviteAdded": {
      const inv = fact.invite;
      s.multiuse[String(inv.id)] = { ...inv, streamIds: [...inv.streamIds], groupIds: [...inv.groupIds] };
      s.keys[inv.key] = { multiuse: true, id: inv.id };
      break;
    }
    case "inviteRevoked":
      if (fact.multiuse) {
        const inv = s.multiuse[String(fact.id)];
        if (inv) inv.revoked = true;
      } else {
        const inv = s.email[String(fact.id)];
        if (inv) inv.status = REVOKED;
      }
      break;
    case "inviteResent":
      noteSent(s, fact.at, 1);
      break;
    case "inviteUsed": {
      const inv = s.email[String(fact.id)];
      if (inv) inv.status = USED;
      break;
    }
  }
}

/** A snapshot's invitations, with the key index back in its null-prototype form. */
export function invitesFromSnapshot(state: { invites?: InviteState }): void {
  if (state.invites) state.invites.keys = dict(state.invites.keys);
}

function fact(f: InviteFact): Obj {
  return f as unknown as Obj;
}

/** Zulip's Confirmation key: 24 characters of [a-z0-9]. */
function newKey(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  while (out.length < 24) {
    for (const b of randomBytes(32)) {
      // 252 = 7 * 36: rejecting larger bytes keeps the draw uniform.
      if (b < 252 && out.length < 24) out += alphabet[b % 36];
    }
  }
  return out;
}

/** An invitation's parameters (POST /invites and /invites/multiuse). */
type InvitationArgs = ArgsOf<RealmProtocol, "createMultiuseInvite">;

function realmBase(state: RealmState, args: { scheme?: string }): string {
  // The gateway says whether the client came over https; the host is the
  // organization's own, never the request's.
  const scheme = args.scheme === "https" ? "https" : "http";
  return `${scheme}://${state.host}`;
}

function emailLink(base: string, key: string): string {
  return `${base}/accounts/do_confirm/${key}`;
}

function multiuseLink(base: string, key: string): string {
  return `${base}/join/${key}/`;
}

function expired(inv: InviteBase, now: number): boolean {
  return inv.expiresAt !== null && inv.expiresAt <= now;
}

/** Zulip's require_member_or_admin, then the acting user's entry. */
function inviter(state: RealmState, caller: Caller | null): DirEntry {
  requireCreated(state);
  const me = actorOf(state, caller);
  if (me.isBot) throw errors.botsNotAllowed();
  if (me.role === ROLE_GUEST) throw errors.notAllowedForGuests();
  return me;
}

/** Zulip's check_role_based_permissions. */
function checkRole(me: DirEntry, invitedAs: number, requireAdmin: boolean): void {
  if (invitedAs === ROLE_OWNER && me.role !== ROLE_OWNER) throw errors.mustBeOwner();
  if (requireAdmin && !isAdminRole(me.role)) throw errors.inviteNeedsAdmin();
}

function invitedAsArg(args: InvitationArgs): number {
  const v = args.invite_as ?? 400;
  if (!INVITE_AS.includes(v)) throw errors.invalid("invite_as");
  return v;
}

function idList(ids: readonly number[] | null | undefined): number[] {
  return [...new Set(ids ?? [])];
}

function expiryArg(args: InvitationArgs, now: number): number | null {
  const v = args.invite_expires_in_minutes;
  if (v === null) return null;
  if (v === undefined) return now + INVITATION_LINK_VALIDITY_MINUTES * 60_000;
  const at = now + v * 60_000;
  if (at > MAX_EXPIRY_MS) throw errors.invalid("invite_expires_in_minutes");
  return at;
}

/**
 * The permission checks of invite_users_backend and
 * generate_multiuse_invite_backend, in their order, up to the channel and
 * group checks (which the gateway asks of those directories next).
 */
async function checkMayInvite(
  state: RealmState,
  ctx: ActorContext,
  caller: Caller | null,
  args: InvitationArgs,
  multiuse: boolean,
): Promise<{ me: DirEntry; invitedAs: number }> {
  const me = inviter(state, caller);
  const setting = multiuse ? "create_multiuse_invite_group" : "can_invite_users_group";
  const value = await realmGroupSetting(ctx, state.realmId, setting);
  if (!(await isUserInGroupSetting(ctx, state.realmId, value, me.userId, { allowEveryone: false })))
    throw errors.insufficientPermission();
  const invitedAs = invitedAsArg(args);
  checkRole(me, invitedAs, invitedAs === ROLE_OWNER || invitedAs === ROLE_ADMINISTRATOR);
  if (!multiuse && (args.invitee_emails === undefined || args.invitee_emails === ""))
    throw errors.inviteNoEmails();
  // FL 416: only administrators choose an invitation's welcome text.
  if (typeof args.welcome_message_custom_text === "string" && !isAdminRole(me.role))
    throw errors.welcomeTextNeedsAdmin();
  return { me, invitedAs };
}

function welcomeTextArg(args: InvitationArgs): { welcomeText?: string } {
  const t = args.welcome_message_custom_text;
  return typeof t === "string" ? { welcomeText: t } : {};
}

/** Zulip's get_invitee_emails_set: split on commas and newlines, "Name <addr>" -> addr, stripped. */
export function inviteeEmails(raw: string): string[] {
  const out = new Set<string>();
  for (const part of raw.split(/[,\n]/)) {
    // Python's re.search("<(.*)>"): from the first "<" to the last ">" after it.
    const open = part.indexOf("<");
    const close = part.lastIndexOf(">");
    const email = open >= 0 && close > open ? part.slice(open + 1, close) : part;
    out.add(email.trim());
  }
  return [...out];
}

/** Zulip's notify_invites_changed: administrators (bots too) and the invitation's referrer. */
function invitesChanged(state: RealmState, referrerId: number): OutEvent {
  const to = new Set(state.userIndex.activeAdmins);
  const ref = memberOf(state, referrerId);
  if (ref?.isActive) to.add(referrerId);
  return { event: { type: "invites_changed" }, userIds: [...to].sort((a, b) => a - b) };
}

/** One invites_changed for administrators and every referrer concerned (none when nobody is). */
function invitesChangedFor(state: RealmState, referrerIds: Set<number>): OutEvent[] {
  if (referrerIds.size === 0) return [];
  const to = new Set(state.userIndex.activeAdmins);
  for (const id of referrerIds) if (memberOf(state, id)?.isActive) to.add(id);
  return [{ event: { type: "invites_changed" }, userIds: [...to].sort((a, b) => a - b) }];
}

function memberOf(state: RealmState, userId: number): DirEntry | undefined {
  const key = state.emailById[String(userId)];
  return key === undefined ? undefined : state.users[key];
}

function dailyLimitError() {
  return errors.invitationFailed(
    "To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.",
    [],
    false,
    true,
  );
}

function sentToday(state: RealmState, now: number): number {
  const sent = state.invites?.sent ?? [];
  let n = 0;
  for (let i = sent.length - 1; i >= 0 && sent[i]! > now - DAY_MS; i--) n++;
  return n;
}

function emailHandoff(state: RealmState, me: DirEntry, inv: EmailInvite, base: string, seq: number) {
  return {
    subject: INVITE_EMAIL,
    data: {
      // Names one send, so a hand-off given again is not mailed twice.
      mailId: `${state.realmId}:${inv.id}:${seq}`,
      to: inv.email,
      realmName: state.name,
      referrerName: me.fullName,
      referrerEmail: me.email,
      link: emailLink(base, inv.key),
      expiresAt: inv.expiresAt,
    },
  };
}

/**
 * Zulip's revoke_invites_generated_by_user: a deactivated user's pending
 * invitations and live reusable links stop working (administrators hear of
 * it). Part of the deactivation's own fact batch.
 */
export function revokeInvitesBy(state: RealmState, userId: number): { facts: Obj[]; events: OutEvent[] } {
  const facts: Obj[] = [];
  for (const inv of Object.values(state.invites?.email ?? {}))
    if (inv.referrerId === userId && inv.status === PENDING)
      facts.push(fact({ type: "inviteRevoked", id: inv.id, multiuse: false }));
  for (const inv of Object.values(state.invites?.multiuse ?? {}))
    if (inv.referrerId === userId && !inv.revoked)
      facts.push(fact({ type: "inviteRevoked", id: inv.id, multiuse: true }));
  if (!facts.length) return { facts, events: [] };
  const admins = [...state.userIndex.activeAdmins].filter((id) => id !== userId).sort((a, b) => a - b);
  return { facts, events: admins.length ? [{ event: { type: "invites_changed" }, userIds: admins }] : [] };
}

// ---- handlers --------------------------------------------------------------------

/** The gateway's first step of POST /invites and /invites/multiuse: may the caller invite at all? */
const checkInvite: RealmHandler<"checkInvite"> = async (state, args, ctx, caller) => {
  await checkMayInvite(state, ctx, caller, args, args.multiuse);
  return { reply: {} };
};

/**
 * POST /invites, after the channel and group checks: validates the
 * addresses (do_invite_users), records the invitations and hands their
 * emails to the worker. Reply: `skipped`, the addresses that already have
 * an account when others were invited (the gateway answers Zulip's
 * partial-success error).
 */
const createInvites: RealmHandler<"createInvites"> = async (state, args, ctx, caller) => {
  const { me, invitedAs } = await checkMayInvite(state, ctx, caller, args, false);
  const now = ctx.now();
  const emails = inviteeEmails(args.invitee_emails);
  if (emails.length + sentToday(state, now) > INVITES_DAILY_MAX) throw dailyLimitError();
  // In an organization anyone may join, a brand-new account may not
  // invite others (spam); administrators may.
  if (
    realmSetting(state, "invite_required") === false &&
    me.dateJoined > now - INVITES_MIN_USER_AGE_DAYS * DAY_MS &&
    !isAdminRole(me.role)
  )
    throw errors.invitationFailed(
      "Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.",
      [],
      false,
    );
  const expiresAt = expiryArg(args, now);
  const streamIds = idList(args.stream_ids);
  const groupIds = idList(args.group_ids);

  const bad: [string, string, boolean][] = [];
  const good: string[] = [];
  for (const email of emails) {
    if (!isValidEmail(email)) bad.push([email, errors.invalidAddress().message, false]);
    else good.push(email);
  }
  const skipped: [string, string, boolean][] = [];
  const fresh: string[] = [];
  for (const email of good) {
    const holder = own(state.users, emailKey(email));
    if (holder?.isActive) skipped.push([email, errors.alreadyHasAccount().message, false]);
    else if (holder) skipped.push([email, errors.accountDeactivatedEmail().message, true]);
    else fresh.push(email);
  }
  if (bad.length)
    throw errors.invitationFailed(
      "Some emails did not validate, so we didn't send any invitations.",
      [...bad, ...skipped],
      false,
    );
  if (skipped.length && skipped.length === emails.length)
    throw errors.invitationFailed("We weren't able to invite anyone.", skipped, false);

  const base = realmBase(state, args);
  const invites: EmailInvite[] = [];
  for (const email of fresh) {
    invites.push({
      id: await ctx.nextId(`invite.${state.realmId}`),
      email,
      referrerId: me.userId,
      invitedAt: now,
      expiresAt,
      invitedAs,
      streamIds,
      groupIds,
      includeDefaults: args.include_realm_default_subscriptions === true,
      notifyReferrer: args.notify_referrer_on_join !== false,
      key: newKey(),
      status: PENDING,
      ...welcomeTextArg(args),
    });
  }
  return {
    facts: [fact({ type: "invitesAdded", invites, at: now })],
    events: [invitesChanged(state, me.userId)],
    handoffs: invites.map((inv) => emailHandoff(state, me, inv, base, 0)),
    reply: { skipped },
  };
};

/** POST /invites/multiuse, after the channel and group checks. */
const createMultiuseInvite: RealmHandler<"createMultiuseInvite"> = async (state, args, ctx, caller) => {
  const { me, invitedAs } = await checkMayInvite(state, ctx, caller, args, true);
  const now = ctx.now();
  const invite: MultiuseInvite = {
    id: await ctx.nextId(`multiuse.${state.realmId}`),
    referrerId: me.userId,
    invitedAt: now,
    expiresAt: expiryArg(args, now),
    invitedAs,
    streamIds: idList(args.stream_ids),
    groupIds: idList(args.group_ids),
    includeDefaults: args.include_realm_default_subscriptions === true,
    key: newKey(),
    revoked: false,
    ...welcomeTextArg(args),
  };
  return {
    facts: [fact({ type: "multiuseInviteAdded", invite })],
    events: [invitesChanged(state, me.userId)],
    reply: { invite_link: multiuseLink(realmBase(state, args), invite.key) },
  };
};

function seconds(ms: number | null): number | null {
  return ms === null ? null : Math.floor(ms / 1000);
}

/** GET /invites: do_get_invites_controlled_by_user. */
const listInvites: RealmHandler<"listInvites"> = (state, args, ctx, caller) => {
  const me = inviter(state, caller);
  const all = isAdminRole(me.role);
  const now = ctx.now();
  const base = realmBase(state, args);
  const out: Obj[] = [];
  for (const inv of Object.values(state.invites?.email ?? {})) {
    if (inv.status !== PENDING || expired(inv, now) || (!all && inv.referrerId !== me.userId)) continue;
    out.push({
      email: inv.email,
      invited_by_user_id: inv.referrerId,
      invited: seconds(inv.invitedAt),
      expiry_date: seconds(inv.expiresAt),
      id: inv.id,
      invited_as: inv.invitedAs,
      is_multiuse: false,
      notify_referrer_on_join: inv.notifyReferrer,
    });
  }
  for (const inv of Object.values(state.invites?.multiuse ?? {})) {
    if (inv.revoked || expired(inv, now) || (!all && inv.referrerId !== me.userId)) continue;
    out.push({
      invited_by_user_id: inv.referrerId,
      invited: seconds(inv.invitedAt),
      expiry_date: seconds(inv.expiresAt),
      id: inv.id,
      link_url: multiuseLink(base, inv.key),
      invited_as: inv.invitedAs,
      is_multiuse: true,
    });
  }
  return { reply: { invites: out } };
};

/** Zulip's access_invite_by_id (an email invitation still pending). */
function accessEmailInvite(state: RealmState, me: DirEntry, inviteId: number): EmailInvite {
  const inv = own(state.invites?.email, String(inviteId));
  if (!inv || inv.status !== PENDING) throw errors.noSuchInvitation();
  if (inv.referrerId !== me.userId) checkRole(me, inv.invitedAs, true);
  return inv;
}

/** DELETE /invites/{invite_id}. */
const revokeInvite: RealmHandler<"revokeInvite"> = (state, args, _ctx, caller) => {
  const inv = accessEmailInvite(state, inviter(state, caller), args.invite_id);
  return {
    facts: [fact({ type: "inviteRevoked", id: inv.id, multiuse: false })],
    events: [invitesChanged(state, inv.referrerId)],
    reply: {},
  };
};

/** DELETE /invites/multiuse/{invite_id}: Zulip's access_multiuse_invite_by_id. */
const revokeMultiuseInvite: RealmHandler<"revokeMultiuseInvite"> = (state, args, _ctx, caller) => {
  const me = inviter(state, caller);
  const inv = own(state.invites?.multiuse, String(args.invite_id));
  if (!inv) throw errors.noSuchInvitation();
  if (inv.referrerId !== me.userId) checkRole(me, inv.invitedAs, true);
  if (inv.revoked) throw errors.invitationAlreadyRevoked();
  return {
    facts: [fact({ type: "inviteRevoked", id: inv.id, multiuse: true })],
    events: [invitesChanged(state, inv.referrerId)],
    reply: {},
  };
};

/** POST /invites/{invite_id}/resend: the same link again, within the daily limit. */
const resendInvite: RealmHandler<"resendInvite"> = (state, args, ctx, caller) => {
  const me = inviter(state, caller);
  const inv = accessEmailInvite(state, me, args.invite_id);
  const now = ctx.now();
  if (sentToday(state, now) + 1 > INVITES_DAILY_MAX) throw dailyLimitError();
  const referrer = memberOf(state, inv.referrerId) ?? me;
  return {
    facts: [fact({ type: "inviteResent", id: inv.id, at: now })],
    handoffs: [emailHandoff(state, referrer, inv, realmBase(state, args), now)],
    reply: {},
  };
};

/** The invitation behind a sign-up link, or the page's error. */
function byKey(state: RealmState, key: string, now: number): EmailInvite | MultiuseInvite {
  const ref = own(state.invites?.keys, key);
  if (!ref) throw errors.confirmationNotFound();
  const inv = ref.multiuse ? state.invites!.multiuse[String(ref.id)]! : state.invites!.email[String(ref.id)]!;
  const live = "revoked" in inv ? !inv.revoked : inv.status === PENDING;
  if (!live || expired(inv, now)) throw errors.confirmationExpired();
  return inv;
}

/** The sign-up page's GET: what the form shows (no account is touched). */
const inviteInfo: RealmHandler<"inviteInfo"> = (state, args, ctx) => {
  requireCreated(state);
  const inv = byKey(state, args.key, ctx.now());
  return { reply: { realmName: state.name, email: "email" in inv ? inv.email : null } };
};

/**
 * The sign-up page's POST: checks the form like Zulip's registration form,
 * creates the account with the invitation's role, marks a single-use
 * invitation used, and hands the channels, groups and referrer notice to
 * the worker; answers once those are done, so the new user's first
 * /register already has them.
 */
const acceptInvite: RealmHandler<"acceptInvite"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  if (caller) throw errors.accessDenied();
  if (state.deactivated) throw errors.confirmationExpired();
  const inv = byKey(state, args.key, ctx.now());
  const multiuse = !("email" in inv);
  const email = multiuse ? (args.email ?? "").trim() : inv.email;
  if (!isValidEmail(email)) throw errors.invalidLoginEmail();
  const fullName = checkFullName(args.fullName);
  const password = args.password;
  if (own(state.users, emailKey(email))) throw errors.emailInUse(email);
  if (!isStrongPassword(password)) throw errors.passwordTooWeak();
  // The address has an account now: its other pending invitations are
  // spent too (they could only fail), and their referrers hear of it.
  const spent: InviteFact[] = multiuse ? [] : [{ type: "inviteUsed", id: inv.id }];
  const referrers = new Set<number>(multiuse ? [] : [inv.referrerId]);
  const key = emailKey(email);
  for (const other of Object.values(state.invites?.email ?? {})) {
    if (other === inv || other.status !== PENDING || emailKey(other.email) !== key) continue;
    spent.push({ type: "inviteRevoked", id: other.id, multiuse: false });
    referrers.add(other.referrerId);
  }
  const decision = await addUser(
    state,
    ctx,
    { email, password, fullName, role: inv.invitedAs, canCreateUsers: false },
    spent as unknown as RealmFact[],
  );
  const { userId } = decision.reply!;
  // Zulip tells the referrer of an email invitation (notify_referrer_on_join)
  // through the Notification Bot, if the referrer is still active.
  const referrer = multiuse || !inv.notifyReferrer ? undefined : memberOf(state, inv.referrerId);
  const notify: Obj =
    referrer && referrer.isActive
      ? { referrerId: referrer.userId, referrerRole: referrer.role, fullName }
      : {};
  return {
    ...decision,
    events: [...(decision.events ?? []), ...invitesChangedFor(state, referrers)],
    handoffs: [
      {
        subject: INVITE_ACCEPTED,
        data: {
          realmId: state.realmId,
          userId,
          streamIds: inv.streamIds,
          groupIds: inv.groupIds,
          includeDefaults: inv.includeDefaults,
          ...notify,
        },
      },
      welcomeHandoff(state, userId, inv.invitedAs, inv.welcomeText),
    ],
    replyAfterHandoffs: true,
    reply: { userId, email },
  };
};

export const inviteHandlers = {
  checkInvite,
  createInvites,
  createMultiuseInvite,
  listInvites,
  revokeInvite,
  revokeMultiuseInvite,
  resendInvite,
  inviteInfo,
  acceptInvite,
};
