// The realm directory was the realm kind's "directory" role before it became
// its own kind (realmDirectory, Behavior.storedAs "realm"): what that role
// wrote, a snapshot tagged role "directory" and journal facts after it
// under `realm.0.directory`, is what the new kind serves, and what it
// writes goes on under the same id.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { behaviors, realmDirectoryRef } from "../actors/index.ts";
import { shardOf } from "../cluster/addressing.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore, type Store } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { decodeFact, encodeFact } from "../proto/codec.ts";

const SHARDS = 4;
/** The storage id the realm kind's directory role wrote under. */
const OLD_ID = "realm.0.directory";

async function withNode<T>(store: Store, fn: (node: NodeRuntime) => Promise<T>): Promise<T> {
  const t = createInProcessTransport();
  const node = new NodeRuntime({
    nodeId: "t",
    shards: SHARDS,
    store,
    behaviors,
    outbound: t.client,
    bus: t.bus,
  });
  t.serve((req) => node.handle(req));
  node.start();
  node.setDesired([0, 1, 2, 3]);
  assert.ok(await node.ready());
  try {
    return await fn(node);
  } finally {
    await node.stop(true);
  }
}

test("a directory written by the realm kind's directory role is served by the realmDirectory kind", async () => {
  const dir = mkdtempSync(join(tmpdir(), "realm-directory-"));
  const store = createLmdbStore(dir);
  const dirRef = realmDirectoryRef();
  const shard = shardOf(dirRef, SHARDS);
  try {
    await withNode(store, async (node) => {
      // The old role's data, as it wrote it: a snapshot with its role tag, then a fact.
      const epoch = node.shardEpoch(shard)!;
      const old = {
        role: "directory",
        realms: { "1": { realmId: 1, host: "one.example.com" } },
        hosts: { "one.example.com": 1 },
        defaultRealmId: 1,
      };
      await store.saveSnapshot(shard, epoch, OLD_ID, { seq: 1, data: JSON.stringify(old) });
      await store.append(shard, epoch, OLD_ID, 2, [
        encodeFact({ type: "realmRegistered", realmId: 2, host: "two.example.com" }),
      ]);

      assert.deepEqual(await node.call(dirRef, "listRealms", {}), [
        { realmId: 1, host: "one.example.com" },
        { realmId: 2, host: "two.example.com" },
      ]);
      assert.deepEqual(await node.call(dirRef, "resolveHost", { host: "Two.Example.com" }), { realmId: 2 });
      await assert.rejects(node.call(dirRef, "resolveHost", { host: "localhost" }), /Invalid subdomain/);
      // A new registration continues the old journal.
      assert.deepEqual(await node.call(dirRef, "registerRealm", { realmId: 3, host: "three.example.com" }), {
        realmId: 3,
      });
      const after = await store.readJournal(shard, OLD_ID, 2);
      assert.deepEqual(
        after.map((e) => decodeFact(e.data)),
        [{ type: "realmRegistered", realmId: 3, host: "three.example.com" }],
      );
    });
    // The graceful stop snapshotted the directory under the same id, in the new kind's encoding.
    const snap = await store.loadSnapshot(shard, OLD_ID);
    assert.equal(snap?.seq, 3);
    assert.deepEqual(JSON.parse(snap!.data), {
      realms: {
        "1": { realmId: 1, host: "one.example.com" },
        "2": { realmId: 2, host: "two.example.com" },
        "3": { realmId: 3, host: "three.example.com" },
      },
      hosts: { "one.example.com": 1, "two.example.com": 2, "three.example.com": 3 },
      defaultRealmId: 1,
    });
    // Which the next activation reads.
    await withNode(store, async (node) => {
      assert.deepEqual(
        (await node.call(dirRef, "listRealms", {})).map((r) => r.realmId),
        [1, 2, 3],
      );
      assert.deepEqual(await node.call(dirRef, "resolveHost", { host: "three.example.com" }), { realmId: 3 });
    });
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
