// The realm's system bots: Zulip's cross-realm Notification Bot
// (settings.NOTIFICATION_BOT, notification-bot@zulip.com) that posts the
// server's automated messages (new-channel announcements, message-move
// breadcrumbs), and Welcome Bot (settings.WELCOME_BOT,
// welcome-bot@zulip.com) that greets new users by direct message.
//
// Zulip keeps its system bots in an internal realm and shows them to every
// realm as `cross_realm_bots`. Here each realm has one, derived from the
// realm itself rather than stored as a directory entry: it exists as soon
// as the realm does (old realms included, with no migration), it never
// appears in realm_users, GET /users or the roster, it has no API key or
// password (nobody can authenticate as it), and its id sits in a range the
// realm's user counter never reaches, so allocating it shifts no user id.
// Messages from it are sent by the gateway through a conversation's `send`
// with `notification_bot: true` (Welcome Bot: `welcome_bot: true`; see
// actors/channel/conversation-handlers.ts).

import { NOTIFICATION_BOT_ID, WELCOME_BOT_ID } from "../system-bots.ts";
import type { Obj } from "../types.ts";
import { gravatarUrl, isoMinutes } from "../user/index.ts";
import type { RealmState } from "./state.ts";

// The ids live in a leaf (the user kind needs them); this module still offers them with the rest.
export { NOTIFICATION_BOT_ID, WELCOME_BOT_ID };

export const NOTIFICATION_BOT_EMAIL = "notification-bot@zulip.com";
export const NOTIFICATION_BOT_NAME = "Notification Bot";
/** Zulip's UserProfile.DEFAULT_BOT. */
const BOT_TYPE_GENERIC = 1;
const ROLE_MEMBER = 400;

/** The bot as a channel actor's roster knows users (message sender fields). */
export const NOTIFICATION_BOT_ENTRY = {
  userId: NOTIFICATION_BOT_ID,
  email: NOTIFICATION_BOT_EMAIL,
  role: ROLE_MEMBER,
  isBot: true,
  botType: BOT_TYPE_GENERIC,
  isActive: true,
  fullName: NOTIFICATION_BOT_NAME,
  avatarVersion: 1,
};

export const WELCOME_BOT_EMAIL = "welcome-bot@zulip.com";
export const WELCOME_BOT_NAME = "Welcome Bot";

/** Welcome Bot as a channel actor's roster knows users. */
export const WELCOME_BOT_ENTRY = {
  ...NOTIFICATION_BOT_ENTRY,
  userId: WELCOME_BOT_ID,
  email: WELCOME_BOT_EMAIL,
  fullName: WELCOME_BOT_NAME,
};

export function isNotificationBot(userId: number): boolean {
  return userId === NOTIFICATION_BOT_ID;
}

/** Either system bot (ids no user of the realm has). */
export function isSystemBot(userId: number): boolean {
  return userId === NOTIFICATION_BOT_ID || userId === WELCOME_BOT_ID;
}

export function isNotificationBotEmail(email: string): boolean {
  return email.trim().toLowerCase() === NOTIFICATION_BOT_EMAIL;
}

/** The system bot with this id or email, if any. */
export function systemBotEntry(
  id: number | undefined,
  email?: string,
): typeof NOTIFICATION_BOT_ENTRY | undefined {
  const e = email?.trim().toLowerCase();
  if (id === NOTIFICATION_BOT_ID || e === NOTIFICATION_BOT_EMAIL) return NOTIFICATION_BOT_ENTRY;
  if (id === WELCOME_BOT_ID || e === WELCOME_BOT_EMAIL) return WELCOME_BOT_ENTRY;
  return undefined;
}

/**
 * The bot as a user object (Zulip's get_cross_realm_dicts: format_user_row
 * with the bot as the acting user, bot_owner_id null, is_system_bot true).
 * `viewer` null is a spectator (date only, no timezone).
 */
export function formatNotificationBot(state: RealmState, spectator = false): Obj {
  return formatSystemBot(state, NOTIFICATION_BOT_ENTRY, spectator);
}

export function formatSystemBot(
  state: RealmState,
  bot: typeof NOTIFICATION_BOT_ENTRY,
  spectator = false,
): Obj {
  const out: Obj = {
    user_id: bot.userId,
    email: bot.email,
    delivery_email: bot.email,
    full_name: bot.fullName,
    date_joined: spectator ? isoMinutes(state.dateCreated).slice(0, 10) : isoMinutes(state.dateCreated),
    is_active: true,
    is_owner: false,
    is_admin: false,
    is_guest: false,
    is_bot: true,
    role: ROLE_MEMBER,
    avatar_url: gravatarUrl(bot.email, 1),
    avatar_version: 1,
    is_imported_stub: false,
    bot_type: BOT_TYPE_GENERIC,
    bot_owner_id: null,
    is_system_bot: true,
  };
  if (!spectator) out.timezone = "";
  return out;
}
