// /register fetch type "realm": the realm_<setting> keys the realm actor
// holds, the organization's identity, and the server constants Zulip sends
// with them (https://zulip.com/api/register-queue).

import { realmRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import { REPORT_MESSAGE_TYPES } from "../routes/reports.ts";
import { MAX_REMINDER_NOTE_LENGTH } from "../routes/reminders.ts";
import { pushRelayUrl, realmUuid } from "../routes/push-relay.ts";
import { MAX_BULK_NEW_SUBSCRIPTION_MESSAGES } from "../../actors/channel-directory/index.ts";
import { realmDefaults } from "./realm-defaults.ts";
import type { RegisterArea } from "./types.ts";

/** Constants of zerver/lib/events.py's realm section (values as Zulip's POST /register sends them). */
export const REALM_CONSTANTS: Obj = {
  max_stream_name_length: 60,
  max_stream_description_length: 1024,
  max_topic_length: 60,
  max_message_length: 10000,
  max_channel_folder_name_length: 60,
  max_channel_folder_description_length: 1024,
  realm_empty_topic_display_name: "general chat",
  // FL 438: owners get no access to private content they are not subscribed to.
  realm_owner_full_content_access: false,
  // EVENT_QUEUE_LONGPOLL_TIMEOUT_SECONDS: above the longest heartbeat wait (55 s).
  event_queue_longpoll_timeout_seconds: 90,
  server_presence_ping_interval_seconds: 60,
  server_presence_offline_threshold_seconds: 200,
  server_typing_started_expiry_period_milliseconds: 45000,
  server_typing_stopped_wait_period_milliseconds: 12000,
  server_typing_started_wait_period_milliseconds: 30000,
  // gateway/routes/uploads.ts MAX_FILE_UPLOAD_SIZE_MIB.
  max_file_upload_size_mib: 25,
  // FL 435: the report types POST /messages/{id}/report takes.
  server_report_message_types: REPORT_MESSAGE_TYPES.map((t) => ({ ...t })),
  // FL 415: settings.MAX_REMINDER_NOTE_LENGTH.
  max_reminder_note_length: MAX_REMINDER_NOTE_LENGTH,
  // FL 397: above this many newly subscribed users, POST /users/me/subscriptions sends no notices.
  max_bulk_new_subscription_messages: MAX_BULK_NEW_SUBSCRIPTION_MESSAGES,
};

export const realmArea: RegisterArea = {
  fetchTypes: ["realm"],
  async fetch(ctx): Promise<Obj> {
    const ref = realmRef(ctx.realmId);
    const [pub, { settings, dateCreated }] = await Promise.all([
      ctx.call(ref, "publicInfo", {}),
      ctx.call(ref, "registerRealmState", {}),
    ]);
    const url = `${ctx.scheme}://${pub.host || process.env.EXTERNAL_HOST || ctx.host}`;
    const out: Obj = {};
    for (const [name, value] of Object.entries(settings)) out[`realm_${name}`] = value;
    return {
      ...realmDefaults(pub.host || ctx.host),
      ...out,
      realm_name: pub.name,
      realm_icon_url: pub.icon,
      realm_icon_source: "G",
      realm_url: url,
      realm_uri: url,
      // FL 466: the organization's UUID, the one the push relay knows it by.
      realm_uuid: realmUuid(url),
      realm_date_created: Math.floor(dateCreated / 1000),
      ...REALM_CONSTANTS,
      realm_push_notifications_enabled: pushRelayUrl() !== null,
    };
  },
};
