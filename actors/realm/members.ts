// The realm's view of its users as API user objects (Zulip's
// format_user_row), shaped for one viewer: email visibility, gravatar
// elision and the spectator form.

import type { Obj } from "../types.ts";
import {
  ROLE_GUEST,
  ROLE_MODERATOR,
  ROLE_OWNER,
  emailKey,
  isAdminRole,
  isoMinutes,
  isValidEmail,
  avatarUrlOf,
} from "../user/index.ts";
import type { DirEntry, RealmState } from "./state.ts";

/** Zulip's UserProfile.EMAIL_ADDRESS_VISIBILITY_* values. */
export const EMAIL_VISIBILITY = { everyone: 1, members: 2, admins: 3, nobody: 4, moderators: 5 } as const;

export interface FormatOptions {
  clientGravatar: boolean;
  includeCustomProfileFields: boolean;
}

// Who sees which address of a user. Every response and event that names a
// user by email goes through the three functions below, so that the rule
// lives in one place:
// - apiEmail: the `email` field everywhere (user objects, sender_email,
//   display_recipient, reaction users...): the same for every viewer, the
//   real address only under visibility "everyone" (Zulip's
//   get_display_email_address), else the dummy user<id>@<realm host>;
// - canSeeDeliveryEmail: whether `delivery_email` carries the real address
//   for this viewer (Zulip's can_access_delivery_email);
// - visibleEmail: the address this viewer may know the user by: what a
//   gravatar URL is computed from (an MD5 of a hidden address would leak
//   it) and what a lookup by email may match.

/** Zulip's can_access_delivery_email. A null viewer (spectator) sees none. */
export function canSeeDeliveryEmail(
  viewer: Pick<DirEntry, "userId" | "role"> | null,
  target: DirEntry,
): boolean {
  if (viewer === null) return false;
  if (viewer.userId === target.userId || target.isBot) return true;
  switch (target.emailVisibility) {
    case EMAIL_VISIBILITY.everyone:
      return true;
    case EMAIL_VISIBILITY.members:
      return viewer.role !== ROLE_GUEST;
    case EMAIL_VISIBILITY.admins:
      return isAdminRole(viewer.role);
    case EMAIL_VISIBILITY.moderators:
      return viewer.role <= ROLE_MODERATOR;
    default:
      return false;
  }
}

/**
 * Zulip's get_fake_email_domain, the domain of bot addresses and dummy
 * addresses: the realm's host when `bot@<host>` is a valid address, else
 * FAKE_EMAIL_DOMAIN, whose default is the host without its port (a host
 * like `localhost:9991` makes no valid address).
 */
export function fakeEmailDomain(host: string): string {
  const h = host.toLowerCase();
  return isValidEmail(`bot@${h}`) ? h : h.replace(/:\d*$/, "");
}

/** The dummy address standing for a hidden one. */
export function dummyEmail(host: string, userId: number): string {
  return `user${userId}@${fakeEmailDomain(host)}`;
}

/** The API email: the real address when everyone may see it, else the dummy one. */
export function apiEmail(state: Pick<RealmState, "host">, target: DirEntry): string {
  if (target.isBot || target.emailVisibility === EMAIL_VISIBILITY.everyone) return target.email;
  return dummyEmail(state.host, target.userId);
}

/** The address `viewer` may know `target` by: the real one if allowed, else the API email. */
export function visibleEmail(
  state: Pick<RealmState, "host">,
  viewer: Pick<DirEntry, "userId" | "role"> | null,
  target: DirEntry,
): string {
  return canSeeDeliveryEmail(viewer, target) ? target.email : apiEmail(state, target);
}

/**
 * A user's avatar URL as `viewer` gets it: a gravatar of the address the
 * viewer may know (see visibleEmail), or the user's Jdenticon.
 */
export function avatarUrlFor(
  state: Pick<RealmState, "host" | "realmId">,
  viewer: Pick<DirEntry, "userId" | "role"> | null,
  target: DirEntry,
  medium = false,
): string {
  return avatarUrlOf(
    {
      realmId: state.realmId,
      userId: target.userId,
      email: target.avatarSource === "J" ? "" : visibleEmail(state, viewer, target),
      avatarVersion: target.avatarVersion,
      ...(target.avatarSource === "J" ? { avatarSource: "J" } : {}),
    },
    medium,
  );
}

/**
 * The user `email` names for `viewer`: its API email (real or dummy), or
 * its real address when the viewer may see it. A hidden real address is
 * answered like an unknown one, so a lookup cannot probe for it.
 */
export function findByEmail(
  state: RealmState,
  viewer: Pick<DirEntry, "userId" | "role"> | null,
  email: string,
): DirEntry | undefined {
  const direct = state.users[emailKey(email)];
  if (direct && canSeeDeliveryEmail(viewer, direct)) return direct;
  if (direct && apiEmail(state, direct) === direct.email) return direct;
  const m = /^user(\d{1,15})@([^@]+)$/i.exec(email.trim());
  if (!m || m[2]!.toLowerCase() !== fakeEmailDomain(state.host)) return undefined;
  const key = state.emailById[String(Number(m[1]))];
  const target = key === undefined ? undefined : state.users[key];
  return target && apiEmail(state, target) !== target.email ? target : undefined;
}

export function formatMember(
  state: RealmState,
  target: DirEntry,
  viewer: DirEntry | null,
  opts: FormatOptions,
): Obj {
  const email = apiEmail(state, target);
  const realEmailShown = email === target.email;
  const out: Obj = {
    user_id: target.userId,
    email,
    delivery_email: canSeeDeliveryEmail(viewer, target) ? target.email : null,
    full_name: target.fullName,
    // Spectators get the date only and no timezone (as Zulip's user object for spectators).
    date_joined: viewer === null ? isoMinutes(target.dateJoined).slice(0, 10) : isoMinutes(target.dateJoined),
    is_active: target.isActive,
    is_owner: target.role === ROLE_OWNER,
    is_admin: isAdminRole(target.role),
    is_guest: target.role === ROLE_GUEST,
    is_bot: target.isBot,
    role: target.role,
    // Avatars are gravatar-hosted until uploads exist; a client that asked
    // for client_gravatar computes the URL itself, if it knows the email.
    // (Zulip's get_avatar_field: only a gravatar is left to the client.)
    avatar_url:
      opts.clientGravatar && realEmailShown && target.avatarSource !== "J"
        ? null
        : avatarUrlFor(state, viewer, target),
    avatar_version: target.avatarVersion,
    is_imported_stub: false,
  };
  if (viewer !== null) out.timezone = target.timezone;
  // Zulip sends is_deleted only when true (FL 490).
  if (target.isDeleted === true) out.is_deleted = true;
  if (target.isBot) {
    out.bot_type = target.botType;
    out.bot_owner_id = target.botOwnerId;
  } else if (opts.includeCustomProfileFields) {
    out.profile_data = formatProfileData(target);
  }
  return out;
}

/** A user's profile_data: field id -> {value, rendered_value for Markdown-capable types}. */
export function formatProfileData(target: DirEntry): Obj {
  const out: Obj = {};
  for (const [id, v] of Object.entries(target.profileData ?? {})) {
    out[id] = v.rendered === undefined ? { value: v.value } : { value: v.value, rendered_value: v.rendered };
  }
  return out;
}
