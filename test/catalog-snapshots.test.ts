// Snapshots in the catalog (cluster/catalog/snapshots.ts): a snapshot that
// waited for the one before it does not start inside a batch, whose facts
// are applied to the state but not yet appended; saved at the old seq, replay
// would apply them a second time.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { ActorRef, Behavior } from "../actors/types.ts";
import { actorId, shardOf } from "../cluster/addressing.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore, type Store } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { countingState, type Counter } from "./support/counter.ts";
import { until } from "./support/ops.ts";
import { Gate, overriding } from "./support/store-wrap.ts";

const SHARDS = 2;

/** Each fact adds one: a snapshot's `n` must equal the seq it covers. */
const counter: Behavior<Counter> = {
  kind: "user",
  ...countingState,
  handlers: { bump: (s) => ({ facts: [{ up: 1 }], reply: s.n + 1 }) },
};

const appends = new Gate();
const snapshots = new Gate();
function gated(store: Store): Store {
  return overriding(store, {
    append: async (...a) => {
      await appends.pass();
      return store.append(...a);
    },
    appendMany: async (...a) => {
      await appends.pass();
      return store.appendMany(...a);
    },
    saveSnapshot: async (...a) => {
      await snapshots.pass();
      return store.saveSnapshot(...a);
    },
  });
}

const dir = mkdtempSync(join(tmpdir(), "catalog-snapshots-"));
const raw = createLmdbStore(dir);
after(async () => {
  appends.open();
  snapshots.open();
  await raw.close();
  rmSync(dir, { recursive: true, force: true });
});

test("a snapshot that waited for the previous one does not save a batch that is not appended yet", async () => {
  const t = createInProcessTransport();
  const node = new NodeRuntime({
    nodeId: "t",
    shards: SHARDS,
    store: gated(raw),
    behaviors: { user: counter as Behavior<unknown> },
    outbound: t.client,
    bus: t.bus,
    // Passivation (which snapshots) after 50 ms idle; a snapshot every 2 facts.
    idleMs: 50,
    snapshotEvery: 2,
  });
  t.serve((req) => node.handle(req));
  node.start();
  node.setDesired([0, 1]);
  assert.ok(await node.ready());
  const ref: ActorRef = { kind: "user", realm: 1, key: "5" };
  const shard = shardOf(ref, SHARDS);
  try {
    // The second fact starts a snapshot, held at the store.
    const held = snapshots.close();
    assert.equal(await node.call(ref, "bump", {}), 1);
    assert.equal(await node.call(ref, "bump", {}), 2);
    await held;
    // Idle: passivation asks for a snapshot, which waits for the held one.
    await new Promise((r) => setTimeout(r, 400));
    // A third fact, appended (the snapshot of the second still held)...
    assert.equal(await node.call(ref, "bump", {}), 3);
    // ...then a batch whose append is held: its fact is in the state, not at a seq.
    const appending = appends.close();
    const fourth = node.call(ref, "bump", {});
    await appending;
    // The held snapshot ends while the batch waits for its append.
    snapshots.open();
    await new Promise((r) => setTimeout(r, 100));
    appends.open();
    assert.equal(await fourth, 4);
    const snap = await raw.loadSnapshot(shard, actorId(ref));
    assert.ok(snap, "a snapshot was saved");
    const n = (JSON.parse(snap.data) as Counter).n;
    assert.equal(n, snap.seq, "the snapshot holds exactly its seq's facts");
    // And the actor loads as it was once passivated: four facts, the next is the fifth.
    await until("passivated", async () => !node.catalog.has(ref), 5_000);
    assert.equal(await node.call(ref, "bump", {}), 5);
  } finally {
    appends.open();
    snapshots.open();
    await node.stop(false);
  }
});
