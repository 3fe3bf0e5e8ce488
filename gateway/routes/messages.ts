// Messages (Zulip's zerver/views/message_send.py, message_fetch.py,
// message_flags.py) and the topic list. A channel-bound read goes to that
// channel's conversation actor; other narrows start from the caller's own
// flag index (user actor) and read the messages from their conversations.

import {
  EMPTY_TOPIC_NAME,
  LARGER_THAN_MAX_MESSAGE_ID,
  MAX_MESSAGES_PER_FETCH,
  channelConvRef,
  channelDirectoryRef,
  dmConvRef,
  realmRef,
  userRef,
  windowIds,
} from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj, Value } from "../../actors/types.ts";
import { c, p, param, sentParams, type RouteDef, type RouteRequest } from "../index.ts";

function meId(req: RouteRequest): number {
  return req.caller!.userId;
}

function pathInt(req: RouteRequest, name: string): number {
  const raw = req.path[name] ?? "";
  if (!/^\d{1,15}$/.test(raw)) throw errors.noSuchRoute();
  return Number(raw);
}

async function emailsToIds(req: RouteRequest, emails: string[]): Promise<number[]> {
  if (!emails.length) return [];
  const r = (await req.call(realmRef(req.realmId), "resolveEmails", { emails })) as { ids: number[] };
  return r.ids;
}

/** Channel id from a name or an id. */
async function channelIdOf(req: RouteRequest, v: string | number): Promise<number | null> {
  if (typeof v === "number") return v;
  const found = (await req.call(channelDirectoryRef(req.realmId), "lookupNames", { names: [v] })) as Obj;
  const hit = found[v.trim().toLowerCase()] as [number, string] | undefined;
  return hit ? hit[0] : null;
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

const sendMessage: RouteDef = {
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
    const type = req.params.type as string;
    const to = req.params.to as Value;
    const args: Obj = {
      content: req.params.content as string,
      client: "API",
      ...sentParams(req.params, ["topic", "queue_id", "local_id", "read_by_sender"]),
    };
    if (type === "stream" || type === "channel") {
      let target: Value = to;
      if (Array.isArray(to)) {
        if (to.length !== 1) throw errors.exactlyOneChannel();
        target = to[0]!;
      }
      if (typeof target === "number" && Number.isInteger(target)) {
        return (await req.call(channelConvRef(req.realmId, target), "send", args)) as Obj;
      }
      const name = String(target);
      const id = await channelIdOf(req, name);
      if (id === null) throw errors.channelDoesNotExist(name.trim());
      return (await req.call(channelConvRef(req.realmId, id), "send", args)) as Obj;
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
    return (await req.call(dmConvRef(req.realmId, [...ids, meId(req)]), "send", args)) as Obj;
  },
};

// ---- narrows ---------------------------------------------------------------------

interface Term {
  operator: string;
  operand: Value;
  negated: boolean;
}

const narrowChecker = c.list((v: unknown, name: string): Term => {
  if (Array.isArray(v)) {
    if (v.length !== 2 || typeof v[0] !== "string") throw errors.invalid(name);
    return { operator: v[0], operand: v[1] as Value, negated: false };
  }
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (typeof o.operator !== "string" || !("operand" in o)) throw errors.invalid(name);
    return { operator: o.operator, operand: o.operand as Value, negated: o.negated === true };
  }
  throw errors.invalid(name);
});

const IS_FLAGS: Record<string, string> = {
  unread: "unread",
  starred: "starred",
  mentioned: "mentioned",
  alerted: "has_alert_word",
};

interface Plan {
  channelId: number | null;
  channelOperand?: string;
  channelNegated: number[];
  dmKeyIds: number[] | null;
  dmOnly: boolean;
  topic?: { value: string; negated: boolean };
  sender?: { value: number; negated: boolean };
  search?: string;
  is: { flag: string; negated: boolean }[];
  messageId?: number;
}

async function planNarrow(req: RouteRequest, terms: Term[]): Promise<Plan> {
  const plan: Plan = { channelId: null, channelNegated: [], dmKeyIds: null, dmOnly: false, is: [] };
  for (const t of terms) {
    const op = t.operator === "stream" ? "channel" : t.operator === "subject" ? "topic" : t.operator;
    switch (op) {
      case "channel": {
        if (typeof t.operand !== "string" && typeof t.operand !== "number")
          throw errors.badNarrow("invalid channel");
        const id = await channelIdOf(req, t.operand);
        if (id === null) throw errors.badNarrow(`unknown channel ${String(t.operand)}`);
        if (t.negated) plan.channelNegated.push(id);
        else {
          plan.channelId = id;
          plan.channelOperand = String(t.operand);
        }
        break;
      }
      case "topic": {
        let value = String(t.operand).trim();
        if (value === EMPTY_TOPIC_NAME) value = "";
        plan.topic = { value, negated: t.negated };
        break;
      }
      case "sender": {
        const v = t.operand;
        const id = typeof v === "number" ? v : (await emailsToIds(req, [String(v)]).catch(() => [-1]))[0]!;
        plan.sender = { value: id, negated: t.negated };
        break;
      }
      case "dm":
      case "pm-with":
      case "pm_with": {
        if (t.negated) throw errors.badNarrow("negated dm is not supported");
        const v = t.operand;
        let ids: number[];
        if (Array.isArray(v)) ids = v.filter((x): x is number => typeof x === "number");
        else if (typeof v === "number") ids = [v];
        else
          ids = await emailsToIds(
            req,
            String(v)
              .split(",")
              .map((s) => s.trim())
              .filter(Boolean),
          ).catch(() => {
            throw errors.badNarrow(`unknown user in ${String(v)}`);
          });
        plan.dmKeyIds = [...ids, meId(req)];
        break;
      }
      case "is": {
        const v = String(t.operand);
        if (v === "dm" || v === "private") {
          if (t.negated) throw errors.badNarrow("negated is:dm is not supported");
          plan.dmOnly = true;
        } else if (IS_FLAGS[v]) plan.is.push({ flag: IS_FLAGS[v]!, negated: t.negated });
        else throw errors.badNarrow(`unknown 'is' operand ${v}`);
        break;
      }
      case "search": {
        const v = String(t.operand).trim();
        if (v === "") throw errors.badNarrow("empty search");
        plan.search = v;
        break;
      }
      case "in": {
        // "all" and "home" both mean every message the user has; muting does not filter yet.
        if (t.operand !== "all" && t.operand !== "home")
          throw errors.badNarrow(`unknown 'in' operand ${String(t.operand)}`);
        break;
      }
      case "id": {
        const id = Number(t.operand);
        if (!Number.isInteger(id)) throw errors.badNarrow(`invalid id ${String(t.operand)}`);
        plan.messageId = id;
        break;
      }
      case "near":
        break;
      default:
        throw errors.badNarrow(`unknown operator ${t.operator}`);
    }
  }
  return plan;
}

interface Item {
  id: number;
  conv: string;
  flags: string[];
  topic: string;
  sender: number;
}

/** Candidates from the caller's flag index, filtered by everything but search. */
async function indexCandidates(req: RouteRequest, plan: Plan): Promise<Item[]> {
  const args: Obj = {};
  if (plan.dmKeyIds) args.convs = ["dm:" + [...new Set(plan.dmKeyIds)].sort((a, b) => a - b).join(",")];
  if (plan.dmOnly) args.dmOnly = true;
  if (plan.messageId !== undefined) args.ids = [plan.messageId];
  const r = (await req.call(userRef(req.realmId, meId(req)), "selectMessages", args)) as {
    items: [number, string, string[], string, number][];
  };
  const negated = new Set(plan.channelNegated.map(String));
  return r.items
    .map(([id, conv, flags, topic, sender]) => ({ id, conv, flags, topic, sender }))
    .filter((i) => !negated.has(i.conv))
    .filter(
      (i) => !plan.topic || (i.topic.toLowerCase() === plan.topic.value.toLowerCase()) !== plan.topic.negated,
    )
    .filter((i) => !plan.sender || (i.sender === plan.sender.value) !== plan.sender.negated)
    .filter((i) =>
      plan.is.every(
        (t) => (t.flag === "unread" ? !i.flags.includes("read") : i.flags.includes(t.flag)) !== t.negated,
      ),
    );
}

function byConv(items: Item[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const i of items) (out.get(i.conv) ?? out.set(i.conv, []).get(i.conv)!).push(i.id);
  return out;
}

function convRef(req: RouteRequest, conv: string) {
  return conv.startsWith("dm:")
    ? dmConvRef(req.realmId, conv.slice(3).split(",").map(Number))
    : channelConvRef(req.realmId, Number(conv));
}

async function searchFilter(req: RouteRequest, items: Item[], search: string): Promise<Item[]> {
  const keep = new Set<number>();
  for (const [conv, ids] of byConv(items)) {
    const r = (await req.call(convRef(req, conv), "getByIds", { ids, search, matchOnly: true })) as {
      matching: number[];
    };
    for (const id of r.matching) keep.add(id);
  }
  return items.filter((i) => keep.has(i.id));
}

async function loadMessages(req: RouteRequest, items: Item[], opts: Obj, search?: string): Promise<Obj[]> {
  const found = new Map<number, Obj>();
  for (const [conv, ids] of byConv(items)) {
    const r = (await req.call(convRef(req, conv), "getByIds", {
      ids,
      ...opts,
      ...(search ? { search } : {}),
    })) as {
      messages: Record<string, Obj>;
    };
    for (const [id, m] of Object.entries(r.messages)) found.set(Number(id), m);
  }
  const out: Obj[] = [];
  for (const i of items) {
    const m = found.get(i.id);
    if (m) out.push({ ...m, flags: i.flags });
  }
  return out;
}

/** anchor: "newest" | "oldest" | "first_unread" | an id (negative -> 0). */
function parseAnchor(raw: string | undefined, useFirstUnread: boolean): number | "first_unread" {
  if (useFirstUnread) return "first_unread";
  if (raw === undefined) throw errors.missingAnchor();
  if (raw === "newest") return LARGER_THAN_MAX_MESSAGE_ID;
  if (raw === "oldest") return 0;
  if (raw === "first_unread") return "first_unread";
  if (!/^-?\d+$/.test(raw)) throw errors.invalidAnchor();
  return Math.max(0, Number(raw));
}

interface Selection {
  anchor: number;
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
  history_limited: boolean;
  messages: Obj[];
}

async function select(
  req: RouteRequest,
  terms: Term[],
  w: { anchor: number | "first_unread"; numBefore: number; numAfter: number; includeAnchor: boolean },
  opts: Obj,
): Promise<Selection> {
  const plan = await planNarrow(req, terms);
  if (plan.channelId !== null && plan.dmKeyIds === null && !plan.dmOnly && plan.messageId === undefined) {
    const filters: Obj = { is: plan.is as unknown as Value };
    if (plan.topic) filters.topic = plan.topic as unknown as Value;
    if (plan.sender) filters.sender = plan.sender as unknown as Value;
    if (plan.search) filters.search = plan.search;
    return (await req.call(channelConvRef(req.realmId, plan.channelId), "fetch", {
      anchor: w.anchor,
      num_before: w.numBefore,
      num_after: w.numAfter,
      include_anchor: w.includeAnchor,
      filters,
      operand: plan.channelOperand ?? String(plan.channelId),
      ...opts,
    })) as unknown as Selection;
  }
  let items = await indexCandidates(req, plan);
  if (plan.channelId !== null) items = items.filter((i) => i.conv === String(plan.channelId));
  if (plan.search) items = await searchFilter(req, items, plan.search);
  const anchor =
    w.anchor === "first_unread"
      ? (items.find((i) => !i.flags.includes("read"))?.id ?? LARGER_THAN_MAX_MESSAGE_ID)
      : w.anchor;
  const win = windowIds(
    items.map((i) => i.id),
    { anchor, numBefore: w.numBefore, numAfter: w.numAfter, includeAnchor: w.includeAnchor },
  );
  const chosen = new Set(win.ids);
  const messages = await loadMessages(
    req,
    items.filter((i) => chosen.has(i.id)),
    opts,
    plan.search,
  );
  return {
    anchor,
    found_anchor: win.found_anchor,
    found_oldest: win.found_oldest,
    found_newest: win.found_newest,
    history_limited: false,
    messages,
  };
}

const getMessages: RouteDef = {
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
  },
  async handler(req) {
    const anchor = parseAnchor(
      req.params.anchor as string | undefined,
      req.params.use_first_unread_anchor as boolean,
    );
    const numBefore = req.params.num_before as number;
    const numAfter = req.params.num_after as number;
    const includeAnchor = req.params.include_anchor as boolean;
    if (numBefore + numAfter > MAX_MESSAGES_PER_FETCH) throw errors.tooManyMessages();
    if (!includeAnchor && numBefore > 0 && numAfter > 0) throw errors.anchorExcluded();
    const opts: Obj = {
      apply_markdown: req.params.apply_markdown as boolean,
      client_gravatar: req.params.client_gravatar as boolean,
      allow_empty_topic_name: req.params.allow_empty_topic_name as boolean,
    };
    const s = await select(
      req,
      req.params.narrow as Term[],
      { anchor, numBefore, numAfter, includeAnchor },
      opts,
    );
    return s as unknown as Obj;
  },
};

const getMessage: RouteDef = {
  method: "GET",
  path: "/messages/:message_id",
  auth: "required",
  params: {
    apply_markdown: param(p.bool(), { default: true }),
    allow_empty_topic_name: param(p.bool(), { default: false }),
  },
  async handler(req) {
    const id = pathInt(req, "message_id");
    const items = await indexCandidates(req, {
      channelId: null,
      channelNegated: [],
      dmKeyIds: null,
      dmOnly: false,
      is: [],
      messageId: id,
    });
    if (!items.length) throw errors.invalidMessages();
    const opts = {
      apply_markdown: req.params.apply_markdown as boolean,
      client_gravatar: false,
      allow_empty_topic_name: req.params.allow_empty_topic_name as boolean,
    };
    const [message] = await loadMessages(req, items, opts);
    if (!message) throw errors.invalidMessages();
    const raw = (await loadMessages(req, items, { ...opts, apply_markdown: false }))[0]!;
    return { raw_content: raw.content as string, message };
  },
};

// ---- flags ---------------------------------------------------------------------------

const updateFlags: RouteDef = {
  method: "POST",
  path: "/messages/flags",
  auth: "required",
  params: {
    messages: param(p.intList(), { required: true }),
    op: param(p.string(), { required: true }),
    flag: param(p.string(), { required: true }),
  },
  async handler(req) {
    return (await req.call(userRef(req.realmId, meId(req)), "updateFlags", {
      messages: req.params.messages as number[],
      op: req.params.op as string,
      flag: req.params.flag as string,
    })) as Obj;
  },
};

const updateFlagsNarrow: RouteDef = {
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
    const anchor = parseAnchor(req.params.anchor as string, false);
    // The server may lower the range (spec): at most 5000 messages per call.
    const numBefore = Math.min(req.params.num_before as number, MAX_MESSAGES_PER_FETCH);
    const numAfter = Math.min(req.params.num_after as number, MAX_MESSAGES_PER_FETCH - numBefore);
    const includeAnchor = req.params.include_anchor as boolean;
    if (!includeAnchor && numBefore > 0 && numAfter > 0) throw errors.anchorExcluded();
    const s = await select(
      req,
      req.params.narrow as Term[],
      { anchor, numBefore, numAfter, includeAnchor },
      {
        apply_markdown: false,
        client_gravatar: true,
      },
    );
    const op = req.params.op as string;
    const flag = req.params.flag as string;
    const processed = s.messages.map((m) => m.id as number);
    const own = s.messages
      .filter((m) => !(m.flags as string[]).includes("historical"))
      .map((m) => m.id as number);
    const r = (await req.call(userRef(req.realmId, meId(req)), "updateFlags", {
      messages: own,
      op,
      flag,
    })) as {
      messages: number[];
    };
    const out: Obj = {
      processed_count: processed.length,
      updated_count: r.messages.length,
      first_processed_id: processed.length ? processed[0]! : null,
      last_processed_id: processed.length ? processed[processed.length - 1]! : null,
      found_oldest: s.found_oldest,
      found_newest: s.found_newest,
    };
    if (flag === "read" && op === "remove") {
      const notSubscribed = new Set<number>();
      for (const m of s.messages) {
        if ((m.flags as string[]).includes("historical") && typeof m.stream_id === "number")
          notSubscribed.add(m.stream_id);
      }
      out.ignored_because_not_subscribed_channels = [...notSubscribed].sort((a, b) => a - b);
    }
    return out;
  },
};

// ---- topics ------------------------------------------------------------------------------

const getTopics: RouteDef = {
  method: "GET",
  path: "/users/me/:stream_id/topics",
  auth: "required",
  params: { allow_empty_topic_name: param(p.bool(), { default: false }) },
  async handler(req) {
    const raw = req.path.stream_id ?? "";
    if (!/^\d{1,15}$/.test(raw)) throw errors.invalidChannelId();
    return (await req.call(channelConvRef(req.realmId, Number(raw)), "topics", {
      allow_empty_topic_name: req.params.allow_empty_topic_name as boolean,
    })) as Obj;
  },
};

export const messageRoutes: RouteDef[] = [
  sendMessage,
  getMessages,
  getMessage,
  updateFlags,
  updateFlagsNarrow,
  getTopics,
];

// ---- reactions, edit, delete: find the message's conversation in the caller's index ----

async function locate(req: RouteRequest, id: number): Promise<Item> {
  const items = await indexCandidates(req, {
    channelId: null,
    channelNegated: [],
    dmKeyIds: null,
    dmOnly: false,
    is: [],
    messageId: id,
  });
  if (!items.length) throw errors.invalidMessages();
  return items[0]!;
}

function reactionRoute(method: "POST" | "DELETE"): RouteDef {
  return {
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
      const args: Obj = {
        message_id: id,
        op: method === "POST" ? "add" : "remove",
        ...sentParams(req.params, ["emoji_name", "emoji_code", "reaction_type"]),
      };
      return (await req.call(convRef(req, item.conv), "react", args)) as Obj;
    },
  };
}

const editMessage: RouteDef = {
  method: "PATCH",
  path: "/messages/:message_id",
  auth: "required",
  params: {
    content: param(p.string()),
    topic: param(p.string(), { aliases: ["subject"] }),
    propagate_mode: param(p.string()),
  },
  async handler(req) {
    const id = pathInt(req, "message_id");
    const item = await locate(req, id);
    const args: Obj = { message_id: id, ...sentParams(req.params, ["content", "topic", "propagate_mode"]) };
    return (await req.call(convRef(req, item.conv), "edit", args)) as Obj;
  },
};

const deleteMessage: RouteDef = {
  method: "DELETE",
  path: "/messages/:message_id",
  auth: "required",
  params: {},
  async handler(req) {
    const id = pathInt(req, "message_id");
    const item = await locate(req, id);
    return (await req.call(convRef(req, item.conv), "remove", { message_id: id })) as Obj;
  },
};

messageRoutes.push(reactionRoute("POST"), reactionRoute("DELETE"), editMessage, deleteMessage);

// ---- topic visibility ------------------------------------------------------------------

const setUserTopic: RouteDef = {
  method: "POST",
  path: "/user_topics",
  auth: "required",
  params: {
    stream_id: param(p.int(), { required: true }),
    topic: param(p.string(), { required: true }),
    visibility_policy: param(p.int(), { required: true }),
  },
  async handler(req) {
    return (await req.call(userRef(req.realmId, meId(req)), "setUserTopic", {
      stream_id: req.params.stream_id as number,
      topic: req.params.topic as string,
      visibility_policy: req.params.visibility_policy as number,
    })) as Obj;
  },
};

const muteTopicLegacy: RouteDef = {
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
    const byId = req.params.stream_id as number | undefined;
    const byName = req.params.stream as string | undefined;
    if (byId === undefined && byName === undefined) throw errors.supplyStream();
    if (byId !== undefined && byName !== undefined) throw errors.chooseStream();
    let streamId = byId;
    if (streamId === undefined) {
      const id = await channelIdOf(req, byName!);
      if (id === null) throw errors.channelDoesNotExist(byName!.trim());
      streamId = id;
    }
    return (await req.call(userRef(req.realmId, meId(req)), "muteTopicLegacy", {
      stream_id: streamId,
      topic: req.params.topic as string,
      op: req.params.op as string,
    })) as Obj;
  },
};

messageRoutes.push(setUserTopic, muteTopicLegacy);
