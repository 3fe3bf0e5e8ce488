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
    "user_settings/resolved_topic_notice_auto_read_policy",
    "user_settings/web_left_sidebar_unreads_count_summary",
    "user_settings/web_inbox_show_channel_folders",
    "user_settings/web_left_sidebar_show_channel_folders",
    "realm_user_settings_defaults/resolved_topic_notice_auto_read_policy",
    "realm_user_settings_defaults/web_left_sidebar_unreads_count_summary",
    "realm_user_settings_defaults/web_inbox_show_channel_folders",
    "realm_user_settings_defaults/web_left_sidebar_show_channel_folders",
  ].map((f) => ({ method: "POST", path: "/register", pointer: `/${f}`, why: AFTER_10_2 })),

  // --- linkifiers
  ...["example_input", "reverse_template", "alternative_url_templates"].map((f) => ({
    method: "GET",
    path: "/realm/linkifiers",
    pointer: `/linkifiers/*/${f}`,
    why: `${AFTER_10_2}: reverse linkifiers`,
  })),

  // --- events (the same objects as above, inside events)
  ...channelFields("EVENT", "stream/create", "/streams/*"),
  { method: "EVENT", path: "stream/create", pointer: "/streams/*/is_default", why: AFTER_10_2 },
  ...channelFields("EVENT", "subscription/add", "/subscriptions/*"),
  {
    method: "EVENT",
    path: "realm_user/add",
    pointer: "/person/is_imported_stub",
    why: `${AFTER_10_2}: users created as imported stubs`,
  },

  // --- user groups
  {
    method: "POST",
    path: "/user_groups/{user_group_id}/deactivate",
    pointer: "/objections",
    why:
      "schema bug in 10.2: the CANNOT_DEACTIVATE_GROUP_IN_USE branch is a CodedError " +
      "(additionalProperties false) yet its own example carries `objections` (FL 298)",
  },

  // --- custom profile fields: use_for_user_matching (FL 455)
  ...[
    ["GET", "/realm/profile_fields", "/custom_fields/*/use_for_user_matching"],
    ["POST", "/register", "/custom_profile_fields/*/use_for_user_matching"],
    ["EVENT", "custom_profile_fields", "/fields/*/use_for_user_matching"],
  ].map(([method, path, pointer]) => ({ method: method!, path: path!, pointer: pointer!, why: AFTER_10_2 })),
  // --- realm settings and identity of FL 456, 466 and 469
  ...["realm_default_avatar_source", "realm_media_preview_size", "realm_uuid"].map((f) => ({
    method: "POST",
    path: "/register",
    pointer: `/${f}`,
    why: AFTER_10_2,
  })),
];
