// Actor records (Decision.writes, ctx.getRecords / rangeIndex): writes ride on
// the append of the facts they come with, a turn that reads sees every write
// of the turns before it, blind turns still share one append, and a fenced
// append applies none of its writes.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { ActorRef, Behavior } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore, type Store } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";

const SHARDS = 4;
const enc = new TextEncoder();
const dec = new TextDecoder();

interface Kv {
  facts: number;
}

// `incr` reads its record and writes it back plus one; `add` only indexes a
// new id (blind); `count` reads the index.
const kv: Behavior<Kv> = {
  kind: "user",
  initial: () => ({ facts: 0 }),
  apply(s) {
    s.facts++;
    return s;
  },
  toSnapshot: (s) => JSON.stringify(s),
  fromSnapshot: (d) => JSON.parse(d) as Kv,
  blind: ["add"],
  handlers: {
    incr: async (_s, args, ctx) => {
      const key = `n:${String(args.key)}`;
      const [cur] = await ctx.getRecords!([key]);
      const n = (cur ? Number(dec.decode(cur)) : 0) + 1;
      return { facts: [{ n }], writes: [{ op: "put", key, value: enc.encode(String(n)) }], reply: n };
    },
    add: (_s, args) => ({
      facts: [{ id: args.id as number }],
      writes: [{ op: "index", index: "ids", add: [args.id as number] }],
      reply: null,
    }),
    count: async (_s, _a, ctx) => ({ reply: (await ctx.rangeIndex!("ids", { limit: 1000 })).length }),
    read: async (_s, args, ctx) => {
      const [cur] = await ctx.getRecords!([`n:${String(args.key)}`]);
      return { reply: cur ? Number(dec.decode(cur)) : 0 };
    },
  },
};

const dir = mkdtempSync(join(tmpdir(), "actor-records-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function makeNode(store: Store): NodeRuntime {
  const t = createInProcessTransport();
  const node = new NodeRuntime({
    nodeId: "t",
    shards: SHARDS,
    store,
    behaviors: { user: kv as Behavior<unknown> },
    outbound: t.client,
    bus: t.bus,
  });
  t.serve((req) => node.handle(req));
  node.start();
  return node;
}

const ref: ActorRef = { kind: "user", realm: 1, key: "7" };

test("record writes: read-your-writes across a batch, blind batching, durable with the facts", async () => {
  const store = createLmdbStore(dir);
  const node = makeNode(store);
  node.setDesired([0, 1, 2, 3]);
  assert.ok(await node.ready());
  // Thirty turns queued at once: each must read the write of the one before.
  const got = await Promise.all(Array.from({ length: 30 }, () => node.call(ref, "incr", { key: "a" })));
  assert.deepEqual(
    got.sort((x, y) => (x as number) - (y as number)),
    Array.from({ length: 30 }, (_, i) => i + 1),
  );
  // Blind turns batch together; the read after them waits for their writes.
  await Promise.all(Array.from({ length: 50 }, (_, i) => node.call(ref, "add", { id: i + 1 })));
  assert.equal(await node.call(ref, "count", {}), 50);
  await node.stop(true);
  await store.close();

  // After a restart the records are there, as durable as the facts.
  const store2 = createLmdbStore(dir);
  const node2 = makeNode(store2);
  node2.setDesired([0, 1, 2, 3]);
  assert.ok(await node2.ready());
  assert.equal(await node2.call(ref, "read", { key: "a" }), 30);
  assert.equal(await node2.call(ref, "count", {}), 50);

  // A fenced append applies none of its writes, and the activation is dropped.
  const shard = shardOf(ref, SHARDS);
  const thief = await store2.acquireLease(shard, "thief", 60_000);
  assert.equal(thief, null, "the node holds the lease");
  // Take the lease from under the node: force it by releasing at the node's epoch.
  const holder = (await store2.leaseHolder(shard))!;
  await store2.releaseLease(shard, holder.node, holder.epoch);
  assert.ok((await store2.acquireLease(shard, "thief", 60_000)) !== null);
  await assert.rejects(node2.call(ref, "incr", { key: "a" }, 2_000));
  assert.deepEqual(
    (await store2.getRecords(shard, ["n:a"])).map((b) => b && dec.decode(b)),
    ["30"],
  );
  await node2.stop(false);
  await store2.close();
});
