// Typing notifications (Zulip's zerver/views/typing.py): POST /typing goes to
// the typing user's own actor, POST /messages/{id}/typing to the message's
// conversation. Neither writes anything: the actors answer with events only.

import { userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { c, defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";
import { convRef, locate } from "../narrow.ts";

const OPS = ["start", "stop"] as const;
const TYPES = ["direct", "stream", "channel"];

// Zulip's signature order: to, op, type, stream_id, topic.
const setTyping = defineRoute({
  method: "POST",
  path: "/typing",
  auth: "required",
  params: {
    to: param(p.json(c.nullable(c.list(c.int())))),
    op: param(p.oneOf(OPS, p.string()), { required: true }),
    type: param(p.oneOf(TYPES, p.string()), { default: "direct" }),
    stream_id: param(p.json(c.nullable(c.int()))),
    topic: param(p.string(), { aliases: ["subject"] }),
  },
  async handler(req) {
    return await req.call(userRef(req.realmId, req.caller!.userId), "typing", {
      op: req.params.op === "stop" ? "stop" : "start",
      type: req.params.type === "direct" ? "direct" : "stream",
      to: req.params.to ?? null,
      stream_id: req.params.stream_id ?? null,
      topic: req.params.topic ?? null,
    });
  },
});

function messageId(req: RouteRequest): number {
  const raw = req.path.message_id ?? "";
  if (!/^\d{1,15}$/.test(raw)) throw errors.noSuchRoute();
  return Number(raw);
}

const setEditTyping = defineRoute({
  method: "POST",
  path: "/messages/:message_id/typing",
  auth: "required",
  params: {
    op: param(p.oneOf(OPS, p.string()), { required: true }),
  },
  async handler(req) {
    const id = messageId(req);
    const item = await locate(req, id);
    return await req.call(convRef(req, item.conv), "editTyping", {
      message_id: id,
      op: req.params.op,
    });
  },
});

export const typingRoutes: RouteDef[] = [setTyping, setEditTyping];
