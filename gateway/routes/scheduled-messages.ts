// Scheduled messages (Zulip's zerver/views/scheduled_messages.py): parse,
// one call to the caller's user actor, reply. The actor checks the time,
// the recipients and the content in Zulip's order
// (actors/user/scheduled-messages.ts); `to` goes on as the raw text, as
// Zulip reads it only once it knows the message's type.

import { userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj } from "../../actors/types.ts";
import { clientName, p, param, type RouteDef, type RouteRequest } from "../index.ts";
import { pathInt } from "./messages.ts";

/** Zulip's Message.API_RECIPIENT_TYPES. */
const TYPES = ["direct", "private", "stream", "channel"];

/** The type as Zulip stores it: "channel" is "stream", "direct" is "private". */
function storedType(t: string): string {
  return t === "channel" ? "stream" : t === "direct" ? "private" : t;
}

function own(req: RouteRequest) {
  return userRef(req.caller!.realmId, req.caller!.userId);
}

const listScheduled: RouteDef = {
  method: "GET",
  path: "/scheduled_messages",
  auth: "required",
  params: {},
  async handler(req) {
    return (await req.call(own(req), "scheduledMessages", {})) as Obj;
  },
};

const createScheduled: RouteDef = {
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
    const args: Obj = {
      type: storedType(req.params.type as string),
      to: req.params.to as string,
      content: req.params.content as string,
      deliver_at: req.params.scheduled_delivery_timestamp as number,
      client: clientName(req),
    };
    if (req.params.topic !== undefined) args.topic = req.params.topic as string;
    if (req.params.read_by_sender !== undefined) args.read_by_sender = req.params.read_by_sender as boolean;
    return (await req.call(own(req), "createScheduledMessage", args)) as Obj;
  },
};

const editScheduled: RouteDef = {
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
    const args: Obj = { id, client: clientName(req) };
    if (type !== undefined) {
      if (to === undefined) throw errors.scheduledRecipientRequired();
      args.type = storedType(type as string);
      if (args.type === "stream" && topic === undefined) throw errors.scheduledTopicRequired();
    }
    if (to !== undefined) args.to = to as string;
    if (topic !== undefined) args.topic = topic as string;
    if (content !== undefined) args.content = content as string;
    if (at !== undefined) args.deliver_at = at as number;
    return (await req.call(own(req), "editScheduledMessage", args)) as Obj;
  },
};

const deleteScheduled: RouteDef = {
  method: "DELETE",
  path: "/scheduled_messages/:scheduled_message_id",
  auth: "required",
  params: {},
  async handler(req) {
    const id = pathInt(req, "scheduled_message_id");
    return (await req.call(own(req), "deleteScheduledMessage", { id })) as Obj;
  },
};

export const scheduledMessageRoutes: RouteDef[] = [
  listScheduled,
  createScheduled,
  editScheduled,
  deleteScheduled,
];
