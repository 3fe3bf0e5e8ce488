// Child process of the events section (run with --expose-gc): heap bytes per
// registered idle event queue on one node. Registers queues straight
// through the node runtime (embedded transport, LMDB store), one queue per
// user as real clients do, so the figure includes each queue actor's
// activation, its state and its idle-expiry timer on the node's wheel; no
// HTTP. Prints one JSON line.
//
// Env: IDLE_QUEUES (target count, default 1,000,000), IDLE_SECONDS (time
// box for registering, default 60), IDLE_PASSIVATE=1 to also measure after
// the activations have been passivated (idleMs shortened to 2 s).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { behaviors, queueRef } from "../actors/index.ts";
import { attachDomain } from "../cluster/compose/domain.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { registration } from "../test/support/fixtures.ts";

const TARGET = Number(process.env.IDLE_QUEUES ?? 1_000_000);
const SECONDS = Number(process.env.IDLE_SECONDS ?? 60);
const PASSIVATE = process.env.IDLE_PASSIVATE === "1";
const SHARDS = 64;
const IN_FLIGHT = 512;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");

async function heap(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc!();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

const dir = mkdtempSync(join(tmpdir(), "bench-idle-"));
const store = await createLmdbStore(dir);
const transport = createInProcessTransport();
const node = new NodeRuntime({
  nodeId: "idle-bench",
  shards: SHARDS,
  store,
  behaviors,
  outbound: transport.client,
  bus: transport.bus,
  // Passivation run: activations idle for 2 s are passivated (a queue's is
  // 60 s, QUEUE_IDLE_MS); the live run keeps them for the whole measurement.
  idleMs: PASSIVATE ? 2000 : 3_600_000,
});
attachDomain(node);
transport.serve((req) => node.handle(req));
node.start();
node.setDesired(Array.from({ length: SHARDS }, (_, i) => i));
if (!(await node.ready())) throw new Error("node could not take its shards");

const args = registration({ eventTypes: ["message"] });
// Warm up code paths (and the first activation's fixed costs) before the baseline.
for (let u = 1; u <= 200; u++) await node.call(queueRef(1, 10_000_000 + u), "register", args);
const before = await heap();
const rssBefore = process.memoryUsage().rss;

const started = Date.now();
const deadline = started + SECONDS * 1000;
let next = 1;
let done = 0;
let failed = 0;
const worker = async () => {
  while (next <= TARGET && Date.now() < deadline) {
    const u = next++;
    try {
      await node.call(queueRef(1, u), "register", args);
      done++;
    } catch {
      failed++;
    }
  }
};
await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
const registerMs = Date.now() - started;
const after = await heap();
const result: Record<string, number> = {
  queues: done,
  failed,
  registerMs,
  heapBefore: before,
  heapAfter: after,
  bytesPerQueue: (after - before) / done,
  rssPerQueue: (process.memoryUsage().rss - rssBefore) / done,
  activations: node.catalog.size,
  wheelTimers: node.wheel.size,
};
if (PASSIVATE) {
  // Wait for the idle checks to passivate every activation.
  const until = Date.now() + 60_000;
  while (node.catalog.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 500));
  const passive = await heap();
  result.activationsAfterPassivation = node.catalog.size;
  result.bytesPerQueuePassivated = (passive - before) / done;
}
if (process.env.IDLE_SNAPSHOT) {
  // For diagnosis: a heap snapshot to break the bytes down by constructor.
  const { writeHeapSnapshot } = await import("node:v8");
  writeHeapSnapshot(process.env.IDLE_SNAPSHOT);
}
console.log(JSON.stringify(result));
await node.stop(false);
await store.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
