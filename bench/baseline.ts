// The baseline every figure is a ratio to: a bare Fastify server with a
// form-POST handler and a small-JSON GET handler, measured in the same run
// on the same machine.
import Fastify from "fastify";
import formbody from "@fastify/formbody";
import { randomBytes } from "node:crypto";

const app = Fastify({ logger: false });
await app.register(formbody);
const echo = async (req: { body: unknown }) => {
  const body = req.body as Record<string, string>;
  return { result: "success", msg: "", echo: Object.keys(body ?? {}).length };
};
app.patch("/api/v1/settings", echo);
app.post("/api/v1/settings", echo);
app.get("/api/v1/ping", async () => ({ result: "success", msg: "", pong: true }));
// The history-read baseline: POST /api/v1/stash keeps a JSON body (the
// server's own GET /messages answer, 100 messages), GET /api/v1/stash
// serves it from memory, serialized per request as a server would.
let stash: unknown = { result: "success", msg: "" };
app.post("/api/v1/stash", async (req) => {
  stash = req.body;
  return { result: "success", msg: "" };
});
app.get("/api/v1/stash", async () => stash);
// The parked-poll baseline: a GET that is never answered, as a long-poll
// waits (the handler neither returns a promise nor sends).
app.get("/api/v1/events", () => {});
// The fan-out baseline: GET /api/v1/fanout parks its reply; POST
// /api/v1/fanout answers every parked one with a message event shaped and
// sized like the server's (one JSON text, as Fastify sends a string body),
// then answers itself.
const parked: { send(body: string): unknown }[] = [];
app.get("/api/v1/fanout", (_req, reply) => {
  parked.push(reply.header("content-type", "application/json"));
});
let fanned = 0;
app.post("/api/v1/fanout", async () => {
  const message = {
    id: ++fanned,
    sender_id: 8,
    sender_email: "owner@example.com",
    sender_full_name: "Olivia Owner",
    sender_realm_str: "",
    avatar_url: null,
    client: "API",
    content: `round ${fanned}`,
    display_recipient: "bench events",
    recipient_id: 12,
    type: "stream",
    subject: "fan-out",
    topic_links: [],
    timestamp: Math.floor(Date.now() / 1000),
    is_me_message: false,
    reactions: [],
    submessages: [],
    stream_id: 3,
    content_type: "text/x-markdown",
  };
  for (const reply of parked.splice(0)) {
    const events = [{ type: "message", message, flags: [], id: fanned - 1 }];
    reply.send(JSON.stringify({ result: "success", msg: "", events, queue_id: "8:0123456789abcdef" }) + "\n");
  }
  return { result: "success", msg: "" };
});
// The idle-queue baseline: POST /api/v1/register keeps what a plain server
// must hold for an event queue nobody polls (its id, owner, event types,
// timeout, last poll time, cursor and an empty buffer) in a Map, as
// Zulip's Tornado keeps a client descriptor per queue. GET
// /api/v1/heap answers the heap in use after full collections (needs
// --expose-gc).
interface PlainQueue {
  queueId: string;
  userId: number;
  eventTypes: string[] | null;
  timeoutSecs: number;
  lastPoll: number;
  lastEventId: number;
  events: unknown[];
}
const queues = new Map<string, PlainQueue>();
let registered = 0;
app.post("/api/v1/register", async (req) => {
  const body = (req.body ?? {}) as Record<string, string>;
  const userId = ++registered;
  const queueId = `${userId}:${randomBytes(8).toString("hex")}`;
  const types = body.event_types === undefined ? null : (JSON.parse(body.event_types) as string[]);
  queues.set(queueId, {
    queueId,
    userId,
    eventTypes: types,
    timeoutSecs: 600,
    lastPoll: Date.now(),
    lastEventId: -1,
    events: [],
  });
  return { result: "success", msg: "", queue_id: queueId, last_event_id: -1 };
});
const gc = (globalThis as { gc?: () => void }).gc;
app.get("/api/v1/heap", async () => {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((r) => setImmediate(r));
  }
  return {
    result: "success",
    msg: "",
    heap: gc ? process.memoryUsage().heapUsed : null,
    queues: queues.size,
  };
});
// The gateway's backlog, so an opening burst of polls is not dropped.
await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1", backlog: 4096 });
const addr = app.server.address();
console.log(`LISTENING ${typeof addr === "object" && addr ? addr.port : 0}`);
