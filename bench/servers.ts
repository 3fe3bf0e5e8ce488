// The servers a benchmark section measures: an embedded server (one
// process) or a cluster (nats-server, redis-server, two nodes, one
// gateway), each stopped by pid.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNats, startRedis, freePort, type Service } from "../test/support/services.ts";
import { startProc, type Proc } from "./procs.ts";

export const OWNER = { email: "bench-owner@example.com", password: "bench-password" };
const bootstrapEnv = { OWNER_EMAIL: OWNER.email, OWNER_PASSWORD: OWNER.password, REALM_NAME: "Bench" };

export interface Servers {
  mode: "embedded" | "cluster";
  url: string;
  /** Every HTTP endpoint: the embedded server's, or each gateway's (`url` is the first). */
  urls: string[];
  /** The process that serves HTTP (the embedded server, or the gateway). */
  http: Proc;
  stop(): Promise<void>;
}

export interface ServerOptions {
  /** Extra environment for the processes that host actors. */
  nodeEnv?: Record<string, string>;
  /** Cluster mode: how many gateways serve HTTP, as behind a load balancer (default 1). */
  gateways?: number;
  /** Extra node flags for the processes that host actors (e.g. --cpu-prof). */
  nodeArgs?: string[];
}

/**
 * BENCH_PROFILE_DIR=dir: every server process (nodes and gateways) writes
 * a V8 CPU profile there on exit; BENCH_PROFILE_INTERVAL_US sets its
 * sampling interval (V8's default is 1,000 µs, coarse for a 100 ms burst).
 */
function profileFlags(): string[] {
  const dir = process.env.BENCH_PROFILE_DIR;
  const interval = process.env.BENCH_PROFILE_INTERVAL_US;
  if (!dir) return [];
  return ["--cpu-prof", `--cpu-prof-dir=${dir}`, ...(interval ? [`--cpu-prof-interval=${interval}`] : [])];
}

function profileArgs(o: ServerOptions): string[] {
  return [...profileFlags(), ...(o.nodeArgs ?? [])];
}

export async function startEmbeddedServer(o: ServerOptions = {}): Promise<Servers> {
  const dir = mkdtempSync(join(tmpdir(), "bench-embedded-"));
  const port = await freePort();
  const p = await startProc(
    "embedded",
    "server.ts",
    // The benchmark measures throughput, not Zulip's per-user rate limit.
    {
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dir,
      RATE_LIMIT_PER_MINUTE: "0",
      ...bootstrapEnv,
      ...o.nodeEnv,
    },
    /listening on port (\d+)/,
    30_000,
    profileArgs(o),
  );
  return {
    mode: "embedded",
    url: `http://127.0.0.1:${port}`,
    urls: [`http://127.0.0.1:${port}`],
    http: p,
    async stop() {
      await p.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A gateway process on a free loopback port, with the per-user rate limit off (benchmarks measure throughput). */
export async function startGateway(env: Record<string, string>): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  const proc = await startProc(
    "gateway",
    "gateway/gateway-main.ts",
    { ...env, PORT: String(port), HOST: "127.0.0.1", RATE_LIMIT_PER_MINUTE: "0" },
    /listening on port/,
    undefined,
    profileFlags(),
  );
  return { proc, url: `http://127.0.0.1:${port}` };
}

export async function startClusterServers(o: ServerOptions = {}): Promise<Servers> {
  const services: Service[] = [];
  const procs: Proc[] = [];
  const stop = async () => {
    for (const p of procs.reverse()) await p.stop();
    for (const s of services.reverse()) await s.stop();
  };
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
          { ...common, NODE_ID: id, GRPC_PORT: String(grpc), ...o.nodeEnv },
          /node \S+ ready/,
          30_000,
          profileArgs(o),
        ),
      );
    }
    const urls: string[] = [];
    let http: Proc | undefined;
    for (let g = 0; g < Math.max(1, o.gateways ?? 1); g++) {
      const { proc, url } = await startGateway(common);
      procs.push(proc);
      urls.push(url);
      http ??= proc;
    }
    return { mode: "cluster", url: urls[0]!, urls, http: http!, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export function startServers(mode: "embedded" | "cluster", o: ServerOptions = {}): Promise<Servers> {
  return mode === "embedded" ? startEmbeddedServer(o) : startClusterServers(o);
}
