// Feature level 91 for direct messages: the realm's message_retention_days
// expires direct and group direct messages too (Zulip's
// move_expired_personal_and_huddle_messages_to_archive). The sweep is
// called through the node with a future clock, as test/fl-rlim.test.ts
// does for channels; the cluster case checks the durable list of DM
// conversations the sweep walks, including a conversation that existed
// before the list did.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startChat, type Chat, type User } from "./support/chat.ts";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { requireBinaries } from "./support/services.ts";
import { assertSuccess, eventsUntil, newUser, openQueue, type ApiHolder } from "./support/zulip-asserts.ts";
import type { Creds } from "./support/embedded.ts";
import type { ActorRef, Obj } from "../actors/types.ts";
import { sweepRealmRetention } from "../actors/channel/retention.ts";
import { typedCall } from "../actors/protocol.ts";
import { channelDirectoryRef } from "../actors/channel-directory/refs.ts";
import { dmKey } from "../actors/addresses.ts";
import { createRedisStore } from "../cluster/storage/redis-store.ts";
import { actorId, shardOf } from "../cluster/addressing.ts";
import type { Store } from "../cluster/storage/contract.ts";
import { decodeFact } from "../proto/codec.ts";
import { ExportScope } from "../cluster/export-filter.ts";
import { dirToSnapshot, initialDir } from "../actors/channel-directory/state.ts";

const DAY = 86400_000;

async function sendDm(h: ApiHolder, auth: Creds, to: number[], content: string): Promise<number> {
  const r = await h.api("POST", "/messages", { type: "direct", to: JSON.stringify(to), content }, auth);
  assertSuccess(r);
  return r.body.id as number;
}

describe("FL 91: the realm's retention expires direct messages", () => {
  let chat: Chat;
  let a: User;
  let b: User;
  let c: User;
  let realmId: number;
  const call = typedCall((ref, m, args) => chat.srv.node.call(ref, m, args));
  const readable = async (id: number, u: User) =>
    (await chat.api("GET", `/messages/${id}`, {}, u)).status === 200;

  before(async () => {
    chat = await startChat();
    a = await chat.newUser(400);
    b = await chat.newUser(400);
    c = await chat.newUser(400);
    realmId = chat.srv.bootstrapped!.realmId!;
  });
  after(async () => {
    await chat?.stop();
  });

  test("FL 91: direct and group direct messages older than the realm's retention are deleted with delete_message", async () => {
    const dm1 = await sendDm(chat, a, [b.userId], "one");
    const dm2 = await sendDm(chat, b, [a.userId], "two");
    const group = await sendDm(chat, a, [b.userId, c.userId], "three");
    const self = await sendDm(chat, c, [c.userId], "note to self");
    // Unlimited (the default): a sweep far ahead keeps everything.
    await sweepRealmRetention(call, realmId, Date.now() + 400 * DAY);
    assert.deepEqual(
      [await readable(dm1, a), await readable(dm2, b), await readable(group, c), await readable(self, c)],
      [true, true, true, true],
    );

    assertSuccess(await chat.api("PATCH", "/realm", { message_retention_days: 2 }));
    const qb = await openQueue(chat, b, ["delete_message"]);
    const qc = await openQueue(chat, c, ["delete_message"]);
    // One day on: nothing is two days old yet.
    await sweepRealmRetention(call, realmId, Date.now() + DAY);
    assert.equal(await readable(dm1, a), true);
    await sweepRealmRetention(call, realmId, Date.now() + 3 * DAY);
    assert.deepEqual(
      [await readable(dm1, a), await readable(dm2, b), await readable(group, c), await readable(self, c)],
      [false, false, false, false],
    );
    assert.equal((await chat.api("GET", `/messages/${dm1}`, {}, a)).body.msg, "Invalid message(s)");
    // Without bulk_message_deletion a queue gets one message_id per event.
    const ids = (evs: Obj[]) =>
      evs
        .filter((e) => e.type === "delete_message")
        .map((e) => {
          assert.equal(e.message_type, "private");
          return (e.message_ids as number[] | undefined) ?? [e.message_id as number];
        })
        .flat()
        .sort((x, y) => x - y);
    const evb = await eventsUntil(chat, qb, (e) => ids(e).length >= 3);
    assert.deepEqual(ids(evb), [dm1, dm2, group]);
    const evc = await eventsUntil(chat, qc, (e) => ids(e).length >= 2);
    assert.deepEqual(ids(evc), [group, self]);

    // The directory lists each conversation once, not each message.
    const plan = await call(channelDirectoryRef(realmId), "retentionPlan", { realmDays: 1 });
    assert.deepEqual(
      [...plan.dms].sort(),
      [dmKey([a.userId, b.userId]), dmKey([a.userId, b.userId, c.userId]), dmKey([c.userId])].sort(),
    );
    // Again: nothing left to delete, no event.
    await sweepRealmRetention(call, realmId, Date.now() + 3 * DAY);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await eventsUntil(chat, qb, () => true)).length, 0);

    // A newer message of the same conversation stays until it too is old.
    const fresh = await sendDm(chat, a, [b.userId], "fresh");
    await sweepRealmRetention(call, realmId, Date.now() + DAY);
    assert.equal(await readable(fresh, b), true);

    // Unlimited again keeps them.
    assertSuccess(await chat.api("PATCH", "/realm", { message_retention_days: "unlimited" }));
    await sweepRealmRetention(call, realmId, Date.now() + 30 * DAY);
    assert.equal(await readable(fresh, b), true);
  });

  test("FL 91: a channel's own retention does not expire direct messages", async () => {
    const r = await chat.api("POST", "/channels/create", {
      name: "dmret short",
      subscribers: [a.userId],
      message_retention_days: 1,
    });
    assertSuccess(r);
    const dm = await sendDm(chat, a, [c.userId], "kept");
    await sweepRealmRetention(call, realmId, Date.now() + 5 * DAY);
    assert.equal(await readable(dm, c), true);
  });
});

test("FL 91: an export lists only the DM conversations it exports", () => {
  const ref: ActorRef = { kind: "channelDirectory", realm: 7, key: "directory" };
  const dir = initialDir(ref);
  dir.dmConvs[dmKey([3, 4])] = true;
  dir.dmConvs[dmKey([3, 4, 5])] = true;
  // A public export (type 1) holds no direct messages, so none of their participants either.
  const scope = new ExportScope(7, 1);
  scope.learn(ref, { snapshot: { seq: 2, data: dirToSnapshot(dir) }, journal: [] });
  scope.settle();
  const out = scope.filter(ref, { snapshot: { seq: 2, data: dirToSnapshot(dir) }, journal: [] });
  assert.ok(out?.snapshot);
  assert.deepEqual(stateOf(out.snapshot.data).dmConvs, {});
  assert.equal(out.snapshot.seq, 2);
});

const skip = requireBinaries("nats-server", "redis-server");

/** The catalog's snapshot envelope (state plus pending outbox), when the snapshot has one. */
const ENVELOPE = "\u0001";

function stateOf(data: string): Obj {
  const s = data.startsWith(ENVELOPE) ? ((JSON.parse(data.slice(1)) as Obj).s as string) : data;
  return JSON.parse(s) as Obj;
}

function withState(data: string, state: Obj): string {
  if (!data.startsWith(ENVELOPE)) return JSON.stringify(state);
  const env = JSON.parse(data.slice(1)) as Obj;
  return ENVELOPE + JSON.stringify({ ...env, s: JSON.stringify(state) });
}

/** The keys of the channel directory's DM list as stored (snapshot, then journal). */
async function listedDms(store: Store, ref: ActorRef, shards: number): Promise<string[]> {
  const shard = shardOf(ref, shards);
  const snap = await store.loadSnapshot(shard, actorId(ref));
  const keys = new Set(Object.keys((snap ? (stateOf(snap.data).dmConvs as Obj | undefined) : null) ?? {}));
  for (const e of await store.readJournal(shard, actorId(ref), snap?.seq ?? 0)) {
    const f = decodeFact(e.data);
    if (f.type === "dmConvListed") keys.add(String(f.key));
  }
  // Welcome Bot's greetings of new users are DMs too (FL 416); the test's own DMs are the subject.
  return [...keys].filter((k) => !k.split(/[:,]/).includes(String(WELCOME_BOT_ID))).sort();
}

/** Welcome Bot's user id (actors/realm/system-bot.ts). */
const WELCOME_BOT_ID = 2147000002;

describe("FL 91: cluster", { skip }, () => {
  let cl: TestCluster;
  before(async () => {
    if (!skip) cl = await startCluster({ nodes: ["n1"], shards: 8 });
  });
  after(async () => {
    await cl?.stop();
  });

  test("FL 91: a DM sent through the gateway lists its conversation; one from before the list lists itself when next used", async () => {
    const u = await newUser(cl, 400);
    const v = await newUser(cl, 400);
    const me = await cl.api("GET", "/users/me");
    assertSuccess(me);
    const ownerId = me.body.user_id as number;
    const realmId = 1;
    // The directory's storage id is the channel kind's (Behavior.storedAs).
    const dir: ActorRef = { kind: "channel", realm: realmId, key: "directory" };
    const id = await sendDm(cl, cl.owner, [u.userId], "hello");
    await sendDm(cl, u, [ownerId, v.userId], "group hello");
    const pair = dmKey([ownerId, u.userId]);
    const trio = dmKey([ownerId, u.userId, v.userId]);

    // A graceful stop snapshots the directory and gives the leases up.
    await cl.nodes.get("n1")!.stop("SIGTERM");
    const store = await createRedisStore(cl.redis.url);
    try {
      assert.deepEqual(await listedDms(store, dir, cl.shards), [pair, trio].sort());
      // Make the directory look written before the list existed.
      const shard = shardOf(dir, cl.shards);
      let epoch: number | null = null;
      for (let i = 0; i < 100 && epoch === null; i++) {
        epoch = await store.acquireLease(shard, "dmret-test", 60_000);
        if (epoch === null) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(epoch !== null, "lease of the directory's shard");
      const snap = await store.loadSnapshot(shard, actorId(dir));
      const journal = await store.readJournal(shard, actorId(dir), snap?.seq ?? 0);
      const state = stateOf(snap!.data);
      delete state.dmConvs;
      // A graceful stop leaves nothing after the snapshot: it is the whole state.
      assert.equal(journal.length, 0);
      const seq = snap!.seq;
      await store.saveSnapshot(shard, epoch, actorId(dir), { seq, data: withState(snap!.data, state) });
      await store.releaseLease(shard, "dmret-test", epoch);
      assert.deepEqual(await listedDms(store, dir, cl.shards), []);
    } finally {
      await store.close();
    }

    await cl.startNode("n1");
    // Reading the pair's message activates its conversation, which lists itself.
    let r = await cl.api("GET", `/messages/${id}`, {}, u);
    for (let i = 0; i < 100 && r.status !== 200; i++) {
      await new Promise((res) => setTimeout(res, 100));
      r = await cl.api("GET", `/messages/${id}`, {}, u);
    }
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await cl.nodes.get("n1")!.stop("SIGTERM");
    const again = await createRedisStore(cl.redis.url);
    try {
      assert.deepEqual(await listedDms(again, dir, cl.shards), [pair]);
    } finally {
      await again.close();
    }
  });
});
