// How a user looks in the API: Zulip's format_user_row (zerver/lib/users.py),
// the user_settings object of /register, and the user_status map entry.

import type { Obj } from "../types.ts";
import { EMOJISET_CHOICES, NOTIFICATION_SOUNDS, SETTINGS } from "./settings.ts";
import type { UserState } from "./state.ts";
import { avatarUrlOf } from "./avatar.ts";
import { isAdminRole, isoMinutes, ROLE_GUEST, ROLE_OWNER } from "./validate.ts";

/**
 * The user object for a viewer that may see the real email (every viewer
 * under the default email_address_visibility, 1 = everyone).
 */
export function formatUser(u: UserState): Obj {
  const out: Obj = {
    email: u.email,
    user_id: u.userId,
    avatar_version: u.avatarVersion,
    is_admin: isAdminRole(u.role),
    is_owner: u.role === ROLE_OWNER,
    is_guest: u.role === ROLE_GUEST,
    role: u.role,
    is_bot: u.isBot,
    full_name: u.fullName,
    timezone: u.timezone,
    is_active: u.isActive,
    date_joined: isoMinutes(u.dateJoined),
    delivery_email: u.email,
    avatar_url: avatarUrlOf(u),
    is_imported_stub: false,
  };
  if (u.isBot) {
    out.bot_type = u.botType;
    out.bot_owner_id = u.botOwnerId;
  } else {
    out.profile_data = {};
  }
  return out;
}

/** Effective value of one setting. */
export function settingValue(u: UserState, name: string): Obj[string] {
  return Object.hasOwn(u.settings, name) ? u.settings[name]! : SETTINGS[name]!.default;
}

/** The `user_settings` object of POST /register. */
export function formatUserSettings(u: UserState): Obj {
  const out: Obj = {};
  for (const name of Object.keys(SETTINGS)) out[name] = settingValue(u, name);
  out.timezone = u.timezone;
  out.emojiset_choices = EMOJISET_CHOICES.map((e) => ({ key: e.key, text: e.text }));
  out.available_notification_sounds = [...NOTIFICATION_SOUNDS];
  return out;
}

/** A user's entry in /register's `user_status` map: only non-default keys. */
export function formatUserStatus(u: UserState): Obj {
  const out: Obj = {};
  if (settingValue(u, "presence_enabled") === false) out.away = true;
  if (u.status.statusText) out.status_text = u.status.statusText;
  if (u.status.emojiName) {
    out.emoji_name = u.status.emojiName;
    out.emoji_code = u.status.emojiCode;
    out.reaction_type = u.status.reactionType;
  }
  return out;
}
