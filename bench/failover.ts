// The failover figure: a cluster of three nodes and a gateway; a client
// writes one user (PATCH /settings) back to back; the node holding that
// user's shard lease is killed with SIGKILL; the figure is the time from the
// kill to the first successful write sent after it. Median of
// BENCH_FAILOVER_RUNS (default 3) runs, a fresh user each time (the killed
// node is restarted between runs). Its ratio is to bare Fastify's way of
// surviving a kill -9, measured the same way in the same run: a supervisor
// that restarts the killed process at once (bench/baseline.ts on the same
// port), kill to the first successful form POST sent after it. The note
// also gives the figure against the lease TTL (3 s): a shard can only move
// once its lease has expired.
import { createClient } from "redis";
import { userRef } from "../actors/index.ts";
import { shardOf } from "../cluster/addressing.ts";
import { startCluster } from "../test/support/cluster.ts";
import { makeApi } from "../test/support/embedded.ts";
import { freePort } from "../test/support/services.ts";
import { startProc, type Proc } from "./procs.ts";
import { atMost, percentile, type BenchContext, type BenchRow } from "./table.ts";

const RUNS = Number(process.env.BENCH_FAILOVER_RUNS ?? 3);
const LEASE_TTL_MS = 3000;
const REALM = 1;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Write back to back with `write` (true: succeeded), run `kill` after 1 s,
 * and return the time from the kill to the end of the first successful
 * write sent after it (null: none within 30 s), and the writes that failed
 * after the kill.
 */
async function recovery(
  write: (n: number) => Promise<boolean>,
  kill: () => Promise<void>,
): Promise<{ ms: number | null; failed: number }> {
  let stop = false;
  let killedAt = 0;
  let recovered = 0;
  let failed = 0;
  const writer = (async () => {
    for (let n = 0; !stop; n++) {
      const startedAt = Date.now();
      if (await write(n)) {
        if (killedAt && startedAt >= killedAt) {
          recovered = Date.now();
          return;
        }
      } else {
        if (killedAt) failed++;
        await sleep(20);
      }
    }
  })();
  await sleep(1000);
  killedAt = Date.now();
  await kill();
  const deadline = Date.now() + 30_000;
  while (!recovered && Date.now() < deadline) await sleep(20);
  stop = true;
  await writer;
  return { ms: recovered ? recovered - killedAt : null, failed };
}

/** kill -9 → first successful write sent after it, for one process restarted at once on its port. */
async function bareFailover(ctx: BenchContext): Promise<number[]> {
  const port = String(await freePort());
  const start = () => startProc("baseline", "bench/baseline.ts", { PORT: port }, /LISTENING (\d+)/);
  const url = `http://127.0.0.1:${port}/api/v1/settings`;
  const write = (n: number) =>
    fetch(url, {
      method: "PATCH",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `full_name=Bare+${n}`,
      signal: AbortSignal.timeout(5000),
    }).then(
      (r) => r.status === 200,
      () => false,
    );
  const samples: number[] = [];
  let proc: Proc = await start();
  try {
    for (let i = 0; i < RUNS; i++) {
      const { ms } = await recovery(write, async () => {
        await proc.stop("SIGKILL");
        proc = await start();
      });
      if (ms === null) throw new Error(`bare Fastify run ${i}: no successful write within 30 s of the kill`);
      samples.push(ms);
      ctx.log(`failover, bare Fastify run ${i + 1}/${RUNS}: kill -9 and restart → ${ms} ms`);
    }
  } finally {
    await proc.stop();
  }
  return samples;
}

export async function run(ctx: BenchContext): Promise<BenchRow[]> {
  const bare = await bareFailover(ctx);
  const c = await startCluster({ nodes: ["n1", "n2", "n3"] });
  const redis = createClient({ url: c.redis.url });
  await redis.connect();
  try {
    const samples: number[] = [];
    let failedWrites = 0;
    for (let i = 0; i < RUNS; i++) {
      const email = `failover${i}@example.com`;
      const password = `pw-failover-${i}`;
      const made = await c.api("POST", "/users", { email, password, full_name: `Failover ${i}` });
      if (made.status !== 200) throw new Error(`POST /users: ${JSON.stringify(made.body)}`);
      const key = await c.api("POST", "/fetch_api_key", { username: email, password }, null);
      if (key.status !== 200) throw new Error(`fetch_api_key: ${JSON.stringify(key.body)}`);
      const api = makeApi(c.baseUrl, { email, apiKey: key.body.api_key as string });
      const shard = shardOf(userRef(REALM, made.body.user_id as number), c.shards);

      // Warm: the user's actor is active, and the lease holder is known.
      let holder = "";
      for (let k = 0; k < 50 && !holder; k++) {
        const r = await api("PATCH", "/settings", { full_name: `Failover ${i} warm ${k}` });
        const lease = await redis.get(`{s${shard}}:lease`);
        if (r.status === 200 && lease) holder = lease.slice(0, lease.lastIndexOf(":"));
        else await sleep(200);
      }
      const victim = c.nodes.get(holder);
      if (!victim) throw new Error(`shard ${shard} lease holder "${holder}" is not a node`);

      const { ms, failed } = await recovery(
        (n) =>
          api("PATCH", "/settings", { full_name: `Failover ${i} n${n}` }).then(
            (r) => r.status === 200,
            () => false,
          ),
        () => victim.stop("SIGKILL"),
      );
      failedWrites += failed;
      if (ms === null) throw new Error(`run ${i}: no successful write within 30 s of killing ${holder}`);
      samples.push(ms);
      ctx.log(`failover run ${i + 1}/${RUNS}: kill -9 ${holder} (shard ${shard}) → ${ms} ms`);

      // Bring the node back and let the placement settle before the next run.
      await c.startNode(holder);
      await sleep(4000);
    }
    const median = percentile(samples, 50);
    const bareMedian = percentile(bare, 50);
    return [
      {
        section: "failover",
        name: `kill -9 of a user's shard owner → first successful write (3 nodes), median`,
        value: median,
        unit: "ms",
        ratio: median / bareMedian,
        ...atMost(median, 5000, (n) => `${n} ms`),
        note:
          `runs: ${samples.join(", ")} ms; ${failedWrites} writes failed during the failovers; ` +
          `${(median / LEASE_TTL_MS).toFixed(2)}× the lease TTL (${LEASE_TTL_MS} ms), which bounds how soon a shard can move. ` +
          `Baseline: bare Fastify killed with SIGKILL and restarted at once on its port (a supervisor with no delay, ` +
          `its state gone), kill to the first successful form POST sent after it: ${bare.join(", ")} ms`,
      },
    ];
  } finally {
    await redis.quit().catch(() => {});
    await c.stop();
  }
}
