// `npm run bench`: every figure as a ratio to a bare Fastify form-POST
// handler measured in the same run (this machine is shared and noisy, so
// absolute numbers drift; ratios hold).
//
// Scenarios: PATCH /settings in embedded mode and in cluster mode (two
// nodes, one gateway, real nats-server and redis-server).
import autocannon from "autocannon";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { startNats, startRedis, freePort, type Service } from "../test/support/services.ts";
import { startProc, type Proc } from "./procs.ts";

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const OWNER = { email: "bench-owner@example.com", password: "bench-password" };

interface Figure {
  name: string;
  rps: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
}

async function load(
  name: string,
  url: string,
  auth: string | null,
  path = "/api/v1/settings",
): Promise<Figure> {
  // Alternate two values so every request is a real change (PATCH /settings
  // saves and events only values that differ).
  let flip = false;
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (auth) headers.authorization = auth;
  const run = (duration: number) =>
    autocannon({
      url: url + path,
      method: "PATCH",
      connections: CONNECTIONS,
      duration,
      headers,
      requests: [
        {
          setupRequest: (req) => {
            flip = !flip;
            return { ...req, body: `enter_sends=${flip}&web_font_size_px=${flip ? 15 : 16}` };
          },
        },
      ],
    });
  await run(2); // warm-up: JIT, activations, connections
  const r = await run(DURATION);
  return {
    name,
    rps: r.requests.average,
    p99: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
    total: r.requests.total,
  };
}

async function fetchKey(url: string): Promise<string> {
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${url}/api/v1/fetch_api_key`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ username: OWNER.email, password: OWNER.password }).toString(),
    });
    if (res.ok) {
      const body = (await res.json()) as { api_key: string };
      return "Basic " + Buffer.from(`${OWNER.email}:${body.api_key}`).toString("base64");
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("could not fetch an API key");
}

const bootstrapEnv = { OWNER_EMAIL: OWNER.email, OWNER_PASSWORD: OWNER.password, REALM_NAME: "Bench" };

async function baseline(): Promise<Figure> {
  const p = await startProc("baseline", "bench/baseline.ts", { PORT: "0" }, /LISTENING (\d+)/);
  try {
    return await load("bare Fastify form-POST (baseline)", `http://127.0.0.1:${p.match[1]}`, null);
  } finally {
    await p.stop();
  }
}

async function embedded(): Promise<Figure> {
  const dir = mkdtempSync(join(tmpdir(), "bench-embedded-"));
  const port = await freePort();
  const p = await startProc(
    "embedded",
    "server.ts",
    // The benchmark measures throughput, not Zulip's per-user rate limit.
    { PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dir, RATE_LIMIT_PER_MINUTE: "0", ...bootstrapEnv },
    /listening on port (\d+)/,
  );
  try {
    const url = `http://127.0.0.1:${port}`;
    return await load("PATCH /settings, embedded", url, await fetchKey(url));
  } finally {
    await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function cluster(): Promise<Figure> {
  const services: Service[] = [];
  const procs: Proc[] = [];
  try {
    const nats = await startNats();
    services.push(nats);
    const redis = await startRedis();
    services.push(redis);
    const common = { NATS_URL: nats.url, REDIS_URL: redis.url, ...bootstrapEnv };
    for (const id of ["n1", "n2"]) {
      const grpc = await freePort();
      procs.push(
        await startProc(
          id,
          "cluster/node-main.ts",
          { ...common, NODE_ID: id, GRPC_PORT: String(grpc) },
          /node \S+ ready/,
        ),
      );
    }
    const port = await freePort();
    procs.push(
      await startProc(
        "gateway",
        "gateway/gateway-main.ts",
        { ...common, PORT: String(port), RATE_LIMIT_PER_MINUTE: "0" },
        /listening on port/,
      ),
    );
    const url = `http://127.0.0.1:${port}`;
    return await load("PATCH /settings, cluster (2 nodes, 1 gateway)", url, await fetchKey(url));
  } finally {
    for (const p of procs.reverse()) await p.stop();
    for (const s of services.reverse()) await s.stop();
  }
}

function row(f: Figure, base: Figure): string {
  const ratio = (f.rps / base.rps).toFixed(3);
  const p99ratio = (f.p99 / Math.max(base.p99, 0.001)).toFixed(2);
  return `| ${f.name} | ${f.rps.toFixed(0)} | ${ratio}x | ${f.p99} ms | ${p99ratio}x | ${f.total} | ${f.errors + f.non2xx} |`;
}

const base = await baseline();
const figures = [await embedded(), await cluster()];
const targets: Record<string, number> = { embedded: 0.35, cluster: 0.15 };
console.log(
  `\nMachine: ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`,
);
console.log(`autocannon: ${CONNECTIONS} connections, ${DURATION} s per scenario after a 2 s warm-up\n`);
console.log("| scenario | req/s | ratio to baseline | p99 | p99 ratio | requests | failed |");
console.log("|---|---|---|---|---|---|---|");
console.log(row(base, base));
for (const f of figures) console.log(row(f, base));
let failed = false;
for (const f of figures) {
  const key = f.name.includes("cluster") ? "cluster" : "embedded";
  const ratio = f.rps / base.rps;
  const ok = ratio >= targets[key]!;
  if (!ok) failed = true;
  console.log(`${key}: ${ratio.toFixed(3)}x (target >= ${targets[key]}x) ${ok ? "met" : "NOT met"}`);
}
process.exitCode = failed ? 1 : 0;
