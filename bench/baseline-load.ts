// The load profile's floor (bench/load-profile.ts, mode "bare"): bare
// Fastify in one process serving exactly the requests the load clients
// (bench/load-client.ts) and the section's seeding make, with answers of
// the real server's shape and size, everything in plain in-memory Maps. No
// persistence, no actors, no message rendering, no permission checks, no
// authentication beyond parsing the Basic header and comparing the key: the
// least work any server must do to answer that mix over HTTP with Fastify,
// so the server's figure divided by this one is what its own machinery
// costs, on the same machine in the same run.
//
// What it does keep, because every server must: an event queue per
// registration (events filtered by the queue's event types, acknowledged
// by last_event_id, a parked poll answered when an event arrives or after
// a heartbeat delay), a send's message event to every queue of every
// subscriber, a read-flag event to the user's own queues, presence in a map
// with an update log so a poll with last_update_id reads only the changes
// since (and a presence event to everyone else only in an organization of
// at most 100 users, as Zulip), typing events to the queues that asked for them (none past 100
// subscribers, as Zulip), and per-user read flags for GET /messages. Each
// event is serialized once, when it is made; a queue's answer joins the
// JSON texts of its pending events.
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import formbody from "@fastify/formbody";
import { randomBytes } from "node:crypto";

const OWNER_EMAIL = process.env.OWNER_EMAIL ?? "bench-owner@example.com";
const OWNER_PASSWORD = process.env.OWNER_PASSWORD ?? "bench-password";
const HOST = "example.com";
/** The real server's heartbeat delay for a parked poll: 45-55 s. */
const HEARTBEAT_MS = () => 45_000 + Math.random() * 10_000;
/** Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS. */
const MAX_TYPING_AUDIENCE = 100;
/** Zulip's USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS: no presence events in a bigger organization. */
const PRESENCE_EVENTS_USER_LIMIT = 100;
/** Zulip's OFFLINE_THRESHOLD_SECS and PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS. */
const OFFLINE_SECS = 140;
const ACTIVITY_OFFSET_SECS = 70;
/** GET /messages' anchor=newest, as Zulip answers it. */
const NEWEST = 10_000_000_000_000_000;

interface User {
  id: number;
  email: string;
  fullName: string;
  password: string;
  apiKey: string;
  isBot: boolean;
  queues: Queue[];
  /** Message ids flagged read. */
  read: Set<number>;
  /** Channel id → the newest message id when the user subscribed: older ones are history, not received. */
  since: Map<number, number>;
}

interface Channel {
  id: number;
  name: string;
  subscribers: number[];
  members: Set<number>;
  /** Every message of the channel, oldest first, with its JSON text minus flags. */
  messages: { id: number; topic: string; json: string }[];
}

interface Queue {
  id: string;
  user: User;
  /** null: every type. */
  types: Set<string> | null;
  streamTyping: boolean;
  nextId: number;
  /** Unacknowledged events, each serialized once. */
  events: { id: number; json: string }[];
  parked: { reply: FastifyReply; due: number } | null;
}

interface Presence {
  active: number;
  idle: number;
  updateId: number;
  /** `"<id>":{...}`, the user's slim presence entry as JSON. */
  json: string;
}

const users = new Map<number, User>();
const byEmail = new Map<string, User>();
const channels = new Map<number, Channel>();
const channelByName = new Map<string, Channel>();
const queues = new Map<string, Queue>();
const presence = new Map<number, Presence>();
/** Presence changes in update order (parallel arrays), at most a few entries per user after compaction. */
const presenceLog = { ids: [] as number[], users: [] as number[] };
let lastUpdateId = Date.now() * 1000;
let lastMessageId = 0;

function addUser(email: string, password: string, fullName: string, isBot: boolean): User {
  const u: User = {
    id: users.size + 1,
    email,
    fullName,
    password,
    apiKey: randomBytes(16).toString("hex"),
    isBot,
    queues: [],
    read: new Set(),
    since: new Map(),
  };
  users.set(u.id, u);
  byEmail.set(email, u);
  return u;
}
const owner = addUser(OWNER_EMAIL, OWNER_PASSWORD, "Bench Owner", false);

// ---- answers -----------------------------------------------------------------

type Params = Record<string, string | undefined>;

function fail(reply: FastifyReply, status: number, msg: string, code = "BAD_REQUEST"): FastifyReply {
  return reply.code(status).send({ result: "error", msg, code });
}

function sendJson(reply: FastifyReply, text: string): FastifyReply {
  return reply.header("content-type", "application/json; charset=utf-8").send(text);
}

/** The Basic header's user, or null after answering 401. */
function auth(req: FastifyRequest, reply: FastifyReply): User | null {
  const h = req.headers.authorization;
  if (h?.startsWith("Basic ")) {
    const plain = Buffer.from(h.slice(6), "base64").toString("utf8");
    const colon = plain.indexOf(":");
    const u = colon > 0 ? byEmail.get(plain.slice(0, colon)) : undefined;
    if (u && u.apiKey === plain.slice(colon + 1)) return u;
  }
  fail(reply, 401, "Invalid API key", "UNAUTHORIZED");
  return null;
}

function params(req: FastifyRequest): Params {
  return (req.method === "GET" ? req.query : req.body) as Params;
}

/** A JSON-encoded parameter, or undefined when absent or malformed. */
function jsonParam(p: Params, name: string): unknown {
  const v = p[name];
  if (v === undefined) return undefined;
  try {
    return JSON.parse(v);
  } catch {
    return undefined;
  }
}

function channelOf(v: unknown): Channel | undefined {
  if (typeof v === "number" || (typeof v === "string" && /^\d+$/.test(v))) return channels.get(Number(v));
  return typeof v === "string" ? channelByName.get(v) : undefined;
}

// ---- event queues -------------------------------------------------------------

function answer(q: Queue, reply: FastifyReply): void {
  sendJson(
    reply,
    `{"result":"success","msg":"","events":[${q.events.map((e) => e.json).join(",")}],"queue_id":"${q.id}"}`,
  );
}

/** Append an event (`body`: its JSON fields but the id) and wake the queue's parked poll. */
function push(q: Queue, body: string): void {
  const id = q.nextId++;
  q.events.push({ id, json: `{${body},"id":${id}}` });
  const p = q.parked;
  if (p === null) return;
  q.parked = null;
  if (!p.reply.raw.destroyed) answer(q, p.reply);
}

/** The event to every queue of the user that asked for its type. */
function deliver(userId: number, type: string, body: string): void {
  for (const q of users.get(userId)!.queues) if (q.types === null || q.types.has(type)) push(q, body);
}

// Heartbeats: a poll parked past its due time gets a heartbeat event, as
// the real server's timer wheel gives one after 45-55 s.
setInterval(() => {
  const now = Date.now();
  for (const q of queues.values()) {
    if (q.parked === null) continue;
    if (q.parked.reply.raw.destroyed) q.parked = null;
    else if (q.parked.due <= now) push(q, `"type":"heartbeat"`);
  }
}, 1000).unref();

// ---- the server ----------------------------------------------------------------

const app = Fastify({ logger: false });
await app.register(formbody);

app.post("/api/v1/fetch_api_key", (req, reply) => {
  const p = params(req);
  const u = byEmail.get(p.username ?? "");
  if (!u || u.password !== p.password)
    return fail(reply, 401, "Your username or password is incorrect", "AUTHENTICATION_FAILED");
  return reply.send({ result: "success", msg: "", api_key: u.apiKey, email: u.email, user_id: u.id });
});

app.post("/api/v1/users", (req, reply) => {
  if (!auth(req, reply)) return;
  const p = params(req);
  if (!p.email || !p.password || !p.full_name)
    return fail(reply, 400, "Missing email, password or full_name");
  if (byEmail.has(p.email)) return fail(reply, 400, `Email '${p.email}' already in use`);
  return reply.send({
    result: "success",
    msg: "",
    user_id: addUser(p.email, p.password, p.full_name, false).id,
  });
});

app.post("/api/v1/bots", (req, reply) => {
  if (!auth(req, reply)) return;
  const p = params(req);
  if (!p.full_name || !p.short_name) return fail(reply, 400, "Missing full_name or short_name");
  const email = `${p.short_name}-bot@${HOST}`;
  if (byEmail.has(email)) return fail(reply, 400, "Username already in use");
  const u = addUser(email, "", p.full_name, true);
  return reply.send({ result: "success", msg: "", user_id: u.id, api_key: u.apiKey });
});

app.get("/api/v1/bots", (req, reply) => {
  if (!auth(req, reply)) return;
  const bots = [...users.values()].filter((u) => u.isBot);
  return reply.send({
    result: "success",
    msg: "",
    bots: bots.map((u) => ({ user_id: u.id, username: u.email, full_name: u.fullName, api_key: u.apiKey })),
  });
});

function subscribe(ch: Channel, u: User): boolean {
  if (ch.members.has(u.id)) return false;
  ch.members.add(u.id);
  ch.subscribers.push(u.id);
  u.since.set(ch.id, ch.messages.at(-1)?.id ?? 0);
  return true;
}

function createChannel(name: string): Channel {
  const ch: Channel = { id: channels.size + 1, name, subscribers: [], members: new Set(), messages: [] };
  channels.set(ch.id, ch);
  channelByName.set(name, ch);
  return ch;
}

/** Users named by a JSON list of ids, or undefined when any is unknown. */
function principals(v: unknown, me: User): User[] | undefined {
  if (v === undefined) return [me];
  if (!Array.isArray(v)) return undefined;
  const out: User[] = [];
  for (const id of v) {
    const u = typeof id === "number" ? users.get(id) : typeof id === "string" ? byEmail.get(id) : undefined;
    if (!u) return undefined;
    out.push(u);
  }
  return out;
}

app.post("/api/v1/channels/create", (req, reply) => {
  const me = auth(req, reply);
  if (!me) return;
  const p = params(req);
  if (!p.name) return fail(reply, 400, "Missing 'name' argument");
  if (channelByName.has(p.name)) return fail(reply, 400, `Channel '${p.name}' already exists`);
  const who = principals(jsonParam(p, "subscribers"), me);
  if (!who) return fail(reply, 400, "Invalid subscribers");
  const ch = createChannel(p.name);
  for (const u of who) subscribe(ch, u);
  return reply.send({ result: "success", msg: "", id: ch.id });
});

app.post("/api/v1/users/me/subscriptions", (req, reply) => {
  const me = auth(req, reply);
  if (!me) return;
  const p = params(req);
  const subs = jsonParam(p, "subscriptions");
  const who = principals(jsonParam(p, "principals"), me);
  if (!Array.isArray(subs) || !who) return fail(reply, 400, "Invalid subscriptions or principals");
  const subscribed: Record<string, string[]> = {};
  const already: Record<string, string[]> = {};
  for (const s of subs as { name?: unknown }[]) {
    if (typeof s?.name !== "string") return fail(reply, 400, "Invalid subscriptions");
    const ch = channelByName.get(s.name) ?? createChannel(s.name);
    for (const u of who) ((subscribe(ch, u) ? subscribed : already)[String(u.id)] ??= []).push(ch.name);
  }
  return reply.send({ result: "success", msg: "", subscribed, already_subscribed: already });
});

// ---- the load clients' requests ---------------------------------------------------

app.post("/api/v1/register", (req, reply) => {
  const me = auth(req, reply);
  if (!me) return;
  const p = params(req);
  const types = jsonParam(p, "event_types");
  const fetch = jsonParam(p, "fetch_event_types") ?? types;
  const caps = jsonParam(p, "client_capabilities") as Record<string, unknown> | undefined;
  const q: Queue = {
    id: `${me.id}:${randomBytes(8).toString("hex")}`,
    user: me,
    types: Array.isArray(types) ? new Set(types.map(String)) : null,
    streamTyping: caps?.stream_typing_notifications === true,
    nextId: 0,
    events: [],
    parked: null,
  };
  queues.set(q.id, q);
  me.queues.push(q);
  const state: Record<string, unknown> = {};
  if (!Array.isArray(fetch) || fetch.includes("message")) {
    // Unread: what the user received (after subscribing) and has not read, by channel and topic.
    const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
    let count = 0;
    for (const [chId, since] of me.since) {
      const ms = channels.get(chId)!.messages;
      for (let i = ms.length - 1; i >= 0 && ms[i]!.id > since; i--) {
        const m = ms[i]!;
        if (me.read.has(m.id)) continue;
        count++;
        const key = `${chId}:${m.topic}`;
        const e = streams.get(key) ?? { stream_id: chId, topic: m.topic, unread_message_ids: [] };
        e.unread_message_ids.push(m.id);
        streams.set(key, e);
      }
    }
    state.max_message_id = lastMessageId;
    state.unread_msgs = {
      count,
      pms: [],
      streams: [...streams.values()],
      huddles: [],
      mentions: [],
      old_unreads_missing: false,
    };
    state.user_topics = [];
  }
  return reply.send({
    result: "success",
    msg: "",
    ...state,
    queue_id: q.id,
    last_event_id: -1,
    zulip_version: "11.0-floor",
    zulip_feature_level: 496,
    zulip_merge_base: "11.0",
    idle_queue_timeout_secs: 600,
  });
});

app.get("/api/v1/events", (req, reply) => {
  const me = auth(req, reply);
  if (!me) return;
  const p = params(req);
  const q = queues.get(p.queue_id ?? "");
  if (!q || q.user !== me)
    return fail(reply, 400, `Bad event queue ID: ${p.queue_id ?? ""}`, "BAD_EVENT_QUEUE_ID");
  const last = Number(p.last_event_id ?? -1);
  if (!Number.isInteger(last)) return fail(reply, 400, "Invalid last_event_id");
  let drop = 0;
  while (drop < q.events.length && q.events[drop]!.id <= last) drop++;
  if (drop) q.events.splice(0, drop);
  if (q.events.length || p.dont_block === "true") return answer(q, reply);
  // A new poll replaces a parked one, which gets an empty answer.
  if (q.parked && !q.parked.reply.raw.destroyed) answer(q, q.parked.reply);
  q.parked = { reply, due: Date.now() + HEARTBEAT_MS() };
});

function firstAfter(ids: number[], id: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

app.post("/api/v1/users/me/presence", (req, reply) => {
  const me = auth(req, reply);
  if (!me) return;
  const p = params(req);
  if (p.status !== "active" && p.status !== "idle") return fail(reply, 400, "Invalid status");
  const nowMs = Date.now();
  const now = Math.floor(nowMs / 1000);
  if (!me.isBot) {
    const prev = presence.get(me.id);
    const wasOffline = !prev || prev.idle < now - OFFLINE_SECS;
    const becameActive = p.status === "active" && (!prev || prev.active + ACTIVITY_OFFSET_SECS < prev.idle);
    const active = p.status === "active" ? now : (prev?.active ?? 0);
    if (!prev || prev.active !== active || prev.idle !== now) {
      const updateId = ++lastUpdateId;
      const json = `"${me.id}":{"active_timestamp":${active},"idle_timestamp":${now}}`;
      presence.set(me.id, { active, idle: now, updateId, json });
      presenceLog.ids.push(updateId);
      presenceLog.users.push(me.id);
      // Compact: keep only each user's latest entry once the log holds twice the users.
      if (presenceLog.ids.length > 2 * presence.size + 64) {
        const keep = presenceLog.ids.map((id, i) => presence.get(presenceLog.users[i]!)!.updateId === id);
        presenceLog.ids = presenceLog.ids.filter((_, i) => keep[i]);
        presenceLog.users = presenceLog.users.filter((_, i) => keep[i]);
      }
    }
    if ((wasOffline || becameActive) && users.size <= PRESENCE_EVENTS_USER_LIMIT) {
      const status = active + ACTIVITY_OFFSET_SECS >= now ? "active" : "idle";
      const ts = status === "active" ? active : now;
      const website = `{"client":"website","status":"${status}","timestamp":${ts},"pushable":false}`;
      const body = `"type":"presence","user_id":${me.id},"email":${JSON.stringify(me.email)},"server_timestamp":${nowMs / 1000},"presence":{"website":${website}}`;
      for (const id of users.keys()) if (id !== me.id) deliver(id, "presence", body);
    }
  }
  // Slim presences: every one (14 days) on a first poll, else the log's tail past last_update_id.
  const since = Number(p.last_update_id ?? -1);
  const rows: string[] = [];
  let lastId = -1;
  const add = (userId: number, e: Presence) => {
    if (users.get(userId)!.isBot) return;
    rows.push(e.json);
    if (e.updateId > lastId) lastId = e.updateId;
  };
  if (!(since > 0)) {
    const cutoff = now - 14 * 86400;
    for (const [userId, e] of presence) if (e.idle >= cutoff) add(userId, e);
  } else {
    const { ids, users: who } = presenceLog;
    for (let i = firstAfter(ids, since); i < ids.length; i++) {
      const e = presence.get(who[i]!);
      if (e !== undefined && e.updateId === ids[i]) add(who[i]!, e);
    }
    if (lastId === -1) lastId = since;
  }
  return sendJson(
    reply,
    `{"result":"success","msg":"","presences":{${rows.join(",")}},"server_timestamp":${nowMs / 1000},"zephyr_mirror_active":false,"presence_last_update_id":${lastId}}`,
  );
});

/** The message's fields in Zulip's order, as JSON without the closing brace (flags follow where needed). */
function messageJson(m: {
  id: number;
  sender: User;
  content: string;
  contentType: string;
  ch: Channel;
  topic: string;
  timestamp: number;
}): string {
  return (
    `{"id":${m.id},"sender_id":${m.sender.id},"sender_email":${JSON.stringify(m.sender.email)},` +
    `"sender_full_name":${JSON.stringify(m.sender.fullName)},"sender_realm_str":"","avatar_url":null,` +
    `"client":"API","content":${JSON.stringify(m.content)},"display_recipient":${JSON.stringify(m.ch.name)},` +
    `"recipient_id":${m.ch.id},"type":"stream","subject":${JSON.stringify(m.topic)},"topic_links":[],` +
    `"timestamp":${m.timestamp},"is_me_message":false,"reactions":[],"submessages":[],` +
    `"stream_id":${m.ch.id},"content_type":${JSON.stringify(m.contentType)}`
  );
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

app.post("/api/v1/messages", (req, reply) => {
  const me = auth(req, reply);
  if (!me) return;
  const p = params(req);
  if (p.type !== "stream" && p.type !== "channel") return fail(reply, 400, "Only channel messages here");
  const ch = channelOf(p.to);
  if (!ch) return fail(reply, 400, `Channel with ID '${p.to}' does not exist`, "STREAM_DOES_NOT_EXIST");
  const topic = p.topic ?? p.subject ?? "";
  const content = p.content ?? "";
  if (!content.trim()) return fail(reply, 400, "Message must not be empty");
  const m = { id: ++lastMessageId, sender: me, ch, topic, timestamp: Math.floor(Date.now() / 1000) };
  // History answers carry rendered HTML, events the raw text (the clients do not ask for apply_markdown).
  ch.messages.push({
    id: m.id,
    topic,
    json: messageJson({ ...m, content: `<p>${escapeHtml(content)}</p>`, contentType: "text/html" }),
  });
  if (ch.members.has(me.id)) me.read.add(m.id);
  // The sender is answered once the message is stored, before the fan-out,
  // as Zulip answers once its transaction commits and leaves the delivery
  // to Tornado: the least a sender must wait.
  reply.send({ result: "success", msg: "", id: m.id });
  const event = messageJson({ ...m, content, contentType: "text/x-markdown" });
  const others = `"type":"message","message":${event}},"flags":[]`;
  for (const id of ch.subscribers) if (id !== me.id) deliver(id, "message", others);
  if (ch.members.has(me.id))
    deliver(me.id, "message", `"type":"message","message":${event}},"flags":["read"]`);
  return reply;
});

app.get("/api/v1/messages", (req, reply) => {
  const me = auth(req, reply);
  if (!me) return;
  const p = params(req);
  const narrow = jsonParam(p, "narrow");
  const term = Array.isArray(narrow)
    ? (narrow as { operator?: unknown; operand?: unknown }[]).find(
        (t) => t?.operator === "channel" || t?.operator === "stream",
      )
    : undefined;
  const ch = channelOf(term?.operand);
  if (!ch) return fail(reply, 400, "Invalid narrow: one channel only", "BAD_NARROW");
  if (p.anchor !== "newest") return fail(reply, 400, "Only anchor=newest here");
  const before = Number(p.num_before ?? 0);
  if (!Number.isInteger(before) || before < 0 || before > 5000) return fail(reply, 400, "Invalid num_before");
  const since = me.since.get(ch.id) ?? Infinity;
  const page = ch.messages.slice(Math.max(0, ch.messages.length - before));
  const rows = page.map(
    (m) =>
      `${m.json},"flags":${m.id <= since ? `["read","historical"]` : me.read.has(m.id) ? `["read"]` : "[]"}}`,
  );
  return sendJson(
    reply,
    `{"result":"success","msg":"","anchor":${NEWEST},"found_anchor":false,` +
      `"found_oldest":${page.length === ch.messages.length},"found_newest":true,"history_limited":false,` +
      `"messages":[${rows.join(",")}]}`,
  );
});

app.post("/api/v1/messages/flags", (req, reply) => {
  const me = auth(req, reply);
  if (!me) return;
  const p = params(req);
  const ids = jsonParam(p, "messages");
  if (!Array.isArray(ids) || !ids.every((id) => Number.isInteger(id) && id > 0 && id <= lastMessageId))
    return fail(reply, 400, "Invalid message(s)");
  if (p.flag !== "read" || (p.op !== "add" && p.op !== "remove"))
    return fail(reply, 400, "Only the read flag here");
  const changed: number[] = [];
  for (const id of ids as number[]) {
    if (me.read.has(id) === (p.op === "add")) continue;
    if (p.op === "add") me.read.add(id);
    else me.read.delete(id);
    changed.push(id);
  }
  if (changed.length) {
    deliver(
      me.id,
      "update_message_flags",
      `"type":"update_message_flags","op":"${p.op}","operation":"${p.op}","flag":"read","messages":[${changed.join(",")}],"all":false`,
    );
  }
  return reply.send({ result: "success", msg: "", messages: ids });
});

app.post("/api/v1/typing", (req, reply) => {
  const me = auth(req, reply);
  if (!me) return;
  const p = params(req);
  const ch = channelOf(p.stream_id);
  if (p.type !== "stream" && p.type !== "channel") return fail(reply, 400, "Only channel typing here");
  if (!ch) return fail(reply, 400, "Invalid channel ID", "BAD_REQUEST");
  if (typeof p.topic !== "string") return fail(reply, 400, "Missing topic");
  const op = p.op === "stop" ? "stop" : "start";
  if (ch.subscribers.length <= MAX_TYPING_AUDIENCE) {
    const body =
      `"type":"typing","message_type":"stream","op":"${op}","sender":{"user_id":${me.id},"email":${JSON.stringify(me.email)}},` +
      `"stream_id":${ch.id},"topic":${JSON.stringify(p.topic)}`;
    // Only queues that declared stream_typing_notifications get channel typing events.
    for (const id of ch.subscribers) {
      for (const q of users.get(id)!.queues) {
        if (q.streamTyping && (q.types === null || q.types.has("typing"))) push(q, body);
      }
    }
  }
  return reply.send({ result: "success", msg: "" });
});

// The real server's backlog, so an opening burst of polls is not dropped.
await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1", backlog: 4096 });
const addr = app.server.address();
console.log(`LISTENING ${typeof addr === "object" && addr ? addr.port : 0} owner ${owner.id}`);
