// Issue 17's figure: how many active clients a server sustains under
// Zulip's published request mix. Every simulated client registers a queue
// and keeps a GET /events parked (re-polling after each answer), sends
// presence every 60 s, and in addition GET /messages, read flags, sends and
// typing at the shares below, presence being ~36% of all requests. Clients
// share users (CLIENTS_PER_USER each; users are bots, which are cheap to
// make), and users are subscribed to channels whose sizes follow a Zipf law.
// The active clients are stepped up until a p99 bound breaks; the row is the
// largest step that held, per mode. Mode "bare" runs the same steps against
// the floor (bench/baseline-load.ts: bare Fastify answering the same
// requests from in-memory Maps), so the server's figure has a ratio to the
// least any server on this machine can do. The clients live in child processes
// (bench/load-client.ts), each under the 20,000-open-files limit, and their
// CPU is reported beside the server's so a reader sees which side ran out.
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { api, basic, createBots, ownerAuth, pool, type BenchUser } from "./client.ts";
import type { Histogram, LoadClientSpec, LoadRates, LoadReport } from "./load-client.ts";
import { ROOT, startProc, type Proc } from "./procs.ts";
import { OWNER, startServers } from "./servers.ts";
import { atLeast, percentile, type BenchContext, type BenchRow } from "./table.ts";

const env = process.env;
type Mode = "bare" | "embedded" | "cluster";
const MODES = (env.BENCH_LOAD_MODES ?? "bare,embedded,cluster").split(",") as Mode[];
for (const m of MODES) {
  if (m !== "bare" && m !== "embedded" && m !== "cluster")
    throw new Error(`BENCH_LOAD_MODES: unknown mode ${m} (modes: bare, embedded, cluster)`);
}
const STEPS = (env.BENCH_LOAD_STEPS ?? "1000,2000,4000,8000,12000,15000,20000,25000,30000")
  .split(",")
  .map(Number);
const STEP_SECONDS = Number(env.BENCH_LOAD_STEP_SECONDS ?? 60);
const WARMUP_SECONDS = Number(env.BENCH_LOAD_WARMUP_SECONDS ?? 20);
const CLIENTS_PER_USER = Number(env.BENCH_LOAD_CLIENTS_PER_USER ?? 4);
const CLIENTS_PER_PROC = Number(env.BENCH_LOAD_CLIENTS_PER_PROC ?? 4000);
const CHANNELS = Number(env.BENCH_LOAD_CHANNELS ?? 50);
const ZIPF_S = Number(env.BENCH_LOAD_ZIPF_S ?? 1);
/**
 * "humans" (default) or "bots". The server records no presence for a bot
 * (a bot's ping neither comes online nor appears in anyone's presence
 * answer), so with bots the presence figure misses the realm's presence
 * map; humans cost two password hashes each to make.
 */
const USER_KIND = env.BENCH_LOAD_USERS ?? "humans";
const TARGET = 15_000;
/** BENCH_LOAD_KEEP_GOING=1: measure every step even after one broke (the graded row still stops at the first). */
const KEEP_GOING = env.BENCH_LOAD_KEEP_GOING === "1";
/** How long a load client may take to register its new clients before the step counts as broken. */
const REGISTER_MS_BASE = 120_000;
const REGISTER_MS_PER_CLIENT = 100;
const RETRIES = Number(env.BENCH_LOAD_RETRIES ?? 1);
/**
 * BENCH_LOAD_GATEWAYS (cluster mode; default 1): gateways serving HTTP, the
 * clients spread over them as by a load balancer (client i on gateway
 * i mod n, so a user's clients land on different ones).
 */
const GATEWAYS = Number(env.BENCH_LOAD_GATEWAYS ?? 1);
if (!Number.isInteger(GATEWAYS) || GATEWAYS < 1) throw new Error("BENCH_LOAD_GATEWAYS: a whole number ≥ 1");

/**
 * The request mix (shares of all requests). Presence, one per client per
 * 60 s, is ~36% of them, which fixes the per-client rate; GET /events polls
 * make up most of the rest and follow from the events a client receives.
 */
const SHARE = { presence: 0.36, messages: 0.03, flags: 0.015, send: 0.005, typing: 0.01 };
const PER_CLIENT_RPS = 1 / 60 / SHARE.presence;
const RATES: LoadRates = {
  messages: PER_CLIENT_RPS * SHARE.messages,
  flags: PER_CLIENT_RPS * SHARE.flags,
  send: PER_CLIENT_RPS * SHARE.send,
  typing: PER_CLIENT_RPS * SHARE.typing,
};

/** p99 bounds (ms) a step must hold. */
const BOUNDS: Record<string, number> = { send: 200, delivery: 500, presence: 100, messages: 300 };
/** A step with more failed requests than this share (of any kind) does not hold either. */
const MAX_FAILED = 0.01;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Deterministic pseudo-random in [0, 1) per (user, channel): membership without storing a table. */
function unit(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
}

/** Channel k (0-based) holds a 1/(k+1)^s share of the users: the first holds everyone. */
function inChannel(user: number, k: number): boolean {
  return k === 0 || unit(user, k) < 1 / Math.pow(k + 1, ZIPF_S);
}

/** `n` human members (created by the owner, API key fetched with the password). */
async function createHumans(url: string, owner: string, n: number, tag: string): Promise<BenchUser[]> {
  return pool(
    Array.from({ length: n }, (_, i) => i),
    16,
    async (i) => {
      const email = `load-${tag}-${i}@example.com`;
      const password = `load-password-${tag}-${i}`;
      const made = await api(url, owner, "POST", "/users", {
        email,
        password,
        full_name: `Load ${tag} ${i}`,
      });
      const key = await api(url, null, "POST", "/fetch_api_key", { username: email, password });
      return { userId: made.user_id as number, email, auth: basic(email, key.api_key as string) };
    },
  );
}

// ---- process figures from /proc ---------------------------------------------------

function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]); // utime + stime
  } catch {
    return NaN;
  }
}

/**
 * Nanoseconds the process's main thread (its event loop) has spent runnable
 * but waiting for a core: on a shared machine, what tells a server starved
 * of CPU from a server busy with its own work.
 */
function runWaitNs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[1]);
  } catch {
    return NaN;
  }
}

function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The share of the last minute some runnable task waited for a CPU (Linux PSI), when the kernel reports it. */
function cpuPressure(): string {
  try {
    const m = /some avg10=[\d.]+ avg60=([\d.]+)/.exec(readFileSync("/proc/pressure/cpu", "utf8"));
    return m ? `, CPU pressure ${Number(m[1]).toFixed(0)}% (tasks waiting for a core, last minute)` : "";
  } catch {
    return "";
  }
}

/** The server's processes: this process's children but those in `not` (nodes, gateway, nats, redis). */
function serverPids(not: Set<number>): { pid: number; name: string }[] {
  const out: { pid: number; name: string }[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    if (not.has(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== process.pid) continue;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      const entry = cmd.find((a) => /\.ts$/.test(a)) ?? cmd[0] ?? "?";
      // tsx's esbuild service is this process's own helper, not the server's.
      if (/esbuild/.test(entry)) continue;
      const nodeId = /(?:^|\0)NODE_ID=([^\0]*)/.exec(readFileSync(`/proc/${pid}/environ`, "utf8"));
      const name = entry.split("/").pop()!.split(" ")[0]!.replace(/\.ts$/, "");
      out.push({ pid, name: nodeId ? `${name} ${nodeId[1]}` : name });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/**
 * The machine's noise during a window: bare Fastify (bench/baseline.ts)
 * asked for a small JSON answer five times a second. When its p99 climbs
 * too, the latency came from the shared machine, not from the server.
 */
async function probeNoise(url: string, until: number): Promise<number[]> {
  const out: number[] = [];
  while (performance.now() < until) {
    const t = performance.now();
    try {
      await (await fetch(url)).text();
      out.push(performance.now() - t);
    } catch {
      // the row's own failures say what broke; this is only the machine's noise
    }
    await sleep(200);
  }
  return out;
}

// ---- load-client children ------------------------------------------------------------

class LoadProc {
  readonly child: ChildProcess;
  private out = "";
  private waiters: { re: RegExp; resolve(m: RegExpMatchArray): void; reject(e: Error): void }[] = [];

  constructor(url: string) {
    this.child = spawn(
      process.execPath,
      ["--import", "tsx", "bench/load-client.ts", url, JSON.stringify(RATES)],
      { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] },
    );
    this.child.stdout!.on("data", (d: Buffer) => {
      this.out += d.toString();
      this.check();
    });
    this.child.on("exit", (code, sig) => {
      for (const w of this.waiters.splice(0)) w.reject(new Error(`load client exited (${code ?? sig})`));
    });
  }

  private check() {
    for (const w of [...this.waiters]) {
      const m = w.re.exec(this.out);
      if (!m) continue;
      this.out = this.out.slice(m.index! + m[0].length);
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve(m);
    }
  }

  private expect(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`load client: no ${re} in ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        re,
        resolve: (m) => (clearTimeout(t), resolve(m)),
        reject: (e) => (clearTimeout(t), reject(e)),
      });
      this.check();
    });
  }

  async add(clients: LoadClientSpec[]): Promise<{ ok: number; failed: number }> {
    const done = this.expect(
      /ADDED (\d+) (\d+)\n/,
      REGISTER_MS_BASE + REGISTER_MS_PER_CLIENT * clients.length,
    );
    this.child.stdin!.write(JSON.stringify({ cmd: "add", clients }) + "\n");
    const m = await done;
    return { ok: Number(m[1]), failed: Number(m[2]) };
  }

  reset(): void {
    this.child.stdin!.write(JSON.stringify({ cmd: "reset" }) + "\n");
  }

  async report(): Promise<LoadReport> {
    const done = this.expect(/REPORT (.*)\n/, 60_000);
    this.child.stdin!.write(JSON.stringify({ cmd: "report" }) + "\n");
    return JSON.parse((await done)[1]!) as LoadReport;
  }

  stop(): Promise<void> {
    const c = this.child;
    return new Promise((resolve) => {
      if (c.exitCode !== null || c.signalCode !== null) return resolve();
      const t = setTimeout(() => c.kill("SIGKILL"), 10_000);
      c.once("exit", () => (clearTimeout(t), resolve()));
      c.kill("SIGTERM");
    });
  }
}

// ---- one step's figures ------------------------------------------------------------------

function merge(into: Map<number, number>, h: Histogram) {
  for (const [k, v] of Object.entries(h)) into.set(Number(k), (into.get(Number(k)) ?? 0) + v);
}

function p99Of(h: Map<number, number>): number {
  let total = 0;
  for (const v of h.values()) total += v;
  if (!total) return NaN;
  const want = Math.ceil(total * 0.99);
  let seen = 0;
  for (const k of [...h.keys()].sort((a, b) => a - b)) {
    seen += h.get(k)!;
    if (seen >= want) return k;
  }
  return NaN;
}

interface StepResult {
  clients: number;
  users: number;
  procs: number;
  held: boolean;
  row: BenchRow;
}

function summarize(
  mode: string,
  clients: number,
  users: number,
  reports: LoadReport[],
  server: { name: string; cpu: number; wait: number; rss: number }[],
  seconds: number,
): StepResult {
  const kinds = new Map<
    string,
    { hist: Map<number, number>; ok: number; failed: number; lastError?: string }
  >();
  for (const r of reports) {
    for (const [k, v] of Object.entries(r.kinds)) {
      const agg = kinds.get(k) ?? { hist: new Map<number, number>(), ok: 0, failed: 0 };
      merge(agg.hist, v.hist);
      agg.ok += v.ok;
      agg.failed += v.failed;
      if (v.lastError) agg.lastError = v.lastError;
      kinds.set(k, agg);
    }
  }
  const p99 = (k: string) => p99Of(kinds.get(k)?.hist ?? new Map());
  const broken: string[] = [];
  for (const [k, bound] of Object.entries(BOUNDS)) {
    const v = p99(k);
    if (!(v <= bound)) broken.push(`${k} p99 ${Number.isNaN(v) ? "no samples" : `${v} ms`} > ${bound} ms`);
  }
  let requests = 0;
  let failed = 0;
  const failures: string[] = [];
  for (const [k, v] of kinds) {
    if (k === "delivery") continue;
    requests += v.ok + v.failed;
    failed += v.failed;
    if (v.failed) failures.push(`${k}: ${v.failed} failed (last: ${v.lastError})`);
  }
  if (failed > requests * MAX_FAILED) broken.push(`${failed} of ${requests} requests failed`);
  const held = broken.length === 0;
  const count = (k: string) => (kinds.get(k)?.ok ?? 0) + (kinds.get(k)?.failed ?? 0);
  const share = (k: string) => `${k} ${((count(k) / Math.max(requests, 1)) * 100).toFixed(1)}%`;
  const serverCpu = server.reduce((a, s) => a + s.cpu, 0);
  const serverRss = server.reduce((a, s) => a + s.rss, 0);
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  const mib = (x: number) => `${(x / 2 ** 20).toFixed(0)} MiB`;
  const clientCpu = reports.map((r) => pct(r.cpuSeconds / r.wallSeconds));
  // CPU per answered request (GET /events answers included), to tell how far the machine's two cores go.
  const perRequest = (cpuSeconds: number) => `${((cpuSeconds / Math.max(requests, 1)) * 1e6).toFixed(0)} µs`;
  const clientCpuSeconds = reports.reduce((a, r) => a + r.cpuSeconds, 0);
  const reReg = reports.reduce((a, r) => a + r.reRegistered, 0);
  const note =
    `${held ? "held" : `broke: ${broken.join("; ")}`}. ` +
    `p99 send ${p99("send")} ms (${count("send")}), delivery ${p99("delivery")} ms (${count("delivery")}), ` +
    `presence ${p99("presence")} ms (${count("presence")}), GET /messages ${p99("messages")} ms (${count("messages")}), ` +
    `flags ${p99("flags")} ms (${count("flags")}), typing ${p99("typing")} ms (${count("typing")}); ` +
    `${requests} requests in ${seconds.toFixed(0)} s: ${["presence", "poll", "messages", "flags", "send", "typing"].map(share).join(", ")}; ` +
    `server CPU ${pct(serverCpu)} of a core (${server.map((s) => `${s.name} ${pct(s.cpu)}`).join(", ")}; ` +
    `${perRequest(serverCpu * seconds)} per request), ` +
    `share of the time its event loop was runnable but waiting for a core: ${server.map((s) => `${s.name} ${pct(s.wait)}`).join(", ")}; ` +
    `RSS ${mib(serverRss)}${server.length > 1 ? ` (${server.map((s) => `${s.name} ${mib(s.rss)}`).join(", ")})` : ""}; ` +
    `${reports.length} client processes, CPU ${clientCpu.join(", ")} of a core (${perRequest(clientCpuSeconds)} per request), ` +
    `event-loop delay p99 ${reports.map((r) => `${r.loopDelay.p99.toFixed(0)} ms (max ${r.loopDelay.max.toFixed(0)})`).join(", ")}` +
    (failures.length ? `; ${failures.join("; ")}` : "") +
    (reReg ? `; ${reReg} queues registered again` : "");
  return {
    clients,
    users,
    procs: reports.length,
    held,
    row: {
      section: "load",
      name: `${mode}: ${clients.toLocaleString("en-US")} active clients (${users.toLocaleString("en-US")} users)`,
      value: requests / seconds,
      unit: "req/s",
      target: "p99 send ≤ 200, delivery ≤ 500, presence ≤ 100, GET /messages ≤ 300 ms",
      pass: held,
      note,
    },
  };
}

// ---- one mode ------------------------------------------------------------------------------

/** The floor (bench/baseline-load.ts), seeded with the same owner as the real servers. */
async function startFloor(): Promise<{ url: string; urls: string[]; stop(): Promise<void> }> {
  const p = await startProc(
    "floor",
    "bench/baseline-load.ts",
    { PORT: "0", OWNER_EMAIL: OWNER.email, OWNER_PASSWORD: OWNER.password },
    /LISTENING (\d+)/,
  );
  const url = `http://127.0.0.1:${p.match[1]}`;
  return { url, urls: [url], stop: () => p.stop() };
}

interface ModeResult {
  rows: BenchRow[];
  /** The largest step that held (0: none did). */
  best: number;
  /** Whether every step held, so `best` is the steps' limit, not the mode's. */
  heldAll: boolean;
}

async function runMode(ctx: BenchContext, mode: Mode): Promise<ModeResult> {
  const rows: BenchRow[] = [];
  const srv = mode === "bare" ? await startFloor() : await startServers(mode, { gateways: GATEWAYS });
  // With several gateways the mode's rows say how many.
  const label = srv.urls.length > 1 ? `${mode}, ${srv.urls.length} gateways` : mode;
  const procs: LoadProc[] = [];
  let probe: (Proc & { match: RegExpMatchArray }) | undefined;
  let best = 0;
  let bestUsers = 0;
  let broke = false;
  try {
    const { url } = srv;
    probe = await startProc("baseline", "bench/baseline.ts", { PORT: "0" }, /LISTENING (\d+)/);
    const probeUrl = `http://127.0.0.1:${probe.match[1]}/api/v1/ping`;
    const owner = await ownerAuth(url);
    const channels: number[] = [];
    for (let k = 0; k < CHANNELS; k++) {
      const r = (await api(url, owner.auth, "POST", "/channels/create", {
        name: `load ${k}`,
        subscribers: [owner.userId],
      })) as { id: number };
      channels.push(r.id);
    }
    const users: BenchUser[] = [];
    let clientsUp = 0;
    for (const step of STEPS) {
      const t0 = Date.now();
      const wantUsers = Math.ceil(step / CLIENTS_PER_USER);
      if (wantUsers > users.length) {
        const first = users.length;
        const made =
          USER_KIND === "bots"
            ? await createBots(url, owner.auth, wantUsers - first, `l${first}`)
            : await createHumans(url, owner.auth, wantUsers - first, `l${first}`);
        users.push(...made);
        // Subscribe the new users, channel by channel, 100 principals a request.
        for (let k = 0; k < CHANNELS; k++) {
          const ids: number[] = [];
          for (let j = first; j < users.length; j++) if (inChannel(j, k)) ids.push(users[j]!.userId);
          for (let i = 0; i < ids.length; i += 100) {
            await api(url, owner.auth, "POST", "/users/me/subscriptions", {
              subscriptions: [{ name: `load ${k}` }],
              principals: ids.slice(i, i + 100),
            });
          }
        }
      }
      const seeded = Date.now();
      // Client i belongs to user floor(i / CLIENTS_PER_USER), to gateway
      // i mod G and to that gateway's process floor(i / CLIENTS_PER_PROC)
      // (process p talks to gateway p mod G).
      const G = srv.urls.length;
      const byProc = new Map<number, LoadClientSpec[]>();
      for (let i = clientsUp; i < step; i++) {
        const u = Math.floor(i / CLIENTS_PER_USER);
        const p = Math.floor(i / CLIENTS_PER_PROC) * G + (i % G);
        const list = byProc.get(p) ?? [];
        list.push({
          auth: users[u]!.auth,
          channels: channels.filter((_, k) => inChannel(u, k)),
        });
        byProc.set(p, list);
      }
      while (procs.length < Math.ceil(step / CLIENTS_PER_PROC) * G)
        procs.push(new LoadProc(srv.urls[procs.length % G]!));
      let added: { ok: number; failed: number }[];
      try {
        added = await Promise.all([...byProc].map(([p, list]) => procs[p]!.add(list)));
      } catch (err) {
        // A server too slow to register the step's clients has not held it.
        const msg = `registering ${step - clientsUp} clients did not finish: ${(err as Error).message}`;
        ctx.log(`load, ${mode}: ${step} clients: ${msg}`);
        rows.push({
          section: "load",
          name: `${label}: ${step.toLocaleString("en-US")} active clients (${users.length.toLocaleString("en-US")} users)`,
          value: NaN,
          unit: "req/s",
          target: "p99 send ≤ 200, delivery ≤ 500, presence ≤ 100, GET /messages ≤ 300 ms",
          pass: false,
          note: `broke: ${msg}; load average ${loadavg()[0]!.toFixed(1)}${cpuPressure()}`,
        });
        broke = true;
        break;
      }
      const addFailed = added.reduce((a, x) => a + x.failed, 0);
      clientsUp = step;
      ctx.log(
        `load, ${mode}: ${step} clients (${users.length} users) up; seeding ${((seeded - t0) / 1000).toFixed(0)} s, ` +
          `registering ${((Date.now() - seeded) / 1000).toFixed(0)} s${addFailed ? `, ${addFailed} registrations failed` : ""}`,
      );
      await sleep(WARMUP_SECONDS * 1000);
      const server = serverPids(new Set([probe.child.pid!, ...procs.map((p) => p.child.pid!)]));
      // Other work on a shared machine can break one window; a broken step
      // gets RETRIES more windows with the same clients, and holds only if
      // one of them does (every window's figures are in the note).
      let r: StepResult | undefined;
      const earlier: string[] = [];
      for (let w = 0; w <= RETRIES && !r?.held; w++) {
        if (r) earlier.push(`window ${w}: ${r.row.note}`);
        const cpuBefore = server.map((s) => cpuTicks(s.pid));
        const waitBefore = server.map((s) => runWaitNs(s.pid));
        for (const p of procs) p.reset();
        const t = performance.now();
        const noise = probeNoise(probeUrl, t + STEP_SECONDS * 1000);
        await sleep(STEP_SECONDS * 1000);
        const noiseP99 = percentile(await noise, 99);
        const reports = await Promise.all(procs.map((p) => p.report()));
        const seconds = (performance.now() - t) / 1000;
        const figures = server.map((s, i) => ({
          name: s.name,
          cpu: (cpuTicks(s.pid) - cpuBefore[i]!) / 100 / seconds,
          wait: (runWaitNs(s.pid) - waitBefore[i]!) / 1e9 / seconds,
          rss: rssBytes(s.pid),
        }));
        r = summarize(label, step, users.length, reports, figures, seconds);
        r.row.note += `; load average ${loadavg()[0]!.toFixed(1)}${cpuPressure()}, bare Fastify GET p99 ${noiseP99.toFixed(0)} ms meanwhile`;
        ctx.log(`load, ${mode}: ${r.row.name}, window ${w + 1}: ${r.row.note}`);
      }
      if (earlier.length)
        r!.row.note += ` (window ${earlier.length + 1} of ${earlier.length + 1}; ${earlier.join(" | ")})`;
      if (addFailed) r!.row.note += `; ${addFailed} clients failed to register and were left out`;
      rows.push(r!.row);
      if (!r!.held) broke = true;
      if (broke && !KEEP_GOING) break;
      if (!broke) {
        best = step;
        bestUsers = users.length;
      }
    }
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await probe?.stop();
    await srv.stop();
  }
  const gateways = srv.urls.length > 1 ? `${srv.urls.length} gateways` : "1 gateway";
  const what = { bare: " (the floor: bare Fastify, Maps)", embedded: "", cluster: ` (2 nodes, ${gateways})` }[
    mode
  ];
  rows.push({
    section: "load",
    name: `largest sustained active clients, ${mode}${what}`,
    value: best,
    unit: "clients",
    ratio: best / TARGET,
    // The floor is what this machine allows, not a server of ours: it has no grade.
    ...(mode === "bare"
      ? { target: `(${TARGET.toLocaleString("en-US")}: not graded)`, pass: null }
      : atLeast(best, TARGET, (n) => n.toLocaleString("en-US"))),
    note:
      `ratio is to the ${TARGET.toLocaleString("en-US")}-client target; ${bestUsers} users (${USER_KIND}), ${CLIENTS_PER_USER} clients each; ` +
      `steps of ${STEP_SECONDS} s after ${WARMUP_SECONDS} s of warm-up; ` +
      `${CHANNELS} channels with Zipf sizes (s = ${ZIPF_S}: channel k holds 1/k of the users); ` +
      `${(PER_CLIENT_RPS * 60).toFixed(2)} requests per client per minute in all, GET /events the remainder of ` +
      `presence 1, GET /messages ${(RATES.messages * 60).toFixed(3)}, flags ${(RATES.flags * 60).toFixed(3)}, ` +
      `sends ${(RATES.send * 60).toFixed(4)}, typing ${(RATES.typing * 60).toFixed(3)}` +
      (!broke
        ? `; every step held, so this is the steps' limit, not the ${mode === "bare" ? "floor's" : "server's"}`
        : ""),
  });
  return { rows, best, heldAll: !broke };
}

/**
 * The server's largest sustained client count over the floor's, measured in
 * the same run: the share of what this machine allows that the server's own
 * machinery leaves.
 */
function floorRatioRow(mode: Mode, server: ModeResult, floor: ModeResult): BenchRow {
  const row: BenchRow = {
    section: "load",
    name: `largest sustained active clients, ${mode}, ratio to the floor's (${floor.best.toLocaleString("en-US")})`,
    value: server.best,
    unit: "clients",
    ratio: floor.best > 0 ? server.best / floor.best : null,
  };
  const caveats: string[] = [];
  if (floor.best === 0) caveats.push("the floor held no step: no ratio");
  if (floor.heldAll)
    caveats.push("the floor held every step, so its figure is the steps' limit and the ratio an upper bound");
  if (server.heldAll && server.best > 0)
    caveats.push(`${mode} held every step, so its figure is the steps' limit and the ratio a lower bound`);
  if (caveats.length) row.note = caveats.join("; ");
  return row;
}

export async function run(ctx: BenchContext): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const results = new Map<Mode, ModeResult>();
  for (const m of MODES) {
    try {
      const r = await runMode(ctx, m);
      results.set(m, r);
      rows.push(...r.rows);
    } catch (err) {
      ctx.log(`load, ${m}: ${(err as Error).stack ?? String(err)}`);
      rows.push({
        section: "load",
        name: `${m} mode failed (see stderr)`,
        value: NaN,
        unit: "",
        pass: false,
      });
    }
  }
  const floor = results.get("bare");
  if (floor) {
    for (const [m, r] of results) if (m !== "bare") rows.push(floorRatioRow(m, r, floor));
  }
  return rows;
}
