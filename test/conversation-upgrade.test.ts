// A conversation stored the old way (every message in its snapshot, journal
// facts of the old shape after it, no message records) is converted when it
// is first activated: GET /messages, edits and flags work on it after a
// restart, and its new snapshot no longer holds the history.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { entryArgs } from "../bench/procs.ts";
import { startEmbedded, type EmbeddedServer } from "../server.ts";
import { createLmdbStore } from "../cluster/storage/lmdb-store.ts";
import { actorId, shardOf } from "../cluster/addressing.ts";
import { encodeFact } from "../proto/codec.ts";
import {
  allIds,
  convIndex,
  getMsgs,
  initialConv,
  msgKey,
  topicIndex,
  type Msg,
} from "../actors/channel/conversation-state.ts";
import type { ActorRef, Obj } from "../actors/types.ts";
import type { RecordWrite, Store } from "../cluster/storage/contract.ts";
import { makeApi, requireBinaries, startCluster, type Api } from "./support/index.ts";
import { storedMessage } from "./support/fixtures.ts";
import { createRedisStore } from "../cluster/storage/redis-store.ts";

const SHARDS = 16;
const dir = mkdtempSync(join(tmpdir(), "conv-upgrade-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function start(): Promise<EmbeddedServer> {
  const saved = process.env.RATE_LIMIT_PER_MINUTE;
  process.env.RATE_LIMIT_PER_MINUTE = "0";
  try {
    return await startEmbedded({
      port: 0,
      host: "127.0.0.1",
      dataDir: dir,
      shards: SHARDS,
      // The second start finds the organization and creates nothing.
      bootstrap: {
        ownerEmail: "owner@example.com",
        ownerPassword: "owner-password-1",
        ownerName: "Olivia Owner",
        realmName: "Test Org",
        externalHost: "localhost",
      },
      singleOrganization: true,
      leaseTtlMs: 1_000,
      renewMs: 200,
    });
  } finally {
    if (saved === undefined) delete process.env.RATE_LIMIT_PER_MINUTE;
    else process.env.RATE_LIMIT_PER_MINUTE = saved;
  }
}

/** Rewrite a conversation into the shape older code stored: the whole history in the snapshot. */
async function downgrade(store: Store, ref: ActorRef, shards = SHARDS): Promise<void> {
  const shard = shardOf(ref, shards);
  const id = actorId(ref);
  let epoch: number | null = null;
  for (let i = 0; i < 400 && epoch === null; i++) {
    epoch = await store.acquireLease(shard, "downgrade", 60_000);
    if (epoch === null) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(epoch !== null, "lease of the conversation's shard");
  const conv = initialConv(ref);
  // The recent window is empty in this view, so every read goes to the store.
  conv.recentFrom = Number.MAX_SAFE_INTEGER;
  conv.count = 1;
  conv.topics.set("t1", { count: 1, senders: new Map() });
  conv.topics.set("t2", { count: 1, senders: new Map() });
  const reader = {
    getRecords: (keys: string[]) => store.getRecords(shard, keys),
    rangeIndex: (index: string, r: Parameters<Store["rangeIndex"]>[2]) => store.rangeIndex(shard, index, r),
  };
  const ids = await allIds(reader, conv, null);
  const msgs = (await getMsgs(reader, conv, ids)) as Msg[];
  assert.ok(msgs.length > 50 && msgs.every((m) => m !== null));
  const old: Record<string, Msg> = {};
  for (const m of msgs) old[String(m.id)] = m;
  const journal = await store.readJournal(shard, id, 0);
  const snap = await store.loadSnapshot(shard, id);
  const seq = Math.max(snap?.seq ?? 0, journal.at(-1)?.seq ?? 0);
  // No records, no indexes: the old code wrote none.
  const drop: RecordWrite[] = msgs.map((m) => ({ op: "delete", key: msgKey(conv, m.id) }));
  drop.push({ op: "unindex", index: convIndex(conv), remove: ids });
  for (const t of ["t1", "t2"]) drop.push({ op: "unindex", index: topicIndex(conv, t), remove: ids });
  await store.append(shard, epoch, id, seq + 1, [], drop);
  await store.saveSnapshot(shard, epoch, id, {
    seq,
    data: JSON.stringify({ key: ref.key, realmId: ref.realm, ids, msgs: old, dmRecipients: null }),
  });
  // Old-shape facts after the snapshot: a content edit and a removal.
  const edited = ids[10]!;
  const removed = ids[20]!;
  const facts: Obj[] = [
    { type: "msgChanged", id: edited, changes: { content: "old edit", rendered: "<p>old edit</p>" } },
    { type: "msgRemoved", id: removed },
  ];
  await store.append(shard, epoch, id, seq + 1, facts.map(encodeFact));
  await store.releaseLease(shard, "downgrade", epoch);
}

/** A conversation as older code left it before its first snapshot: old `msgAdded` facts only. */
async function oldJournal(store: Store, ref: ActorRef, senderId: number): Promise<number[]> {
  const shard = shardOf(ref, SHARDS);
  const epoch = (await store.acquireLease(shard, "downgrade", 60_000))!;
  assert.ok(epoch !== null);
  const ids: number[] = [];
  const facts: Obj[] = [];
  for (let i = 0; i < 70; i++) {
    const id = await store.nextId(`message.${ref.realm}`);
    ids.push(id);
    const msg = storedMessage(id, {
      senderId,
      senderEmail: "owner@example.com",
      topic: "old",
      content: `j${i}`,
    });
    facts.push({ type: "msgAdded", msg } as unknown as Obj);
  }
  assert.equal((await store.readJournal(shard, actorId(ref), 0)).length, 0);
  await store.append(shard, epoch, actorId(ref), 1, facts.map(encodeFact));
  await store.releaseLease(shard, "downgrade", epoch);
  return ids;
}

let bareSent: number[] = [];

test("an old-shape conversation converts on activation: fetch, edit, flags", async () => {
  let srv = await start();
  const owner = { email: "owner@example.com", apiKey: srv.bootstrapped!.apiKey! };
  let api: Api = makeApi(srv.url, owner);
  const name = "upgrade-me";
  assert.equal((await api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] })).status, 200);
  const streamId = (await api("GET", "/get_stream_id", { stream: name })).body.stream_id as number;
  const sent: number[] = [];
  for (let i = 0; i < 130; i++) {
    const r = await api("POST", "/messages", {
      type: "stream",
      to: name,
      topic: i % 2 ? "t1" : "T2",
      content: `m${i}`,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    sent.push(r.body.id as number);
  }
  // A second channel, converted ahead of time by `manage migrate`.
  const other = "migrate-me";
  assert.equal(
    (await api("POST", "/users/me/subscriptions", { subscriptions: [{ name: other }] })).status,
    200,
  );
  const otherId = (await api("GET", "/get_stream_id", { stream: other })).body.stream_id as number;
  const otherSent: number[] = [];
  for (let i = 0; i < 60; i++) {
    const r = await api("POST", "/messages", {
      type: "stream",
      to: other,
      topic: i % 2 ? "t1" : "t2",
      content: `o${i}`,
    });
    otherSent.push(r.body.id as number);
  }
  // A third channel whose conversation has only a journal of old facts (no snapshot).
  const bare = "journal-only";
  assert.equal(
    (await api("POST", "/users/me/subscriptions", { subscriptions: [{ name: bare }] })).status,
    200,
  );
  const bareId = (await api("GET", "/get_stream_id", { stream: bare })).body.stream_id as number;
  const ownerId = srv.bootstrapped!.userId!;
  const ref: ActorRef = { kind: "channel", realm: srv.bootstrapped!.realmId!, key: String(streamId) };
  const otherRef: ActorRef = { ...ref, key: String(otherId) };
  const bareRef: ActorRef = { ...ref, key: String(bareId) };
  await srv.close();

  const store = createLmdbStore(dir);
  try {
    await downgrade(store, ref);
    await downgrade(store, otherRef);
    bareSent = await oldJournal(store, bareRef, ownerId);
  } finally {
    await store.close();
  }
  const { stdout } = await promisify(execFile)(process.execPath, [...entryArgs("manage.ts"), "migrate"], {
    env: { ...process.env, DATA_DIR: dir, SHARDS: String(SHARDS) },
  });
  const report = JSON.parse(stdout.slice(stdout.indexOf("{"))) as { conversations: number; messages: number };
  assert.ok(report.conversations >= 2, stdout);
  const offline = createLmdbStore(dir);
  try {
    const snap = await offline.loadSnapshot(shardOf(otherRef, SHARDS), actorId(otherRef));
    assert.ok(
      snap && !snap.data.includes('"msgs"') && !snap.data.includes('"legacy"'),
      snap?.data.slice(0, 200),
    );
  } finally {
    await offline.close();
  }

  assert.ok(bareSent.length > 0);
  srv = await start();
  api = makeApi(srv.url, owner);
  try {
    const narrow = JSON.stringify([{ operator: "channel", operand: streamId }]);
    const r = await api("GET", "/messages", { anchor: "newest", num_before: 200, num_after: 0, narrow });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const got = (r.body.messages as { id: number; content: string; flags: string[] }[]).map((m) => m.id);
    const expected = sent.filter((id) => id !== sent[20]);
    assert.deepEqual(got, expected);
    const byId = new Map((r.body.messages as { id: number; content: string }[]).map((m) => [m.id, m]));
    assert.equal(byId.get(sent[10]!)!.content, "<p>old edit</p>");
    assert.equal(byId.get(sent[5]!)!.content, "<p>m5</p>");
    // A topic narrow reads the converted topic index.
    const t1 = await api("GET", "/messages", {
      anchor: "newest",
      num_before: 10,
      num_after: 0,
      narrow: JSON.stringify([
        { operator: "channel", operand: streamId },
        { operator: "topic", operand: "t2" },
      ]),
    });
    assert.deepEqual(
      (t1.body.messages as { id: number }[]).map((m) => m.id),
      sent.filter((_, i) => i % 2 === 0 && i !== 20).slice(-10),
    );
    // An edit of an old message (the owner sent it; content edits are time-limited, topic edits are not).
    const e = await api("PATCH", `/messages/${sent[3]}`, { topic: "moved on", propagate_mode: "change_one" });
    assert.equal(e.status, 200, JSON.stringify(e.body));
    const one = await api("GET", `/messages/${sent[3]}`, {});
    assert.equal(one.body.message.subject, "moved on");
    // Flags: star an old message, read it back.
    const f = await api("POST", "/messages/flags", { messages: [sent[7]], op: "add", flag: "starred" });
    assert.equal(f.status, 200, JSON.stringify(f.body));
    const starred = await api("GET", "/messages", {
      anchor: "newest",
      num_before: 5,
      num_after: 0,
      narrow: JSON.stringify([{ operator: "is", operand: "starred" }]),
    });
    assert.deepEqual(
      (starred.body.messages as { id: number }[]).map((m) => m.id),
      [sent[7]],
    );
    const o = await api("GET", "/messages", {
      anchor: "newest",
      num_before: 100,
      num_after: 0,
      narrow: JSON.stringify([{ operator: "channel", operand: otherId }]),
    });
    assert.deepEqual(
      (o.body.messages as { id: number }[]).map((m) => m.id),
      otherSent.filter((id) => id !== otherSent[20]),
    );
    const j = await api("GET", "/messages", {
      anchor: "newest",
      num_before: 100,
      num_after: 0,
      narrow: JSON.stringify([{ operator: "channel", operand: bareId }]),
    });
    assert.deepEqual(
      (j.body.messages as { id: number }[]).map((m) => m.id),
      bareSent,
    );
    const jr = await api("PATCH", `/messages/${bareSent[0]}`, {
      topic: "renamed",
      propagate_mode: "change_all",
    });
    assert.equal(jr.status, 200, JSON.stringify(jr.body));
    const jt = await api("GET", `/users/me/${bareId}/topics`, {});
    assert.deepEqual(
      (jt.body.topics as { name: string }[]).map((t) => t.name),
      ["renamed"],
    );
    const topics = await api("GET", `/users/me/${streamId}/topics`, {});
    assert.deepEqual((topics.body.topics as { name: string }[]).map((t) => t.name).sort(), [
      "T2",
      "moved on",
      "t1",
    ]);
  } finally {
    await srv.close();
  }

  // The converted snapshot holds no history.
  const after = createLmdbStore(dir);
  try {
    const snap = await after.loadSnapshot(shardOf(ref, SHARDS), actorId(ref));
    assert.ok(
      snap && !snap.data.includes('"msgs"') && !snap.data.includes('"legacy"'),
      snap?.data.slice(0, 200),
    );
    assert.ok(snap.data.length < 40_000, `snapshot of ${snap.data.length} chars`);
  } finally {
    await after.close();
  }
});

test(
  "an old-shape conversation converts on activation in a cluster (Redis)",
  { skip: requireBinaries("nats-server", "redis-server") },
  async () => {
    const cluster = await startCluster({ nodes: ["n1"], shards: 8 });
    try {
      const api = cluster.api;
      const name = "cluster-upgrade";
      assert.equal((await api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] })).status, 200);
      const streamId = (await api("GET", "/get_stream_id", { stream: name })).body.stream_id as number;
      const sent: number[] = [];
      for (let i = 0; i < 70; i++) {
        const r = await api("POST", "/messages", {
          type: "stream",
          to: name,
          topic: i % 2 ? "t1" : "t2",
          content: `c${i}`,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        sent.push(r.body.id as number);
      }
      // Graceful stop: the node snapshots and gives its leases up.
      await cluster.nodes.get("n1")!.stop("SIGTERM");
      const ref: ActorRef = { kind: "channel", realm: 1, key: String(streamId) };
      const store = await createRedisStore(cluster.redis.url);
      try {
        await downgrade(store, ref, cluster.shards);
      } finally {
        await store.close();
      }
      await cluster.startNode("n1");
      const narrow = JSON.stringify([{ operator: "channel", operand: streamId }]);
      let r = await api("GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0, narrow });
      for (let i = 0; i < 100 && r.status !== 200; i++) {
        await new Promise((res) => setTimeout(res, 100));
        r = await api("GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0, narrow });
      }
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const msgs = r.body.messages as { id: number; content: string; flags: string[] }[];
      assert.deepEqual(
        msgs.map((m) => m.id),
        sent.filter((id) => id !== sent[20]),
      );
      assert.equal(msgs.find((m) => m.id === sent[10])!.content, "<p>old edit</p>");
      const e = await api("PATCH", `/messages/${sent[4]}`, { content: "edited after conversion" });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      assert.equal(
        (await api("GET", `/messages/${sent[4]}`, {})).body.message.content,
        "<p>edited after conversion</p>",
      );
      const f = await api("POST", "/messages/flags", { messages: [sent[6]], op: "add", flag: "starred" });
      assert.equal(f.status, 200, JSON.stringify(f.body));
      const starred = await api("GET", "/messages", {
        anchor: "newest",
        num_before: 5,
        num_after: 0,
        narrow: JSON.stringify([{ operator: "is", operand: "starred" }]),
      });
      assert.deepEqual(
        (starred.body.messages as { id: number }[]).map((m) => m.id),
        [sent[6]],
      );
    } finally {
      await cluster.stop();
    }
  },
);
