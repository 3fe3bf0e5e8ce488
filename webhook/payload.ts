// What goes over the wire to an outgoing webhook and what comes back, after
// Zulip's zerver/lib/outgoing_webhook.py: the generic (JSON) and
// Slack-compatible (form) request bodies, the reading of a 2xx reply, and
// the texts of the failure messages and of the bot owner's notice.

import type { ReplyOf } from "../actors/protocol.ts";
import type { RealmProtocol } from "../actors/realm/index.ts";
import type { Obj } from "../actors/types.ts";

/** Zulip's Service.GENERIC / Service.SLACK interface numbers. */
export const GENERIC_INTERFACE = 1;
export const SLACK_INTERFACE = 2;

/** What the worker knows of a bot: the realm's answer to `webhookBot`, when it found one. */
export type BotInfo = Omit<Extract<ReplyOf<RealmProtocol, "webhookBot">, { found: true }>, "found">;

export interface DeliveryView {
  messageId: number;
  attempt: number;
  trigger: string;
  failures: number;
  message: Obj;
}

export interface RequestBody {
  body: string;
  contentType: string;
}

/** The generic interface: Zulip's GenericOutgoingWebhookService.make_request, field for field. */
export function genericBody(bot: BotInfo, token: string, d: DeliveryView): RequestBody {
  const payload = {
    data: String(d.message.content ?? ""),
    message: d.message,
    bot_email: bot.email,
    bot_full_name: bot.fullName,
    token,
    trigger: d.trigger,
  };
  return { body: JSON.stringify(payload), contentType: "application/json" };
}

/**
 * The Slack-compatible interface (SlackOutgoingWebhookService): form
 * fields, channel messages only (the caller refuses direct messages).
 */
export function slackBody(bot: BotInfo, token: string, realmId: number, d: DeliveryView): RequestBody {
  const m = d.message;
  const form = new URLSearchParams([
    ["token", token],
    ["team_id", `T${realmId}`],
    ["team_domain", bot.realmHost],
    ["channel_id", `C${String(m.stream_id)}`],
    ["channel_name", String(m.display_recipient)],
    ["thread_ts", String(m.timestamp)],
    ["timestamp", String(m.timestamp)],
    ["user_id", `U${String(m.sender_id)}`],
    ["user_name", String(m.sender_full_name)],
    ["text", String(m.content ?? "")],
    ["trigger_word", d.trigger],
    ["service_id", String(bot.botId)],
  ]);
  return { body: form.toString(), contentType: "application/x-www-form-urlencoded" };
}

export const SLACK_NO_DM = "Slack outgoing webhooks don't support direct messages.";

/** A 2xx reply that cannot be used: Zulip's JsonableError texts. */
export class ReplyFormatError extends Error {}

/**
 * Zulip's process_success_response: the content the bot should post, or
 * null for "nothing to post"; ReplyFormatError for a malformed reply.
 */
export function replyContent(iface: number, text: string): string | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ReplyFormatError("Invalid JSON in response");
  }
  // zulip_botserver before 2021-05 answered "" for "no response required".
  if (json === "") return null;
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ReplyFormatError("Invalid response format");
  }
  const o = json as Record<string, unknown>;
  let content: unknown = null;
  if (iface === SLACK_INTERFACE) {
    if ("text" in o) content = o.text;
  } else {
    if (o.response_not_required) return null;
    if ("response_string" in o) content = pyStr(o.response_string);
    else if ("content" in o) content = pyStr(o.content);
  }
  if (typeof content !== "string" || content.trim() === "") return null;
  return content;
}

/** Python's str() of a JSON value, as Zulip applies it to `content`. */
function pyStr(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === null) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  return JSON.stringify(v);
}

/** Python's repr() of a str (or, with `bytes`, of the bytes b'...'), as in Zulip's `{payload!r}`. */
export function pyRepr(s: string, bytes = false): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of bytes ? Buffer.from(s, "utf8").toString("latin1") : s) {
    const cp = ch.codePointAt(0)!;
    if (ch === "\\" || ch === quote) out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (cp < 0x20 || cp === 0x7f || (bytes && cp > 0x7f) || (cp >= 0x80 && cp < 0xa0))
      out += "\\x" + cp.toString(16).padStart(2, "0");
    else out += ch;
  }
  return (bytes ? "b" : "") + quote + out + quote;
}

/** Zulip's encode_hash_component: quote(safe="*"), then "." -> "%2E" and "%" -> ".". */
function hashComponent(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/\./g, "%2E")
    .replace(/%/g, ".");
}

/** Zulip's message_link_url: the "near" link to the triggering message. */
export function messageUrl(realmUrl: string, m: Obj): string {
  if (m.type === "stream") {
    const channel = `${String(m.stream_id)}-${hashComponent(String(m.display_recipient).replace(/ /g, "-"))}`;
    return [
      realmUrl,
      "#narrow",
      "channel",
      channel,
      "topic",
      hashComponent(String(m.subject)),
      "near",
      m.id,
    ].join("/");
  }
  const ids = ((m.display_recipient ?? []) as Obj[]).map((r) => String(r.id));
  return [realmUrl, "#narrow", "dm", `${ids.join(",")}-pm`, "near", m.id].join("/");
}

/** The parts of Zulip's notify_bot_owner message. */
export interface OwnerNotice {
  statusCode?: number;
  responseContent?: { text: string; bytes: boolean };
  failureMessage?: string;
  exception?: { name: string; text: string };
}

/**
 * The owner's notice quotes at most this many characters of the response:
 * enough to debug a bot server, while a bot aimed somewhere it should not
 * be cannot turn the notice into a way to read whole pages.
 */
export const EXCERPT_CHARS = 500;

/** The first `max` characters (code points, so no surrogate pair is split) and whether any were cut. */
export function excerpt(s: string, max = EXCERPT_CHARS): { text: string; cut: boolean } {
  if (s.length <= max) return { text: s, cut: false };
  let end = 0;
  for (let n = 0; n < max && end < s.length; n++) end += s.codePointAt(end)! > 0xffff ? 2 : 1;
  return { text: s.slice(0, end), cut: end < s.length };
}

/** Zulip's notify_bot_owner text, with the payload cut to an excerpt. */
export function ownerNoticeText(url: string, botName: string, n: OwnerNotice): string {
  let out = `[A message](${url}) to your bot @_**${botName}** triggered an outgoing webhook.`;
  if (n.exception) {
    out +=
      "\nWhen trying to send a request to the webhook service, an exception " +
      `of type ${n.exception.name} occurred:\n\`\`\`\n${n.exception.text}\n\`\`\``;
  } else if (n.failureMessage) {
    out += "\n" + n.failureMessage;
  } else if (n.statusCode === 407) {
    out += "\nThe URL configured for the webhook is for a private or disallowed network.";
  } else if (n.statusCode) {
    out += `\nThe webhook got a response with status code *${n.statusCode}*.`;
  }
  if (n.responseContent && n.responseContent.text !== "") {
    const { text, cut } = excerpt(n.responseContent.text);
    const r = pyRepr(text, n.responseContent.bytes);
    out += `\nThe response contains the following payload:\n\`\`\`\n${r}\n\`\`\``;
    if (cut) out += `\n(Only its first ${EXCERPT_CHARS} characters are shown.)`;
  }
  return out;
}
