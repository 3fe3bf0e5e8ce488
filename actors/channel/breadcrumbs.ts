// The Notification Bot's posts that follow a change of messages or channels
// (zerver/actions/message_edit.py send_message_moved_breadcrumbs,
// zerver/views/streams.py announcements and new-subscription notices):
// the breadcrumbs' texts, and posting once. A post is the target
// conversation's ordinary `send` with `notification_bot: true` and a
// `send_key`, made by the node-side handler of the deciding turn's hand-off
// (move.ts; MOVE_BREADCRUMBS for a topic moved within its channel by
// `edit`; BOT_POSTS for the channel directory's createChannel and
// subscribe, channel-directory/bot-posts.ts): a hand-off given again after
// a crash finds its message by the key and posts nothing twice.

import type { ZulipError } from "../errors.ts";
import { eachHandoff } from "../errors.ts";
import type { TypedCallAs } from "../protocol.ts";
import type { Caller, Obj } from "../types.ts";
import { realmRef } from "../addresses.ts";
import type { BotPost, BotPostOrder } from "../channel-directory/index.ts";
import { NOTIFICATION_BOT_ID } from "../realm/index.ts";
import { channelConvRef, dmConvRef } from "./refs.ts";

export type { BotPost };

/** Zulip's silent_mention_syntax_for_user. */
export function silentMention(fullName: string, userId: number): string {
  return `@_**${fullName}|${userId}**`;
}

/** Zulip's hash_util_encode: percent-encode all but [A-Za-z0-9_.~-], then "." -> "%2E", "%" -> ".". */
export function hashEncode(s: string): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) {
    const ch = String.fromCharCode(b);
    out += /[A-Za-z0-9_~-]/.test(ch) ? ch : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out.replace(/%/g, ".");
}

/**
 * Where the request that caused a post came from, for links in it: the
 * realm's own host when it has one, else this host (as /register's
 * realm_url).
 */
export interface LinkOrigin {
  scheme: string;
  host: string;
}

/** Zulip's near_stream_message_url, under the realm's URL. */
export async function nearMessageUrl(
  call: TypedCallAs,
  caller: Caller,
  origin: LinkOrigin,
  streamId: number,
  name: string,
  topic: string,
  id: number,
): Promise<string> {
  const info = await call(realmRef(caller.realmId), "publicInfo", {}, caller);
  const channel = `${streamId}-${hashEncode(name.replace(/ /g, "-"))}`;
  return `${origin.scheme}://${info.host || origin.host}/#narrow/channel/${channel}/topic/${hashEncode(topic)}/near/${id}`;
}

/** Post `p` as the Notification Bot on behalf of `caller`, at most once per key. */
export async function botPost(call: TypedCallAs, caller: Caller, p: BotPost): Promise<void> {
  // A direct message from the bot is an internal caller's only (this call is).
  const conv =
    p.user_id !== undefined
      ? dmConvRef(caller.realmId, [p.user_id, NOTIFICATION_BOT_ID])
      : channelConvRef(caller.realmId, p.stream_id);
  await call(
    conv,
    "send",
    {
      content: p.content,
      ...(p.topic !== undefined ? { topic: p.topic } : {}),
      client: "Internal",
      notification_bot: true,
      read_by_sender: p.read_by_actor,
      send_key: p.key,
    },
    caller,
  );
}

/** What a move did, for its breadcrumbs (Zulip's do_update_message). */
export interface MoveReport {
  /** The acting user, as a silent mention. */
  actor: string;
  oldStreamId: number;
  oldStreamName: string;
  oldTopic: string;
  newStreamId: number;
  newStreamName: string;
  newTopic: string;
  /** Zulip's changed_messages_count. */
  count: number;
  /** The original topic has no messages left (Zulip's moved_all_visible_messages). */
  all: boolean;
  /** The new topic already held other messages. */
  preexisting: boolean;
  /** The message the request named (the "[A message](link)" target). */
  messageId: number;
}

/** Which breadcrumbs a move asked for (send_notification_to_old_thread / _new_thread). */
export interface BreadcrumbChoice {
  toOld: boolean;
  toNew: boolean;
  /** For the link of a one-message notice. */
  origin: LinkOrigin;
}

/** Zulip's RESOLVED_TOPIC_PREFIX. */
const RESOLVED_PREFIX = "✔ ";

/**
 * send_notification_to_new_thread / _old_thread breadcrumbs, with Zulip's
 * texts: to the new location first, then the old one. A topic edit that only
 * resolves or unresolves the topic gets no new-thread notice (Zulip sends a
 * resolve notice there instead, which this server does not send). `key`
 * names the move: each breadcrumb is posted at most once under it.
 */
export async function postMoveBreadcrumbs(
  call: TypedCallAs,
  caller: Caller,
  r: MoveReport,
  choice: BreadcrumbChoice,
  key: string,
): Promise<void> {
  if (r.count === 0) return;
  const oldLink = `#**${r.oldStreamName}>${r.oldTopic}**`;
  const newLink = `#**${r.newStreamName}>${r.newTopic}**`;
  const streamChanged = r.oldStreamId !== r.newStreamId;
  const strip = (t: string) => (t.startsWith(RESOLVED_PREFIX) ? t.slice(RESOLVED_PREFIX.length) : t);
  const resolveOnly =
    !streamChanged &&
    strip(r.oldTopic) === strip(r.newTopic) &&
    r.oldTopic.startsWith(RESOLVED_PREFIX) !== r.newTopic.startsWith(RESOLVED_PREFIX);
  if (choice.toNew && !resolveOnly) {
    let content: string;
    if (!r.preexisting && r.all) content = `This topic was moved here from ${oldLink} by ${r.actor}.`;
    else if (r.count === 1) {
      const link = await nearMessageUrl(
        call,
        caller,
        choice.origin,
        r.newStreamId,
        r.newStreamName,
        r.newTopic,
        r.messageId,
      );
      content = `[A message](${link}) was moved here from ${oldLink} by ${r.actor}.`;
    } else content = `${r.count} messages were moved here from ${oldLink} by ${r.actor}.`;
    await botPost(call, caller, {
      stream_id: r.newStreamId,
      topic: r.newTopic,
      content,
      read_by_actor: false,
      key: `${key}:new`,
    });
  }
  if (choice.toOld) {
    let content: string;
    if (r.all) content = `This topic was moved to ${newLink} by ${r.actor}.`;
    else if (r.count === 1) content = `A message was moved from this topic to ${newLink} by ${r.actor}.`;
    else content = `${r.count} messages were moved from this topic to ${newLink} by ${r.actor}.`;
    await botPost(call, caller, {
      stream_id: r.oldStreamId,
      topic: r.oldTopic,
      content,
      read_by_actor: false,
      key: `${key}:old`,
    });
  }
}

export const MOVE_BREADCRUMBS = "message.breadcrumbs";

/** A topic move's breadcrumbs, decided by the edit's turn (journaled as its hand-off). */
export interface BreadcrumbOrder {
  /** The idempotency key of the posts. */
  key: string;
  caller: Caller;
  report: MoveReport;
  notify: BreadcrumbChoice;
}

export function breadcrumbsHandoff(order: BreadcrumbOrder): { subject: string; data: Obj } {
  return { subject: MOVE_BREADCRUMBS, data: order as unknown as Obj };
}

/**
 * Run MOVE_BREADCRUMBS hand-offs, in order. A post refused for good (a
 * Zulip error: the channel was archived meanwhile) is dropped; anything
 * else has the hand-off given again, which posts only what is missing.
 */
export function runBreadcrumbs(
  orders: Obj[],
  call: TypedCallAs,
  refused: (key: string, err: ZulipError) => void,
): Promise<boolean> {
  return eachHandoff(
    orders as unknown as BreadcrumbOrder[],
    (o) => postMoveBreadcrumbs(call, o.caller, o.report, o.notify, o.key),
    (o, err) => refused(o.key, err),
  );
}

/**
 * Run BOT_POSTS hand-offs (the channel directory's, bot-posts.ts), in
 * order. A post refused for good (a Zulip error: its channel was archived
 * or its recipient deactivated meanwhile) is dropped; anything else has the
 * hand-off given again, which posts only what is missing.
 */
export function runBotPosts(
  orders: Obj[],
  call: TypedCallAs,
  refused: (key: string, err: ZulipError) => void,
): Promise<boolean> {
  const posts = (orders as unknown as BotPostOrder[]).flatMap((o) =>
    o.posts.map((p) => ({ caller: o.caller, p })),
  );
  return eachHandoff(
    posts,
    ({ caller, p }) => botPost(call, caller, p),
    ({ p }, err) => refused(p.key, err),
  );
}
