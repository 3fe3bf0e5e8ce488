// PATCH /realm's integer- and string-valued settings that this server only
// stores and reports (register realm_<name>, realm update events): the
// video call provider, GIF rating, organization type, default code block
// and default language. Also which settings only owners may change
// (Zulip 6.0, feature level 143).

import { own } from "../dict.ts";
import { errors, ZulipError } from "../errors.ts";
import { LANGUAGES } from "../user/index.ts";

/** The integer settings and the ids each accepts. */
export const REALM_INT_PROPERTIES: Record<string, readonly number[]> = {
  // Zulip's VIDEO_CHAT_PROVIDERS that register's realm_available_video_chat_providers offers here.
  video_chat_provider: [0, 1],
  // Zulip's GIF_RATING_POLICY_OPTIONS ids (giphy_rating before feature level 453).
  gif_rating_policy: [0, 1, 2, 3, 4, 5],
  // Zulip's ORG_TYPES ids.
  org_type: [0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000],
  // Zulip's MediaPreviewSizeEnum (FL 469): percent of the default thumbnail height.
  media_preview_size: [100, 150, 200],
};

/** The string settings. */
export const REALM_STRING_PROPERTIES = [
  "default_code_block_language",
  "default_language",
  "welcome_message_custom_text",
] as const;

/** Zulip's Realm.MAX_REALM_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH (FL 416). */
export const WELCOME_MESSAGE_CUSTOM_TEXT_MAX = 8000;

/** Zulip's MAX_REALM_NAME_LENGTH and MAX_REALM_DESCRIPTION_LENGTH (the route checks them). */
export const REALM_NAME_MAX = 40;
export const REALM_DESCRIPTION_MAX = 1000;

/** Settings an administrator who is not an owner may not change. */
export const OWNER_ONLY_PROPERTIES: ReadonlySet<string> = new Set([
  "invite_required",
  "emails_restricted_to_domains",
  "disallow_disposable_email_addresses",
  "waiting_period_threshold",
]);

/** Checks one integer or string setting's value; throws Zulip's error. */
export function checkRealmProperty(name: string, value: unknown): void {
  const ids = own(REALM_INT_PROPERTIES, name);
  if (ids) {
    if (typeof value !== "number" || !Number.isInteger(value)) throw errors.notInteger(name);
    if (!ids.includes(value)) throw new ZulipError(`Invalid ${name} ${value}`);
    return;
  }
  if (typeof value !== "string") throw errors.invalid(name);
  if (
    name === "welcome_message_custom_text" &&
    value.length > WELCOME_MESSAGE_CUSTOM_TEXT_MAX &&
    [...value].length > WELCOME_MESSAGE_CUSTOM_TEXT_MAX
  )
    throw errors.tooLong(name, WELCOME_MESSAGE_CUSTOM_TEXT_MAX);
  if (name === "default_language" && !own(LANGUAGES, value))
    throw new ZulipError(`Invalid language '${value}'`);
}
