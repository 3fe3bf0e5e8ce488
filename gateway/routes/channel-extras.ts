// Channel endpoints beside the core ones (Zulip's zerver/views/streams.py):
// default channels, a user's subscription status, the combined
// subscribe/unsubscribe, and topic deletion. Logic in
// actors/channel-directory/channel-extras.ts and actors/channel/channel-extras.ts.

import { channelConvRef, channelDirectoryRef } from "../../actors/index.ts";
import { c, defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";
import { pathInt } from "./messages.ts";

/**
 * How long POST /streams/{id}/delete_topic keeps starting batches before
 * answering complete: false (Zulip gives itself 50 s of a 60 s request;
 * this is the same share of the gateway's 10 s deadline).
 */
const DELETE_TOPIC_BUDGET_MS = 5_000;

function dir(req: RouteRequest) {
  return channelDirectoryRef(req.realmId);
}

const streamIdParam = { stream_id: param(p.json(c.int()), { required: true }) };

/** POST makes a channel default, DELETE stops it being one: the same call either way. */
function defaultStreamRoute(method: "POST" | "DELETE", isDefault: boolean): RouteDef {
  return defineRoute({
    method,
    path: "/default_streams",
    auth: "required",
    params: streamIdParam,
    async handler(req) {
      return await req.call(dir(req), "setDefaultChannel", {
        stream_id: req.params.stream_id,
        is_default: isDefault,
      });
    },
  });
}

const addDefaultStream = defaultStreamRoute("POST", true);
const removeDefaultStream = defaultStreamRoute("DELETE", false);

const subscriptionStatus = defineRoute({
  method: "GET",
  path: "/users/:user_id/subscriptions/:stream_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(dir(req), "subscriptionStatus", {
      user_id: pathInt(req, "user_id"),
      stream_id: pathInt(req, "stream_id"),
    });
  },
});

const addItem = c.dict<{ name: string; color?: string; description?: string }>({
  name: { check: c.string(), required: true },
  color: { check: c.string() },
  description: { check: c.string() },
});

const updateSubscriptions = defineRoute({
  method: "PATCH",
  path: "/users/me/subscriptions",
  auth: "required",
  params: {
    add: param(p.json(c.list(addItem))),
    delete: param(p.json(c.list(c.string()))),
  },
  async handler(req) {
    // `created` is for announcements, which this endpoint never makes.
    const { created: _created, ...reply } = await req.call(dir(req), "updateSubscriptions", {
      add: req.params.add as { name: string; color?: string; description?: string }[] | undefined,
      delete: req.params.delete,
    });
    return reply;
  },
});

const deleteTopic = defineRoute({
  method: "POST",
  path: "/streams/:stream_id/delete_topic",
  auth: "required",
  params: { topic_name: param(p.string(), { required: true }) },
  async handler(req) {
    const conv = channelConvRef(req.realmId, pathInt(req, "stream_id"));
    const stop = Date.now() + DELETE_TOPIC_BUDGET_MS;
    for (;;) {
      const r = await req.call(conv, "deleteTopicBatch", { topic_name: req.params.topic_name });
      if (!r.more) return { complete: true };
      if (Date.now() >= stop) return { complete: false };
    }
  },
});

export const channelExtraRoutes: RouteDef[] = [
  addDefaultStream,
  removeDefaultStream,
  subscriptionStatus,
  updateSubscriptions,
  deleteTopic,
];
