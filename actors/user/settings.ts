// Personal settings: names, defaults and valid values, after Zulip's
// UserBaseSettings (zerver/models/users.py) and the validators of
// json_change_settings (zerver/views/user_settings.py).
//
// A user actor stores only the settings that differ from DEFAULTS, so a
// setting added here reaches existing users with its default and needs no
// snapshot migration.

import { own } from "../dict.ts";
import { errors } from "../errors.ts";
import type { Obj, Value } from "../types.ts";

type Spec =
  | { kind: "bool"; default: boolean }
  | { kind: "int"; default: number; choices?: readonly number[]; min?: number; max?: number }
  | { kind: "string"; default: string; choices?: readonly string[] };

const bool = (d: boolean): Spec => ({ kind: "bool", default: d });
const choice = (d: number, choices: readonly number[]): Spec => ({ kind: "int", default: d, choices });
const oneOf = (d: string, choices: readonly string[]): Spec => ({ kind: "string", default: d, choices });
// web_font_size_px and web_line_height_percent have no API range in Zulip;
// its column is a PositiveSmallIntegerField, so values outside 0..32767 would
// fail in its database. We refuse them with Zulip's range texts instead.
const smallInt = (d: number): Spec => ({ kind: "int", default: d, min: 0, max: 32767 });

/** Zulip's emojiset choices, with the labels /register sends as emojiset_choices. */
export const EMOJISET_CHOICES = [
  { key: "google", text: "Google" },
  { key: "twitter", text: "Twitter" },
  { key: "text", text: "Plain text" },
  { key: "google-blob", text: "Google blobs" },
] as const;

/** static/audio/notification_sounds in Zulip (plus "none", accepted separately). */
export const NOTIFICATION_SOUNDS = [
  "ascend",
  "beep_boop",
  "bink",
  "bright",
  "brlip",
  "chime",
  "deep tom",
  "ding",
  "double tap",
  "down",
  "dry bongos",
  "dutdut",
  "fast ascend",
  "flute",
  "friendly",
  "kick roll",
  "loud tintong",
  "metallic snare",
  "pan",
  "practicechat",
  "shaker",
  "simple",
  "stairs",
  "subtle",
  "swish",
  "tintong",
  "up",
  "wood block",
  "zaping",
  "zing",
  "zulip",
];

/**
 * Languages with Zulip translations (locale/language_name_map.json): code ->
 * the name sent as `language_name` in user_settings events. Our best
 * reconstruction of that file; it is not in the sources we could read.
 */
export const LANGUAGES: Record<string, string> = {
  ar: "العربية",
  be: "Беларуская",
  bg: "Български",
  bn: "বাংলা",
  ca: "Català",
  cs: "Čeština",
  cy: "Cymraeg",
  da: "Dansk",
  de: "Deutsch",
  el: "Ελληνικά",
  en: "English",
  en_GB: "British English",
  eo: "Esperanto",
  es: "Español",
  fa: "فارسی",
  fi: "Suomi",
  fr: "Français",
  gl: "Galego",
  gu: "ગુજરાતી",
  hi: "हिन्दी",
  hu: "Magyar",
  id: "Bahasa Indonesia",
  it: "Italiano",
  ja: "日本語",
  ko: "한국어",
  lt: "Lietuvių",
  lv: "Latviešu",
  ml: "മലയാളം",
  mn: "Монгол",
  ms: "Bahasa Melayu",
  nl: "Nederlands",
  no: "Norsk",
  pl: "Polski",
  pt: "Português",
  pt_BR: "Português (Brasil)",
  pt_PT: "Português (Portugal)",
  ro: "Română",
  ru: "Русский",
  si: "සිංහල",
  sk: "Slovenčina",
  sl: "Slovenščina",
  sr: "Српски",
  sv: "Svenska",
  ta: "தமிழ்",
  te: "తెలుగు",
  tl: "Tagalog",
  tr: "Türkçe",
  uk: "Українська",
  ur: "اردو",
  uz: "Oʻzbekcha",
  vi: "Tiếng Việt",
  "zh-hans": "简体中文",
  "zh-hant": "繁體中文",
  zh_TW: "中文 (台灣)",
};

/** Every personal setting Zulip's PATCH /settings accepts, with its default. */
export const SETTINGS: Record<string, Spec> = {
  // Display (display_settings_legacy)
  color_scheme: choice(1, [1, 2, 3]),
  default_language: { kind: "string", default: "en" },
  web_home_view: oneOf("inbox", ["recent", "inbox", "all_messages"]),
  demote_inactive_streams: choice(1, [1, 2, 3]),
  emojiset: oneOf(
    "google",
    EMOJISET_CHOICES.map((e) => e.key),
  ),
  enable_drafts_synchronization: bool(true),
  enter_sends: bool(false),
  fluid_layout_width: bool(false),
  high_contrast_mode: bool(false),
  left_side_userlist: bool(false),
  starred_message_counts: bool(true),
  translate_emoticons: bool(false),
  twenty_four_hour_time: bool(false),
  // Notifications (notification_settings_legacy)
  desktop_icon_count_display: choice(1, [1, 2, 3, 4]),
  email_notifications_batching_period_seconds: { kind: "int", default: 120 },
  enable_desktop_notifications: bool(true),
  enable_digest_emails: bool(true),
  enable_login_emails: bool(true),
  enable_marketing_emails: bool(true),
  enable_offline_email_notifications: bool(true),
  enable_offline_push_notifications: bool(true),
  enable_online_push_notifications: bool(true),
  enable_sounds: bool(true),
  enable_stream_audible_notifications: bool(false),
  enable_stream_desktop_notifications: bool(false),
  enable_stream_email_notifications: bool(false),
  enable_stream_push_notifications: bool(false),
  message_content_in_email_notifications: bool(true),
  notification_sound: { kind: "string", default: "zulip" },
  pm_content_in_desktop_notifications: bool(true),
  presence_enabled: bool(true),
  realm_name_in_email_notifications_policy: choice(1, [1, 2, 3]),
  wildcard_mentions_notify: bool(true),
  // Modern settings
  display_emoji_reaction_users: bool(true),
  email_address_visibility: choice(1, [1, 2, 3, 4, 5]),
  web_escape_navigates_to_home_view: bool(true),
  receives_typing_notifications: bool(true),
  send_private_typing_notifications: bool(true),
  send_read_receipts: bool(true),
  send_stream_typing_notifications: bool(true),
  allow_private_data_export: bool(false),
  web_mark_read_on_scroll_policy: choice(1, [1, 2, 3]),
  web_channel_default_view: choice(1, [1, 2, 3, 4]),
  user_list_style: choice(3, [1, 2, 3]),
  web_animate_image_previews: oneOf("on_hover", ["always", "on_hover", "never"]),
  web_stream_unreads_count_display_policy: choice(2, [1, 2, 3]),
  web_font_size_px: smallInt(16),
  web_line_height_percent: smallInt(140),
  web_navigate_to_sent_message: bool(true),
  web_suggest_update_timezone: bool(true),
  hide_ai_features: bool(false),
  resolved_topic_notice_auto_read_policy: oneOf("except_followed", ["always", "except_followed", "never"]),
  web_left_sidebar_unreads_count_summary: bool(true),
  // Defaults of these two were not found in Zulip's sources; true matches
  // the UI's behaviour before they existed.
  web_inbox_show_channel_folders: bool(true),
  web_left_sidebar_show_channel_folders: bool(true),
  // Modern notification settings
  enable_followed_topic_desktop_notifications: bool(true),
  enable_followed_topic_email_notifications: bool(true),
  enable_followed_topic_push_notifications: bool(true),
  enable_followed_topic_audible_notifications: bool(true),
  enable_followed_topic_wildcard_mentions_notify: bool(true),
  automatically_follow_topics_policy: choice(3, [1, 2, 3, 4]),
  automatically_unmute_topics_in_muted_streams_policy: choice(2, [1, 2, 3, 4]),
  automatically_follow_topics_where_mentioned: bool(true),
};

export const SETTING_NAMES = Object.keys(SETTINGS);

/** Each setting's wire type, for the gateway's parameter parsers. */
export function settingTypes(): Record<string, "bool" | "int" | "string"> {
  return Object.fromEntries(Object.entries(SETTINGS).map(([name, spec]) => [name, spec.kind]));
}

/** UserBaseSettings.SECURITY_SENSITIVE_USER_SETTINGS: never set by admins for others. */
export const SECURITY_SENSITIVE_SETTINGS = new Set([
  "allow_private_data_export",
  "email_address_visibility",
  "enable_digest_emails",
  "enable_login_emails",
  "enable_marketing_emails",
  "presence_enabled",
  "send_private_typing_notifications",
  "send_read_receipts",
  "send_stream_typing_notifications",
]);

export function defaultSettings(): Obj {
  const out: Obj = {};
  for (const [name, spec] of Object.entries(SETTINGS)) out[name] = spec.default;
  return out;
}

/**
 * Type and value checks for one setting, with Zulip's texts: type errors as
 * the parameter parser words them, bad enum values "Invalid <name>", and the
 * special checks of check_settings_values.
 */
export function checkSetting(name: string, value: Value): Value {
  const spec = own(SETTINGS, name);
  if (!spec) throw errors.badRequest(`Unknown setting '${name}'`);
  switch (spec.kind) {
    case "bool":
      if (typeof value !== "boolean") throw errors.notBoolean(name);
      return value;
    case "int":
      if (typeof value !== "number" || !Number.isInteger(value)) throw errors.notInteger(name);
      if (spec.choices && !spec.choices.includes(value)) throw errors.invalid(name);
      if (spec.min !== undefined && value < spec.min) throw errors.tooSmall(name);
      if (spec.max !== undefined && value > spec.max) throw errors.tooLarge(name);
      if (name === "email_notifications_batching_period_seconds" && (value <= 0 || value > 7 * 24 * 3600)) {
        throw errors.invalidBatchingPeriod(value);
      }
      return value;
    case "string":
      if (typeof value !== "string") throw errors.notString(name);
      if (spec.choices && !spec.choices.includes(value)) throw errors.invalid(name);
      if (name === "default_language" && !Object.hasOwn(LANGUAGES, value)) throw errors.invalid(name);
      if (name === "notification_sound" && value !== "none" && !NOTIFICATION_SOUNDS.includes(value)) {
        throw errors.invalidNotificationSound(value);
      }
      return value;
  }
}

let zones: Set<string> | null = null;

/**
 * Zulip accepts any zone Python's zoneinfo knows (canonical names and their
 * aliases, case-sensitively). We accept the canonical IANA names Node knows,
 * "UTC", aliases Node resolves that are spelled like IANA names (e.g.
 * "US/Eastern", "Asia/Calcutta"), and "" for "unset".
 */
export function isValidTimezone(tz: string): boolean {
  if (tz === "" || tz === "UTC") return true;
  zones ??= new Set(Intl.supportedValuesOf("timeZone"));
  if (zones.has(tz)) return true;
  if (!/^[A-Z][A-Za-z0-9_+-]*(\/[A-Z0-9][A-Za-z0-9_+-]*)*$/.test(tz)) return false;
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export function checkTimezone(value: Value): string {
  if (typeof value !== "string") throw errors.notString("timezone");
  if (!isValidTimezone(value)) throw errors.invalidWithDetail("timezone", "Not a recognized time zone");
  return value;
}
