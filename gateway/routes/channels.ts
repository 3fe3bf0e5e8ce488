// Channels and subscriptions (Zulip's zerver/views/streams.py): parse, call
// the realm's channel directory once, shape the reply.

import { channelDirectoryRef } from "../../actors/index.ts";
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
import { announceNewChannels, notifyNewSubscribers } from "./notification-bot.ts";

const GROUP_SETTING_PARAMS = [
  "can_add_subscribers_group",
  "can_administer_channel_group",
  "can_create_topic_group",
  "can_delete_any_message_group",
  "can_delete_own_message_group",
  "can_move_messages_out_of_channel_group",
  "can_move_messages_within_channel_group",
  "can_remove_subscribers_group",
  "can_resolve_topics_group",
  "can_send_message_group",
  "can_subscribe_group",
];

/** Group settings: any JSON; the permissions module checks the shape with Zulip's texts. */
function groupParams(): Record<string, ParamSpec> {
  const out: Record<string, ParamSpec> = {};
  for (const n of GROUP_SETTING_PARAMS) out[n] = param(p.json());
  return out;
}

/** message_retention_days is Json[str | int]; a bare word (unlimited) is taken as the string. */
const retentionParser = (raw: string): Value => {
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

/** Parameters the client sent, by name (absent ones left out). */
function sent(req: RouteRequest, names: string[]): Obj {
  const out: Obj = {};
  for (const n of names) if (req.params[n] !== undefined) out[n] = req.params[n] as Value;
  return out;
}

function groupsSent(req: RouteRequest): Obj {
  return sent(req, GROUP_SETTING_PARAMS);
}

const CREATE_FLAGS = [
  "description",
  "invite_only",
  "is_web_public",
  "is_default_stream",
  "history_public_to_subscribers",
  "message_retention_days",
  "topics_policy",
  "folder_id",
];

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
    const { name, ...reply } = (await req.call(dir(req), "createChannel", {
      name: req.params.name,
      subscribers: req.params.subscribers,
      ...sent(req, CREATE_FLAGS),
      groups: groupsSent(req),
    })) as Obj;
    if (req.params.announce === true) {
      await announceNewChannels(req, [{ id: reply.id as number, name: name as string }]);
    }
    return reply;
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
    const { created, notices, ...reply } = (await req.call(dir(req), "subscribe", {
      subscriptions: req.params.subscriptions,
      ...sent(req, ["principals", "authorization_errors_fatal", ...CREATE_FLAGS]),
      groups: groupsSent(req),
    })) as Obj;
    if (req.params.send_new_subscription_messages !== false) {
      reply.new_subscription_messages_sent = await notifyNewSubscribers(
        req,
        Object.keys(reply.subscribed as Obj).length,
        (notices ?? []) as { user_id: number; stream_ids: number[] }[],
      );
    }
    if (req.params.announce === true) {
      await announceNewChannels(req, (created ?? []) as { id: number; name: string }[]);
    }
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
    return (await req.call(dir(req), "unsubscribe", sent(req, ["subscriptions", "principals"]))) as Obj;
  },
});

const listSubscriptions = defineRoute({
  method: "GET",
  path: "/users/me/subscriptions",
  auth: "required",
  // true, false or "partial" (FL 412).
  params: { include_subscribers: param(includeSubscribersParser) },
  async handler(req) {
    return (await req.call(dir(req), "mySubscriptions", sent(req, ["include_subscribers"]))) as Obj;
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
    return (await req.call(dir(req), "listChannels", sent(req, LIST_FLAGS))) as Obj;
  },
});

const getChannel = defineRoute({
  method: "GET",
  path: "/streams/:stream_id",
  auth: "required",
  params: {},
  async handler(req) {
    return (await req.call(dir(req), "getChannel", { stream_id: pathId(req) })) as Obj;
  },
});

const getChannelId = defineRoute({
  method: "GET",
  path: "/get_stream_id",
  auth: "required",
  params: { stream: param(p.string(), { required: true }) },
  async handler(req) {
    return (await req.call(dir(req), "channelIdByName", { stream: req.params.stream })) as Obj;
  },
});

const members = defineRoute({
  method: "GET",
  path: "/streams/:stream_id/members",
  auth: "required",
  params: {},
  async handler(req) {
    return (await req.call(dir(req), "members", { stream_id: pathId(req) })) as Obj;
  },
});

const UPDATE_FIELDS = [
  "description",
  "new_name",
  "is_private",
  "is_web_public",
  "history_public_to_subscribers",
  "is_default_stream",
  "message_retention_days",
  "default_push_notifications",
  "is_archived",
  "folder_id",
  "topics_policy",
];

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
    const stream_id = pathId(req);
    return (await req.call(dir(req), "updateChannel", {
      stream_id,
      ...sent(req, UPDATE_FIELDS),
      groups: groupsSent(req),
    })) as Obj;
  },
});

const archiveChannel = defineRoute({
  method: "DELETE",
  path: "/streams/:stream_id",
  auth: "required",
  params: {},
  async handler(req) {
    return (await req.call(dir(req), "archiveChannel", { stream_id: pathId(req) })) as Obj;
  },
});

/** value is Json[bool] or a plain string (colour). */
const propertyValue = (raw: string): Value => {
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
    return (await req.call(dir(req), "setSubProperties", {
      data: [{ stream_id, property: req.params.property, value: req.params.value }],
    })) as Obj;
  },
});

const propertyItem = c.dict<{ stream_id: number; property: string; value: Value }>({
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
    return (await req.call(dir(req), "setSubProperties", {
      data: req.params.subscription_data,
    })) as Obj;
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
