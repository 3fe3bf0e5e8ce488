// Probe of the message store layer (cluster/storage): does reading a
// conversation's newest page cost the same whatever the conversation's size?
// Seeds one index with STORE_PROBE_IDS ids (default 1,000,000) and a record
// per id, and another with 1,000, through ordinary batched appends (as a
// conversation actor will write them), then times "newest 100 ids + their
// 100 records" (rangeIndex reverse + one getRecords) on each, and the same
// page 100 before an anchor in the middle. Prints one line per figure and the
// big/small ratio, for LMDB (temp dir) and Redis (a redis-server started
// here, AOF everysec as deployed). Not part of `npm run bench`.
//
//   npx tsx bench/store-probe.ts
//
// Env: STORE_PROBE_IDS (ids in the big index), STORE_PROBE_ROUNDS (timed
// reads per figure, default 2,000), STORE_PROBE_BACKENDS ("lmdb,redis").
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createLmdbStore, createRedisStore, type RecordWrite, type Store } from "../cluster/storage/index.ts";
import { requireBinaries, startRedis, type Service } from "../test/support/services.ts";
import { percentile } from "./table.ts";

const BIG = Number(process.env.STORE_PROBE_IDS ?? 1_000_000);
const SMALL = 1_000;
const ROUNDS = Number(process.env.STORE_PROBE_ROUNDS ?? 2_000);
const BACKENDS = (process.env.STORE_PROBE_BACKENDS ?? "lmdb,redis").split(",").map((s) => s.trim());
const PAGE = 100;
/** Ids (and records) per append while seeding. */
const BATCH = 5_000;
const SHARD = 1;
const ACTOR = "channel.1.probe";

// A stored message is some hundreds of bytes (content, rendered HTML, sender, topic, flags).
const RECORD = new Uint8Array(300).fill(0x61);
const recordKey = (index: string, id: number) => `1:msg:${index}:${id}`;

interface Figure {
  medianUs: number;
  p99Us: number;
}

async function seed(
  store: Store,
  epoch: number,
  index: string,
  n: number,
  seq: { next: number },
): Promise<void> {
  for (let first = 1; first <= n; first += BATCH) {
    const ids = Array.from({ length: Math.min(BATCH, n - first + 1) }, (_, i) => first + i);
    const writes: RecordWrite[] = [{ op: "index", index, add: ids }];
    for (const id of ids) writes.push({ op: "put", key: recordKey(index, id), value: RECORD });
    await store.append(SHARD, epoch, ACTOR, seq.next++, [new Uint8Array([1])], writes);
  }
}

/** One page: PAGE ids of `index` (newest, or just before `before`) and their records. */
async function page(store: Store, index: string, before?: number): Promise<void> {
  const ids = await store.rangeIndex(SHARD, index, {
    limit: PAGE,
    reverse: true,
    ...(before ? { before } : {}),
  });
  const recs = await store.getRecords(
    SHARD,
    ids.map((id) => recordKey(index, id)),
  );
  if (ids.length !== PAGE || recs.some((r) => r === null)) throw new Error(`short page on ${index}`);
}

async function time(fn: () => Promise<void>): Promise<Figure> {
  for (let i = 0; i < Math.min(200, ROUNDS); i++) await fn(); // warm caches and connections
  const us: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    await fn();
    us.push((performance.now() - t) * 1000);
  }
  return { medianUs: percentile(us, 50), p99Us: percentile(us, 99) };
}

async function probe(name: string, store: Store): Promise<void> {
  const epoch = await store.acquireLease(SHARD, "probe", 3_600_000);
  if (epoch === null) throw new Error("no lease");
  const seq = { next: 1 };
  const t0 = performance.now();
  await seed(store, epoch, "big", BIG, seq);
  const seedS = (performance.now() - t0) / 1000;
  await seed(store, epoch, "small", SMALL, seq);
  console.log(
    `${name}: seeded ${BIG.toLocaleString("en")} ids + records in ${seedS.toFixed(1)} s ` +
      `(${Math.round(BIG / seedS).toLocaleString("en")}/s), index sizes ${await store.indexSize(SHARD, "big")} / ${await store.indexSize(SHARD, "small")}`,
  );
  const fmt = (f: Figure) => `median ${f.medianUs.toFixed(0)} µs, p99 ${f.p99Us.toFixed(0)} µs`;
  const rows: Array<[string, () => Promise<void>, () => Promise<void>]> = [
    ["newest 100 + records", () => page(store, "big"), () => page(store, "small")],
    [
      "100 before a middle anchor + records",
      () => page(store, "big", Math.floor(BIG / 2)),
      () => page(store, "small", SMALL / 2 + PAGE),
    ],
  ];
  for (const [what, big, small] of rows) {
    const b = await time(big);
    const s = await time(small);
    console.log(
      `${name}: ${what}: at ${BIG.toLocaleString("en")} ids ${fmt(b)}; at ${SMALL.toLocaleString("en")} ids ${fmt(s)}; ` +
        `ratio (median) ${(b.medianUs / s.medianUs).toFixed(2)}`,
    );
  }
}

for (const backend of BACKENDS) {
  if (backend === "lmdb") {
    const dir = mkdtempSync(join(tmpdir(), "store-probe-"));
    const store = createLmdbStore(dir, { exclusive: true });
    try {
      await probe("lmdb", store);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  } else if (backend === "redis") {
    const missing = requireBinaries("redis-server");
    if (missing) {
      console.log(`redis: skipped (${missing})`);
      continue;
    }
    const redis: Service = await startRedis();
    const store = await createRedisStore(redis.url);
    try {
      await probe("redis", store);
    } finally {
      await store.close();
      await redis.stop();
    }
  } else {
    throw new Error(`STORE_PROBE_BACKENDS: unknown backend ${backend}`);
  }
}
