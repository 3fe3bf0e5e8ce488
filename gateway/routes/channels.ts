// Channels and subscriptions (Zulip's zerver/views/streams.py): parse, call
// the realm's channel directory once, shape the reply.

import { channelDirectoryRef } from "../../actors/index.ts";
import { GROUP_SETTINGS } from "../../actors/channel-directory/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj, Value } from "../../actors/types.ts";
import {
  c,
  defineRoute,
  p,
  param,
  type Checker,
  type ParamSpec,
  type RouteDef,
  type RouteRequest,
} from "../index.ts";
import { includeSubscribersParser } from "./events.ts";

/** Group settings: any JSON; the permissions module checks the shape with Zulip's texts. */
function groupParams(): Record<string, ParamSpec> {
  const out: Record<string, ParamSpec> = {};
  for (const n of GROUP_SETTINGS) out[n] = param(p.json());
  return out;
}

/** message_retention_days is Json[str | int]; a bare word (unlimited) is taken as the string. */
const retentionParser = (raw: string): string | number => {
  try {
    const v = JSON.parse(raw) as unknown;
    if (typeof v === "string" || typeof v === "number") return v;
  } catch {
    // not JSON: the raw word
  }
  return raw;
};

const intOrNull: Checker<number | null> = c.nullable(c.int());

/** A path id: Zulip's URL patterns accept digits only, so anything else matches no route. */
function pathId(req: RouteRequest, name = "stream_id"): number {
  const raw = req.path[name] ?? "";
  if (!/^\d{1,15}$/.test(raw)) throw errors.noSuchRoute();
  return Number(raw);
}

function dir(req: RouteRequest) {
  return channelDirectoryRef(req.realmId);
}

/** A parameter as its parser returned it (undefined when absent). */
function given<T>(req: RouteRequest, name: string): T | undefined {
  return req.params[name] as T | undefined;
}

/** The group settings the client sent, by name (absent ones left out): raw JSON values. */
function groupsSent(req: RouteRequest): Obj {
  const out: Obj = {};
  for (const n of GROUP_SETTINGS) {
    const v = given<Value>(req, n);
    if (v !== undefined) out[n] = v;
  }
  return out;
}

/** A new channel's settings, as createChannel and subscribe take them. */
function creationArgs(req: RouteRequest) {
  return {
    description: given<string>(req, "description"),
    invite_only: given<boolean>(req, "invite_only"),
    is_web_public: given<boolean>(req, "is_web_public"),
    is_default_stream: given<boolean>(req, "is_default_stream"),
    history_public_to_subscribers: given<boolean>(req, "history_public_to_subscribers"),
    message_retention_days: given<string | number>(req, "message_retention_days"),
    topics_policy: given<string>(req, "topics_policy"),
    folder_id: given<number | null>(req, "folder_id"),
    groups: groupsSent(req),
  };
}

const creationParams: Record<string, ParamSpec> = {
  invite_only: param(p.bool()),
  is_web_public: param(p.bool()),
  is_default_stream: param(p.bool()),
  history_public_to_subscribers: param(p.bool()),
  message_retention_days: param(retentionParser),
  topics_policy: param(p.string()),
  folder_id: param(p.json(intOrNull)),
  ...groupParams(),
};

const createChannel = defineRoute({
  method: "POST",
  path: "/channels/create",
  auth: "required",
  params: {
    name: param(p.string(), { required: true }),
    subscribers: param(p.intList(), { required: true }),
    description: param(p.string()),
    announce: param(p.bool()),
    ...creationParams,
  },
  async handler(req) {
    // The announcement is the directory's to post (actors/channel-directory/bot-posts.ts).
    return await req.call(dir(req), "createChannel", {
      name: req.params.name,
      subscribers: req.params.subscribers,
      announce: req.params.announce,
      ...creationArgs(req),
    });
  },
});

const principalItem: Checker<number | string> = (v, name) => {
  if (typeof v === "string") return v;
  return c.int()(v, name);
};
const subscriptionItem = c.dict<{ name: string; description: string }>(
  { name: { check: c.string(), required: true }, description: { check: c.string() } },
  { allowExtra: true },
);

const subscribe = defineRoute({
  method: "POST",
  path: "/users/me/subscriptions",
  auth: "required",
  params: {
    subscriptions: param(p.json(c.list(subscriptionItem)), { required: true }),
    principals: param(p.json(c.list(principalItem))),
    authorization_errors_fatal: param(p.bool()),
    announce: param(p.bool()),
    send_new_subscription_messages: param(p.bool()),
    ...creationParams,
  },
  async handler(req) {
    // The announcement and the new-subscription notices are the directory's
    // to post (actors/channel-directory/bot-posts.ts).
    const { created: _created, ...reply } = await req.call(dir(req), "subscribe", {
      subscriptions: req.params.subscriptions as { name: string; description?: string }[],
      principals: req.params.principals,
      authorization_errors_fatal: req.params.authorization_errors_fatal,
      announce: req.params.announce,
      send_new_subscription_messages: req.params.send_new_subscription_messages,
      ...creationArgs(req),
    });
    return reply;
  },
});

const unsubscribe = defineRoute({
  method: "DELETE",
  path: "/users/me/subscriptions",
  auth: "required",
  params: {
    subscriptions: param(p.stringList(), { required: true }),
    principals: param(p.json(c.list(principalItem))),
  },
  async handler(req) {
    return await req.call(dir(req), "unsubscribe", {
      subscriptions: req.params.subscriptions,
      principals: req.params.principals,
    });
  },
});

const listSubscriptions = defineRoute({
  method: "GET",
  path: "/users/me/subscriptions",
  auth: "required",
  // true, false or "partial" (FL 412).
  params: { include_subscribers: param(includeSubscribersParser) },
  async handler(req) {
    return await req.call(dir(req), "mySubscriptions", {
      include_subscribers: req.params.include_subscribers,
    });
  },
});

const LIST_FLAGS = [
  "include_public",
  "include_web_public",
  "include_subscribed",
  "exclude_archived",
  "include_all",
  "include_default",
  "include_owner_subscribed",
  "include_can_access_content",
];

const listChannels = defineRoute({
  method: "GET",
  path: "/streams",
  auth: "required",
  params: Object.fromEntries(
    LIST_FLAGS.map((n) => [
      n,
      param(p.bool(), n === "include_all" ? { aliases: ["include_all_active"] } : {}),
    ]),
  ),
  async handler(req) {
    // include_owner_subscribed is accepted and has no effect here.
    return await req.call(dir(req), "listChannels", {
      include_public: given<boolean>(req, "include_public"),
      include_web_public: given<boolean>(req, "include_web_public"),
      include_subscribed: given<boolean>(req, "include_subscribed"),
      exclude_archived: given<boolean>(req, "exclude_archived"),
      include_all: given<boolean>(req, "include_all"),
      include_default: given<boolean>(req, "include_default"),
      include_can_access_content: given<boolean>(req, "include_can_access_content"),
    });
  },
});

const getChannel = defineRoute({
  method: "GET",
  path: "/streams/:stream_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(dir(req), "getChannel", { stream_id: pathId(req) });
  },
});

const getChannelId = defineRoute({
  method: "GET",
  path: "/get_stream_id",
  auth: "required",
  params: { stream: param(p.string(), { required: true }) },
  async handler(req) {
    return await req.call(dir(req), "channelIdByName", { stream: req.params.stream });
  },
});

const members = defineRoute({
  method: "GET",
  path: "/streams/:stream_id/members",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(dir(req), "members", { stream_id: pathId(req) });
  },
});

const updateChannel = defineRoute({
  method: "PATCH",
  path: "/streams/:stream_id",
  auth: "required",
  params: {
    description: param(p.string()),
    new_name: param(p.string()),
    is_private: param(p.bool()),
    is_web_public: param(p.bool()),
    history_public_to_subscribers: param(p.bool()),
    is_default_stream: param(p.bool()),
    message_retention_days: param(retentionParser),
    default_push_notifications: param(p.bool()),
    is_archived: param(p.bool()),
    folder_id: param(p.json(intOrNull)),
    topics_policy: param(p.string()),
    ...groupParams(),
  },
  async handler(req) {
    return await req.call(dir(req), "updateChannel", {
      stream_id: pathId(req),
      description: req.params.description,
      new_name: req.params.new_name,
      is_private: req.params.is_private,
      is_web_public: req.params.is_web_public,
      history_public_to_subscribers: req.params.history_public_to_subscribers,
      is_default_stream: req.params.is_default_stream,
      message_retention_days: req.params.message_retention_days,
      default_push_notifications: req.params.default_push_notifications,
      is_archived: req.params.is_archived,
      folder_id: req.params.folder_id,
      topics_policy: req.params.topics_policy,
      groups: groupsSent(req),
    });
  },
});

const archiveChannel = defineRoute({
  method: "DELETE",
  path: "/streams/:stream_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(dir(req), "archiveChannel", { stream_id: pathId(req) });
  },
});

/** value is Json[bool] or a plain string (colour). */
const propertyValue = (raw: string): boolean | string => {
  if (raw === "true") return true;
  if (raw === "false") return false;
  return raw;
};

const updateSubscription = defineRoute({
  method: "PATCH",
  path: "/users/me/subscriptions/:stream_id",
  auth: "required",
  params: {
    property: param(p.string(), { required: true }),
    value: param(propertyValue, { required: true }),
  },
  async handler(req) {
    const stream_id = pathId(req);
    return await req.call(dir(req), "setSubProperties", {
      data: [{ stream_id, property: req.params.property, value: req.params.value }],
    });
  },
});

const propertyItem = c.dict<{ stream_id: number; property: string; value: boolean | string }>({
  stream_id: { check: c.int(), required: true },
  property: { check: c.string(), required: true },
  value: {
    check: (v, name) => {
      if (typeof v !== "boolean" && typeof v !== "string") throw errors.notBoolean(name);
      return v;
    },
    required: true,
  },
});

const updateSubscriptions = defineRoute({
  method: "POST",
  path: "/users/me/subscriptions/properties",
  auth: "required",
  params: { subscription_data: param(p.json(c.list(propertyItem)), { required: true }) },
  async handler(req) {
    return await req.call(dir(req), "setSubProperties", {
      data: req.params.subscription_data as {
        stream_id: number;
        property: string;
        value: boolean | string;
      }[],
    });
  },
});

export const channelRoutes: RouteDef[] = [
  createChannel,
  subscribe,
  unsubscribe,
  listSubscriptions,
  listChannels,
  getChannel,
  getChannelId,
  members,
  updateChannel,
  archiveChannel,
  updateSubscription,
  updateSubscriptions,
];
