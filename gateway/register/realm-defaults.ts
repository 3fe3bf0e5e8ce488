// The realm section of POST /register beyond the settings the realm actor
// holds: Zulip's realm_* settings this server has no setting for, and the
// server facts Zulip sends with them. Each value describes what this server
// does (a Zulip default where the server behaves as that default says,
// otherwise the value that matches its behaviour). A setting the realm
// actor holds overrides its entry here (gateway/register/realm.ts).
import { CHANNEL_GROUP_DEFAULTS, CHANNEL_NO_EVERYONE } from "../../actors/channel-directory/index.ts";
import { GROUP_SETTINGS, REALM_GROUP_SETTINGS, SYSTEM_GROUPS } from "../../actors/group/index.ts";
import type { SettingRules } from "../../actors/group/index.ts";
import type { Obj } from "../../actors/types.ts";
import { THUMBNAIL_FORMATS } from "../routes/uploads.ts";

/** When this process started: Zulip's server_generation (a restart makes clients reload). */
const SERVER_GENERATION = Math.floor(Date.now() / 1000);

const JITSI_URL = "https://meet.jit.si";

/** Zulip's GIF_RATING_POLICY_OPTIONS (giphy_rating_options before feature level 442, gif_rating_options before 453). */
const GIF_RATING_POLICY_OPTIONS: Obj = {
  disabled: { name: "GIF integration disabled", id: 0 },
  y: { name: "Allow GIFs rated Y (Very young audience)", id: 1 },
  g: { name: "Allow GIFs rated G (General audience)", id: 2 },
  pg: { name: "Allow GIFs rated PG (Parental guidance)", id: 3 },
  pg13: { name: "Allow GIFs rated PG-13 (Parental guidance - under 13)", id: 4 },
  r: { name: "Allow GIFs rated R (Restricted)", id: 5 },
};

/** The external account types custom profile fields accept (actors/realm/profile-fields.ts). */
const DEFAULT_EXTERNAL_ACCOUNTS: Obj = {
  twitter: {
    text: "Twitter",
    url_pattern: "https://twitter.com/%(username)s",
    name: "Twitter username",
    hint: "Enter your Twitter username",
  },
  github: {
    text: "GitHub",
    url_pattern: "https://github.com/%(username)s",
    name: "GitHub username",
    hint: "Enter your GitHub username",
  },
};

const SYSTEM_GROUP_NAME = new Map<number, string>(SYSTEM_GROUPS.map((g) => [g.id, g.name]));

function permission(rules: SettingRules, defaultName: string, forSystemGroups: string | null): Obj {
  return {
    require_system_group: rules.systemGroupsOnly ?? false,
    allow_internet_group: rules.allowInternet ?? false,
    allow_nobody_group: rules.allowNobody ?? true,
    allow_everyone_group: rules.allowEveryone,
    default_group_name: defaultName,
    default_for_system_groups: forSystemGroups,
    allowed_system_groups: rules.allowedSystemGroups ?? [],
  };
}

/** Zulip's server_supported_permission_settings, from the rules the group and channel actors enforce. */
function supportedPermissionSettings(): Obj {
  const realm: Obj = {};
  for (const [name, c] of Object.entries(REALM_GROUP_SETTINGS))
    realm[name] = permission(c, SYSTEM_GROUP_NAME.get(c.default as number)!, null);
  const group: Obj = {};
  // Every group setting of a system group is role:nobody.
  for (const [name, c] of Object.entries(GROUP_SETTINGS))
    group[name] = permission(
      c,
      c.default === "creator" ? "group_creator" : SYSTEM_GROUP_NAME.get(c.default)!,
      "role:nobody",
    );
  const stream: Obj = {};
  for (const [name, d] of Object.entries(CHANNEL_GROUP_DEFAULTS))
    stream[name] = permission(
      { allowEveryone: !CHANNEL_NO_EVERYONE.has(name) },
      d === "creator" ? "channel_creator" : d,
      null,
    );
  return { realm, stream, group };
}

const PERMISSION_SETTINGS = supportedPermissionSettings();

export function realmDefaults(host: string): Obj {
  return {
    realm_message_edit_history_visibility_policy: "all",
    realm_allow_edit_history: true,
    // Zulip's legacy policies (1 = members, 7 = owners only), as the
    // can_create_*_channel_group defaults here grant.
    realm_create_public_stream_policy: 1,
    realm_create_private_stream_policy: 1,
    realm_create_web_public_stream_policy: 7,
    // 5 = administrators: can_mention_many_users_group's default.
    realm_wildcard_mention_policy: 5,
    // No email is sent for digests or welcomes; no previews are generated.
    realm_digest_emails_enabled: false,
    realm_send_welcome_emails: false,
    realm_inline_image_preview: false,
    realm_inline_url_embed_preview: false,
    realm_message_content_allowed_in_email_notifications: true,
    realm_want_advertise_in_communities_directory: false,
    // Jitsi Meet, on Zulip's default server: calls need nothing from this one.
    realm_video_chat_provider: 1,
    realm_jitsi_server_url: null,
    realm_available_video_chat_providers: {
      disabled: { name: "None", id: 0 },
      jitsi_meet: { name: "Jitsi Meet", id: 1 },
    },
    realm_gif_rating_policy: 2,
    realm_digest_weekday: 1,
    realm_default_code_block_language: "",
    realm_authentication_methods: {
      Email: { enabled: true, available: true },
    },
    // No read receipts endpoint exists.
    realm_enable_read_receipts: false,
    realm_logo_url: "",
    realm_logo_source: "D",
    realm_night_logo_url: "",
    realm_night_logo_source: "D",
    // Bot emails are <name>-bot@<realm host> (actors/realm/bot-handlers.ts).
    realm_bot_domain: host,
    settings_send_digest_emails: false,
    realm_email_auth_enabled: true,
    realm_password_auth_enabled: true,
    realm_push_notifications_enabled_end_timestamp: null,
    realm_upload_quota_mib: null,
    realm_org_type: 0,
    // Self-hosted (Zulip's PLAN_TYPE_SELF_HOSTED), no plan limits.
    realm_plan_type: 1,
    zulip_plan_is_not_limited: true,
    upgrade_text_for_wide_organization_logo: "",
    realm_enable_guest_user_dm_warning: true,
    realm_enable_guest_user_indicator: true,
    realm_default_external_accounts: DEFAULT_EXTERNAL_ACCOUNTS,
    realm_moderation_request_channel_id: -1,
    jitsi_server_url: JITSI_URL,
    server_jitsi_server_url: JITSI_URL,
    development_environment: false,
    server_generation: SERVER_GENERATION,
    // The password rule actors/user/validate.ts applies (no strength estimate).
    password_min_length: 6,
    password_max_length: 100,
    password_min_guesses: 0,
    gif_rating_policy_options: GIF_RATING_POLICY_OPTIONS,
    // No uploads: icons, logos and avatars cannot be uploaded either.
    max_icon_file_size_mib: 0,
    max_logo_file_size_mib: 0,
    max_avatar_file_size_mib: 0,
    server_thumbnail_formats: THUMBNAIL_FORMATS.map((f) => ({ ...f })),
    server_inline_image_preview: false,
    server_inline_url_embed_preview: false,
    server_avatar_changes_disabled: true,
    server_name_changes_disabled: false,
    server_needs_upgrade: false,
    server_web_public_streams_enabled: true,
    server_emoji_data_url: "",
    server_can_summarize_topics: false,
    server_min_deactivated_realm_deletion_days: null,
    server_max_deactivated_realm_deletion_days: null,
    server_supported_permission_settings: PERMISSION_SETTINGS,
  };
}
