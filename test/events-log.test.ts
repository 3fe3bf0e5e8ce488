// The queue shards' event logs (cluster/event-log.ts): a batch of events is
// stored once per queue shard and the queue actors apply it without a
// journal write of their own; a poll writes nothing in the common case; a
// node that takes the shard over after a crash rebuilds every queue with the
// same event ids, heartbeats included, in order; the log is trimmed once the
// queue actors' snapshots cover it; and queues journaled before the log
// (events in `delivered` facts) still load. One node on LMDB, in process.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { behaviors as allBehaviors, queueRef } from "../actors/index.ts";
import type { ActorRef, Behavior, Obj } from "../actors/types.ts";
import { actorId, shardOf } from "../cluster/addressing.ts";
import { attachDomain } from "../cluster/compose/domain.ts";
import { eventLogId } from "../cluster/event-log.ts";
import type { EventRouter } from "../cluster/event-router.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore, type AppendItem, type Store } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { encodeFact } from "../proto/codec.ts";
import { countingState, type Counter } from "./support/counter.ts";
import { registration } from "./support/fixtures.ts";
import { until } from "./support/ops.ts";
import { overriding } from "./support/store-wrap.ts";

const SHARDS = 2;
const REALM = 1;
const EMITTER: ActorRef = { kind: "user", realm: REALM, key: "emitter" };

/** An actor that emits one `test` event per call to the users it is given (journaled, so through the outbox). */
const emitter: Behavior<Counter> = {
  kind: "user",
  ...countingState,
  handlers: {
    emit: (s, args) => ({
      facts: [{ n: 1 }],
      reply: s.n + 1,
      events: [{ event: { type: "test", n: args.n as number }, userIds: args.users as number[] }],
    }),
  },
};

/** Store writes by actor id: appended entries. */
const written = new Map<string, number>();
function counting(store: Store): Store {
  const note = (items: readonly AppendItem[]) => {
    for (const it of items) written.set(it.actor, (written.get(it.actor) ?? 0) + it.entries.length);
  };
  return overriding(store, {
    append: (...a) => {
      note([{ actor: a[2], firstSeq: a[3], entries: a[4] }]);
      return store.append(...a);
    },
    appendMany: (...a) => {
      note(a[2]);
      return store.appendMany(...a);
    },
  });
}
const queueWrites = () =>
  [...written].filter(([id]) => /^queue\.1\./.test(id)).reduce((n, [, c]) => n + c, 0);
const logWrites = () => [...written].filter(([id]) => id.includes("~events.")).reduce((n, [, c]) => n + c, 0);

let dir: string;
let raw: Store;
let store: Store;
let nodes = 0;
/** Each node's event router (the domain's wiring, cluster/compose/domain.ts). */
const routers = new Map<NodeRuntime, EventRouter>();
const routerOf = (node: NodeRuntime): EventRouter => routers.get(node)!;

/** A node serving every shard; the previous one (if any) was "killed": its leases simply lapse. */
async function startNode(o: { idleMs?: number } = {}): Promise<NodeRuntime> {
  const t = createInProcessTransport();
  const node = new NodeRuntime({
    nodeId: `n${++nodes}`,
    shards: SHARDS,
    store,
    behaviors: { queue: allBehaviors.queue, user: emitter as Behavior<unknown> },
    outbound: t.client,
    bus: t.bus,
    leaseTtlMs: 400,
    renewMs: 100,
    acquireRetryMs: 50,
    ...o,
  });
  routers.set(node, attachDomain(node).router);
  t.serve((req) => node.handle(req));
  node.start();
  node.setDesired(Array.from({ length: SHARDS }, (_, i) => i));
  assert.ok(await node.ready(10_000), "the node serves every shard");
  return node;
}

/** kill -9: the node stops renewing and running anything; nothing is snapshotted or released. */
async function kill(node: NodeRuntime): Promise<void> {
  await node.stop(false);
  for (let s = 0; s < SHARDS; s++) routerOf(node).forgetShard(s);
}

type Polled = { events: (Obj & { id: number })[]; queue_id?: string };

async function register(node: NodeRuntime, user: number): Promise<string> {
  const r = (await node.call(queueRef(REALM, user), "register", {})) as { queue_id: string };
  return r.queue_id;
}

function poll(node: NodeRuntime, user: number, queueId: string, last: number, dontBlock = true) {
  return node.call(queueRef(REALM, user), "poll", {
    queueId,
    lastEventId: last,
    dontBlock,
  }) as Promise<Polled>;
}

async function emit(node: NodeRuntime, n: number, users: number[]): Promise<void> {
  await node.call(EMITTER, "emit", { n, users });
}

/** Wait until the user's queue holds an event with this `n`. */
async function arrived(node: NodeRuntime, user: number, queueId: string, last: number, n: number) {
  await until(`event ${n} for ${user}`, async () =>
    (await poll(node, user, queueId, last)).events.some((e) => e.n === n),
  );
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), "events-log-"));
  raw = createLmdbStore(dir);
  store = counting(raw);
});
after(async () => {
  await raw.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("event log", () => {
  const users = Array.from({ length: 12 }, (_, i) => 100 + i);
  const queues = new Map<number, string>();
  /** Each user's client: the newest id it acknowledged, and event n -> id as first seen. */
  const last = new Map<number, number>();
  const ids = new Map<number, Map<number, number>>();
  let node: NodeRuntime;

  const read = async (user: number, since = last.get(user)!) => {
    const r = await poll(node, user, queues.get(user)!, since);
    const seen = ids.get(user)!;
    for (const e of r.events) {
      if (e.type !== "test") continue;
      const n = e.n as number;
      if (seen.has(n)) assert.equal(seen.get(n), e.id, `user ${user}: event ${n} kept its id`);
      else seen.set(n, e.id);
    }
    return r.events;
  };

  test("event log - a batch is stored once per shard; deliveries and polls write nothing per user", async () => {
    node = await startNode();
    for (const u of users) {
      queues.set(u, await register(node, u));
      last.set(u, -1);
      ids.set(u, new Map());
    }
    const shardsUsed = new Set(users.map((u) => shardOf(queueRef(REALM, u), SHARDS))).size;
    written.clear();
    for (let n = 1; n <= 5; n++) await emit(node, n, users);
    for (const u of users) await arrived(node, u, queues.get(u)!, -1, 5);
    assert.equal(queueWrites(), 0, "no queue actor journaled a delivery");
    assert.ok(
      logWrites() <= 5 * shardsUsed,
      `${logWrites()} log entries for 5 batches on ${shardsUsed} shards`,
    );
    assert.ok(logWrites() >= 5, "every batch is in a log");
    // Each client reads and acknowledges: no journal write either.
    written.clear();
    for (const u of users) {
      const events = await read(u);
      assert.deepEqual(
        events.map((e) => [e.id, e.n]),
        [1, 2, 3, 4, 5].map((n, i) => [i, n]),
      );
      last.set(u, events[events.length - 1]!.id);
      assert.deepEqual(await read(u), []);
    }
    assert.equal(queueWrites(), 0, "polls journal nothing");
  });

  test("event log - after kill -9 the next owner has every queue: same ids, unacknowledged events, heartbeats in place", async () => {
    process.env.EVENT_QUEUE_HEARTBEAT_MS = "150";
    try {
      const [hb, ...rest] = users as [number, ...number[]];
      // A heartbeat between two events, for one user: park a poll, let the
      // heartbeat answer it, then the next event.
      await emit(node, 6, users);
      await arrived(node, hb, queues.get(hb)!, last.get(hb)!, 6);
      const six = await read(hb);
      last.set(hb, six[six.length - 1]!.id);
      const beat = await poll(node, hb, queues.get(hb)!, last.get(hb)!, false);
      assert.deepEqual(
        beat.events.map((e) => e.type),
        ["heartbeat"],
      );
      const hbId = beat.events[0]!.id;
      await emit(node, 7, users);
      for (const u of users) await arrived(node, u, queues.get(u)!, last.get(u)!, 7);
      // Half the clients read (and acknowledge) 6 and 7; the others not.
      const readers = rest.slice(0, 5);
      for (const u of readers) {
        const events = await read(u);
        last.set(u, events[events.length - 1]!.id);
      }

      await kill(node);
      node = await startNode();
      for (const u of users) {
        // The client's next poll: nothing at or below what it acknowledged, all after it, same ids.
        const events = await read(u);
        const want = readers.includes(u) ? [] : u === hb ? [7] : [6, 7];
        assert.deepEqual(
          events.filter((e) => e.type === "test").map((e) => e.n),
          want,
          `user ${u}`,
        );
        for (const e of events)
          assert.ok(e.id > last.get(u)!, `user ${u}: event ${e.id} after ${last.get(u)}`);
        if (u === hb) assert.equal(ids.get(hb)!.get(7), hbId + 1, "the heartbeat kept its place before 7");
        // Asked from the start: ids 0.. with no gap and none repeated (those
        // the acknowledgement pruned, if it was journaled, are gone).
        const all = (await poll(node, u, queues.get(u)!, -1).catch(() => null))?.events;
        if (all)
          assert.deepEqual(
            all.map((e) => e.id),
            all.map((_, i) => all[0]!.id + i),
          );
      }
      // New events continue the ids.
      await emit(node, 8, users);
      for (const u of users) {
        await arrived(node, u, queues.get(u)!, last.get(u)!, 8);
        const events = await read(u);
        const eight = events.find((e) => e.n === 8)!;
        const before = Math.max(...[...ids.get(u)!].filter(([n]) => n < 8).map(([, id]) => id));
        assert.equal(eight.id, before + 1, `user ${u}: 8 follows`);
        last.set(u, events[events.length - 1]!.id);
      }
    } finally {
      delete process.env.EVENT_QUEUE_HEARTBEAT_MS;
    }
  });

  test("event log - trimmed once the queue actors' snapshots cover it; the queues still load", async () => {
    await kill(node);
    // Queue actors passivate (and snapshot) after 300 ms without a turn.
    node = await startNode({ idleMs: 300 });
    const shard = shardOf(queueRef(REALM, users[0]!), SHARDS);
    await until("the log loaded", async () => routerOf(node).log.size(shard) !== null);
    const before = routerOf(node).log.size(shard)!;
    assert.ok(before > 0, "the log holds the entries of the crashed node's queues");
    // Every queue actor activates (polls), replays, goes idle and snapshots.
    for (const u of users) await read(u);
    await until("the queue actors passivated", async () => node.catalog.size <= 1, 10_000);
    await emit(node, 9, users);
    for (const u of users) await arrived(node, u, queues.get(u)!, last.get(u)!, 9);
    await until("the queue actors passivated again", async () => node.catalog.size <= 1, 10_000);
    // The next append trims (at most once a second): the log keeps only what follows.
    await new Promise((r) => setTimeout(r, 1100));
    await emit(node, 10, [users[0]!]);
    await until("the log trimmed", async () => routerOf(node).log.size(shard) === 1);
    const stored = await raw.readJournal(shard, eventLogId(shard), 0);
    assert.equal(stored.length, 1, "one entry left in the store");
    for (const u of users) {
      await arrived(node, u, queues.get(u)!, last.get(u)!, 9);
      const events = await read(u);
      assert.deepEqual(
        events.filter((e) => e.type === "test").map((e) => e.n),
        u === users[0] ? [9, 10] : [9],
        `user ${u}`,
      );
    }
    await kill(node);
  });
});

describe("event log - delivery", () => {
  test("event log - idle queue actors take a durable entry at once; a poll right after the send sees it", async () => {
    const node = await startNode();
    try {
      const router = routerOf(node);
      const users = Array.from({ length: 8 }, (_, i) => 300 + i);
      const queues = new Map<number, string>();
      for (const u of users) queues.set(u, await register(node, u));
      // Parked polls: their queue actors are idle when the entry is durable.
      const parked = users.map((u) => poll(node, u, queues.get(u)!, -1, false));
      await until("the polls parked", async () => node.catalog.size >= users.length);
      await new Promise((r) => setTimeout(r, 50));
      const before = router.stats.inline;
      await emit(node, 1, users);
      for (const r of await Promise.all(parked))
        assert.deepEqual(
          r.events.map((e) => [e.id, e.n]),
          [[0, 1]],
        );
      assert.ok(router.stats.inline - before >= users.length, JSON.stringify(router.stats));
      // A poll that comes after the emitter's reply, before the delivery
      // (which waits for the entry to be durable), applies the entry first.
      for (let n = 2; n <= 6; n++) {
        await emit(node, n, [users[0]!]);
        const r = await poll(node, users[0]!, queues.get(users[0]!)!, n - 2);
        assert.deepEqual(
          r.events.map((e) => [e.id, e.n]),
          [[n - 1, n]],
          `event ${n} at once`,
        );
      }
    } finally {
      await kill(node);
    }
  });
});

describe("event log - data written before it", () => {
  test("event log - a queue journaled with `delivered` facts (and an old snapshot) still loads and goes on", async () => {
    const user = 777;
    const ref = queueRef(REALM, user);
    const shard = shardOf(ref, SHARDS);
    const id = actorId(ref);
    const q = `${user}:0123456789abcdef`;
    const reg = registration();
    const now = Date.now();
    // As today's code wrote them, before the event log: an old snapshot...
    const epoch = await until("the lease", () => raw.acquireLease(shard, "old", 60_000));
    const snapshot = {
      realmId: REALM,
      userId: user,
      queues: [
        {
          id: q,
          reg,
          lastPoll: now,
          nextId: 2,
          pruned: 0,
          events: [{ id: 1, event: { type: "test", n: 1, id: 1 } }],
        },
      ],
      recentKeys: ["k1"],
    };
    await raw.saveSnapshot(shard, epoch, id, { seq: 1, data: JSON.stringify(snapshot) });
    // ...and journal entries after it: shaped events, a poll, a heartbeat.
    const facts: Obj[] = [
      { type: "delivered", key: "k2", per: { [q]: [{ type: "test", n: 2 }] } },
      { type: "polled", queueId: q, at: now, ack: 1 },
      { type: "delivered", key: null, per: { [q]: [{ type: "heartbeat" }] } },
      { type: "delivered", key: "k3", per: { [q]: [{ type: "test", n: 3 }] } },
    ];
    await raw.append(shard, epoch, id, 2, facts.map(encodeFact));
    await raw.releaseLease(shard, "old", epoch);

    const node = await startNode();
    try {
      const r = await poll(node, user, q, 1);
      assert.deepEqual(
        r.events.map((e) => [e.id, e.type, e.n ?? null]),
        [
          [2, "test", 2],
          [3, "heartbeat", null],
          [4, "test", 3],
        ],
      );
      // A retried old batch is still recognised by its key.
      await node.call(ref, "deliver", { key: "k3", events: [{ type: "test", n: 3 }] });
      // New events come through the log and continue the ids.
      await emit(node, 4, [user]);
      await arrived(node, user, q, 4, 4);
      const next = await poll(node, user, q, 4);
      assert.deepEqual(
        next.events.map((e) => [e.id, e.n]),
        [[5, 4]],
      );
      // And after another crash, the same from the old journal plus the log.
      await kill(node);
      const again = await startNode();
      try {
        const r2 = await poll(again, user, q, 1);
        assert.deepEqual(
          r2.events.map((e) => [e.id, e.type]),
          [
            [2, "test"],
            [3, "heartbeat"],
            [4, "test"],
            [5, "test"],
          ],
        );
      } finally {
        await kill(again);
      }
    } finally {
      await kill(node);
    }
  });
});
