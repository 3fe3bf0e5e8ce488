// `npm run chaos`: the fault suite in cluster mode. Real nats-server and
// redis-server (AOF, appendfsync always), three node processes and one
// gateway on free ports and temp dirs; a steady load of acknowledged writes
// (POST /messages with unique content, PATCH /settings) and long-poll
// clients (one queue each for message events) through the gateway, while a
// fault is injected every few seconds at random:
//   - kill -9 a node, then restart it (same gRPC port);
//   - restart NATS (kill -9, same port);
//   - restart Redis (kill -9, same port and dir: it reloads its AOF);
//   - SIGSTOP a node past its lease TTL (3 s), then SIGCONT.
// Then the faults stop, the cluster settles, and the run checks:
//   - every acknowledged message is in GET /messages with its content, and
//     no content appears twice; every writer's full name is at least its last
//     acknowledged PATCH /settings;
//   - every queue polled without re-registration got every acknowledged
//     message whose send started after the queue's registration, and no
//     event id or message id twice (a BAD_EVENT_QUEUE_ID answer counts as a
//     lost queue, not as lost events: the client re-registers);
//   - no stale owner wrote: the node logs' "write fenced" refusals are
//     counted, and every journal stream in Redis is contiguous (entry seqs
//     n, n+1, ... with the last one equal to the shard's `jlast`).
// Exit code 1 on any violation. Every process is stopped by pid, also on
// failure or Ctrl-C. Knobs: CHAOS_SECONDS (default 90; faults run this
// long), CHAOS_SEED, CHAOS_FAULT_MS (mean gap between faults, default 5000),
// CHAOS_FAULTS (comma-separated kinds: kill9-node, restart-nats, restart-redis,
// sigstop-node; default all).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createClient } from "redis";
import { startProc, type Proc } from "./procs.ts";
import { startGateway } from "./servers.ts";
import {
  freePort,
  redisArgs,
  requireBinaries,
  startNats,
  waitForPort,
  type Service,
} from "../test/support/services.ts";
import { makeApi, type Api, type ApiResult, type Creds } from "../test/support/embedded.ts";

const USAGE = `usage: npm run chaos   (no arguments; knobs are environment variables)
  CHAOS_SECONDS   seconds of faults (default 90)
  CHAOS_SEED      seed of the fault schedule, to replay a run
  CHAOS_FAULT_MS  mean gap between faults in ms (default 5000)
  CHAOS_FAULTS    comma-separated kinds: kill9-node, restart-nats, restart-redis, sigstop-node (default all)
Exit code 0: no violation; 1: a violation or a failed run; 2: bad usage.`;
const cliArgs = process.argv.slice(2);
if (cliArgs.includes("--help") || cliArgs.includes("-h")) {
  console.log(USAGE);
  process.exit(0);
}
if (cliArgs.length) {
  console.error(`unexpected arguments: ${cliArgs.join(" ")}\n${USAGE}`);
  process.exit(2);
}

const SECONDS = Number(process.env.CHAOS_SECONDS ?? 90);
const FAULT_MS = Number(process.env.CHAOS_FAULT_MS ?? 5000);
const LEASE_TTL_MS = 3000;
const ALL_FAULTS = ["kill9-node", "restart-nats", "restart-redis", "sigstop-node"];
/** CHAOS_FAULTS=restart-redis,kill9-node: only these kinds. */
const FAULT_KINDS = process.env.CHAOS_FAULTS ? process.env.CHAOS_FAULTS.split(",") : ALL_FAULTS;
for (const k of FAULT_KINDS)
  if (!ALL_FAULTS.includes(k)) throw new Error(`unknown fault ${k}: ${ALL_FAULTS.join(", ")}`);
const WRITERS = 3;
const POLLERS = 4;
const NODE_IDS = ["n1", "n2", "n3"];
const OWNER = { email: "chaos-owner@example.com", password: "chaos-owner-password" };
const CHANNEL = "chaos";

// A small seeded PRNG (mulberry32) so a failing run can be replayed.
let seed = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const SEED = seed;
function rand(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => console.error(`[chaos ${new Date().toISOString().slice(11, 23)}] ${msg}`);

// ---------------------------------------------------------------- processes

/** Redis with AOF and appendfsync always, restartable on the same port and dir. */
async function startRedisAlways(): Promise<Service> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "chaos-redis-"));
  const args = redisArgs(port, dir, "always");
  const launch = () => {
    const p = spawn("redis-server", args, { stdio: "ignore" });
    p.on("error", () => {});
    return p;
  };
  const svc: Service = {
    port,
    url: `redis://127.0.0.1:${port}`,
    proc: launch(),
    dir,
    async stop() {
      await killWait(svc.proc, "SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
    async kill9() {
      await killWait(svc.proc, "SIGKILL");
    },
    async restart() {
      await killWait(svc.proc, "SIGKILL");
      svc.proc = launch();
      await waitForPort(port, 30_000);
    },
  };
  await waitForPort(port);
  return svc;
}

function killWait(p: ChildProcess, sig: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    const t = setTimeout(() => p.kill("SIGKILL"), 5000);
    p.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
    p.kill("SIGCONT");
    p.kill(sig);
  });
}

interface NodeProc {
  id: string;
  grpcPort: number;
  proc: Proc | null;
  /** Every line this node printed that mentions fencing or a lost lease, over all its lives. */
  fencedLines: string[];
  lostLeaseLines: string[];
  lives: number;
}

/** Error lines of every process (first few of each distinct text), as evidence for 5xx answers. */
const errorLines = new Map<string, { at: number; who: string; line: string; n: number }>();
function errorLine(who: string, line: string): void {
  const key = `${who} ${line.replace(/\d+/g, "#").slice(0, 200)}`;
  const e = errorLines.get(key);
  if (e) e.n++;
  else errorLines.set(key, { at: Date.now(), who, line: line.slice(0, 400), n: 1 });
}

/** Counts log lines of a child over its whole life (Proc.output() keeps only the tail). */
function watchLines(child: ChildProcess, n: NodeProc): void {
  for (const s of [child.stdout, child.stderr]) {
    if (!s) continue;
    createInterface({ input: s }).on("line", (line) => {
      if (/write fenced/.test(line)) n.fencedLines.push(line);
      else if (/lost lease/.test(line)) n.lostLeaseLines.push(line);
      else if (/error/i.test(line)) errorLine(n.id, line);
    });
  }
}

// ---------------------------------------------------------------- the run

interface Sent {
  id: number;
  content: string;
  /** Date.now() when the request was sent. */
  startedAt: number;
}

interface Segment {
  queueId: string;
  registeredAt: number;
  last: number;
  eventIds: number[];
  messageIds: number[];
  /** Ended by BAD_EVENT_QUEUE_ID (lost queue). */
  lost: boolean;
}

interface Poller extends Creds {
  userId: number;
  segments: Segment[];
}

interface Writer extends Creds {
  userId: number;
  lastAckedName: number;
  attemptedNames: number;
}

const counts = {
  writesAttempted: 0,
  messagesAcked: 0,
  settingsAcked: 0,
  failedByStatus: new Map<string, number>(),
  faults: new Map<string, number>(),
  pollErrors: new Map<string, number>(),
  lostQueues: 0,
};
const violations: string[] = [];
const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
/** The first few answers of each failing kind (status, body, time), as evidence. */
const samples = new Map<string, { at: number; text: string }[]>();
function sample(key: string, r: { status: number; body: unknown }): void {
  const list = samples.get(key) ?? [];
  if (list.length < 3) list.push({ at: Date.now(), text: JSON.stringify(r.body).slice(0, 300) });
  samples.set(key, list);
}

/** An API call that never throws: network errors and timeouts become status 0 with a reason. */
async function call(
  api: Api,
  method: string,
  path: string,
  params: Record<string, unknown>,
): Promise<ApiResult | { status: number; body: { reason: string } }> {
  try {
    return await api(method, path, params);
  } catch (err) {
    return { status: 0, body: { reason: (err as Error).name } };
  }
}

const cleanup: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | null = null;
function stopAll(): Promise<void> {
  cleaning ??= (async () => {
    for (const f of cleanup.reverse()) await f().catch(() => {});
  })();
  return cleaning;
}
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    log(`${sig}: stopping every process`);
    void stopAll().then(() => process.exit(130));
  });
}
// Output piped to a reader that went away (`npm run chaos | head`): stop the
// cluster instead of dying on EPIPE with its processes left running.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") throw err;
    void stopAll().then(() => process.exit(1));
  });
}

async function main(): Promise<void> {
  const missing = requireBinaries("nats-server", "redis-server");
  if (missing) throw new Error(missing);
  log(`seed ${SEED}, ${SECONDS} s of faults, one every ~${FAULT_MS} ms`);

  const nats = await startNats();
  cleanup.push(() => nats.stop());
  const redis = await startRedisAlways();
  cleanup.push(() => redis.stop());
  const common = {
    NATS_URL: nats.url,
    REDIS_URL: redis.url,
    SHARDS: "32",
    OWNER_EMAIL: OWNER.email,
    OWNER_PASSWORD: OWNER.password,
    OWNER_NAME: "Chaos Owner",
    REALM_NAME: "Chaos",
    EVENT_QUEUE_HEARTBEAT_MS: "5000",
  };

  const nodes: NodeProc[] = [];
  const startNode = async (n: NodeProc) => {
    const p = await startProc(
      n.id,
      "cluster/node-main.ts",
      { ...common, NODE_ID: n.id, GRPC_PORT: String(n.grpcPort) },
      /node \S+ ready/,
      60_000,
    );
    n.proc = p;
    n.lives++;
    watchLines(p.child, n);
  };
  cleanup.push(async () => {
    for (const n of nodes) await n.proc?.stop("SIGKILL");
  });
  for (const id of NODE_IDS) {
    const n: NodeProc = {
      id,
      grpcPort: await freePort(),
      proc: null,
      fencedLines: [],
      lostLeaseLines: [],
      lives: 0,
    };
    nodes.push(n);
    await startNode(n);
  }
  const { proc: gateway, url: baseUrl } = await startGateway(common);
  cleanup.push(() => gateway.stop());
  for (const st of [gateway.child.stdout, gateway.child.stderr])
    if (st) createInterface({ input: st }).on("line", (l) => /error/i.test(l) && errorLine("gateway", l));
  log(`cluster up: gateway ${baseUrl}, nats ${nats.url}, redis ${redis.url}`);

  // ------------------------------------------------------------ seed users
  let ownerKey = "";
  for (let i = 0; i < 100 && !ownerKey; i++) {
    const r = await call(makeApi(baseUrl, null), "POST", "/fetch_api_key", {
      username: OWNER.email,
      password: OWNER.password,
    });
    if (r.status === 200) ownerKey = (r.body as { api_key: string }).api_key;
    else await sleep(200);
  }
  if (!ownerKey) throw new Error("the cluster never answered fetch_api_key");
  const owner = makeApi(baseUrl, { email: OWNER.email, apiKey: ownerKey });
  const mkUser = async (name: string): Promise<Creds & { userId: number }> => {
    const email = `${name}@example.com`;
    const password = `pw-${name}-chaos`;
    const created = await owner("POST", "/users", { email, password, full_name: name });
    if (created.status !== 200) throw new Error(`create ${email}: ${JSON.stringify(created.body)}`);
    const key = await owner("POST", "/fetch_api_key", { username: email, password }, null);
    if (key.status !== 200) throw new Error(`key ${email}: ${JSON.stringify(key.body)}`);
    return { email, apiKey: key.body.api_key as string, userId: created.body.user_id as number };
  };
  const writers: Writer[] = [];
  for (let i = 0; i < WRITERS; i++)
    writers.push({ ...(await mkUser(`writer${i}`)), lastAckedName: 0, attemptedNames: 0 });
  const pollers: Poller[] = [];
  for (let i = 0; i < POLLERS; i++) pollers.push({ ...(await mkUser(`poller${i}`)), segments: [] });
  const created = await owner("POST", "/users/me/subscriptions", {
    subscriptions: [{ name: CHANNEL }],
    principals: [...writers, ...pollers].map((u) => u.userId),
  });
  if (created.status !== 200) throw new Error(`channel: ${JSON.stringify(created.body)}`);

  // ------------------------------------------------------------ load
  const sent: Sent[] = [];
  /** Sends that got no success answer: they may or may not have landed. */
  const unacked: { content: string; status: number; startedAt: number }[] = [];
  let stopWriting = false;
  let stopPolling = false;

  const writerLoop = async (w: Writer, wi: number) => {
    const api = makeApi(baseUrl, w);
    for (let n = 1; !stopWriting; n++) {
      counts.writesAttempted++;
      if (n % 3 === 0) {
        w.attemptedNames = n;
        const r = await call(api, "PATCH", "/settings", { full_name: `writer${wi} n${n}` });
        if (r.status === 200) {
          counts.settingsAcked++;
          w.lastAckedName = n;
        } else {
          bump(counts.failedByStatus, `PATCH /settings ${r.status}`);
          sample(`PATCH /settings ${r.status}`, r);
        }
      } else {
        const content = `chaos w${wi} n${n} ${Math.floor(Math.random() * 1e9).toString(36)}`;
        const startedAt = Date.now();
        const r = await call(api, "POST", "/messages", {
          type: "stream",
          to: CHANNEL,
          topic: `t${wi}`,
          content,
        });
        if (r.status === 200) {
          counts.messagesAcked++;
          sent.push({ id: (r.body as { id: number }).id, content, startedAt });
        } else {
          bump(counts.failedByStatus, `POST /messages ${r.status}`);
          sample(`POST /messages ${r.status}`, r);
          unacked.push({ content, status: r.status, startedAt });
        }
      }
      if (!stopWriting) await sleep(100);
    }
  };

  const register = async (p: Poller, api: Api): Promise<Segment> => {
    for (;;) {
      const r = await call(api, "POST", "/register", { event_types: ["message"] });
      if (r.status === 200) {
        const b = r.body as { queue_id: string; last_event_id: number };
        const seg: Segment = {
          queueId: b.queue_id,
          registeredAt: Date.now(),
          last: b.last_event_id,
          eventIds: [],
          messageIds: [],
          lost: false,
        };
        p.segments.push(seg);
        return seg;
      }
      bump(counts.pollErrors, `POST /register ${r.status}`);
      await sleep(200);
    }
  };
  const pollerLoop = async (p: Poller) => {
    const api = makeApi(baseUrl, p);
    let seg = await register(p, api);
    while (!stopPolling) {
      const r = await call(api, "GET", "/events", { queue_id: seg.queueId, last_event_id: seg.last });
      if (r.status !== 200) {
        const code = (r.body as { code?: string }).code;
        if (code === "BAD_EVENT_QUEUE_ID") {
          counts.lostQueues++;
          seg.lost = true;
          log(`${p.email}: queue ${seg.queueId} lost (BAD_EVENT_QUEUE_ID); re-registering`);
          seg = await register(p, api);
        } else {
          bump(counts.pollErrors, `GET /events ${r.status}${code ? " " + code : ""}`);
          sample(`GET /events ${r.status}`, r);
          await sleep(100);
        }
        continue;
      }
      for (const e of (r.body as { events: { id: number; type: string; message?: { id: number } }[] })
        .events) {
        seg.eventIds.push(e.id);
        seg.last = Math.max(seg.last, e.id);
        if (e.type === "message" && e.message) seg.messageIds.push(e.message.id);
      }
    }
  };

  const pollerTasks = pollers.map(pollerLoop);
  await sleep(1000);
  const writerTasks = writers.map(writerLoop);
  const t0 = Date.now();

  // ------------------------------------------------------------ faults
  const until = Date.now() + SECONDS * 1000;
  const timeline: { at: number; what: string }[] = [];
  const restartNode = async (n: NodeProc) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await startNode(n);
        return;
      } catch (err) {
        if (attempt >= 3) {
          violations.push(`node ${n.id} did not restart: ${(err as Error).message.slice(0, 500)}`);
          return;
        }
        log(`node ${n.id} restart attempt ${attempt} failed; retrying`);
      }
    }
  };
  while (Date.now() < until) {
    await sleep(FAULT_MS * (0.5 + rand()));
    if (Date.now() >= until) break;
    const kind = pick(FAULT_KINDS);
    bump(counts.faults, kind);
    const faultAt = Date.now();
    if (kind === "kill9-node") {
      const n = pick(nodes);
      log(`fault: kill -9 ${n.id}`);
      timeline.push({ at: faultAt, what: `kill -9 ${n.id}` });
      await n.proc!.stop("SIGKILL");
      await sleep(500 + rand() * 1500);
      await restartNode(n);
      log(`${n.id} restarted`);
    } else if (kind === "restart-nats") {
      log("fault: restart NATS");
      timeline.push({ at: faultAt, what: "restart NATS" });
      await nats.restart();
    } else if (kind === "restart-redis") {
      log("fault: restart Redis (kill -9; reloads its AOF)");
      timeline.push({ at: faultAt, what: "restart Redis" });
      await redis.restart();
    } else {
      const n = pick(nodes);
      const ms = LEASE_TTL_MS + 1000 + rand() * 1500;
      log(`fault: SIGSTOP ${n.id} for ${Math.round(ms)} ms`);
      timeline.push({ at: faultAt, what: `SIGSTOP ${n.id} ${Math.round(ms)} ms` });
      n.proc!.child.kill("SIGSTOP");
      await sleep(ms);
      n.proc!.child.kill("SIGCONT");
    }
  }

  // ------------------------------------------------------------ settle
  log("faults stopped; settling");
  await sleep(8000);
  stopWriting = true;
  await Promise.all(writerTasks);
  // Let the pollers catch up: every acknowledged message that any final
  // segment expects, or 30 s.
  const expectedFor = (seg: Segment) => sent.filter((s) => s.startedAt > seg.registeredAt).map((s) => s.id);
  const catchUpUntil = Date.now() + 30_000;
  while (Date.now() < catchUpUntil) {
    const behind = pollers.some((p) => {
      const seg = p.segments[p.segments.length - 1]!;
      const got = new Set(seg.messageIds);
      return expectedFor(seg).some((id) => !got.has(id));
    });
    if (!behind) break;
    await sleep(200);
  }
  stopPolling = true;
  // A parked poll ends at the next heartbeat (5 s) at the latest.
  await Promise.all(pollerTasks);

  // ------------------------------------------------------------ checks
  // 1. Every acknowledged message is stored with its content; none twice.
  const stored = new Map<number, string>();
  let anchor: number | "oldest" = "oldest";
  for (let page = 0; page < 1000; page++) {
    const r = await owner("GET", "/messages", {
      anchor,
      num_before: 0,
      num_after: 1000,
      include_anchor: anchor === "oldest",
      apply_markdown: false,
      narrow: [{ operator: "channel", operand: CHANNEL }],
    });
    if (r.status !== 200) throw new Error(`GET /messages: ${r.status} ${JSON.stringify(r.body)}`);
    const msgs = r.body.messages as { id: number; content: string }[];
    for (const m of msgs) {
      if (stored.has(m.id)) violations.push(`GET /messages returned message ${m.id} twice`);
      stored.set(m.id, m.content);
    }
    if (r.body.found_newest || msgs.length === 0) break;
    anchor = msgs[msgs.length - 1]!.id;
  }
  let found = 0;
  for (const s of sent) {
    const c = stored.get(s.id);
    if (c === undefined) violations.push(`acknowledged message ${s.id} (${s.content}) is missing`);
    else if (c !== s.content) violations.push(`message ${s.id}: stored "${c}", acknowledged "${s.content}"`);
    else found++;
  }
  const byContent = new Map<string, number[]>();
  for (const [id, c] of stored) byContent.set(c, [...(byContent.get(c) ?? []), id]);
  for (const [c, ids] of byContent)
    if (ids.length > 1) violations.push(`content "${c}" stored ${ids.length} times (ids ${ids.join(", ")})`);

  // Not a violation (the client was not told it succeeded), but a client
  // that retries such a send posts the message twice.
  const storedContents = new Set(stored.values());
  const unackedStored = unacked.filter((u) => storedContents.has(u.content));

  // 2. Settings: the stored name is the last acknowledged one or a later attempt.
  let settingsFound = 0;
  for (const [wi, w] of writers.entries()) {
    const r = await makeApi(baseUrl, w)("GET", "/users/me");
    const m = /^writer\d+ n(\d+)$/.exec(String(r.body.full_name));
    const seen = m ? Number(m[1]) : 0;
    if (r.status !== 200 || seen < w.lastAckedName || seen > w.attemptedNames)
      violations.push(
        `writer${wi}: full_name "${r.body.full_name}", last acknowledged n${w.lastAckedName}, last attempted n${w.attemptedNames}`,
      );
    else settingsFound++;
  }

  // 3. Events: queues polled without re-registration lost and duplicated nothing.
  let expectedEvents = 0;
  let receivedEvents = 0;
  let duplicated = 0;
  let checkedQueues = 0;
  for (const p of pollers) {
    for (const seg of p.segments) {
      receivedEvents += seg.messageIds.length;
      const dupE = seg.eventIds.length - new Set(seg.eventIds).size;
      const dupM = seg.messageIds.length - new Set(seg.messageIds).size;
      if (dupE || dupM) {
        duplicated += Math.max(dupE, dupM);
        violations.push(`${p.email} queue ${seg.queueId}: ${dupE} event ids and ${dupM} message ids twice`);
      }
      if (seg.lost) continue;
      checkedQueues++;
      const want = expectedFor(seg);
      expectedEvents += want.length;
      const got = new Set(seg.messageIds);
      const lost = want.filter((id) => !got.has(id));
      if (lost.length)
        violations.push(
          `${p.email} queue ${seg.queueId}: ${lost.length} of ${want.length} acknowledged messages never arrived (e.g. ${lost.slice(0, 5).join(", ")})`,
        );
    }
  }

  // 4. Fencing: journals are contiguous; count the refused stale writes.
  const rc = createClient({ url: redis.url });
  await rc.connect();
  let streams = 0;
  let entries = 0;
  try {
    for await (const key of rc.scanIterator({ MATCH: "{s*}:j:*", COUNT: 500 })) {
      streams++;
      const m = /^(\{s\d+\}):j:(.*)$/.exec(key);
      if (!m) continue;
      const ids = (await rc.xRange(key, "-", "+")).map((e) => e.id);
      entries += ids.length;
      const seqs = ids.map((id) => Number(id.split("-")[1]));
      for (let i = 1; i < seqs.length; i++)
        if (seqs[i] !== seqs[i - 1]! + 1) {
          violations.push(`journal ${key}: seq ${seqs[i - 1]} followed by ${seqs[i]}`);
          break;
        }
      for (const id of ids)
        if (!id.startsWith("0-")) violations.push(`journal ${key}: entry id ${id} is not 0-<seq>`);
      const jlast = Number(await rc.hGet(`${m[1]}:jlast`, m[2]!));
      if (seqs.length && seqs[seqs.length - 1] !== jlast)
        violations.push(`journal ${key}: last entry ${seqs[seqs.length - 1]}, jlast ${jlast}`);
    }
  } finally {
    await rc.quit().catch(() => {});
  }
  const fenced = nodes.reduce((s, n) => s + n.fencedLines.length, 0);
  const lostLeases = nodes.reduce((s, n) => s + n.lostLeaseLines.length, 0);

  // ------------------------------------------------------------ report
  const sec = (t: number) => ((t - t0) / 1000).toFixed(1);
  const fmt = (m: Map<string, number>) => [...m].map(([k, v]) => `${k}: ${v}`).join(", ") || "none";
  console.log(
    [
      `chaos: seed ${SEED}, ${SECONDS} s of faults, 3 nodes + 1 gateway, nats + redis (AOF, appendfsync always)`,
      `faults injected: ${fmt(counts.faults)} (total ${[...counts.faults.values()].reduce((a, b) => a + b, 0)})`,
      `writes attempted: ${counts.writesAttempted}; acknowledged: ${counts.messagesAcked} messages + ${counts.settingsAcked} settings`,
      `found: ${found}/${sent.length} messages, ${settingsFound}/${writers.length} writers' settings; messages stored in the channel: ${stored.size}`,
      `requests failed by status: ${fmt(counts.failedByStatus)}`,
      `failed sends that were stored anyway: ${unackedStored.length} of ${unacked.length}` +
        (unackedStored.length
          ? ` (${unackedStored.map((u) => `status ${u.status} at +${sec(u.startedAt)} s`).join(", ")})`
          : ""),
      `polls failed: ${fmt(counts.pollErrors)}; queues lost (BAD_EVENT_QUEUE_ID, re-registered): ${counts.lostQueues}`,
      `events: ${checkedQueues} queues checked, expected ${expectedEvents}, received ${receivedEvents}, duplicated ${duplicated}`,
      `fencing: ${fenced} stale writes refused ("write fenced"), ${lostLeases} "lost lease" lines; ${streams} journals, ${entries} entries, contiguous unless listed below`,
      `faults: ${timeline.map((f) => `+${sec(f.at)} s ${f.what}`).join("; ")}`,
      `node lives: ${nodes.map((n) => `${n.id} ${n.lives}`).join(", ")}`,
      ...[...errorLines.values()]
        .slice(0, 15)
        .map((e) => `  log ${e.who} at +${sec(e.at)} s (${e.n}×): ${e.line}`),
      ...[...samples].flatMap(([k, list]) => list.map((x) => `  e.g. ${k} at +${sec(x.at)} s: ${x.text}`)),
      violations.length ? `VIOLATIONS (${violations.length}):` : "no violations",
      ...violations.slice(0, 50).map((v) => `  - ${v}`),
    ].join("\n"),
  );
  if (fenced) for (const l of nodes.flatMap((n) => n.fencedLines).slice(0, 5)) log(`log: ${l}`);
  process.exitCode = violations.length ? 1 : 0;
}

try {
  await main();
} catch (err) {
  console.error("chaos run failed:", err);
  process.exitCode = 1;
} finally {
  await stopAll();
}
