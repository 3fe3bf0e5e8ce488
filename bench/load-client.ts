// Child of the load-profile section (bench/load-profile.ts): simulates the
// clients it is given. Each client registers an event queue and keeps one
// GET /events parked on its own keep-alive socket (bench/raw-poll.ts),
// re-polling with last_event_id after every answer, and sends presence every
// 60 s at its own offset. The other requests of the mix (GET /messages,
// flags, sends, typing) are Poisson arrivals at the process's aggregate rate
// for its active clients, each from a client picked at random, over a small
// keep-alive pool (undici). One process holds at most a few thousand
// clients: every parked poll is an open file, and the limit is 20,000.
//
// Protocol, one JSON object per line. stdin: {cmd:"add", clients:[...]}
// (answered "ADDED <ok> <failed>"), {cmd:"reset"} (zero the figures and the
// CPU clock), {cmd:"report"} (answered "REPORT <json>"). SIGTERM exits.
//
// A send's content carries the wall-clock time its request started, so any
// process that receives it can time the delivery without a shared clock
// beyond the machine's own.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { Pool } from "undici";
import { RawConn } from "./raw-poll.ts";

export interface LoadClientSpec {
  auth: string;
  /** Channels the client's user is subscribed to (Zipf-sized). */
  channels: number[];
}

export interface LoadRates {
  /** Requests per second per client, by kind (presence runs on its own 60 s clock). */
  messages: number;
  flags: number;
  send: number;
  typing: number;
}

/** Latency histogram: whole milliseconds → count. */
export type Histogram = Record<string, number>;

export interface LoadReport {
  /** Per kind: latency histogram, answered count, failed count. */
  kinds: Record<string, { hist: Histogram; ok: number; failed: number; lastError?: string }>;
  /** CPU seconds this process used since the reset, and the wall seconds. */
  cpuSeconds: number;
  wallSeconds: number;
  active: number;
  reRegistered: number;
  /** This process's event-loop delay since the reset (ms): its own lag, which every latency it times includes. */
  loopDelay: { p99: number; max: number };
}

const [base, ratesJson] = process.argv.slice(2) as [string, string];
const rates = JSON.parse(ratesJson) as LoadRates;
const url = new URL(base);
const host = url.hostname;
const port = Number(url.port);
const PRESENCE_MS = 60_000;
/** Message ids a client remembers for its next read-flag request. */
const UNREAD_KEEP = 10;

const pool = new Pool(base, { connections: 64, pipelining: 1 });
const now = () => performance.timeOrigin + performance.now();

class Kind {
  hist = new Map<number, number>();
  ok = 0;
  failed = 0;
  lastError?: string;
  add(ms: number) {
    const k = Math.max(0, Math.round(ms));
    this.hist.set(k, (this.hist.get(k) ?? 0) + 1);
    this.ok++;
  }
  fail(why: string) {
    this.failed++;
    this.lastError = why.slice(0, 200);
  }
}

const KINDS = ["presence", "messages", "flags", "send", "typing", "register", "poll", "delivery"] as const;
type KindName = (typeof KINDS)[number];
let figures = newFigures();
function newFigures(): Record<KindName, Kind> {
  return Object.fromEntries(KINDS.map((k) => [k, new Kind()])) as Record<KindName, Kind>;
}
let cpuAt = process.cpuUsage();
let wallAt = performance.now();
let reRegistered = 0;
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();

interface Client {
  spec: LoadClientSpec;
  conn: RawConn;
  queueId: string;
  lastEventId: number;
  presenceId: number;
  unread: number[];
}
const active: Client[] = [];
let lastSeenMessageId = 0;
let stopping = false;

async function call(
  kind: KindName,
  method: "GET" | "POST",
  path: string,
  auth: string,
  params: Record<string, string>,
): Promise<Record<string, unknown> | null> {
  const q = new URLSearchParams(params).toString();
  const start = now();
  try {
    const res = await pool.request({
      method,
      path: method === "GET" ? `/api/v1${path}?${q}` : `/api/v1${path}`,
      headers:
        method === "GET"
          ? { authorization: auth }
          : { authorization: auth, "content-type": "application/x-www-form-urlencoded" },
      body: method === "GET" ? undefined : q,
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) {
      figures[kind].fail(`${res.statusCode} ${text}`);
      return null;
    }
    figures[kind].add(now() - start);
    return JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    figures[kind].fail(String(err));
    return null;
  }
}

async function register(c: Client): Promise<boolean> {
  const r = await call("register", "POST", "/register", c.spec.auth, {
    event_types: JSON.stringify(["message", "update_message_flags", "typing", "presence"]),
    fetch_event_types: JSON.stringify(["message"]),
  });
  if (!r) return false;
  c.queueId = r.queue_id as string;
  c.lastEventId = r.last_event_id as number;
  return true;
}

interface WireEvent {
  id: number;
  type: string;
  message?: { id: number; content: string };
}

function poll(c: Client): void {
  if (stopping) return;
  const start = now();
  c.conn
    .get(`/api/v1/events?queue_id=${encodeURIComponent(c.queueId)}&last_event_id=${c.lastEventId}`, {
      authorization: c.spec.auth,
    })
    .then(
      (a) => {
        const at = performance.timeOrigin + a.at;
        if (a.status !== 200) {
          figures.poll.fail(`${a.status} ${a.body}`);
          // An expired or unknown queue: register again, as a client does.
          if (a.body.includes("BAD_EVENT_QUEUE_ID")) {
            reRegistered++;
            void register(c).then((ok) => (ok ? poll(c) : setTimeout(() => poll(c), 1000)));
          } else setTimeout(() => poll(c), 1000);
          return;
        }
        figures.poll.add(at - start);
        const events = (JSON.parse(a.body) as { events?: WireEvent[] }).events ?? [];
        for (const e of events) {
          c.lastEventId = Math.max(c.lastEventId, e.id);
          if (e.type !== "message" || !e.message) continue;
          const m = /^load (\d+(?:\.\d+)?)/.exec(e.message.content);
          if (m) figures.delivery.add(at - Number(m[1]));
          c.unread.push(e.message.id);
          if (c.unread.length > UNREAD_KEEP) c.unread.shift();
          lastSeenMessageId = Math.max(lastSeenMessageId, e.message.id);
        }
        poll(c);
      },
      (err: Error) => {
        figures.poll.fail(String(err));
        setTimeout(() => poll(c), 1000);
      },
    );
}

function presence(c: Client): void {
  const params: Record<string, string> = { status: "active", new_user_input: "true", slim_presence: "true" };
  // After the first answer only the changes since are asked for, as Zulip's clients do.
  if (c.presenceId >= 0) params.last_update_id = String(c.presenceId);
  void call("presence", "POST", "/users/me/presence", c.spec.auth, params).then((r) => {
    if (r && typeof r.presence_last_update_id === "number") c.presenceId = r.presence_last_update_id;
  });
}

const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

const MIX: Record<"messages" | "flags" | "send" | "typing", (c: Client) => void> = {
  messages: (c) => {
    const narrow = JSON.stringify([{ operator: "channel", operand: pick(c.spec.channels) }]);
    void call("messages", "GET", "/messages", c.spec.auth, {
      narrow,
      anchor: "newest",
      num_before: "100",
      num_after: "0",
    });
  },
  flags: (c) => {
    const ids = c.unread.length ? c.unread.splice(0) : lastSeenMessageId ? [lastSeenMessageId] : [];
    if (!ids.length) return;
    void call("flags", "POST", "/messages/flags", c.spec.auth, {
      messages: JSON.stringify(ids),
      op: "add",
      flag: "read",
    });
  },
  send: (c) => {
    void call("send", "POST", "/messages", c.spec.auth, {
      type: "stream",
      to: String(pick(c.spec.channels)),
      topic: `load ${Math.floor(Math.random() * 20)}`,
      content: `load ${now().toFixed(1)}`,
    });
  },
  typing: (c) => {
    void call("typing", "POST", "/typing", c.spec.auth, {
      type: "stream",
      stream_id: String(pick(c.spec.channels)),
      topic: `load ${Math.floor(Math.random() * 20)}`,
      op: "start",
    });
  },
};

/**
 * Poisson arrivals of one kind at `perClient` × the active clients per
 * second. A gap longer than a second is cut short and drawn again with the
 * rate of then (exact, the process being memoryless), so the rate follows
 * the clients as they are added.
 */
function arrivals(kind: keyof typeof MIX, perClient: number): void {
  const next = () => {
    if (stopping) return;
    const rate = perClient * active.length;
    const gapMs = rate > 0 ? (-Math.log(1 - Math.random()) / rate) * 1000 : Infinity;
    if (gapMs > 1000) return void setTimeout(next, 1000);
    setTimeout(() => {
      if (active.length) MIX[kind](pick(active));
      next();
    }, gapMs);
  };
  next();
}

async function add(specs: LoadClientSpec[]): Promise<void> {
  let ok = 0;
  let failed = 0;
  let next = 0;
  const worker = async () => {
    while (next < specs.length) {
      const spec = specs[next++]!;
      const c: Client = {
        spec,
        conn: new RawConn(host, port),
        queueId: "",
        lastEventId: -1,
        presenceId: -1,
        unread: [],
      };
      if (!(await register(c))) {
        failed++;
        continue;
      }
      ok++;
      active.push(c);
      poll(c);
      // A client pings presence when it starts (its user comes online then,
      // which fans out a presence event: that belongs to the ramp, not the
      // measured window), then every 60 s at its own offset, so the pings
      // spread evenly over the minute.
      presence(c);
      setTimeout(() => {
        presence(c);
        setInterval(() => presence(c), PRESENCE_MS);
      }, Math.random() * PRESENCE_MS);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  process.stdout.write(`ADDED ${ok} ${failed}\n`);
}

function report(): LoadReport {
  const cpu = process.cpuUsage(cpuAt);
  const kinds: LoadReport["kinds"] = {};
  for (const k of KINDS) {
    const f = figures[k];
    kinds[k] = { hist: Object.fromEntries(f.hist), ok: f.ok, failed: f.failed, lastError: f.lastError };
  }
  return {
    kinds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    wallSeconds: (performance.now() - wallAt) / 1000,
    active: active.length,
    reRegistered,
    loopDelay: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
  };
}

for (const k of Object.keys(MIX) as (keyof typeof MIX)[]) arrivals(k, rates[k]);

process.on("SIGTERM", () => {
  stopping = true;
  for (const c of active) c.conn.close();
  void pool.destroy().finally(() => process.exit(0));
});

createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line) as { cmd: string; clients?: LoadClientSpec[] };
  if (msg.cmd === "add") void add(msg.clients ?? []);
  else if (msg.cmd === "reset") {
    figures = newFigures();
    reRegistered = 0;
    loopDelay.reset();
    cpuAt = process.cpuUsage();
    wallAt = performance.now();
  } else if (msg.cmd === "report") process.stdout.write(`REPORT ${JSON.stringify(report())}\n`);
});
