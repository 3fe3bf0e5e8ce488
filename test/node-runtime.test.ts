// The node runtime: activation from snapshot + journal, turn order,
// passivation, shard hand-off and fencing, on the real stores.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ActorRef, Behavior, Obj } from "../actors/types.ts";
import { errors } from "../actors/errors.ts";
import { shardOf } from "../cluster/addressing.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore, createRedisStore, type Store } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { requireBinaries, startRedis, type Service } from "./support/index.ts";

interface Counter {
  total: number;
  log: number[];
}

// A tiny event-sourced behaviour: `add` persists a fact, `get` reads.
const counter: Behavior<Counter> = {
  kind: "user",
  initial: () => ({ total: 0, log: [] }),
  apply(s, fact) {
    s.total += fact.n as number;
    s.log.push(fact.n as number);
    return s;
  },
  toSnapshot: (s) => JSON.stringify(s),
  fromSnapshot: (d) => JSON.parse(d) as Counter,
  handlers: {
    add: (s, args) => {
      const n = args.n as number;
      if (n < 0) throw errors.badRequest("n must not be negative");
      return { facts: [{ n }], reply: s.total + n, events: [{ event: { type: "added", n }, userIds: [1] }] };
    },
    get: (s) => ({ reply: { total: s.total, log: s.log } }),
    slow: async (s) => {
      await new Promise((r) => setTimeout(r, 30));
      return { reply: s.total };
    },
  },
};

const SHARDS = 8;
const ref = (key: string): ActorRef => ({ kind: "user", realm: 1, key });

function makeNode(
  store: Store,
  nodeId = "t",
  opts: Partial<ConstructorParameters<typeof NodeRuntime>[0]> = {},
) {
  const t = createInProcessTransport();
  const node = new NodeRuntime({
    nodeId,
    shards: SHARDS,
    store,
    behaviors: { user: counter as Behavior<unknown> },
    outbound: t.client,
    bus: t.bus,
    ...opts,
  });
  t.serve((req) => node.handle(req));
  node.start();
  return node;
}

const all = Array.from({ length: SHARDS }, (_, i) => i);

describe("node runtime - embedded store", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "node-runtime-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("turns persist facts, replay on reactivation, keep order", async () => {
    const store = createLmdbStore(dir);
    const node = makeNode(store, "t", { snapshotEvery: 5 });
    const events: unknown[] = [];
    node.onEvents((_r, evs) => events.push(...evs.map((e) => e.event)));
    node.setDesired(all);
    assert.ok(await node.ready());
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => node.call(ref("a"), "add", { n: i + 1 })),
    );
    // Turn-based: replies reflect one-at-a-time processing in arrival order.
    assert.deepEqual(results, [1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 66, 78]);
    assert.equal(events.length, 12);
    await assert.rejects(node.call(ref("a"), "add", { n: -1 }), /must not be negative/);
    await node.stop(true);
    await store.close();

    const store2 = createLmdbStore(dir);
    const node2 = makeNode(store2);
    node2.setDesired(all);
    assert.ok(await node2.ready());
    const got = (await node2.call(ref("a"), "get", {})) as Obj;
    assert.equal(got.total, 78);
    assert.deepEqual(got.log, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    await node2.stop(true);
    await store2.close();
  });

  test("idle actors are passivated and come back with their state", async () => {
    const store = createLmdbStore(dir);
    const node = makeNode(store, "t", { idleMs: 150 });
    node.setDesired(all);
    assert.ok(await node.ready());
    await node.call(ref("p"), "add", { n: 5 });
    assert.equal(node.catalog.size, 1);
    for (let i = 0; i < 40 && node.catalog.size > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(node.catalog.size, 0, "passivated");
    assert.equal(node.catalog.stats.passivations, 1);
    assert.equal(((await node.call(ref("p"), "get", {})) as Obj).total, 5);
    await node.stop(true);
    await store.close();
  });

  test("a kind's own idle time passivates it sooner than the node's default", async () => {
    const store = createLmdbStore(dir);
    const brisk: Behavior<Counter> = { ...counter, idleMs: 150 };
    const node = makeNode(store, "t", { behaviors: { user: brisk as Behavior<unknown> } });
    node.setDesired(all);
    assert.ok(await node.ready());
    await node.call(ref("k"), "add", { n: 7 });
    assert.equal(node.catalog.size, 1);
    for (let i = 0; i < 40 && node.catalog.size > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(node.catalog.size, 0, "passivated after the kind's 150 ms, not the default 5 min");
    assert.equal(((await node.call(ref("k"), "get", {})) as Obj).total, 7);
    await node.stop(true);
    await store.close();
  });

  test("a shard the node does not hold answers moved", async () => {
    const store = createLmdbStore(dir);
    const node = makeNode(store);
    const r = ref("m");
    const shard = shardOf(r, SHARDS);
    node.setDesired(all.filter((s) => s !== shard));
    assert.ok(await node.ready());
    const res = await node.handle({
      ref: r,
      shard,
      method: "get",
      args: {},
      caller: null,
      deadline: Date.now() + 1000,
    });
    assert.equal(res.ok, false);
    assert.equal(!res.ok && res.kind, "moved");
    await node.stop(true);
    await store.close();
  });
});

const skip = requireBinaries("redis-server");

describe("node runtime - redis store, two nodes", { skip }, () => {
  let redis: Service;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  test("graceful hand-off moves a shard with its state; the old owner's late write is fenced", async () => {
    const storeA = await createRedisStore(redis.url);
    const storeB = await createRedisStore(redis.url);
    const a = makeNode(storeA, "A", { leaseTtlMs: 1000, renewMs: 200 });
    const b = makeNode(storeB, "B", { leaseTtlMs: 1000, renewMs: 200 });
    const r = ref("h");
    const shard = shardOf(r, SHARDS);
    a.setDesired([shard]);
    assert.ok(await a.ready());
    b.setDesired([shard]); // B wants it too but cannot take a held lease
    await new Promise((res) => setTimeout(res, 400));
    assert.equal(b.shardEpoch(shard), null);
    assert.equal(await a.call(r, "add", { n: 7 }), 7);
    const oldEpoch = a.shardEpoch(shard)!;

    a.setDesired([]); // graceful release
    assert.ok(await b.ready(5000));
    assert.ok(b.shardEpoch(shard)! > oldEpoch, "epoch grows");
    assert.equal(await b.call(r, "add", { n: 1 }), 8);

    // A stale writer (the old epoch) is refused atomically by the store.
    await assert.rejects(
      storeA.append(shard, oldEpoch, "user.1.h", 3, [new Uint8Array([1])]),
      (e: Error) => e.name === "FencedError",
    );
    assert.equal(((await b.call(r, "get", {})) as Obj).total, 8);

    await a.stop(true);
    await b.stop(true);
    await storeA.close();
    await storeB.close();
  });
});
