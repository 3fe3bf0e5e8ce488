import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import v8 from "node:v8";
import { runInNewContext } from "node:vm";
import type { ActorRef, Behavior } from "../actors/types.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore } from "../cluster/storage/index.ts";
import { TimerWheel } from "../cluster/timer-wheel.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";

test("timer wheel - fires due timers in order, skips cancelled, handles far timers", () => {
  let now = 1_000_000;
  const wheel = new TimerWheel(100, 8, () => now);
  const fired: string[] = [];
  wheel.schedule(250, () => fired.push("a"));
  const b = wheel.schedule(300, () => fired.push("b"));
  wheel.schedule(5_000, () => fired.push("far")); // more than one revolution (8 slots x 100 ms)
  wheel.schedule(0, () => fired.push("now"));
  assert.equal(wheel.size, 4);
  wheel.cancel(b);
  now += 200;
  wheel.advance();
  assert.deepEqual(fired, ["now"]);
  now += 200;
  wheel.advance();
  assert.deepEqual(fired, ["now", "a"]);
  now += 4_000;
  wheel.advance();
  assert.deepEqual(fired, ["now", "a"]);
  now += 1_000;
  wheel.advance();
  assert.deepEqual(fired, ["now", "a", "far"]);
  assert.equal(wheel.size, 0);
});

test("timer wheel - a million timers cost one interval and little memory", () => {
  let now = 0;
  const wheel = new TimerWheel(100, 1024, () => now);
  let n = 0;
  for (let i = 0; i < 1_000_000; i++) wheel.schedule(600_000 + (i % 1000), () => n++);
  assert.equal(wheel.size, 1_000_000);
  now = 700_000;
  wheel.advance();
  assert.equal(n, 1_000_000);
  assert.equal(wheel.size, 0);
});

test("timer wheel - entries carry arguments instead of closures; cancel lets go of them", () => {
  let now = 5_000;
  const wheel = new TimerWheel(100, 16, () => now);
  const got: unknown[][] = [];
  const fire = (a: string, b: number, c: { x: number }) => got.push([a, b, c.x]);
  const h = wheel.schedule(300, fire, "a", 1, { x: 2 });
  const k = wheel.schedule(300, fire, "k", 3, { x: 4 });
  assert.equal(wheel.dueIn(h), 300);
  assert.equal(h.done, false);
  wheel.cancel(k);
  assert.equal(k.done, true);
  now += 400;
  wheel.advance();
  assert.deepEqual(got, [["a", 1, 2]]);
  assert.equal(h.done, true);
  assert.equal(wheel.size, 0);
});

// ---- actor timers on the node runtime (cluster/node.ts ctx.schedule) ----------------

const gc = (() => {
  v8.setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
})();

interface Ticks {
  fired: number;
}

const ticker: Behavior<Ticks> = {
  kind: "user",
  initial: () => ({ fired: 0 }),
  apply: (s) => ({ fired: s.fired + 1 }),
  toSnapshot: (s) => JSON.stringify(s),
  fromSnapshot: (d) => JSON.parse(d) as Ticks,
  handlers: {
    arm: (_s, args, ctx) => {
      ctx.schedule(String(args.key), args.ms as number, "tick", {});
      return { reply: null };
    },
    tick: () => ({ facts: [{ t: 1 }] }),
    get: (s) => ({ reply: s.fired }),
  },
};

async function tickerNode(dir: string, idleMs: number) {
  const store = createLmdbStore(dir);
  const t = createInProcessTransport();
  const node = new NodeRuntime({
    nodeId: "timers",
    shards: 4,
    store,
    behaviors: { user: ticker as Behavior<unknown> },
    outbound: t.client,
    bus: t.bus,
    idleMs,
  });
  t.serve((req) => node.handle(req));
  node.start();
  node.setDesired([0, 1, 2, 3]);
  assert.ok(await node.ready());
  return {
    node,
    stop: async () => {
      await node.stop(false);
      await store.close();
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("actor timers - a pending timer does not keep a passivated activation alive, and re-activates it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "timers-"));
  const { node, stop } = await tickerNode(dir, 100);
  try {
    const ref: ActorRef = { kind: "user", realm: 1, key: "t1" };
    await node.call(ref, "arm", { key: "k", ms: 1500 });
    const act = new WeakRef([...node.catalog.activations()][0]!);
    for (let i = 0; i < 40 && node.catalog.size > 0; i++) await sleep(50);
    assert.equal(node.catalog.size, 0, "passivated");
    // deref() keeps its target for the rest of the job: collect in a later one.
    for (let i = 0; i < 10; i++) {
      await sleep(10);
      gc();
      await sleep(10);
      if (act.deref() === undefined) break;
    }
    assert.equal(act.deref(), undefined, "the activation was garbage-collected while its timer waits");
    assert.equal(node.wheel.size, 1);
    for (let i = 0; i < 40 && (await node.call(ref, "get", {})) === 0; i++) await sleep(100);
    assert.equal(await node.call(ref, "get", {}), 1, "the timer re-activated the actor");
  } finally {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("actor timers - one pending timer per key, the earliest", async () => {
  const dir = mkdtempSync(join(tmpdir(), "timers-"));
  const { node, stop } = await tickerNode(dir, 60_000);
  try {
    const a: ActorRef = { kind: "user", realm: 1, key: "a" };
    const b: ActorRef = { kind: "user", realm: 1, key: "b" };
    // Later after earlier: no-op. Earlier after later: moves it earlier.
    await node.call(a, "arm", { key: "k", ms: 200 });
    await node.call(a, "arm", { key: "k", ms: 30_000 });
    await node.call(b, "arm", { key: "k", ms: 30_000 });
    await node.call(b, "arm", { key: "k", ms: 200 });
    await sleep(700);
    assert.equal(await node.call(a, "get", {}), 1);
    assert.equal(await node.call(b, "get", {}), 1);
    // A fired key can be armed again.
    await node.call(a, "arm", { key: "k", ms: 100 });
    await sleep(500);
    assert.equal(await node.call(a, "get", {}), 2);
  } finally {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
