// The bodies of a message's push notification, as Zulip's
// zerver/lib/push_notifications.py builds them: the legacy relay request
// (remotes/push/notify: gcm and apns payloads for the user's tokens) and the
// E2EE one (remotes/push/e2ee/notify: a payload per device, encrypted with
// the device's push key; its format is zulip.com/api/mobile-notifications).
//
// Fields the API changelog retired are left out: `server`, `realm_id`,
// `zulip_message_id`, `content_truncated` (level 413), APNs `time` (410).

import type { Obj } from "../actors/types.ts";

/** Zulip's truncate_content limit for push bodies. */
const CONTENT_LIMIT = 200;

/** What the send handed on about the message (actors/channel/push-candidates.ts). */
export interface PushMessage {
  id: number;
  sender_id: number;
  sender_email: string;
  sender_full_name: string;
  avatar_url: string | null;
  timestamp: number;
  type: "stream" | "private";
  stream_id: number | null;
  display_recipient: string | { id: number; full_name: string }[];
  subject: string;
  rendered_content: string;
}

export interface PushRealm {
  name: string;
  url: string;
  /**
   * require_e2ee_push_notifications (level 409): the legacy payloads carry
   * "New message" instead of the content; E2EE payloads are unchanged.
   */
  requireE2ee?: boolean;
}

export interface PushContext {
  realm: PushRealm;
  userId: number;
  trigger: string;
  /** The user group whose mention notified the user (level 76), if any. */
  group?: { id: number; name: string };
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", "#x27": "'" };

/**
 * Rendered HTML as the plain text of a notification (Zulip's
 * get_mobile_push_content, reduced): tags dropped, block ends as line
 * breaks, the common entities decoded. One pass over the input.
 */
export function plainText(html: string): string {
  let out = "";
  let i = 0;
  while (i < html.length) {
    const ch = html[i]!;
    if (ch === "<") {
      const end = html.indexOf(">", i);
      if (end < 0) break;
      const tag = html.slice(i + 1, end).toLowerCase();
      if (/^\/(p|li|h[1-6]|blockquote|pre)\b/.test(tag) || /^br\b/.test(tag)) out += "\n";
      i = end + 1;
    } else if (ch === "&") {
      const end = html.indexOf(";", i);
      const name = end > i && end - i <= 6 ? html.slice(i + 1, end) : "";
      const decoded = ENTITIES[name];
      if (decoded !== undefined) {
        out += decoded;
        i = end + 1;
      } else {
        out += ch;
        i++;
      }
    } else {
      out += ch;
      i++;
    }
  }
  return out.trim();
}

/** Zulip's truncate_content: at most 200 characters, the last an ellipsis when cut. */
export function truncate(text: string): string {
  const chars = [...text];
  return chars.length <= CONTENT_LIMIT ? text : chars.slice(0, CONTENT_LIMIT - 1).join("") + "…";
}

function isGroupDm(m: PushMessage): boolean {
  return m.type === "private" && Array.isArray(m.display_recipient) && m.display_recipient.length > 2;
}

/** The other participants of a group DM, sorted (Zulip's pm_users includes the user). */
function dmUserIds(m: PushMessage): number[] {
  return Array.isArray(m.display_recipient) ? m.display_recipient.map((r) => r.id).sort((a, b) => a - b) : [];
}

/** Zulip's get_message_payload: the fields both legacy payloads share. */
function basePayload(m: PushMessage, c: PushContext): Obj {
  const data: Obj = {
    realm_name: c.realm.name,
    realm_uri: c.realm.url,
    realm_url: c.realm.url,
    user_id: c.userId,
    sender_id: m.sender_id,
    sender_email: m.sender_email,
    time: m.timestamp,
  };
  if (c.group) {
    data.mentioned_user_group_id = c.group.id;
    data.mentioned_user_group_name = c.group.name;
  }
  if (m.type === "stream") {
    data.recipient_type = "stream";
    data.stream = String(m.display_recipient);
    data.stream_id = m.stream_id;
    data.topic = m.subject;
  } else {
    data.recipient_type = "private";
    if (isGroupDm(m)) data.pm_users = dmUserIds(m).join(",");
  }
  return data;
}

/** Zulip's get_apns_alert_title. */
function alertTitle(m: PushMessage, c: PushContext): string {
  if (m.type === "stream") return `#${String(m.display_recipient)} > ${m.subject}`;
  if (isGroupDm(m)) {
    return (m.display_recipient as { id: number; full_name: string }[])
      .filter((r) => r.id !== c.userId)
      .map((r) => r.full_name)
      .sort()
      .join(", ");
  }
  return m.sender_full_name;
}

/** Zulip's get_apns_alert_subtitle. */
function alertSubtitle(m: PushMessage, c: PushContext): string {
  const name = m.sender_full_name;
  if (c.trigger === "mentioned") {
    return c.group ? `${name} mentioned @${c.group.name}:` : `${name} mentioned you:`;
  }
  if (c.trigger === "stream_wildcard_mentioned" || c.trigger === "topic_wildcard_mentioned") {
    return `${name} mentioned everyone:`;
  }
  if (m.type === "private" && !isGroupDm(m)) return "";
  return `${name}:`;
}

/** The gcm and apns payloads of remotes/push/notify. */
export function legacyPayloads(m: PushMessage, c: PushContext): { gcm: Obj; apns: Obj } {
  const content = c.realm.requireE2ee ? "New message" : truncate(plainText(m.rendered_content));
  const base = basePayload(m, c);
  const gcm: Obj = {
    ...base,
    event: "message",
    message_id: m.id,
    content,
    sender_full_name: m.sender_full_name,
    sender_avatar_url: m.avatar_url,
  };
  const zulip: Obj = { ...base, message_ids: [m.id] };
  delete zulip.time;
  const apns: Obj = {
    alert: { title: alertTitle(m, c), subtitle: alertSubtitle(m, c), body: content },
    sound: "default",
    custom: { zulip },
  };
  return { gcm, apns };
}

/** The E2EE payload (zulip.com/api/mobile-notifications), before encryption. */
export function e2eePayload(m: PushMessage, c: PushContext): Obj {
  const data: Obj = {
    content: truncate(plainText(m.rendered_content)),
    message_id: m.id,
    realm_name: c.realm.name,
    realm_url: c.realm.url,
    sender_avatar_url: m.avatar_url,
    sender_full_name: m.sender_full_name,
    sender_id: m.sender_id,
    time: m.timestamp,
    type: "message",
    user_id: c.userId,
  };
  if (c.group) {
    data.mentioned_user_group_id = c.group.id;
    data.mentioned_user_group_name = c.group.name;
  }
  if (m.type === "stream") {
    data.recipient_type = "channel";
    data.channel_id = m.stream_id;
    data.channel_name = String(m.display_recipient);
    data.topic = m.subject;
  } else {
    data.recipient_type = "direct";
    if (isGroupDm(m)) data.recipient_user_ids = dmUserIds(m);
  }
  return data;
}
