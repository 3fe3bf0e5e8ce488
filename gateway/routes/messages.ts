// Messages (Zulip's zerver/views/message_send.py, message_fetch.py,
// message_flags.py) and the topic list: parameters and replies. Reads go
// through the narrow planner (gateway/narrow.ts).

import { MAX_MESSAGES_PER_FETCH, channelConvRef, dmConvRef, realmRef, userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { SendReply } from "../../actors/channel/index.ts";
import type { ArgsOf } from "../../actors/protocol.ts";
import type { Obj, Value } from "../../actors/types.ts";
import type { RowRef, UserProtocol } from "../../actors/user/index.ts";
import { c, clientName, defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";
import {
  byMessageIds,
  channelIdOf,
  convRef,
  findMessages,
  loadMessages,
  locate,
  narrowChecker,
  narrowContext,
  parseAnchor,
  select,
  selectRelayed,
  type Item,
} from "../narrow.ts";
import { linkOrigin } from "./notification-bot.ts";
import { dateAnchor, parseAnchorDate } from "../anchor-date.ts";

function meId(req: RouteRequest): number {
  return req.caller!.userId;
}

export function pathInt(req: RouteRequest, name: string): number {
  const raw = req.path[name] ?? "";
  if (!/^\d{1,15}$/.test(raw)) throw errors.noSuchRoute();
  return Number(raw);
}

async function emailsToIds(req: RouteRequest, emails: string[]): Promise<number[]> {
  if (!emails.length) return [];
  const r = await req.call(realmRef(req.realmId), "resolveEmails", { emails });
  return r.ids;
}

// ---- POST /messages ------------------------------------------------------------

const MESSAGE_TYPES = ["stream", "channel", "private", "direct"];

/** `to`: a JSON list, a JSON scalar, or raw text (a channel name or comma-separated emails). */
function parseTo(raw: string): Value {
  try {
    return JSON.parse(raw) as Value;
  } catch {
    return raw;
  }
}

/**
 * A channel send's automatic topic visibility (Zulip 8.0, FL 214/218/235):
 * the send's delivery set it with the rows, before the send replied
 * (actors/user/auto-topics.ts); the reply carries
 * automatic_new_visibility_policy when the sender's policy changed.
 */
async function autoTopicVisibility(req: RouteRequest, sent: SendReply): Promise<Obj> {
  if (!("id" in sent)) return sent;
  const { auto_topic: auto, ...reply } = sent;
  if (!auto) return reply;
  const own = await req.call(userRef(req.realmId, meId(req)), "autoTopicOutcome", { message_id: reply.id });
  const out: Obj = reply;
  if (own.visibility_policy !== undefined) out.automatic_new_visibility_policy = own.visibility_policy;
  return out;
}

const sendMessage = defineRoute({
  method: "POST",
  path: "/messages",
  auth: "required",
  params: {
    type: param(p.oneOf(MESSAGE_TYPES, p.string()), { required: true }),
    to: param(parseTo, { required: true }),
    content: param(p.string(), { required: true }),
    topic: param(p.string(), { aliases: ["subject"] }),
    queue_id: param(p.string()),
    local_id: param(p.string()),
    read_by_sender: param(p.bool()),
  },
  async handler(req) {
    const type = req.params.type;
    const to = req.params.to;
    const args = {
      content: req.params.content,
      client: clientName(req),
      topic: req.params.topic,
      queue_id: req.params.queue_id,
      local_id: req.params.local_id,
      read_by_sender: req.params.read_by_sender,
    };
    if (type === "stream" || type === "channel") {
      let target: Value = to;
      if (Array.isArray(to)) {
        if (to.length !== 1) throw errors.exactlyOneChannel();
        target = to[0]!;
      }
      if (typeof target === "number" && Number.isInteger(target)) {
        return autoTopicVisibility(req, await req.call(channelConvRef(req.realmId, target), "send", args));
      }
      const name = String(target);
      const id = await channelIdOf(req, name);
      if (id === null) throw errors.channelDoesNotExist(name.trim());
      return autoTopicVisibility(req, await req.call(channelConvRef(req.realmId, id), "send", args));
    }
    const items: Value[] = Array.isArray(to) ? to : typeof to === "number" ? [to] : String(to).split(",");
    const ids: number[] = [];
    const emails: string[] = [];
    for (const item of items) {
      if (typeof item === "number" && Number.isInteger(item)) ids.push(item);
      else if (typeof item === "string" && item.trim() !== "") emails.push(item.trim());
      else throw errors.invalid("recipients");
    }
    ids.push(...(await emailsToIds(req, emails)));
    if (!ids.length) throw errors.badRequest("Message must have recipients");
    return await req.call(dmConvRef(req.realmId, [...ids, meId(req)]), "send", args);
  },
});

const getMessages = defineRoute({
  method: "GET",
  path: "/messages",
  auth: "required",
  params: {
    anchor: param(p.string()),
    num_before: param(p.int({ min: 0 }), { default: 0 }),
    num_after: param(p.int({ min: 0 }), { default: 0 }),
    include_anchor: param(p.bool(), { default: true }),
    narrow: param(p.json(narrowChecker), { default: [] }),
    client_gravatar: param(p.bool(), { default: true }),
    apply_markdown: param(p.bool(), { default: true }),
    use_first_unread_anchor: param(p.bool(), { default: false }),
    allow_empty_topic_name: param(p.bool(), { default: false }),
    message_ids: param(p.json(c.list(c.int({ min: 0 })))),
    // FL 445: with anchor=date.
    anchor_date: param(p.string()),
  },
  async handler(req) {
    const messageIds = req.params.message_ids;
    if (messageIds !== undefined) return byMessageIds(req, messageIds);
    const useFirstUnread = req.params.use_first_unread_anchor;
    const anchor =
      req.params.anchor === "date" && !useFirstUnread
        ? await dateAnchor(req, req.params.narrow, parseAnchorDate(req.params.anchor_date))
        : parseAnchor(req.params.anchor, useFirstUnread);
    const numBefore = req.params.num_before;
    const numAfter = req.params.num_after;
    const includeAnchor = req.params.include_anchor;
    if (numBefore + numAfter > MAX_MESSAGES_PER_FETCH) throw errors.tooManyMessages();
    if (!includeAnchor && numBefore > 0 && numAfter > 0) throw errors.anchorExcluded();
    const opts = {
      apply_markdown: req.params.apply_markdown,
      client_gravatar: req.params.client_gravatar,
      allow_empty_topic_name: req.params.allow_empty_topic_name,
    };
    return await selectRelayed(req, req.params.narrow, { anchor, numBefore, numAfter, includeAnchor }, opts);
  },
});

const getMessage = defineRoute({
  method: "GET",
  path: "/messages/:message_id",
  auth: "required",
  params: {
    apply_markdown: param(p.bool(), { default: true }),
    allow_empty_topic_name: param(p.bool(), { default: false }),
  },
  async handler(req) {
    const id = pathInt(req, "message_id");
    const items = await findMessages(req, [id]);
    if (!items.length) throw errors.invalidMessages();
    const opts = {
      apply_markdown: req.params.apply_markdown,
      client_gravatar: false,
      allow_empty_topic_name: req.params.allow_empty_topic_name,
    };
    const [message] = await loadMessages(req, items, opts);
    if (!message) throw errors.invalidMessages();
    const raw = (await loadMessages(req, items, { ...opts, apply_markdown: false }))[0]!;
    return { raw_content: raw.content as string, message };
  },
});

// ---- flags ---------------------------------------------------------------------------

const updateFlags = defineRoute({
  method: "POST",
  path: "/messages/flags",
  auth: "required",
  params: {
    messages: param(p.intList(), { required: true }),
    op: param(p.string(), { required: true }),
    flag: param(p.string(), { required: true }),
  },
  async handler(req) {
    const args: FlagChange = {
      messages: req.params.messages,
      op: req.params.op,
      flag: req.params.flag,
    };
    const user = userRef(req.realmId, meId(req));
    if (args.flag === "read" && args.op === "remove") return markUnread(req, args);
    try {
      return await req.call(user, "updateFlags", args);
    } catch (e) {
      if ((e as { message?: string }).message !== errors.invalidMessages().message) throw e;
    }
    // Some ids are not the caller's: messages of channels whose history
    // they may read get historical rows (Zulip's create_historical_user_messages);
    // marking such messages unread is ignored, as Zulip keeps unreads to
    // subscribed channels.
    const ids = [...new Set(args.messages)];
    const found = await findMessages(req, ids);
    if (found.length !== ids.length) throw errors.invalidMessages();
    return await req.call(user, "updateFlags", {
      ...args,
      historical: found.filter((i) => i.located).map(rowOf),
      received: receivedArgs(found),
    });
  },
});

/** POST /messages/flags's parameters, as the user actor's updateFlags takes them. */
type FlagChange = ArgsOf<UserProtocol, "updateFlags">;

function rowOf(i: Item): RowRef {
  return [i.id, i.conv, i.topic, i.sender];
}

/**
 * Marking unread keeps Zulip's invariant that unread channel messages are
 * in subscribed channels: messages of other channels are ignored.
 */
async function markUnread(req: RouteRequest, args: FlagChange): Promise<Obj> {
  const ids = [...new Set(args.messages)];
  const found = await findMessages(req, ids);
  if (found.length !== ids.length) throw errors.invalidMessages();
  const subscribed = new Set((await narrowContext(req)).subscribed.map(String));
  const keep = found.filter((i) => i.conv.startsWith("dm:") || subscribed.has(i.conv));
  return await req.call(userRef(req.realmId, meId(req)), "updateFlags", {
    ...args,
    messages: keep.map((i) => i.id),
    historical: keep.filter((i) => i.located).map(rowOf),
    received: receivedArgs(keep),
  });
}

/** Channel messages found as the caller's, as received rows (the user actor skips those with entries). */
function receivedArgs(items: Item[]): RowRef[] {
  return items.filter((i) => !i.located && !i.conv.startsWith("dm:")).map(rowOf);
}

const updateFlagsNarrow = defineRoute({
  method: "POST",
  path: "/messages/flags/narrow",
  auth: "required",
  params: {
    anchor: param(p.string(), { required: true }),
    include_anchor: param(p.bool(), { default: true }),
    num_before: param(p.int({ min: 0 }), { required: true }),
    num_after: param(p.int({ min: 0 }), { required: true }),
    narrow: param(p.json(narrowChecker), { default: [] }),
    op: param(p.string(), { required: true }),
    flag: param(p.string(), { required: true }),
  },
  async handler(req) {
    const anchor = parseAnchor(req.params.anchor, false);
    // The server may lower the range (spec): at most 5000 messages per call.
    const numBefore = Math.min(req.params.num_before, MAX_MESSAGES_PER_FETCH);
    const numAfter = Math.min(req.params.num_after, MAX_MESSAGES_PER_FETCH - numBefore);
    const includeAnchor = req.params.include_anchor;
    if (!includeAnchor && numBefore > 0 && numAfter > 0) throw errors.anchorExcluded();
    const s = await select(
      req,
      req.params.narrow,
      { anchor, numBefore, numAfter, includeAnchor },
      {
        apply_markdown: false,
        client_gravatar: true,
        allow_empty_topic_name: true,
      },
    );
    const op = req.params.op;
    const flag = req.params.flag;
    const processed = s.messages.map((m) => m.id as number);
    const readRemove = flag === "read" && op === "remove";
    // Unreceived messages of readable channels get historical rows (Zulip's
    // do_update_message_flags); marking unread skips unsubscribed channels.
    const subscribed = readRemove ? new Set((await narrowContext(req)).subscribed) : null;
    const ignored = new Set<number>();
    const targets = s.messages.filter((m) => {
      if (!subscribed || typeof m.stream_id !== "number" || subscribed.has(m.stream_id)) return true;
      ignored.add(m.stream_id);
      return false;
    });
    const channelRow = (m: Obj): RowRef => [
      m.id as number,
      String(m.stream_id),
      m.subject as string,
      m.sender_id as number,
    ];
    const historical = targets
      .filter((m) => (m.flags as string[]).includes("historical") && typeof m.stream_id === "number")
      .map(channelRow);
    const received = targets
      .filter((m) => !(m.flags as string[]).includes("historical") && typeof m.stream_id === "number")
      .map(channelRow);
    const r = await req.call(userRef(req.realmId, meId(req)), "updateFlags", {
      messages: targets.map((m) => m.id as number),
      op,
      flag,
      historical,
      received,
    });
    const out: Obj = {
      processed_count: processed.length,
      updated_count: r.messages.length,
      first_processed_id: processed.length ? processed[0]! : null,
      last_processed_id: processed.length ? processed[processed.length - 1]! : null,
      found_oldest: s.found_oldest,
      found_newest: s.found_newest,
    };
    if (readRemove) out.ignored_because_not_subscribed_channels = [...ignored].sort((a, b) => a - b);
    return out;
  },
});

// ---- topics ------------------------------------------------------------------------------

const getTopics = defineRoute({
  method: "GET",
  path: "/users/me/:stream_id/topics",
  auth: "required",
  params: { allow_empty_topic_name: param(p.bool(), { default: false }) },
  async handler(req) {
    const raw = req.path.stream_id ?? "";
    if (!/^\d{1,15}$/.test(raw)) throw errors.invalidChannelId();
    return await req.call(channelConvRef(req.realmId, Number(raw)), "topics", {
      allow_empty_topic_name: req.params.allow_empty_topic_name,
    });
  },
});

export const messageRoutes: RouteDef[] = [
  sendMessage,
  getMessages,
  getMessage,
  updateFlags,
  updateFlagsNarrow,
  getTopics,
];

// ---- reactions, edit, delete: find the message's conversation (index, then public history) ----

function reactionRoute(method: "POST" | "DELETE"): RouteDef {
  return defineRoute({
    method,
    path: "/messages/:message_id/reactions",
    auth: "required",
    params: {
      emoji_name: param(p.string(), { required: method === "POST" }),
      emoji_code: param(p.string()),
      reaction_type: param(p.string()),
    },
    async handler(req) {
      const id = pathInt(req, "message_id");
      const item = await locate(req, id);
      // The reactor's automatic topic policies are the react turn's
      // hand-off, run before it answers (actors/channel/participation.ts).
      return await req.call(convRef(req, item.conv), "react", {
        message_id: id,
        op: method === "POST" ? "add" : "remove",
        emoji_name: req.params.emoji_name,
        emoji_code: req.params.emoji_code,
        reaction_type: req.params.reaction_type,
      });
    },
  });
}

const editMessage = defineRoute({
  method: "PATCH",
  path: "/messages/:message_id",
  auth: "required",
  params: {
    content: param(p.string()),
    topic: param(p.string(), { aliases: ["subject"] }),
    propagate_mode: param(p.string()),
    stream_id: param(p.int()),
    send_notification_to_old_thread: param(p.bool()),
    send_notification_to_new_thread: param(p.bool()),
    prev_content_sha256: param(p.string()),
  },
  async handler(req) {
    const id = pathInt(req, "message_id");
    const item = await locate(req, id);
    const args = {
      message_id: id,
      content: req.params.content,
      topic: req.params.topic,
      propagate_mode: req.params.propagate_mode,
      prev_content_sha256: req.params.prev_content_sha256,
      send_notification_to_old_thread: req.params.send_notification_to_old_thread,
      send_notification_to_new_thread: req.params.send_notification_to_new_thread,
      link_origin: linkOrigin(req),
    };
    const streamId = req.params.stream_id;
    if (streamId === undefined || String(streamId) === item.conv) {
      // Within the channel; a topic change's breadcrumbs are posted by the
      // edit's hand-off before it answers (actors/channel/breadcrumbs.ts).
      const reply = await req.call(convRef(req, item.conv), "edit", args);
      // FL 285: always present; files only when a content edit dropped the last link.
      return { detached_uploads: [], ...reply };
    }
    // Another channel: one turn of the source, which decides the move and
    // answers once its hand-off completed it (actors/channel/move.ts).
    await req.call(convRef(req, item.conv), "move", { ...args, stream_id: streamId });
    return { detached_uploads: [] };
  },
});

const deleteMessage = defineRoute({
  method: "DELETE",
  path: "/messages/:message_id",
  auth: "required",
  params: {},
  async handler(req) {
    const id = pathInt(req, "message_id");
    const item = await locate(req, id);
    return await req.call(convRef(req, item.conv), "remove", { message_id: id });
  },
});

messageRoutes.push(reactionRoute("POST"), reactionRoute("DELETE"), editMessage, deleteMessage);

// ---- topic visibility ------------------------------------------------------------------

const setUserTopic = defineRoute({
  method: "POST",
  path: "/user_topics",
  auth: "required",
  params: {
    stream_id: param(p.int(), { required: true }),
    topic: param(p.string(), { required: true }),
    visibility_policy: param(p.int(), { required: true }),
  },
  async handler(req) {
    return await req.call(userRef(req.realmId, meId(req)), "setUserTopic", {
      stream_id: req.params.stream_id,
      topic: req.params.topic,
      visibility_policy: req.params.visibility_policy,
    });
  },
});

const muteTopicLegacy = defineRoute({
  method: "PATCH",
  path: "/users/me/subscriptions/muted_topics",
  auth: "required",
  params: {
    stream_id: param(p.int()),
    stream: param(p.string()),
    topic: param(p.string(), { required: true }),
    op: param(p.oneOf(["add", "remove"], p.string()), { required: true }),
  },
  async handler(req) {
    const byId = req.params.stream_id;
    const byName = req.params.stream;
    if (byId === undefined && byName === undefined) throw errors.supplyStream();
    if (byId !== undefined && byName !== undefined) throw errors.chooseStream();
    let streamId = byId;
    if (streamId === undefined) {
      const id = await channelIdOf(req, byName!);
      if (id === null) throw errors.channelDoesNotExist(byName!.trim());
      streamId = id;
    }
    return await req.call(userRef(req.realmId, meId(req)), "muteTopicLegacy", {
      stream_id: streamId,
      topic: req.params.topic,
      op: req.params.op,
    });
  },
});

messageRoutes.push(setUserTopic, muteTopicLegacy);
