// /register fetch types "update_global_notifications" and
// "update_display_settings": the caller's settings as top-level keys, for
// clients without the user_settings_object capability only (Zulip's rule;
// the others read the user_settings object).
import { userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

const NOTIFICATION_SETTINGS = [
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
  "available_notification_sounds",
];

const DISPLAY_SETTINGS = [
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
  "emojiset_choices",
  "receives_typing_notifications",
];

function legacyArea(fetchType: string, names: string[]): RegisterArea {
  return {
    fetchTypes: [fetchType],
    async fetch(ctx): Promise<Obj> {
      if (!ctx.caller || ctx.params.client_capabilities.user_settings_object) return {};
      const settings = (await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "userSettings", {})) as Obj;
      const out: Obj = {};
      for (const name of names) if (Object.hasOwn(settings, name)) out[name] = settings[name]!;
      return out;
    },
  };
}

export const legacySettingsAreas: RegisterArea[] = [
  legacyArea("update_global_notifications", NOTIFICATION_SETTINGS),
  legacyArea("update_display_settings", DISPLAY_SETTINGS),
];
