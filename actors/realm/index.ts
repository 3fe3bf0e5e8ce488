// The realm kind's door: siblings import only from here.

export { realmBehavior } from "./behavior.ts";
export { REALM_SETTING_DEFAULTS } from "./defaults.ts";
export { AUTH_ATTEMPTS_MAX, AUTH_WINDOW_MS } from "./rate-limit.ts";
export { FIELD_TYPES } from "./profile-fields.ts";
export { userDefaultSettings } from "./user-defaults.ts";
export { realmRef } from "./refs.ts";
export {
  MEMBER_DEFAULTS,
  MEMBER_EMAIL,
  MEMBER_GONE,
  MEMBER_KEY,
  MEMBER_ROLE,
  MEMBER_SUBJECTS,
  runMemberHandoffs,
} from "./member-handoffs.ts";
export { UNKNOWN_USER_ADD, UNKNOWN_USER_NAME } from "./user-access.ts";
export type { DirEntry, RealmState } from "./state.ts";
export type { MessageLimits, RealmProtocol } from "./protocol.ts";
export {
  NOTIFICATION_BOT_EMAIL,
  NOTIFICATION_BOT_ENTRY,
  NOTIFICATION_BOT_ID,
  NOTIFICATION_BOT_NAME,
  WELCOME_BOT_ENTRY,
  WELCOME_BOT_ID,
} from "./system-bot.ts";
export { ANNOUNCEMENT_STREAM_SETTINGS, REALM_BOOL_PROPERTIES, REALM_CHOICE_PROPERTIES } from "./defaults.ts";
export { INVITE_ACCEPTED, INVITE_AS, INVITE_EMAIL } from "./invites.ts";
