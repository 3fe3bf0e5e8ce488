// POST /messages/{message_id}/report (Zulip's zerver/views/message_report.py
// and zerver/lib/message_report.py, feature levels 382 and 435): Notification
// Bot posts the report into the realm's moderation request channel (FL 331).
// The message is read as the reporter (findMessages/loadMessages: what they
// may read, else "Invalid message(s)", Zulip's access_message), so nobody
// can report, and so show the moderators, a message they cannot read.
// Also the message-link helpers reminders share (gateway/routes/reminders.ts).

import { channelConvRef, channelDirectoryRef, realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { findMessages, loadMessages } from "../narrow.ts";
import { defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";
import { pathInt } from "./messages.ts";
import { hashEncode, nearMessageUrl, silentMention } from "./notification-bot.ts";

/** Zulip's Realm.REPORT_MESSAGE_REASONS (register `server_report_message_types`, FL 435). */
export const REPORT_MESSAGE_TYPES: readonly { key: string; name: string }[] = [
  { key: "spam", name: "Spam" },
  { key: "harassment", name: "Harassment" },
  { key: "inappropriate", name: "Inappropriate content" },
  { key: "norms", name: "Violates community norms" },
  { key: "other", name: "Other reason" },
];
/** Zulip's Realm.MAX_REPORT_MESSAGE_EXPLANATION_LENGTH. */
const MAX_DESCRIPTION = 1000;
/** settings.MAX_MESSAGE_LENGTH. */
export const MAX_MESSAGE_LENGTH = 10000;
/** Zulip's MAX_REPORT_MESSAGE_SNIPPET_LENGTH: room for the description and the template. */
const MAX_SNIPPET = MAX_MESSAGE_LENGTH - MAX_DESCRIPTION - 500;

/** Zulip's truncate_content. */
export function truncateContent(content: string, max: number, marker: string): string {
  return content.length > max ? content.slice(0, max - marker.length) + marker : content;
}

/** Zulip's get_unused_fence: one backtick more than the longest fence opening a line. */
export function unusedFence(content: string): string {
  let n = 3;
  for (const m of content.matchAll(/^ {0,3}(`{3,})/gm)) n = Math.max(n, m[1]!.length + 1);
  return "`".repeat(n);
}

/** Zulip's datetime_to_global_time. */
export function globalTime(unixSeconds: number): string {
  return `<time:${new Date(unixSeconds * 1000).toISOString().slice(0, 19)}+00:00>`;
}

/** A message as loadMessages gives it (raw Markdown). */
export interface RawMessage {
  id: number;
  sender_id: number;
  sender_full_name: string;
  type: string;
  display_recipient: string | { id: number; full_name: string }[];
  stream_id?: number;
  subject: string;
  timestamp: number;
  content: string;
}

/** The message as the caller may read it, its Markdown source; "Invalid message(s)" otherwise. */
export async function readableMessage(req: RouteRequest, id: number): Promise<RawMessage> {
  const items = await findMessages(req, [id]);
  if (!items.length) throw errors.invalidMessages();
  const opts = { apply_markdown: false, client_gravatar: false, allow_empty_topic_name: true };
  const [m] = await loadMessages(req, items, opts);
  if (!m) throw errors.invalidMessages();
  return m as unknown as RawMessage;
}

/** Zulip's get_user_mentions_for_display: "A", "A, and B", "A, B, and C" (its comma before "and" always). */
export function mentionList(users: { id: number; full_name: string }[]): string {
  const m = users.map((u) => silentMention(u.full_name, u.id));
  if (m.length <= 1) return m[0] ?? "";
  return `${m.slice(0, -1).join(", ")}, and ${m[m.length - 1]}`;
}

/** Zulip's encode_channel. */
function channelSlug(id: number, name: string): string {
  return `${id}-${hashEncode(name.replace(/ /g, "-"))}`;
}

/** Zulip's get_message_link_syntax: `[#channel > topic](#narrow/.../with/id)`. */
export function messageLinkSyntax(m: RawMessage): string {
  const name = String(m.display_recipient);
  const url = `#narrow/channel/${channelSlug(m.stream_id!, name)}/topic/${hashEncode(m.subject)}/with/${m.id}`;
  return `[#${name} > ${m.subject}](${url})`;
}

/** Zulip's message_link_url: near_stream_message_url or pm_message_url. */
export async function messageUrl(req: RouteRequest, m: RawMessage): Promise<string> {
  if (m.type === "stream")
    return nearMessageUrl(req, m.stream_id!, String(m.display_recipient), m.subject, m.id);
  const info = await req.call(realmRef(req.realmId), "publicInfo", {});
  const base = `${req.scheme}://${info.host || process.env.EXTERNAL_HOST || req.host}`;
  const ids = (m.display_recipient as { id: number }[]).map((u) => u.id).sort((a, b) => a - b);
  // Zulip's encode_user_ids: a group conversation gets "-group".
  const slug = ids.join(",") + (ids.length >= 3 ? "-group" : "");
  return `${base}/#narrow/dm/${slug}/near/${m.id}`;
}

/** Zulip's send_message_report text. */
async function reportContent(
  req: RouteRequest,
  m: RawMessage,
  reporter: { id: number; full_name: string },
  reason: string,
  description: string,
): Promise<string> {
  const by = silentMention(reporter.full_name, reporter.id);
  const author = silentMention(m.sender_full_name, m.sender_id);
  const at = globalTime(m.timestamp);
  let header: string;
  if (m.type === "stream") header = `${by} reported a message sent by ${author} at ${at}.`;
  else {
    const people = m.display_recipient as { id: number; full_name: string }[];
    if (people.length <= 2) {
      if (m.sender_id !== reporter.id) header = `${by} reported a message sent by ${author} at ${at}.`;
      else {
        // One's own message in a 1:1 conversation names the other participant.
        const other = people.find((u) => u.id !== reporter.id);
        const to = other ? silentMention(other.full_name, other.id) : by;
        header = `${by} reported a message sent by ${author} to ${to} at ${at}.`;
      }
    } else {
      const others = mentionList(people.filter((u) => u.id !== m.sender_id));
      header = `${by} reported a message sent by ${author} to ${others} at ${at}.`;
    }
  }
  const original =
    m.type === "stream"
      ? `Original message at ${messageLinkSyntax(m)}`
      : `[Original message](${await messageUrl(req, m)})`;
  const snippet = truncateContent(m.content, MAX_SNIPPET, "\n[message truncated]");
  const fence = unusedFence(snippet);
  return (
    header +
    `\n\`\`\`quote\n**${reason}**. ${description}\n\`\`\`\n\n${fence} spoiler ${original}\n${snippet}\n${fence}\n`
  );
}

const reportMessage = defineRoute({
  method: "POST",
  path: "/messages/:message_id/report",
  auth: "required",
  params: {
    report_type: param(
      p.oneOf(
        REPORT_MESSAGE_TYPES.map((t) => t.key),
        p.string(),
      ),
      { required: true },
    ),
    description: param(p.string({ maxLength: MAX_DESCRIPTION }), { default: "" }),
  },
  async handler(req) {
    const id = pathInt(req, "message_id");
    const type = req.params.report_type;
    const description = req.params.description;
    if (type === "other" && description === "") throw errors.reportNeedsExplanation();
    const ctx = await req.call(realmRef(req.realmId), "notificationContext", {});
    const target = ctx.moderationRequestChannelId ?? -1;
    if (typeof target !== "number" || target < 0) throw errors.reportingDisabled();
    const m = await readableMessage(req, id);
    const me = await req.call(realmRef(req.realmId), "getMember", { userId: req.caller!.userId });
    const reporter = { id: req.caller!.userId, full_name: String(me.user.full_name) };
    const reason = REPORT_MESSAGE_TYPES.find((t) => t.key === type)!.name;
    const content = await reportContent(req, m, reporter, reason, description);
    const info = await req
      .call(channelDirectoryRef(req.realmId), "sendContext", { stream_id: target })
      .catch(() => null);
    if (!info || info.is_archived) throw errors.reportingDisabled();
    // Zulip's "{fullname} moderation" topic; none in a channel that allows only the empty topic.
    const topic = info.topics_policy === "empty_topic_only" ? "" : `${m.sender_full_name} moderation`;
    await req.call(channelConvRef(req.realmId, target), "send", {
      content,
      topic,
      client: "Internal",
      notification_bot: true,
      read_by_sender: false,
    });
    return {};
  },
});

export const reportRoutes: RouteDef[] = [reportMessage];
