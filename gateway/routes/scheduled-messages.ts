// Scheduled messages (Zulip's zerver/views/scheduled_messages.py): parse,
// one call to the caller's user actor, reply. The actor checks the time,
// the recipients and the content in Zulip's order
// (actors/user/scheduled-messages.ts); `to` goes on as the raw text, as
// Zulip reads it only once it knows the message's type.

import { userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { ArgsOf } from "../../actors/protocol.ts";
import type { UserProtocol } from "../../actors/user/index.ts";
import { clientName, defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";
import { pathInt } from "./messages.ts";

/** Zulip's Message.API_RECIPIENT_TYPES. */
const TYPES = ["direct", "private", "stream", "channel"];

/** The type as Zulip stores it: "channel" is "stream", "direct" is "private" (TYPES only). */
function storedType(t: string): "stream" | "private" {
  return t === "channel" || t === "stream" ? "stream" : "private";
}

function own(req: RouteRequest) {
  return userRef(req.caller!.realmId, req.caller!.userId);
}

const listScheduled = defineRoute({
  method: "GET",
  path: "/scheduled_messages",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(own(req), "scheduledMessages", {});
  },
});

const createScheduled = defineRoute({
  method: "POST",
  path: "/scheduled_messages",
  auth: "required",
  params: {
    type: param(p.oneOf(TYPES, p.string()), { required: true }),
    to: param(p.string(), { required: true }),
    topic: param(p.string(), { aliases: ["subject"] }),
    content: param(p.string(), { required: true }),
    scheduled_delivery_timestamp: param(p.int(), { required: true }),
    read_by_sender: param(p.bool()),
  },
  async handler(req) {
    return await req.call(own(req), "createScheduledMessage", {
      type: storedType(req.params.type),
      to: req.params.to,
      content: req.params.content,
      deliver_at: req.params.scheduled_delivery_timestamp,
      client: clientName(req),
      topic: req.params.topic,
      read_by_sender: req.params.read_by_sender,
    });
  },
});

const editScheduled = defineRoute({
  method: "PATCH",
  path: "/scheduled_messages/:scheduled_message_id",
  auth: "required",
  params: {
    type: param(p.oneOf(TYPES, p.string())),
    to: param(p.string()),
    topic: param(p.string(), { aliases: ["subject"] }),
    content: param(p.string()),
    scheduled_delivery_timestamp: param(p.int()),
  },
  async handler(req) {
    const id = pathInt(req, "scheduled_message_id");
    const { type, to, topic, content, scheduled_delivery_timestamp: at } = req.params;
    if (
      type === undefined &&
      to === undefined &&
      topic === undefined &&
      content === undefined &&
      at === undefined
    ) {
      throw errors.nothingToChange();
    }
    const args: ArgsOf<UserProtocol, "editScheduledMessage"> = {
      id,
      client: clientName(req),
      to: to as string | undefined,
      topic: topic as string | undefined,
      content: content as string | undefined,
      deliver_at: at as number | undefined,
    };
    if (type !== undefined) {
      if (to === undefined) throw errors.scheduledRecipientRequired();
      args.type = storedType(type as string);
      if (args.type === "stream" && topic === undefined) throw errors.scheduledTopicRequired();
    }
    return await req.call(own(req), "editScheduledMessage", args);
  },
});

const deleteScheduled = defineRoute({
  method: "DELETE",
  path: "/scheduled_messages/:scheduled_message_id",
  auth: "required",
  params: {},
  async handler(req) {
    const id = pathInt(req, "scheduled_message_id");
    return await req.call(own(req), "deleteScheduledMessage", { id });
  },
});

export const scheduledMessageRoutes: RouteDef[] = [
  listScheduled,
  createScheduled,
  editScheduled,
  deleteScheduled,
];
