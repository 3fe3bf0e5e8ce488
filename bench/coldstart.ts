// The cold-start figure: time from spawning the embedded server (`node
// dist/server.js`, the compiled build `npm start` runs) to its first
// successful API answer, on an empty data dir (it creates the organization
// first) and on a data dir with some state (users, a channel, messages), as
// a ratio to a bare Fastify process (bench/baseline.ts, compiled to plain
// JavaScript the same way) spawned to its first answer in the same run.
// Medians of BENCH_COLDSTART_RUNS (default 3). The build runs once, before
// the clock: `npm start` builds incrementally, then starts this process.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { freePort } from "../test/support/services.ts";
import { api, channelWith, createBots, ownerAuth, pool, type Auth } from "./client.ts";
import { ACTOR_HOST_NODE_FLAGS, ROOT } from "./procs.ts";
import { OWNER } from "./servers.ts";
import { percentile, type BenchContext, type BenchRow } from "./table.ts";

const RUNS = Number(process.env.BENCH_COLDSTART_RUNS ?? 3);
const MESSAGES = Number(process.env.BENCH_COLDSTART_MESSAGES ?? 300);
const BOTS = 20;

interface Started {
  child: ChildProcess;
  url: string;
  ms: number;
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const t = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** As `npm start` runs it. */
const SERVER = [...ACTOR_HOST_NODE_FLAGS, "dist/server.js"];
const BASELINE = ["dist/bench/baseline.js"];

/** The production build, and bench/baseline.ts compiled beside it with the same settings. */
function build(): void {
  execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  const flags = ["--module", "nodenext", "--target", "es2023", "--skipLibCheck", "--sourceMap"];
  execFileSync(process.execPath, [tsc, ...flags, "--outDir", "dist/bench", "bench/baseline.ts"], {
    cwd: ROOT,
    stdio: "inherit",
  });
}

/** Spawn `node <argv>` and poll `path` every 10 ms until it answers 200; the time from spawn to that answer. */
async function spawnToFirstAnswer(
  argv: string[],
  env: Record<string, string>,
  path: string,
  auth: Auth | null = null,
  timeoutMs = 120_000,
): Promise<Started> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let out = "";
  const t0 = performance.now();
  const entry = argv.at(-1)!;
  const child = spawn(process.execPath, argv, {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const headers: Record<string, string> = auth ? { authorization: auth } : {};
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${entry} exited before answering:\n${out}`);
    if (performance.now() - t0 > timeoutMs) {
      await stop(child);
      throw new Error(`${entry} did not answer ${path} in ${timeoutMs} ms:\n${out}`);
    }
    const ok = await fetch(`${url}${path}`, { headers, signal: AbortSignal.timeout(5000) })
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) return { child, url, ms: performance.now() - t0 };
    await new Promise((r) => setTimeout(r, 10));
  }
}

const serverEnv = (dir: string) => ({
  DATA_DIR: dir,
  OWNER_EMAIL: OWNER.email,
  OWNER_PASSWORD: OWNER.password,
  REALM_NAME: "Bench",
  RATE_LIMIT_PER_MINUTE: "0",
});

export async function run(ctx: BenchContext): Promise<BenchRow[]> {
  const dirs: string[] = [];
  const fresh = () => {
    const d = mkdtempSync(join(tmpdir(), "bench-coldstart-"));
    dirs.push(d);
    return d;
  };
  build();
  try {
    const base: number[] = [];
    const empty: number[] = [];
    const stateful: number[] = [];
    const statefulAuth: number[] = [];

    // A data dir with some state, made by one server life.
    const stateDir = fresh();
    {
      const s = await spawnToFirstAnswer(SERVER, serverEnv(stateDir), "/api/v1/server_settings");
      try {
        const owner = await ownerAuth(s.url);
        const bots = await createBots(s.url, owner.auth, BOTS, "cold");
        await channelWith(s.url, owner.auth, "coldstart", [owner.userId, ...bots.map((b) => b.userId)]);
        await pool(
          Array.from({ length: MESSAGES }, (_, i) => i),
          8,
          (i) =>
            api(s.url, bots[i % bots.length]!.auth, "POST", "/messages", {
              type: "stream",
              to: "coldstart",
              topic: `topic ${i % 10}`,
              content: `cold start message ${i}`,
            }),
        );
      } finally {
        await stop(s.child);
      }
    }
    let ownerKey: Auth | null = null;

    for (let i = 0; i < RUNS; i++) {
      ctx.log(`coldstart run ${i + 1}/${RUNS}`);
      const b = await spawnToFirstAnswer(BASELINE, {}, "/api/v1/ping");
      base.push(b.ms);
      await stop(b.child);

      const e = await spawnToFirstAnswer(SERVER, serverEnv(fresh()), "/api/v1/server_settings");
      empty.push(e.ms);
      await stop(e.child);

      const s = await spawnToFirstAnswer(SERVER, serverEnv(stateDir), "/api/v1/server_settings");
      stateful.push(s.ms);
      ownerKey ??= (await ownerAuth(s.url)).auth;
      await stop(s.child);

      // The first authenticated read of the history: activates the user,
      // the channel and the message index from the store.
      const narrow = encodeURIComponent(JSON.stringify([{ operator: "channel", operand: "coldstart" }]));
      const a = await spawnToFirstAnswer(
        SERVER,
        serverEnv(stateDir),
        `/api/v1/messages?anchor=newest&num_before=50&num_after=0&narrow=${narrow}`,
        ownerKey,
      );
      statefulAuth.push(a.ms);
      await stop(a.child);
    }

    const b = percentile(base, 50);
    const row = (name: string, samples: number[]): BenchRow => {
      const v = percentile(samples, 50);
      return {
        section: "coldstart",
        name,
        value: v,
        unit: "ms",
        ratio: v / b,
        note: `median of ${samples.length}: ${samples.map((s) => Math.round(s)).join(", ")} ms`,
      };
    };
    return [
      row("bare Fastify (compiled): spawn to first GET answered", base),
      row("embedded, empty data dir: spawn to first GET /server_settings", empty),
      row(
        `embedded, ${MESSAGES} messages and ${BOTS + 1} users: spawn to first GET /server_settings`,
        stateful,
      ),
      row(`embedded, same data dir: spawn to first GET /messages (newest 50, authenticated)`, statefulAuth),
    ];
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
