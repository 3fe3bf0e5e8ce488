// The realm's view of its users as API user objects (Zulip's
// format_user_row), shaped for one viewer: email visibility, gravatar
// elision and the spectator form.

import type { Obj } from "../types.ts";
import {
  ROLE_GUEST,
  ROLE_MODERATOR,
  ROLE_OWNER,
  gravatarUrl,
  isAdminRole,
  isoMinutes,
} from "../user/index.ts";
import type { DirEntry, RealmState } from "./state.ts";

/** Zulip's UserProfile.EMAIL_ADDRESS_VISIBILITY_* values. */
export const EMAIL_VISIBILITY = { everyone: 1, members: 2, admins: 3, nobody: 4, moderators: 5 } as const;

export interface FormatOptions {
  clientGravatar: boolean;
  includeCustomProfileFields: boolean;
}

/** Zulip's can_access_delivery_email. */
export function canSeeDeliveryEmail(viewer: DirEntry | null, target: DirEntry): boolean {
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

/** The API email: the real address when everyone may see it, else user<id>@<realm host>. */
export function apiEmail(state: RealmState, target: DirEntry): string {
  if (target.isBot || target.emailVisibility === EMAIL_VISIBILITY.everyone) return target.email;
  return `user${target.userId}@${state.host}`;
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
    // Spectators get the date only and no timezone (zulip-facts §9).
    date_joined: viewer === null ? isoMinutes(target.dateJoined).slice(0, 10) : isoMinutes(target.dateJoined),
    is_active: target.isActive,
    is_owner: target.role === ROLE_OWNER,
    is_admin: isAdminRole(target.role),
    is_guest: target.role === ROLE_GUEST,
    is_bot: target.isBot,
    role: target.role,
    // Avatars are gravatar-hosted until uploads exist; a client that asked
    // for client_gravatar computes the URL itself, if it knows the email.
    avatar_url:
      opts.clientGravatar && realEmailShown ? null : gravatarUrl(target.email, target.avatarVersion),
    avatar_version: target.avatarVersion,
    is_imported_stub: false,
  };
  if (viewer !== null) out.timezone = target.timezone;
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
