// The uploads and webhookIndex kinds were second roles of the blob and
// webhook kinds (keys "uploads" and "~index") until issue 19 made each role
// its own kind. Their actors keep their storage ids (Behavior.storedAs):
// data written in the old kinds' formats under blob.<realm>.uploads and
// webhook.<realm>.~index is served by the new kinds, what the new kinds
// write lands under the same ids, neither kind of a pair serves the other's
// key, and an export reads each stored id back as the kind that owns it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import {
  behaviors,
  emojiBlobRef,
  uploadsDirectoryRef,
  webhookIndexRef,
  webhookRef,
} from "../actors/index.ts";
import type { ActorRef, Caller, Obj } from "../actors/types.ts";
import { EXPORT_FORMAT, EXPORT_VERSION, readExport, restoreInto, writeExport } from "../cluster/export.ts";
import { parseActorId } from "../cluster/export-filter.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { createLmdbStore, type Store } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { decodeFact, encodeFact } from "../proto/codec.ts";

const REALM = 1;
const OWNER: Caller = { realmId: REALM, userId: 9, role: 100, isBot: false };
const dir = mkdtempSync(join(tmpdir(), "split-kinds-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const P1 = `${REALM}/ab/${"x".repeat(23)}1/one.png`;
const P2 = `${REALM}/ab/${"x".repeat(23)}2/two.txt`;
function attachment(id: number, pathId: string, size: number, image?: Obj): Obj {
  return {
    id,
    pathId,
    name: pathId.slice(pathId.lastIndexOf("/") + 1),
    size,
    contentType: image ? "image/png" : "text/plain",
    ownerId: OWNER.userId,
    createTime: 1_000_000 + id,
    messages: [],
    ...(image ? { image } : {}),
  };
}

/** What the old kinds left in the store: journals, then snapshots as their toSnapshot wrote them. */
async function writeOldData(store: Store): Promise<void> {
  const epoch = await store.acquireLease(0, "old-code", 60_000);
  assert.ok(epoch !== null);
  const journal = (id: string, facts: Obj[]) => store.append(0, epoch, id, 1, facts.map(encodeFact));
  const image = { width: 10, height: 20, animated: false };
  // The uploads directory (blob kind, key "uploads"): two files, a snapshot, a claim after it.
  await journal("blob.1.uploads", [
    { type: "attachmentAdded", attachment: attachment(1, P1, 100, image) },
    { type: "attachmentAdded", attachment: attachment(2, P2, 50) },
    { type: "attachmentClaimed", pathId: P1, messageId: 7, dateSent: 5_000, conv: "3" },
  ]);
  await store.saveSnapshot(0, epoch, "blob.1.uploads", {
    seq: 2,
    data: JSON.stringify({
      realmId: REALM,
      attachments: [attachment(1, P1, 100, image), attachment(2, P2, 50)],
      spaceUsed: 150,
    }),
  });
  // A file (blob kind, any other key): an emoji image.
  await journal("blob.1.emoji.5", [{ type: "stored", data: "AAEC", contentType: "image/png", size: 3 }]);
  // The webhook index (webhook kind, key "~index"): its snapshot carried the role.
  await journal("webhook.1.~index", [
    { type: "marked", botId: 9, gen: 1 },
    { type: "marked", botId: 10, gen: 4 },
    { type: "marked", botId: 11, gen: 2 },
  ]);
  await store.saveSnapshot(0, epoch, "webhook.1.~index", {
    seq: 2,
    data: JSON.stringify({ role: "index", realmId: REALM, bots: { "9": 1, "10": 4 } }),
  });
  // A bot's outbox (webhook kind, key = bot id): its snapshot carried the role too.
  const delivery = {
    messageId: 7,
    trigger: "mention",
    message: { id: 7 },
    failures: 1,
    status: "backoff",
    attempt: 1,
    until: 1,
  };
  await journal("webhook.1.9", [{ type: "queued", delivery }]);
  await store.saveSnapshot(0, epoch, "webhook.1.9", {
    seq: 1,
    data: JSON.stringify({
      role: "bot",
      realmId: REALM,
      botId: 9,
      pending: { "7": delivery },
      recent: [3],
      gen: 2,
    }),
  });
  await store.releaseLease(0, "old-code", epoch);
}

async function withNode<T>(store: Store, fn: (node: NodeRuntime) => Promise<T>): Promise<T> {
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
  }
}

/** A gateway's call as the owner (the uploads directory's listing needs a caller). */
async function asOwner(node: NodeRuntime, ref: ActorRef, method: string, args: Obj): Promise<unknown> {
  const res = await node.request({ ref, shard: 0, method, args, caller: OWNER, deadline: Date.now() + 5000 });
  assert.ok(res.ok, JSON.stringify(res));
  return res.value;
}

/** What the new kinds serve of the old data (`cleared`: bot 11 was cleared since). */
async function checkServed(node: NodeRuntime, cleared: boolean): Promise<void> {
  const listed = (await asOwner(node, uploadsDirectoryRef(REALM), "listAttachments", {})) as Obj;
  assert.equal(listed.upload_space_used, 150);
  assert.deepEqual(
    (listed.attachments as Obj[]).map((a) => [a.id, a.path_id, a.message_ids]),
    [
      [1, P1, [7]],
      [2, P2, []],
    ],
  );
  assert.deepEqual(await node.call(uploadsDirectoryRef(REALM), "uploadImages", { pathIds: [P1, P2] }), {
    images: [[P1, { width: 10, height: 20, animated: false, contentType: "image/png" }]],
  });
  assert.deepEqual(await node.call(emojiBlobRef(REALM, "5"), "get", {}), {
    data: "AAEC",
    contentType: "image/png",
    size: 3,
  });
  const bots = (await node.call(webhookIndexRef(REALM), "pendingBots", {})).bots;
  assert.deepEqual(
    bots.sort((a, b) => a.botId - b.botId),
    [{ botId: 9, gen: 1 }, { botId: 10, gen: 4 }, ...(cleared ? [] : [{ botId: 11, gen: 2 }])],
  );
  assert.deepEqual(await node.call(webhookRef(REALM, 9), "outbox", {}), {
    pending: [{ messageId: 7, trigger: "mention", status: "backoff", attempt: 1, failures: 1 }],
    recent: [3],
  });
}

test("the old kinds' data is served by the new kinds, under the same storage ids", async () => {
  const store = createLmdbStore(join(dir, "old"));
  try {
    await writeOldData(store);
    await withNode(store, async (node) => {
      await checkServed(node, false);
      // A write of the new kind goes on the old id's journal.
      assert.deepEqual(await node.call(webhookIndexRef(REALM), "clear", { botId: 11, gen: 2 }), {
        cleared: true,
      });
      const journal = await store.readJournal(0, "webhook.1.~index", 0);
      assert.deepEqual(decodeFact(journal.at(-1)!.data), { type: "cleared", botId: 11 });
      assert.equal(journal.at(-1)!.seq, 4);
      // Neither kind of a pair serves the other's key (the data stays the rightful kind's).
      const forged: [ActorRef, string, Obj][] = [
        [{ kind: "blob", realm: REALM, key: "uploads" }, "get", {}],
        [
          { kind: "uploads", realm: REALM, key: "emoji.5", shardKey: "directory" },
          "uploadImages",
          { pathIds: [] },
        ],
        [{ kind: "webhook", realm: REALM, key: "~index" }, "outbox", {}],
        [{ kind: "webhookIndex", realm: REALM, key: "9" }, "pendingBots", {}],
      ];
      for (const [ref, method, args] of forged)
        await assert.rejects(node.call(ref, method, args), /Access denied/, `${ref.kind}.${ref.key}`);
      await checkServed(node, true);
    });
    // After a restart, from the store alone.
    await withNode(store, (node) => checkServed(node, true));
  } finally {
    await store.close();
  }
});

test("an export names the stored ids as before; a restore is served by the new kinds", async () => {
  const store = createLmdbStore(join(dir, "export-src"));
  const target = createLmdbStore(join(dir, "export-dst"));
  const file = join(dir, "realm.jsonl.gz");
  try {
    await writeOldData(store);
    // Each stored id reads back as the kind that owns its key.
    const kinds = ["blob.1.uploads", "blob.1.emoji.5", "webhook.1.~index", "webhook.1.9"].map(
      (id) => parseActorId(id)?.kind,
    );
    assert.deepEqual(kinds, ["uploads", "blob", "webhookIndex", "webhook"]);
    const manifest = {
      format: EXPORT_FORMAT,
      version: EXPORT_VERSION,
      realmId: REALM,
      host: "localhost",
      exportId: null,
      exportType: null,
      shards: 1,
      createdAt: 0,
    };
    await writeExport(store, manifest, file);
    const contents = await readExport(file);
    assert.deepEqual(contents.actors.map((a) => a.actor).sort(), [
      "blob.1.emoji.5",
      "blob.1.uploads",
      "webhook.1.9",
      "webhook.1.~index",
    ]);
    const epoch = await target.acquireLease(0, "restore", 60_000);
    assert.ok(epoch !== null);
    await restoreInto(target, 1, contents);
    await target.releaseLease(0, "restore", epoch);
    await withNode(target, (node) => checkServed(node, false));
  } finally {
    await store.close();
    await target.close();
  }
});
