// The user kind's door: siblings import only from here.

export { userRef } from "../addresses.ts";
export { userBehavior } from "./behavior.ts";
export { avatarUrlOf, jdenticonPath, mediumAvatarUrl } from "./avatar.ts";
export { formatUser, formatUserSettings, formatUserStatus } from "./format.ts";
export { ACCESS_RELAY, withholdGuestCopies } from "./guest-access.ts";
export { LEGACY_DISPLAY_SETTINGS, LEGACY_NOTIFICATION_SETTINGS } from "./legacy-setting-events.ts";
export { hashPassword, hashPasswordAhead, verifyPassword } from "./password.ts";
export type {
  Delivery,
  DraftIn,
  FlagsWithReadThrough,
  RowRef,
  StatusChange,
  UserProtocol,
} from "./protocol.ts";
export {
  LANGUAGES,
  NOTIFICATION_SOUNDS,
  SECURITY_SENSITIVE_SETTINGS,
  SETTINGS,
  SETTING_NAMES,
  checkSetting,
  defaultSettings,
  isValidTimezone,
  settingTypes,
} from "./settings.ts";
export type { UserState } from "./state.ts";
export {
  ROLES,
  ROLE_ADMINISTRATOR,
  ROLE_GUEST,
  ROLE_MEMBER,
  ROLE_MODERATOR,
  ROLE_OWNER,
  argString,
  checkFullName,
  emailKey,
  generateApiKey,
  gravatarUrl,
  isAdminRole,
  isoMinutes,
  isStrongPassword,
  isValidEmail,
  optBool,
  optInt,
  optIntList,
  optObj,
  optString,
} from "./validate.ts";
