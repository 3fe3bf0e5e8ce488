// Which events a queue accepts and how they look for its client: Zulip's
// ClientDescriptor.accepts_event / narrow predicate and the per-client
// rewrites of zerver/tornado/event_queue.py, plus the capability rules of the
// spec's Events section 3. Pure functions of (event, registration): the
// queue actor runs them when it decides, and journals the result.
//
// Conventions for emitters of `message` events (so one event serves every
// queue, as in Zulip's process_message_event):
// - `message.content` is the Markdown source and `message.rendered_content`
//   the HTML; each queue keeps the one its apply_markdown asks for and sets
//   `content_type`.
// - `message.avatar_url` is the URL; `message.sender_avatar_source` "G"
//   (gravatar) lets client_gravatar queues get null instead.
// - `user_flags` {"<user id>": string[]} gives each recipient its `flags`.
//   A user without an entry is no recipient: only its queues that watch
//   public channels (`watchesPublicChannels`) take the event, with no flags.
// - `sender_queue_id` + `local_id`: the queue with that id gets
//   `local_message_id`.
// Events of type `presence` may carry both forms (legacy fields and
// `presences`); each queue keeps the form its simplified_presence_events
// capability asks for.
// Events of type `stream` that archive (op delete) or unarchive (op create)
// a channel carry `as_update`, the stream/update that queues with the
// archived_channels capability get instead.

import { UNKNOWN_USER_ADD } from "../realm/index.ts";
import type { Obj, Value } from "../types.ts";

/** What POST /register chose for a queue (Zulip's ClientDescriptor fields). Immutable (interned). */
export interface Registration {
  /** null: every event type. */
  eventTypes: string[] | null;
  /** [operator, operand] pairs; filters message events only. */
  narrow: [string, string][];
  capabilities: Record<string, boolean>;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  allPublicStreams: boolean;
  /** idle_queue_timeout_secs. */
  timeoutSecs: number;
}

/** Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME (realm_empty_topic_display_name). */
export const EMPTY_TOPIC_DISPLAY_NAME = "general chat";

const GRAVATAR_PREFIX = "https://secure.gravatar.com/";
const NARROW_OPERATORS = new Set(["stream", "channel", "topic", "sender", "is"]);
const NARROW_IS = new Set(["dm", "private", "starred", "unread", "alerted", "mentioned"]);

/** Whether a narrow term can be evaluated on a message event (register validation). */
export function isSupportedNarrowTerm(operator: string, operand: string): boolean {
  return NARROW_OPERATORS.has(operator) && (operator !== "is" || NARROW_IS.has(operand));
}

function str(v: Value | undefined): string {
  return typeof v === "string" ? v : "";
}

function matchesNarrow(narrow: [string, string][], message: Obj, flags: string[]): boolean {
  for (const [operator, operand] of narrow) {
    const op = operand.toLowerCase();
    switch (operator) {
      case "stream":
      case "channel":
        if (message.type !== "stream" || str(message.display_recipient).toLowerCase() !== op) return false;
        break;
      case "topic":
        if (message.type !== "stream" || str(message.subject).toLowerCase() !== op) return false;
        break;
      case "sender":
        if (str(message.sender_email).toLowerCase() !== op) return false;
        break;
      case "is":
        if ((op === "dm" || op === "private") && message.type !== "private") return false;
        if (op === "starred" && !flags.includes("starred")) return false;
        if (op === "unread" && flags.includes("read")) return false;
        if ((op === "alerted" || op === "mentioned") && !flags.includes("mentioned")) return false;
        break;
    }
  }
  return true;
}

/**
 * Zulip's realm_clients_all_streams: queues registered with
 * all_public_streams or with a narrow get the messages of every public
 * channel (a narrow then picks its own). Guests never (the realm's view
 * and the send leave them out).
 */
export function watchesPublicChannels(reg: Registration): boolean {
  return reg.allPublicStreams || reg.narrow.length > 0;
}

/**
 * The user's flags; null when the user is no recipient (a watcher of
 * public channels). A channel send's event (`watchers` present) lists
 * only the recipients with flags in `user_flags` and the watchers in
 * `watchers`, so its size does not grow with the channel; older events
 * listed every recipient in `user_flags`.
 */
export function flagsFor(event: Obj, userId: number): string[] | null {
  const byUser = event.user_flags;
  if (Array.isArray(event.watchers)) {
    if (event.watchers.includes(userId)) return null;
    const f =
      byUser && typeof byUser === "object" && !Array.isArray(byUser) && Object.hasOwn(byUser, String(userId))
        ? byUser[String(userId)]
        : undefined;
    return Array.isArray(f) ? onlyStrings(f) : NO_FLAGS;
  }
  if (byUser && typeof byUser === "object" && !Array.isArray(byUser)) {
    const f = Object.hasOwn(byUser, String(userId)) ? byUser[String(userId)] : undefined;
    if (Array.isArray(f)) return onlyStrings(f);
    return null;
  }
  const f = event.flags;
  return Array.isArray(f) ? onlyStrings(f) : NO_FLAGS;
}

/**
 * No flags, shared by every event shaped without any (frozen: shaped events
 * are read and serialized, never changed).
 */
const NO_FLAGS = Object.freeze([]) as unknown as string[];

/** The list itself when it holds only strings (the usual case, no copy), else its strings. */
function onlyStrings(f: Value[]): string[] {
  for (const x of f) if (typeof x !== "string") return f.filter((y): y is string => typeof y === "string");
  return f as string[];
}

function emptyTopic(caps: Record<string, boolean>, topic: Value | undefined): Value | undefined {
  return topic === "" && !caps.empty_topic_name ? EMPTY_TOPIC_DISPLAY_NAME : topic;
}

/**
 * The message as queues registered alike see it, made once per emitted
 * message and kind of queue (apply_markdown, client_gravatar, the
 * empty_topic_name capability) and shared by those queues: a fan-out to
 * 1,000 queues copies the message once or twice, not 1,000 times. Never
 * changed once made (queues, snapshots and replies hold it).
 */
const shapedMessages = new WeakMap<Obj, (Obj | undefined)[]>();

function messageFor(src: Obj, reg: Registration): Obj {
  const variant =
    (reg.applyMarkdown ? 1 : 0) | (reg.clientGravatar ? 2 : 0) | (reg.capabilities.empty_topic_name ? 4 : 0);
  let made = shapedMessages.get(src);
  if (made === undefined) shapedMessages.set(src, (made = []));
  return (made[variant] ??= copyMessage(src, reg));
}

/**
 * A copy of the emitted message for one kind of queue. Built key by key
 * rather than spread and `delete`d: deleting keys would leave the copy a
 * hash table (V8's dictionary mode), slower to build and to serialize.
 */
function copyMessage(src: Obj, reg: Registration): Obj {
  const message: Obj = {};
  const noAvatar = reg.clientGravatar && src.sender_avatar_source === "G";
  for (const k of Object.keys(src)) {
    if (k === "rendered_content" || k === "sender_avatar_source") continue;
    message[k] = src[k]!;
  }
  if ("rendered_content" in src && reg.applyMarkdown) message.content = src.rendered_content ?? "";
  message.content_type = reg.applyMarkdown ? "text/html" : "text/x-markdown";
  if (noAvatar) message.avatar_url = null;
  if (message.type === "stream") message.subject = emptyTopic(reg.capabilities, message.subject) ?? "";
  return message;
}

function shapeMessage(event: Obj, reg: Registration, userId: number, queueId: string): Obj | null {
  let flags = flagsFor(event, userId);
  if (flags === null) {
    if (!watchesPublicChannels(reg)) return null;
    flags = [];
  }
  const src = (event.message ?? {}) as Obj;
  if (!matchesNarrow(reg.narrow, src, flags)) return null;
  const out: Obj = { type: "message", message: messageFor(src, reg), flags };
  if (event.sender_queue_id === queueId && event.local_id !== undefined)
    out.local_message_id = event.local_id;
  return out;
}

/**
 * The events (0, 1 or several) a queue gets for one emitted event, without
 * ids. `queueId` and `userId` identify the receiving queue.
 */
export function shapeForQueue(event: Obj, reg: Registration, userId: number, queueId: string): Obj[] {
  const type = str(event.type);
  if (reg.eventTypes !== null && type !== "heartbeat" && !reg.eventTypes.includes(type)) return [];
  const caps = reg.capabilities;
  switch (type) {
    case "message": {
      const m = shapeMessage(event, reg, userId, queueId);
      return m ? [m] : [];
    }
    case "delete_message": {
      const e: Obj = { ...event };
      if ("topic" in e) e.topic = emptyTopic(caps, e.topic) ?? "";
      const ids = Array.isArray(e.message_ids) ? e.message_ids : null;
      if (caps.bulk_message_deletion || ids === null) return [e];
      // Without bulk_message_deletion: one event per message, with message_id.
      delete e.message_ids;
      return ids.map((id) => ({ ...e, message_id: id }));
    }
    case "update_message": {
      const e: Obj = { ...event };
      for (const k of ["topic", "subject", "orig_subject"]) if (k in e) e[k] = emptyTopic(caps, e[k]) ?? "";
      return [e];
    }
    case "typing": {
      if (event.message_type === "stream" && !caps.stream_typing_notifications) return [];
      const e: Obj = { ...event };
      if ("topic" in e) e.topic = emptyTopic(caps, e.topic) ?? "";
      return [e];
    }
    case "muted_topics": {
      // Zulip 6.0 (feature level 134): a queue that asked for user_topic
      // gets that instead of this legacy event.
      if (reg.eventTypes?.includes("user_topic")) return [];
      const rows = Array.isArray(event.muted_topics) ? (event.muted_topics as Value[][]) : [];
      if (caps.empty_topic_name || !rows.some((r) => r[1] === "")) return [event];
      return [
        {
          ...event,
          muted_topics: rows.map((r) => (r[1] === "" ? [r[0]!, EMPTY_TOPIC_DISPLAY_NAME, r[2]!] : r)),
        },
      ];
    }
    case "user_topic":
      return event.topic_name === "" && !caps.empty_topic_name
        ? [{ ...event, topic_name: EMPTY_TOPIC_DISPLAY_NAME }]
        : [event];
    case "update_message_flags": {
      // message_details (op remove, flag read) names each channel message's topic.
      const details = event.message_details;
      if (caps.empty_topic_name || !details || typeof details !== "object" || Array.isArray(details))
        return [event];
      const out: Obj = {};
      for (const [id, d] of Object.entries(details)) {
        const o = d as Obj;
        out[id] = o && o.topic === "" ? { ...o, topic: EMPTY_TOPIC_DISPLAY_NAME } : o;
      }
      return [{ ...event, message_details: out }];
    }
    case "user_group": {
      // The group directory attaches the whole group (reactivation_group) to
      // an update that changes `deactivated`: without include_deactivated_groups
      // deactivation reads as remove and reactivation as add (Zulip's rule).
      const data = event.data as Obj | undefined;
      const full = event.reactivation_group as Obj | undefined;
      const e: Obj = { ...event };
      delete e.reactivation_group;
      if (
        event.op !== "update" ||
        !data ||
        typeof data.deactivated !== "boolean" ||
        caps.include_deactivated_groups
      )
        return [e];
      return data.deactivated
        ? [{ type: "user_group", op: "remove", group_id: event.group_id ?? null }]
        : full
          ? [{ type: "user_group", op: "add", group: full }]
          : [];
    }
    case "realm_emoji": {
      // Emitted with the change (op add: `emoji`; op update_one: `emoji_id`,
      // `data`) and the whole map (`realm_emoji`). With
      // individual_emoji_changes the client gets the change alone; without
      // it, Zulip's legacy op "update" carrying the whole map.
      const { realm_emoji: all, ...change } = event;
      if (caps.individual_emoji_changes || event.op === "update")
        return [event.op === "update" ? event : change];
      return [{ type: "realm_emoji", op: "update", realm_emoji: all ?? {} }];
    }
    case "stream": {
      // Archiving (op delete) and unarchiving (op create) carry `as_update`,
      // the stream/update of is_archived that archived_channels clients get
      // instead (FL 378).
      const { as_update: asUpdate, ...legacy } = event;
      if (asUpdate === undefined) return [event];
      return caps.archived_channels ? [asUpdate as Obj] : [legacy];
    }
    case "update_display_settings":
    case "update_global_notifications":
      // Legacy twins of user_settings events (feature level 89): only for clients without user_settings_object.
      return caps.user_settings_object ? [] : [event];
    case "realm_linkifiers":
      // Without linkifier_url_template, realm_linkifiers stays empty and no events are sent.
      return caps.linkifier_url_template ? [event] : [];
    case "presence": {
      if (!("presences" in event)) return caps.simplified_presence_events ? [] : [event];
      if (caps.simplified_presence_events) return [{ type: "presence", presences: event.presences ?? {} }];
      if (!("presence" in event)) return [];
      const e: Obj = { ...event };
      delete e.presences;
      return [e];
    }
    case "realm_user": {
      // An "Unknown user" add for a guest who may not access the new user (FL 232).
      if (event[UNKNOWN_USER_ADD] === true) {
        if (caps.user_list_incomplete) return [];
        const { [UNKNOWN_USER_ADD]: _mark, ...placeholder } = event;
        return [placeholder];
      }
      // As Zulip's apply_event: a client_gravatar queue computes gravatar URLs itself.
      const person = event.person as Obj | undefined;
      if (!reg.clientGravatar || !person || typeof person.avatar_url !== "string") return [event];
      if (!person.avatar_url.startsWith(GRAVATAR_PREFIX)) return [event];
      return [{ ...event, person: { ...person, avatar_url: null } }];
    }
    default:
      return [event];
  }
}
