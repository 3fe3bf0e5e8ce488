// Where our responses knowingly differ from zulip-openapi-10.2.yaml, and why.
// Our server reports feature level 496 (Zulip 11.x); the schema documents
// Zulip 10.2, so most entries are fields Zulip added after 10.2. Each
// entry's field is removed from the body before validation (see
// test/support/openapi.ts). method "EVENT" entries apply to each GET /events
// event (path names the event type they concern).

import type { Deviation } from "./support/openapi.ts";

const AFTER_10_2 = "added to Zulip after 10.2 (Zulip 11, feature levels 360-496)";

/** Channel fields Zulip 11 added to channel and subscription objects. */
const NEW_CHANNEL_FIELDS: [string, string][] = [
  ["topics_policy", `${AFTER_10_2}: per-channel empty-topic policy`],
  ["folder_id", `${AFTER_10_2}: channel folders`],
  ["subscriber_count", `${AFTER_10_2}`],
  ["default_push_notifications", `${AFTER_10_2}`],
  ["can_create_topic_group", `${AFTER_10_2}: channel permission group setting`],
  ["can_delete_any_message_group", `${AFTER_10_2}: channel permission group setting`],
  ["can_delete_own_message_group", `${AFTER_10_2}: channel permission group setting`],
  ["can_move_messages_out_of_channel_group", `${AFTER_10_2}: channel permission group setting`],
  ["can_move_messages_within_channel_group", `${AFTER_10_2}: channel permission group setting`],
  ["can_resolve_topics_group", `${AFTER_10_2}: channel permission group setting`],
];

function channelFields(method: string, path: string, prefix: string): Deviation[] {
  return NEW_CHANNEL_FIELDS.map(([field, why]) => ({ method, path, pointer: `${prefix}/${field}`, why }));
}

const USER_STUB: [string, string, string][] = [
  ["GET", "/users/me", "/is_imported_stub"],
  ["GET", "/users", "/members/*/is_imported_stub"],
  ["GET", "/users/{user_id}", "/user/is_imported_stub"],
  ["POST", "/register", "/realm_users/*/is_imported_stub"],
  ["POST", "/register", "/realm_non_active_users/*/is_imported_stub"],
  ["POST", "/register", "/cross_realm_bots/*/is_imported_stub"],
];

export const deviations: Deviation[] = [
  // --- client devices (Zulip 12's device model, register fetch type "device")
  {
    method: "POST",
    path: "/register",
    pointer: "/devices",
    why: "added to Zulip after 10.2: client devices",
  },
  // --- server settings
  ...["service_version", "service_merge_base", "service_feature_level"].map((f) => ({
    method: "GET",
    path: "/server_settings",
    pointer: `/${f}`,
    why: "the API spec's names for zulip_version, zulip_merge_base and zulip_feature_level (both are sent)",
  })),
  {
    method: "GET",
    path: "/server_settings",
    pointer: "/authentication_methods/discord",
    why: `${AFTER_10_2}: Discord social login`,
  },

  // --- users
  ...USER_STUB.map(([method, path, pointer]) => ({
    method,
    path,
    pointer,
    why: `${AFTER_10_2}: users created as imported stubs`,
  })),

  // --- channels and subscriptions
  ...channelFields("GET", "/streams", "/streams/*"),
  ...channelFields("GET", "/streams/{stream_id}", "/stream"),
  {
    method: "GET",
    path: "/streams/{stream_id}",
    pointer: "/stream/is_default",
    why: "10.2 documents is_default only for GET /streams items (include_default); our GET /streams/{stream_id} returns the same channel object with it",
  },
  ...channelFields("GET", "/users/me/subscriptions", "/subscriptions/*"),
  ...channelFields("POST", "/register", "/subscriptions/*"),
  ...channelFields("POST", "/register", "/unsubscribed/*"),
  ...channelFields("POST", "/register", "/never_subscribed/*"),
  ...channelFields("POST", "/register", "/streams/*"),

  // --- register
  ...[
    "realm_can_set_delete_message_policy_group",
    "realm_can_set_topics_policy_group",
    "max_channel_folder_name_length",
    "max_channel_folder_description_length",
    "idle_queue_timeout_secs",
    "realm_send_channel_events_messages",
    "realm_require_e2ee_push_notifications",
    "realm_owner_full_content_access",
    "tenor_api_key",
    "klipy_api_key",
    "gif_rating_policy_options",
    "realm_gif_rating_policy",
    "user_settings/resolved_topic_notice_auto_read_policy",
    "user_settings/web_left_sidebar_unreads_count_summary",
    "user_settings/web_inbox_show_channel_folders",
    "user_settings/web_left_sidebar_show_channel_folders",
    "realm_user_settings_defaults/resolved_topic_notice_auto_read_policy",
    "realm_user_settings_defaults/web_left_sidebar_unreads_count_summary",
    "realm_user_settings_defaults/web_inbox_show_channel_folders",
    "realm_user_settings_defaults/web_left_sidebar_show_channel_folders",
    "realm_topics_policy",
    "realm_welcome_message_custom_text",
    "navigation_views",
    "channel_folders",
  ].map((f) => ({ method: "POST", path: "/register", pointer: `/${f}`, why: AFTER_10_2 })),

  // --- linkifiers
  ...["example_input", "reverse_template", "alternative_url_templates"].map((f) => ({
    method: "GET",
    path: "/realm/linkifiers",
    pointer: `/linkifiers/*/${f}`,
    why: `${AFTER_10_2}: reverse linkifiers`,
  })),

  // --- events (the same objects as above, inside events)
  // Event types newer than 10.2 (pointer "": the whole event; test/support/openapi.ts).
  {
    method: "EVENT",
    path: "channel_folder",
    pointer: "",
    why: `${AFTER_10_2}: channel folders (FL 389, 414, 418)`,
  },
  { method: "EVENT", path: "navigation_view", pointer: "", why: `${AFTER_10_2}: navigation views (FL 390)` },
  ...channelFields("EVENT", "stream/create", "/streams/*"),
  { method: "EVENT", path: "stream/create", pointer: "/streams/*/is_default", why: AFTER_10_2 },
  ...channelFields("EVENT", "subscription/add", "/subscriptions/*"),
  {
    method: "EVENT",
    path: "realm_user/add",
    pointer: "/person/is_imported_stub",
    why: `${AFTER_10_2}: users created as imported stubs`,
  },

  // --- renames, removals and format changes after 10.2 (the 10.2 form stands in)
  ...[
    ["GET", "/export/realm", "/exports/*/export_type"],
    ["EVENT", "realm_export", "/exports/*/export_type"],
  ].map(([method, path, pointer]) => ({
    method: method!,
    path: path!,
    pointer: pointer!,
    standIn: 1,
    why: "export_type is a string since feature level 449",
  })),
  ...[
    ["GET", "/attachments", "/attachments/*"],
    ["EVENT", "attachment/add", "/attachment"],
    ["EVENT", "attachment/update", "/attachment"],
  ].flatMap(([method, path, prefix]) => [
    {
      method: method!,
      path: path!,
      pointer: `${prefix}/messages`,
      standIn: [],
      why: "message_ids replaced messages at feature level 472",
    },
    { method: method!, path: path!, pointer: `${prefix}/message_ids`, why: "feature level 472" },
  ]),
  ...[
    ["POST", "/register", "/realm_bots/*"],
    ["EVENT", "realm_bot/add", "/bot"],
  ].flatMap(([method, path, prefix]) =>
    Object.entries({
      email: "bot@example.com",
      full_name: "Bot",
      bot_type: 1,
      is_active: true,
      api_key: "x",
      avatar_url: "https://example.com/a.png",
      owner_id: 1,
    }).map(([field, standIn]) => ({
      method: method!,
      path: path!,
      pointer: `${prefix}/${field}`,
      standIn,
      why: "bot objects lost these fields at feature level 474",
    })),
  ),
  ...["active_timestamp", "idle_timestamp"].map((f) => ({
    method: "GET",
    path: "/users/{user_id_or_email}/presence",
    pointer: `/presence/${f}`,
    why: "the modern presence fields, feature level 487",
  })),

  // --- user groups
  {
    method: "POST",
    path: "/user_groups/{user_group_id}/deactivate",
    pointer: "/objections",
    why:
      "schema bug in 10.2: the CANNOT_DEACTIVATE_GROUP_IN_USE branch is a CodedError " +
      "(additionalProperties false) yet its own example carries `objections` (FL 298)",
  },

  // --- message reports and reminders (FL 381, 399, 415, 435)
  ...["server_report_message_types", "max_reminder_note_length", "reminders"].map((f) => ({
    method: "POST",
    path: "/register",
    pointer: `/${f}`,
    why: `${AFTER_10_2}: message reports and reminders`,
  })),
  // --- custom profile fields: use_for_user_matching (FL 455)
  ...[
    ["GET", "/realm/profile_fields", "/custom_fields/*/use_for_user_matching"],
    ["POST", "/register", "/custom_profile_fields/*/use_for_user_matching"],
    ["EVENT", "custom_profile_fields", "/fields/*/use_for_user_matching"],
  ].map(([method, path, pointer]) => ({ method: method!, path: path!, pointer: pointer!, why: AFTER_10_2 })),
  // --- new-subscription notices (FL 397)
  {
    method: "POST",
    path: "/register",
    pointer: "/max_bulk_new_subscription_messages",
    why: `${AFTER_10_2}: FL 397`,
  },
  {
    method: "POST",
    path: "/users/me/subscriptions",
    pointer: "/new_subscription_messages_sent",
    why: `${AFTER_10_2}: FL 397`,
  },
  // --- realm settings and identity of FL 456, 466 and 469
  ...["realm_default_avatar_source", "realm_media_preview_size", "realm_uuid"].map((f) => ({
    method: "POST",
    path: "/register",
    pointer: `/${f}`,
    why: AFTER_10_2,
  })),
];
