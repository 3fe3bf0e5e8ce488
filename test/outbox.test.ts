// The runtime's outbox (cluster/catalog.ts): a turn's events are journaled in
// the same append as its facts, marked sent once the router acknowledges
// them, and routed again (same key) by the next activation when they never
// were. Run on both stores; the kill -9 version is in events-cluster.test.ts.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ActorContext, ActorRef, Behavior, OutEvent } from "../actors/types.ts";
import { Catalog } from "../cluster/catalog.ts";
import { createLmdbStore, createRedisStore, type Store } from "../cluster/storage/index.ts";
import { TimerWheel } from "../cluster/timer-wheel.ts";
import { until } from "./support/ops.ts";
import { requireBinaries, startRedis, type Service } from "./support/index.ts";

interface Counter {
  total: number;
}

const counter: Behavior<Counter> = {
  kind: "user",
  initial: () => ({ total: 0 }),
  apply(s, fact) {
    s.total += fact.n as number;
    return s;
  },
  toSnapshot: (s) => JSON.stringify(s),
  fromSnapshot: (d) => JSON.parse(d) as Counter,
  handlers: {
    add: (s, args) => ({
      facts: [{ n: args.n as number }],
      reply: s.total + (args.n as number),
      events: [{ event: { type: "added", n: args.n as number }, userIds: [7] }],
    }),
    ping: () => ({ reply: "pong", events: [{ event: { type: "ephemeral" }, userIds: [7] }] }),
    get: (s) => ({ reply: s.total }),
  },
};

const REF: ActorRef = { kind: "user", realm: 1, key: "outbox" };
const SHARD = 3;

interface Emitted {
  key: string | null;
  events: OutEvent[];
}

/**
 * One "owner" of the shard: a catalog whose router answers `ack`. `idleMs`:
 * passivate after that long, with the timer wheel running (it is not
 * otherwise, so nothing is passivated or given again).
 */
async function owner(store: Store, ack: (e: Emitted) => boolean, snapshotEvery = 1000, idleMs?: number) {
  const epoch = (await store.acquireLease(SHARD, "node", 60_000))!;
  const emitted: Emitted[] = [];
  const wheel = new TimerWheel(20);
  if (idleMs !== undefined) wheel.start();
  const catalog = new Catalog({
    store,
    behaviors: { user: counter as Behavior<unknown> },
    wheel,
    snapshotEvery,
    ...(idleMs === undefined ? {} : { idleMs }),
    hooks: {
      emit: (_ref, events, key) => {
        const e = { key, events };
        emitted.push(e);
        return Promise.resolve(ack(e));
      },
      notice: () => undefined,
      fenced: () => undefined,
      context: (act) => ({ self: act.ref, now: () => Date.now() }) as unknown as ActorContext,
    },
  });
  const send = (method: string, args = {}) =>
    catalog.send(REF, SHARD, epoch, method, args, null, Date.now() + 5000);
  return { emitted, send, catalog, stop: () => wheel.stop() };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

function suite(name: string, makeStore: () => Promise<Store>, skip?: string) {
  describe(`outbox - ${name}`, { skip }, () => {
    test(`outbox - ${name}: unacknowledged events are routed again, same key, by the next activation`, async () => {
      const store = await makeStore();
      // First owner: the router never acknowledges (its node "dies" before the fan-out).
      const a = await owner(store, () => false);
      assert.equal(await a.send("add", { n: 1 }), 1);
      assert.equal(await a.send("add", { n: 2 }), 3);
      a.stop();
      assert.equal(a.emitted.length, 2);
      const keys = a.emitted.map((e) => e.key);
      assert.ok(
        keys.every((k) => typeof k === "string" && k.startsWith("user.1.outbox#")),
        String(keys),
      );
      assert.notEqual(keys[0], keys[1]);

      // Second owner: on activation, both entries go out again, in order, under their keys.
      const b = await owner(store, () => true);
      assert.equal(await b.send("get"), 3);
      assert.deepEqual(
        b.emitted.map((e) => e.key),
        keys,
      );
      assert.deepEqual(
        b.emitted.map((e) => e.events[0]!.event.n),
        [1, 2],
      );
      await settle();
      // The acknowledgements are journaled with the next append.
      assert.equal(await b.send("add", { n: 4 }), 7);
      await settle();
      // Events without facts are ephemeral: no outbox, no key.
      assert.equal(await b.send("ping"), "pong");
      assert.equal(b.emitted.at(-1)!.key, null);
      b.stop();

      // Third owner: the first two are sent; only the last entry (acknowledged
      // but not yet journaled as sent) may go out again, under its own key.
      const c = await owner(store, () => true);
      assert.equal(await c.send("get"), 7);
      const again = c.emitted.map((e) => e.key);
      assert.ok(!again.includes(keys[0]!) && !again.includes(keys[1]!), String(again));
      assert.ok(again.length <= 1);
      c.stop();
      await store.close();
    });

    test(`outbox - ${name}: an entry the router gave up on is given again, same key, while its actor stays active`, async () => {
      const store = await makeStore();
      let up = false;
      // The timer wheel runs; no passivation within the test.
      const a = await owner(store, () => up, 1000, 60_000);
      let b: Awaited<ReturnType<typeof owner>> | null = null;
      try {
        assert.equal(await a.send("add", { n: 1 }), 1);
        // The router gave up on the entry (its whole retry budget, in a real node).
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(a.emitted.length, 1);
        up = true;
        // The first retry is due a second after the failure, under the same key.
        await until("the retry", async () => a.emitted.length === 2, 5000);
        const first = a.emitted[0]!.key;
        assert.equal(a.emitted[1]!.key, first);
        assert.equal(a.catalog.stats.entryRetries, 1);
        // Acknowledged now: journaled as sent with the next append.
        assert.equal(await a.send("add", { n: 2 }), 3);
        await settle();
        a.stop();
        // The next owner does not send the first entry again (the second,
        // acknowledged but not yet journaled as sent, may go out again).
        b = await owner(store, () => true);
        assert.equal(await b.send("get"), 3);
        assert.ok(!b.emitted.some((e) => e.key === first), String(b.emitted.map((e) => e.key)));
        assert.ok(b.emitted.length <= 1);
      } finally {
        a.stop();
        b?.stop();
        await store.close();
      }
    });

    test(`outbox - ${name}: pending entries survive a snapshot that drops their journal`, async () => {
      const store = await makeStore();
      const a = await owner(store, () => false, 1);
      assert.equal(await a.send("add", { n: 5 }), 5);
      assert.equal(await a.send("add", { n: 6 }), 11);
      await settle();
      a.stop();
      const b = await owner(store, (e) => e.key !== null);
      assert.equal(await b.send("get"), 11);
      assert.deepEqual(
        b.emitted.map((e) => e.events[0]!.event.n),
        [5, 6],
      );
      assert.deepEqual(
        b.emitted.map((e) => e.key),
        a.emitted.map((e) => e.key),
      );
      b.stop();
      await store.close();
    });
  });
}

let dir = "";
let redis: Service | null = null;
const noRedis = requireBinaries("redis-server");
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "outbox-"));
  if (!noRedis) redis = await startRedis();
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await redis?.stop();
});

let n = 0;
suite("lmdb", async () => createLmdbStore(join(dir, `db${++n}`)));
suite("redis", async () => createRedisStore(redis!.url, { prefix: `outbox${++n}:` }), noRedis);
