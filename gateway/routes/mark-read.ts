// Bulk mark-as-read (Zulip's zerver/views/message_flags.py mark_all_as_read,
// mark_stream_as_read, mark_topic_as_read; deprecated in favour of POST
// /messages/flags/narrow but still served): parse, one call to the caller's
// user actor, which checks channel access and changes its own flag entries
// in one turn.

import { userRef } from "../../actors/index.ts";
import { unreadRows as unreadOf } from "../received.ts";
import { defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";

function me(req: RouteRequest) {
  return userRef(req.realmId, req.caller!.userId);
}

function unreadRows(req: RouteRequest, convs: string[] | null, topic?: string) {
  return unreadOf(req, req.caller!.userId, convs, topic);
}

const markAllAsRead = defineRoute({
  method: "POST",
  path: "/mark_all_as_read",
  auth: "required",
  params: {},
  async handler(req) {
    const { newest } = await unreadRows(req, null);
    return await req.call(me(req), "markAllAsRead", { newest });
  },
});

const markStreamAsRead = defineRoute({
  method: "POST",
  path: "/mark_stream_as_read",
  auth: "required",
  params: { stream_id: param(p.int(), { required: true }) },
  async handler(req) {
    const streamId = req.params.stream_id;
    const { rows, newest } = await unreadRows(req, [String(streamId)]);
    await req.call(me(req), "markChannelAsRead", { stream_id: streamId, received: rows, newest });
    return {};
  },
});

const markTopicAsRead = defineRoute({
  method: "POST",
  path: "/mark_topic_as_read",
  auth: "required",
  // Zulip's signature order: topic_name is checked before stream_id.
  params: {
    topic_name: param(p.string(), { required: true }),
    stream_id: param(p.int(), { required: true }),
  },
  async handler(req) {
    const streamId = req.params.stream_id;
    const topic = req.params.topic_name;
    // The documented display name of the empty topic (the user actor maps it too).
    const named = topic === "general chat" ? "" : topic;
    const { rows, topicExists } = await unreadRows(req, [String(streamId)], named);
    await req.call(me(req), "markChannelAsRead", { stream_id: streamId, topic, received: rows, topicExists });
    return {};
  },
});

export const markReadRoutes: RouteDef[] = [markAllAsRead, markStreamAsRead, markTopicAsRead];
