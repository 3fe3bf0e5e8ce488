// Defaults of a new realm's settings (Zulip's Realm model field defaults),
// for the settings something here reads. More join as endpoints need them;
// an old realm gets a new setting's default through `realmSetting`.

import type { Obj, Value } from "../types.ts";
import type { RealmState } from "./state.ts";

export const REALM_SETTING_DEFAULTS: Obj = {
  /** Zulip's name_changes_disabled: members cannot rename themselves (silently ignored). */
  name_changes_disabled: false,
  /** email_changes_disabled: members cannot change their email. */
  email_changes_disabled: false,
  avatar_changes_disabled: false,
  /** enable_spectator_access: the web-public view (server_settings realm_web_public_access_enabled). */
  enable_spectator_access: false,
  emails_restricted_to_domains: false,
  disallow_disposable_email_addresses: true,
  invite_required: true,
  require_unique_names: false,
  presence_disabled: false,
  default_language: "en",
  waiting_period_threshold: 0,
  // Channel-valued settings (Zulip's Realm.*_stream foreign keys; -1 = none).
  // No channel exists when a realm is created here, so all start disabled.
  new_stream_announcements_stream_id: -1,
  signup_announcements_stream_id: -1,
  zulip_update_announcements_stream_id: -1,
  /** FL 331: where message reports go (FL 382); -1 = reporting disabled. */
  moderation_request_channel_id: -1,
  /** Zulip's do_create_realm enables read receipts when invite_required (the default). */
  enable_read_receipts: true,
  /** "all" | "moves" | "none": what GET /messages/{id}/history shows. */
  message_edit_history_visibility_policy: "all",
  /** Clients add "(guest)" to guests' names (FL 216). */
  enable_guest_user_indicator: true,
  /** Clients warn before a DM to a guest (FL 348). */
  enable_guest_user_dm_warning: true,
  /** FL 434. Stored only: this server sends no channel-event notices yet. */
  send_channel_events_messages: true,
  /** FL 409. Stored only: this server sends no message push notifications. */
  require_e2ee_push_notifications: false,
  // Stored-only settings (realm-properties.ts), Zulip's defaults.
  video_chat_provider: 1,
  gif_rating_policy: 2,
  org_type: 0,
  default_code_block_language: "",
  want_advertise_in_communities_directory: false,
  // Message editing, deletion, moving and retention (message-limits.ts),
  // Zulip's defaults; a time limit of null is none, retention -1 keeps forever.
  allow_message_editing: true,
  message_content_edit_limit_seconds: 600,
  message_content_delete_limit_seconds: null,
  move_messages_within_stream_limit_seconds: 259200,
  move_messages_between_streams_limit_seconds: 604800,
  message_retention_days: -1,
  /** FL 392: may messages go to the empty ("general chat") topic where a channel inherits. */
  topics_policy: "allow_empty_topic",
  /** FL 469: thumbnail height in messages, percent of the default (100, 150 or 200). Clients apply it. */
  media_preview_size: 100,
  /**
   * FL 456: "G" (Gravatar) or "J" (Jdenticon) for new users. Stored and
   * reported; this server gives every user a gravatar until it renders
   * Jdenticons (FL 466).
   */
  default_avatar_source: "G",
  /** FL 416: appended by Welcome Bot to its greeting of new users ("" = none). */
  welcome_message_custom_text: "",
};

/** The channel-valued realm settings PATCH /realm sets (settings-handlers.ts). */
export const ANNOUNCEMENT_STREAM_SETTINGS = [
  "new_stream_announcements_stream_id",
  "signup_announcements_stream_id",
  "zulip_update_announcements_stream_id",
  "moderation_request_channel_id",
] as const;

export function realmSetting(state: RealmState, name: string): Value {
  return Object.hasOwn(state.settings, name) ? state.settings[name]! : (REALM_SETTING_DEFAULTS[name] ?? null);
}

/**
 * The boolean realm settings PATCH /realm sets (Zulip's update_realm
 * Json[bool] parameters that something here reads).
 */
export const REALM_BOOL_PROPERTIES = [
  "name_changes_disabled",
  "email_changes_disabled",
  "avatar_changes_disabled",
  "enable_spectator_access",
  "emails_restricted_to_domains",
  "disallow_disposable_email_addresses",
  "invite_required",
  "require_unique_names",
  "presence_disabled",
  "enable_read_receipts",
  "enable_guest_user_indicator",
  "enable_guest_user_dm_warning",
  "send_channel_events_messages",
  "require_e2ee_push_notifications",
  "want_advertise_in_communities_directory",
] as const;

/** The realm settings PATCH /realm sets to one of a few strings (update event value: the string). */
export const REALM_CHOICE_PROPERTIES: Record<string, readonly string[]> = {
  message_edit_history_visibility_policy: ["all", "moves", "none"],
  // Zulip's RealmTopicsPolicyEnum: a channel's "empty_topic_only" has no realm-wide form.
  topics_policy: ["allow_empty_topic", "disable_empty_topic"],
  default_avatar_source: ["G", "J"],
};
