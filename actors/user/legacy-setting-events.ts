// The legacy settings events Zulip still sends beside `user_settings` (feature
// level 89): update_global_notifications and update_display_settings, for
// queues registered without the user_settings_object capability (the queue
// drops them for the others: actors/queue/shape.ts). The settings are those
// POST /register reports top-level for such clients
// (gateway/register/legacy-settings.ts).

import { LRUCache } from "lru-cache";
import { own } from "../dict.ts";
import { realmRef } from "../addresses.ts";
import type { ActorContext, Obj, OutEvent } from "../types.ts";
import { settingValue } from "./format.ts";
import { LANGUAGES } from "./settings.ts";
import type { UserState } from "./state.ts";

/** The settings of update_global_notifications (and of its POST /register fetch type). */
export const LEGACY_NOTIFICATION_SETTINGS: readonly string[] = [
  "enable_desktop_notifications",
  "enable_digest_emails",
  "enable_login_emails",
  "enable_marketing_emails",
  "email_notifications_batching_period_seconds",
  "enable_offline_email_notifications",
  "enable_offline_push_notifications",
  "enable_online_push_notifications",
  "enable_sounds",
  "enable_stream_desktop_notifications",
  "enable_stream_email_notifications",
  "enable_stream_push_notifications",
  "enable_stream_audible_notifications",
  "wildcard_mentions_notify",
  "message_content_in_email_notifications",
  "notification_sound",
  "pm_content_in_desktop_notifications",
  "desktop_icon_count_display",
  "realm_name_in_email_notifications_policy",
  "presence_enabled",
];
const NOTIFICATION_SETTINGS: ReadonlySet<string> = new Set(LEGACY_NOTIFICATION_SETTINGS);

/** The settings of update_display_settings (and of its POST /register fetch type). */
export const LEGACY_DISPLAY_SETTINGS: readonly string[] = [
  "color_scheme",
  "default_language",
  "demote_inactive_streams",
  "emojiset",
  "enable_drafts_synchronization",
  "fluid_layout_width",
  "web_home_view",
  "high_contrast_mode",
  "left_side_userlist",
  "starred_message_counts",
  "timezone",
  "translate_emoticons",
  "twenty_four_hour_time",
  "enter_sends",
  "receives_typing_notifications",
];
const DISPLAY_SETTINGS: ReadonlySet<string> = new Set(LEGACY_DISPLAY_SETTINGS);

/** The legacy events for `changed` settings of the user (none when no legacy setting changed). */
export async function legacySettingEvents(
  state: UserState,
  ctx: ActorContext,
  changed: Obj,
  /** False when the turn changes the user's email_address_visibility: the realm's answer is not kept. */
  keep = !("email_address_visibility" in changed),
): Promise<OutEvent[]> {
  const names = Object.keys(changed).filter((n) => NOTIFICATION_SETTINGS.has(n) || DISPLAY_SETTINGS.has(n));
  if (!names.length) return [];
  const user = await apiEmailOf(state, ctx, keep);
  return names.map((name) => {
    const setting = changed[name]!;
    const event: Obj = NOTIFICATION_SETTINGS.has(name)
      ? { type: "update_global_notifications", user, notification_name: name, setting }
      : { type: "update_display_settings", user, setting_name: name, setting };
    if (name === "default_language" && typeof setting === "string")
      event.language_name = own(LANGUAGES, setting) ?? setting;
    return { event, userIds: [state.userId] };
  });
}

/**
 * API emails the realm gave, by everything they depend on that can change:
 * the user's address, whether a bot, and their email_address_visibility
 * (the realm's host, the rest of a dummy address, is fixed at its
 * creation). Asking the realm in every settings turn held each later turn
 * of the user's actor behind that call: PATCH /settings of one user in
 * cluster mode fell from ~15,000 to ~2,400 a second.
 */
const apiEmails = new LRUCache<string, string>({ max: 10_000 });

/** Zulip names the user by their API email, which only the realm knows. */
async function apiEmailOf(state: UserState, ctx: ActorContext, keep: boolean): Promise<string> {
  const key = `${state.realmId}:${state.userId}:${state.isBot}:${String(settingValue(state, "email_address_visibility"))}:${state.email}`;
  const known = keep ? apiEmails.get(key) : undefined;
  if (known !== undefined) return known;
  const r: { emails?: Record<string, string> } = await ctx.call(realmRef(state.realmId), "apiEmails", {
    userIds: [state.userId],
  });
  const email = (r.emails ?? {})[String(state.userId)];
  if (email === undefined) return state.email;
  if (keep) apiEmails.set(key, email);
  return email;
}
