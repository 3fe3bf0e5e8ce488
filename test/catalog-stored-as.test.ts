// Behavior.storedAs: a kind split out of another reads and writes the data
// its actors wrote under the old kind's storage id.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { ActorRef, Behavior, Kind } from "../actors/types.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { countingState, type Counter } from "./support/counter.ts";

function counter(kind: Kind, storedAs?: Kind): Behavior<Counter> {
  return {
    kind,
    ...(storedAs === undefined ? {} : { storedAs }),
    ...countingState,
    handlers: { bump: (s) => ({ facts: [{ up: 1 }], reply: s.n + 1 }) },
  };
}

async function withNode<T>(
  dir: string,
  behaviors: Partial<Record<Kind, Behavior<unknown>>>,
  fn: (node: NodeRuntime) => Promise<T>,
): Promise<T> {
  const store = createLmdbStore(dir);
  const t = createInProcessTransport();
  const node = new NodeRuntime({ nodeId: "t", shards: 1, store, behaviors, outbound: t.client, bus: t.bus });
  t.serve((req) => node.handle(req));
  node.start();
  node.setDesired([0]);
  assert.ok(await node.ready());
  try {
    return await fn(node);
  } finally {
    await node.stop(false);
    await store.close();
  }
}

test("a kind stored as another continues the old kind's journal", async () => {
  const dir = mkdtempSync(join(tmpdir(), "stored-as-"));
  try {
    const old: ActorRef = { kind: "channel", realm: 1, key: "directory" };
    await withNode(dir, { channel: counter("channel") as Behavior<unknown> }, async (node) => {
      assert.equal(await node.call(old, "bump", {}), 1);
      assert.equal(await node.call(old, "bump", {}), 2);
    });
    // The same data, now served by a new kind that names the old one.
    const split: ActorRef = { kind: "group", realm: 1, key: "directory" };
    await withNode(dir, { group: counter("group", "channel") as Behavior<unknown> }, async (node) => {
      assert.equal(await node.call(split, "bump", {}), 3);
    });
    // And the old kind's id holds what the new kind wrote.
    await withNode(dir, { channel: counter("channel") as Behavior<unknown> }, async (node) => {
      assert.equal(await node.call(old, "bump", {}), 4);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
