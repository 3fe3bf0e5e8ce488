// The channel directory kind was split out of the channel kind, which served
// it under the key "directory": its actor keeps the storage id
// `channel.<realm>.directory` (Behavior.storedAs), so a journal and a
// snapshot written by the old kind are served by the new one, and the two
// kinds never load each other's data (Behavior.ownsKey).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { channelDirectoryRef } from "../actors/addresses.ts";
import { channelBehavior } from "../actors/channel/index.ts";
import { channelDirectoryBehavior, type DirState } from "../actors/channel-directory/index.ts";
import type { Channel } from "../actors/channel-directory/state.ts";
import type { ActorRef, Behavior, Caller, Kind, Obj, Origin } from "../actors/types.ts";
import { actorId } from "../cluster/addressing.ts";
import { parseActorId } from "../cluster/export-filter.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { dirChannel, dirSub } from "./support/directory.ts";

const REALM = 1;

/**
 * The directory as the channel kind served it before the split: the same
 * state, facts and snapshots, under kind "channel" (a `seed` method
 * journals the facts it is given).
 */
const oldKind: Behavior<DirState> = {
  ...channelDirectoryBehavior,
  kind: "channel",
  storedAs: undefined,
  ownsKey: undefined,
  handlers: {
    ...channelDirectoryBehavior.handlers,
    seed: (_s, args) => ({ facts: args.facts as Obj[], reply: {} }),
  },
};

const channel = (id: number, name: string): Channel => dirChannel(id, name, { retentionDays: 3 });

const subscribed = (channelId: number, userId: number, from: number): Obj => ({
  type: "subscribed",
  channelId,
  userId,
  from,
  sub: dirSub({ color: "#c2c2c2" }) as unknown as Obj,
});

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
    // Graceful: the activations passivate, with a snapshot.
    await node.stop(true);
    await store.close();
  }
}

const split = {
  channel: channelBehavior as Behavior<unknown>,
  channelDirectory: channelDirectoryBehavior as Behavior<unknown>,
};

test("a directory the channel kind wrote (snapshot and journal) is served by the channel directory kind", async () => {
  const dir = mkdtempSync(join(tmpdir(), "channel-directory-"));
  const old: ActorRef = { kind: "channel", realm: REALM, key: "directory" };
  try {
    // The old kind: a snapshot (the graceful stop), then journal entries after it.
    await withNode(dir, { channel: oldKind as Behavior<unknown> }, async (node) => {
      const facts = [{ type: "channelCreated", channel: channel(5, "Design") }, subscribed(5, 10, 100)];
      await node.call(old, "seed", { facts } as unknown as Obj);
    });
    const store = createLmdbStore(dir);
    const snapshot = await store.loadSnapshot(0, actorId(old));
    await store.close();
    assert.ok(snapshot, "the old kind left a snapshot under its own storage id");
    await withNode(dir, { channel: oldKind as Behavior<unknown> }, async (node) => {
      const facts = [{ type: "channelCreated", channel: channel(6, "Ops") }, subscribed(6, 10, 200)];
      await node.call(old, "seed", { facts } as unknown as Obj);
    });

    // The new kind reads both, under the same storage id.
    await withNode(dir, split, async (node) => {
      const ref = channelDirectoryRef(REALM);
      assert.equal(parseActorId(actorId(old))?.kind, "channelDirectory");
      assert.deepEqual(await node.call(ref, "allChannelIds", {}), { ids: [5, 6] });
      // (A null-prototype dict: see actors/dict.ts.)
      assert.deepEqual(
        { ...((await node.call(ref, "lookupNames", { names: ["design", "OPS"] })) as Obj) },
        {
          design: [5, "Design"],
          ops: [6, "Ops"],
        },
      );
      assert.deepEqual(await node.call(ref, "userSpans", { stream_id: 6, userId: 10 }), {
        spans: [[200, null]],
      });
      // And writes there: the old kind's id holds what the new kind journaled.
      await node.call(ref, "listDmConversation", { key: "dm:10,11" });
      assert.deepEqual(await node.call(ref, "retentionPlan", { realmDays: 7 }), {
        channels: [
          { streamId: 5, days: 3 },
          { streamId: 6, days: 3 },
        ],
        dms: ["dm:10,11"],
      });
    });
    await withNode(dir, { channel: oldKind as Behavior<unknown> }, async (node) => {
      const plan = (await node.call(old, "retentionPlan", { realmDays: 7 })) as Obj;
      assert.deepEqual(plan.dms, ["dm:10,11"]);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('each kind serves only its own keys: a conversation keyed "directory" is refused', async () => {
  const dir = mkdtempSync(join(tmpdir(), "channel-directory-"));
  try {
    await withNode(dir, split, async (node) => {
      const ref = channelDirectoryRef(REALM);
      await node.call(ref, "listDmConversation", { key: "dm:1,2" });
      const forged: ActorRef = { kind: "channel", realm: REALM, key: "directory" };
      // Inside the cluster (an internal method, no caller) and from a gateway
      // (with args that fit the method: the node checks a gateway's args first).
      const asks: { method: string; args: Obj; caller: Caller | null; origin: Origin }[] = [
        { method: "storeStatus", args: {}, caller: null, origin: "internal" },
        {
          method: "fetch",
          args: { anchor: 0 },
          caller: { realmId: REALM, userId: 1, role: 100, isBot: false },
          origin: "external",
        },
      ];
      for (const ask of asks) {
        const res = await node.handle({
          ref: forged,
          shard: 0,
          deadline: Date.now() + 5000,
          ...ask,
        });
        assert.deepEqual(res, {
          ok: false,
          kind: "zulip",
          code: "BAD_REQUEST",
          msg: "Access denied",
          status: 403,
        });
      }
      const wrongKey: ActorRef = { kind: "channelDirectory", realm: REALM, key: "5" };
      await assert.rejects(node.call(wrongKey, "allChannelIds", {}));
      // The directory is as it was.
      assert.deepEqual(await node.call(ref, "retentionPlan", { realmDays: 7 }), {
        channels: [],
        dms: ["dm:1,2"],
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
