// One conformance suite for the storage contract (cluster/storage/contract.ts),
// run against every implementation: LMDB (embedded) and Redis (a real
// redis-server started for the test). Plus a few Redis-only checks of the key
// layout (docs/storage.md) and of the redis-om snapshot schema.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";
import { Repository } from "redis-om";
import { FencedError } from "../cluster/runtime-errors.ts";
import {
  createLmdbStore,
  createRedisClusterStore,
  createRedisStore,
  snapshotEntityId,
  snapshotSchema,
  type Store,
} from "../cluster/storage/index.ts";
import { requireBinaries, startRedis, type Service } from "./support/index.ts";
import { startRedisCluster, type RedisClusterService } from "./support/services.ts";

interface Backend {
  /** Start the service / make the data dir. */
  setup(): Promise<void>;
  /** A store on the backend's data (a new client, or the reopened dir). */
  open(): Promise<Store>;
  teardown(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bytes = (...b: number[]) => new Uint8Array(b);
const text = (s: string) => new TextEncoder().encode(s);

async function fenced(p: Promise<unknown>, shard: number, epoch: number): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof FencedError, `expected FencedError, got ${String(err)}`);
    assert.equal(err.shard, shard);
    assert.equal(err.epoch, epoch);
    return true;
  });
}

function conformance(name: string, backend: Backend, skip?: string): void {
  describe(`storage conformance: ${name}`, { skip }, () => {
    let store: Store;
    // Each test works on its own shards and actors, so they share one store.
    let nextShard = 1;
    const shard = () => nextShard++;
    const run = `r${Date.now().toString(36)}`;

    before(async () => {
      await backend.setup();
      store = await backend.open();
    });
    after(async () => {
      await store?.close();
      await backend.teardown();
    });

    test("lease: acquire, renew, release; a second node is refused while held", async () => {
      const s = shard();
      assert.equal(await store.leaseHolder(s), null);
      const e1 = await store.acquireLease(s, "A", 10_000);
      assert.equal(typeof e1, "number");
      assert.deepEqual(await store.leaseHolder(s), { node: "A", epoch: e1 });
      assert.equal(await store.acquireLease(s, "B", 10_000), null);
      assert.equal(await store.renewLease(s, "A", e1!, 10_000), true);
      assert.equal(await store.renewLease(s, "B", e1!, 10_000), false);
      assert.equal(await store.renewLease(s, "A", e1! + 1, 10_000), false);
      // Releasing with the wrong node or epoch is a no-op.
      await store.releaseLease(s, "B", e1!);
      await store.releaseLease(s, "A", e1! - 1);
      assert.deepEqual(await store.leaseHolder(s), { node: "A", epoch: e1 });
      await store.releaseLease(s, "A", e1!);
      assert.equal(await store.leaseHolder(s), null);
      assert.equal(await store.renewLease(s, "A", e1!, 10_000), false);
      const e2 = await store.acquireLease(s, "B", 10_000);
      assert.ok(e2 !== null && e2 > e1!, `epoch ${e2} > ${e1}`);
      assert.deepEqual(await store.leaseHolder(s), { node: "B", epoch: e2 });
      await store.releaseLease(s, "A", e2); // not A's: no-op
      assert.deepEqual(await store.leaseHolder(s), { node: "B", epoch: e2 });
    });

    test("lease: re-acquire by the holder bumps the epoch; node names may contain ':'", async () => {
      const s = shard();
      const e1 = await store.acquireLease(s, "node:1", 10_000);
      const e2 = await store.acquireLease(s, "node:1", 10_000);
      assert.ok(e1 !== null && e2 !== null && e2 > e1);
      assert.deepEqual(await store.leaseHolder(s), { node: "node:1", epoch: e2 });
      assert.equal(await store.acquireLease(s, "node", 10_000), null);
      assert.equal(await store.renewLease(s, "node:1", e1, 10_000), false);
      assert.equal(await store.renewLease(s, "node:1", e2, 10_000), true);
    });

    test("lease: after the TTL expires another node gets a strictly greater epoch", async () => {
      const s = shard();
      const e1 = await store.acquireLease(s, "A", 150);
      assert.ok(e1 !== null);
      assert.equal(await store.acquireLease(s, "B", 150), null);
      await sleep(250);
      assert.equal(await store.leaseHolder(s), null);
      assert.equal(await store.renewLease(s, "A", e1, 150), false);
      const e2 = await store.acquireLease(s, "B", 10_000);
      assert.ok(e2 !== null && e2 > e1, `epoch ${e2} > ${e1}`);
    });

    test("lease: renew keeps the lease past its first TTL", async () => {
      const s = shard();
      const e = await store.acquireLease(s, "A", 200);
      await sleep(120);
      assert.equal(await store.renewLease(s, "A", e!, 400), true);
      await sleep(150);
      assert.deepEqual(await store.leaseHolder(s), { node: "A", epoch: e });
      assert.equal(await store.acquireLease(s, "B", 200), null);
    });

    test("journal: binary round trip, order, afterSeq filtering", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const actor = `user.1.${run}-bin`;
      const all = [
        bytes(0x00),
        bytes(0xff, 0x00, 0xff),
        new Uint8Array(0),
        text("héllo ✓ 💬"),
        bytes(...Array.from({ length: 256 }, (_, i) => i)),
      ];
      assert.deepEqual(await store.readJournal(s, actor, 0), []);
      await store.append(s, e, actor, 1, all.slice(0, 2));
      await store.append(s, e, actor, 3, all.slice(2));
      const got = await store.readJournal(s, actor, 0);
      assert.deepEqual(
        got.map((x) => x.seq),
        [1, 2, 3, 4, 5],
      );
      got.forEach((x, i) => {
        assert.ok(x.data instanceof Uint8Array);
        assert.deepEqual([...x.data], [...all[i]!], `entry ${x.seq}`);
      });
      const after2 = await store.readJournal(s, actor, 2);
      assert.deepEqual(
        after2.map((x) => x.seq),
        [3, 4, 5],
      );
      assert.deepEqual([...after2[1]!.data], [...all[3]!]);
      assert.deepEqual(await store.readJournal(s, actor, 5), []);
      assert.deepEqual(await store.readJournal(s, actor, 99), []);
      // Another actor on the same shard has its own sequence.
      await store.append(s, e, `${actor}-other`, 1, [bytes(7)]);
      assert.equal((await store.readJournal(s, actor, 0)).length, 5);
      assert.deepEqual(
        (await store.readJournal(s, `${actor}-other`, 0)).map((x) => [x.seq, [...x.data]]),
        [[1, [7]]],
      );
    });

    test("lastSeq: the last durable seq, moved by appends only", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const actor = `realm.1.${run}-seq`;
      assert.equal(await store.lastSeq(s, actor), 0);
      await store.append(s, e, actor, 1, [bytes(1), bytes(2)]);
      assert.equal(await store.lastSeq(s, actor), 2);
      // A snapshot covers entries; it moves nothing.
      await store.saveSnapshot(s, e, actor, { seq: 2, data: "at 2" });
      assert.equal(await store.lastSeq(s, actor), 2);
      // A refused append (a second writer's seq) moves nothing either.
      await assert.rejects(store.append(s, e, actor, 2, [bytes(9)]));
      assert.equal(await store.lastSeq(s, actor), 2);
      await store.appendMany(s, e, [{ actor, firstSeq: 3, entries: [bytes(3)], writes: [] }]);
      assert.equal(await store.lastSeq(s, actor), 3);
      assert.equal(await store.lastSeq(s, `${actor}-other`), 0);
    });

    test("fencing: a stale epoch is refused and writes nothing", async () => {
      const s = shard();
      const actor = `channel.1.${run}-fence`;
      const e1 = (await store.acquireLease(s, "A", 150))!;
      await store.append(s, e1, actor, 1, [bytes(1)]);
      await store.saveSnapshot(s, e1, actor, { seq: 1, data: "A1" });
      await store.append(s, e1, actor, 2, [bytes(2)]);
      await sleep(250);
      // Expired and not yet taken: still refused.
      await fenced(store.append(s, e1, actor, 3, [bytes(3)]), s, e1);
      const e2 = (await store.acquireLease(s, "B", 10_000))!;
      assert.ok(e2 > e1);
      await fenced(store.append(s, e1, actor, 3, [bytes(3)]), s, e1);
      await fenced(store.saveSnapshot(s, e1, actor, { seq: 2, data: "A2" }), s, e1);
      await fenced(store.append(s, e2 + 1, actor, 3, [bytes(3)]), s, e2 + 1);
      assert.deepEqual(await store.loadSnapshot(s, actor), { seq: 1, data: "A1" });
      assert.deepEqual(
        (await store.readJournal(s, actor, 0)).map((x) => x.seq),
        [2],
      );
      // The new owner continues the same sequence.
      await store.append(s, e2, actor, 3, [bytes(3)]);
      assert.deepEqual(
        (await store.readJournal(s, actor, 1)).map((x) => [x.seq, [...x.data]]),
        [
          [2, [2]],
          [3, [3]],
        ],
      );
      // An appender on a shard nobody ever leased is refused too.
      const never = shard();
      await fenced(store.append(never, 1, actor, 1, [bytes(1)]), never, 1);
      await fenced(store.saveSnapshot(never, 1, actor, { seq: 1, data: "x" }), never, 1);
    });

    test("fencing: a non-contiguous seq is refused and writes nothing", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const actor = `user.2.${run}-gap`;
      await fenced(store.append(s, e, actor, 2, [bytes(2)]), s, e); // must start at 1
      await store.append(s, e, actor, 1, [bytes(1), bytes(2)]);
      await fenced(store.append(s, e, actor, 4, [bytes(4)]), s, e); // gap
      await fenced(store.append(s, e, actor, 2, [bytes(9)]), s, e); // overlap
      await fenced(store.append(s, e, actor, 1, [bytes(9)]), s, e); // replay
      assert.deepEqual(
        (await store.readJournal(s, actor, 0)).map((x) => [x.seq, [...x.data]]),
        [
          [1, [1]],
          [2, [2]],
        ],
      );
      await store.append(s, e, actor, 3, [bytes(3)]);
      assert.equal((await store.readJournal(s, actor, 0)).length, 3);
    });

    test("appendMany: several actors in one step, each with its own sequence", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const [a, b, c] = ["a", "b", "c"].map((x) => `user.3.${run}-many-${x}`) as [string, string, string];
      await store.append(s, e, a, 1, [bytes(1)]);
      assert.deepEqual(
        await store.appendMany(s, e, [
          { actor: a, firstSeq: 2, entries: [bytes(2), bytes(3)] },
          { actor: b, firstSeq: 1, entries: [text("héllo ✓")] },
          { actor: c, firstSeq: 1, entries: [] },
        ]),
        [true, true, true],
      );
      assert.deepEqual(
        (await store.readJournal(s, a, 0)).map((x) => [x.seq, [...x.data]]),
        [
          [1, [1]],
          [2, [2]],
          [3, [3]],
        ],
      );
      assert.deepEqual(
        (await store.readJournal(s, b, 0)).map((x) => [x.seq, Buffer.from(x.data).toString()]),
        [[1, "héllo ✓"]],
      );
      assert.deepEqual(await store.readJournal(s, c, 0), []);
      // A non-contiguous item is skipped and reported; the others are written.
      assert.deepEqual(
        await store.appendMany(s, e, [
          { actor: a, firstSeq: 3, entries: [bytes(9)] },
          { actor: b, firstSeq: 2, entries: [bytes(2)] },
        ]),
        [false, true],
      );
      assert.equal((await store.readJournal(s, a, 0)).length, 3);
      assert.equal((await store.readJournal(s, b, 0)).length, 2);
      // The single-actor path continues the same sequences.
      await store.append(s, e, a, 4, [bytes(4)]);
      assert.deepEqual(await store.appendMany(s, e, []), []);
    });

    test("appendMany: a stale epoch is refused and writes nothing", async () => {
      const s = shard();
      const e1 = (await store.acquireLease(s, "A", 10_000))!;
      const actor = `user.4.${run}-many-fence`;
      await store.appendMany(s, e1, [{ actor, firstSeq: 1, entries: [bytes(1)] }]);
      await fenced(store.appendMany(s, e1 + 1, [{ actor, firstSeq: 2, entries: [bytes(2)] }]), s, e1 + 1);
      await store.releaseLease(s, "A", e1);
      const e2 = (await store.acquireLease(s, "B", 10_000))!;
      await fenced(
        store.appendMany(s, e1, [
          { actor, firstSeq: 2, entries: [bytes(2)] },
          { actor: `${actor}-2`, firstSeq: 1, entries: [bytes(1)] },
        ]),
        s,
        e1,
      );
      assert.equal((await store.readJournal(s, actor, 0)).length, 1);
      assert.deepEqual(await store.readJournal(s, `${actor}-2`, 0), []);
      assert.deepEqual(await store.appendMany(s, e2, [{ actor, firstSeq: 2, entries: [bytes(2)] }]), [true]);
      const never = shard();
      await fenced(store.appendMany(never, 1, [{ actor, firstSeq: 1, entries: [bytes(1)] }]), never, 1);
    });

    test("snapshot: save/load, journal trimmed, null when absent", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const actor = `realm.1.${run}-snap`;
      assert.equal(await store.loadSnapshot(s, actor), null);
      await store.append(
        s,
        e,
        actor,
        1,
        [1, 2, 3, 4, 5].map((n) => bytes(n)),
      );
      const data = JSON.stringify({ name: "héllo ✓ 💬", n: [1, 2, 3], empty: "" });
      await store.saveSnapshot(s, e, actor, { seq: 3, data });
      assert.deepEqual(await store.loadSnapshot(s, actor), { seq: 3, data });
      assert.deepEqual(
        (await store.readJournal(s, actor, 0)).map((x) => x.seq),
        [4, 5],
      );
      // Covering the whole journal leaves it empty and the sequence continues.
      await store.saveSnapshot(s, e, actor, { seq: 5, data: "five" });
      assert.deepEqual(await store.readJournal(s, actor, 0), []);
      await fenced(store.append(s, e, actor, 5, [bytes(5)]), s, e);
      await store.append(s, e, actor, 6, [bytes(6)]);
      assert.deepEqual(
        (await store.readJournal(s, actor, 5)).map((x) => x.seq),
        [6],
      );
      // An empty snapshot text is a snapshot, not an absence.
      await store.saveSnapshot(s, e, actor, { seq: 6, data: "" });
      assert.deepEqual(await store.loadSnapshot(s, actor), { seq: 6, data: "" });
      assert.equal(await store.loadSnapshot(s, `${actor}-none`), null);
    });

    test("snapshot: an older snapshot never replaces a newer one", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const actor = `group.1.${run}-old`;
      await store.append(s, e, actor, 1, [bytes(1), bytes(2), bytes(3)]);
      await store.saveSnapshot(s, e, actor, { seq: 3, data: "three" });
      await store.saveSnapshot(s, e, actor, { seq: 2, data: "two" });
      assert.deepEqual(await store.loadSnapshot(s, actor), { seq: 3, data: "three" });
    });

    test("nextId: starts at 1, monotonic, independent scopes", async () => {
      const a = `${run}:user`;
      const b = `${run}:channel`;
      assert.equal(await store.nextId(a), 1);
      assert.equal(await store.nextId(a), 2);
      assert.equal(await store.nextId(b), 1);
      const many = await Promise.all(Array.from({ length: 50 }, () => store.nextId(a)));
      assert.deepEqual(
        [...many].sort((x, y) => x - y),
        Array.from({ length: 50 }, (_, i) => i + 3),
      );
      assert.equal(await store.nextId(b), 2);
    });

    test("export scans: listActors, listCounters; raiseCounter never moves back", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const journaled = `user.7.${run}-listed`;
      const snapped = `channel.7.${run}-listed`;
      await store.append(s, e, journaled, 1, [bytes(1)]);
      await store.saveSnapshot(s, e, snapped, { seq: 4, data: "four" });
      const listed = (await store.listActors(nextShard + 1)).filter((a) => a.actor.includes(`${run}-listed`));
      assert.deepEqual(listed.map((a) => a.actor).sort(), [snapped, journaled].sort());
      // Reads with the reported shard find the data.
      for (const a of listed) {
        const snap = await store.loadSnapshot(a.shard, a.actor);
        const j = await store.readJournal(a.shard, a.actor, 0);
        assert.ok(snap !== null || j.length > 0, a.actor);
      }
      const scope = `${run}:export.7`;
      assert.equal(await store.nextId(scope), 1);
      const before = (await store.listCounters()).find((c) => c.scope === scope);
      assert.ok(before !== undefined && before.value >= 1);
      await store.raiseCounter(scope, 500);
      assert.equal(await store.nextId(scope), 501);
      await store.raiseCounter(scope, 10);
      assert.equal(await store.nextId(scope), 502);
      const fresh = `${run}:fresh.7`;
      await store.raiseCounter(fresh, 41);
      assert.equal(await store.nextId(fresh), 42);
      const after = (await store.listCounters()).find((c) => c.scope === fresh);
      assert.ok(after !== undefined && after.value >= 42);
    });

    test("export scans: listRecords and listIndexes by key prefix, with their shards", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const own = `${run}-scan:`;
      await store.append(
        s,
        e,
        `channel.7.${run}-scan`,
        1,
        [bytes(1)],
        [
          { op: "put", key: `${own}m:1`, value: bytes(11) },
          { op: "put", key: `${own}m:2`, value: bytes(12) },
          { op: "put", key: `${run}-other:m:1`, value: bytes(13) },
          { op: "index", index: `${own}ids`, add: [2, 1, 30] },
          { op: "index", index: `${own}t:x`, add: [1] },
          { op: "index", index: `${run}-other:ids`, add: [5] },
        ],
      );
      const records = (await store.listRecords(nextShard + 1, own)).sort((a, b) => (a.key < b.key ? -1 : 1));
      assert.deepEqual(
        records.map((r) => [r.key, [...r.value]]),
        [
          [`${own}m:1`, [...bytes(11)]],
          [`${own}m:2`, [...bytes(12)]],
        ],
      );
      // Reads with the reported shard find them.
      for (const r of records) assert.notEqual((await store.getRecords(r.shard, [r.key]))[0], null);
      const indexes = (await store.listIndexes(nextShard + 1, own)).sort((a, b) =>
        a.index < b.index ? -1 : 1,
      );
      assert.deepEqual(
        indexes.map((x) => [x.index, x.ids]),
        [
          [`${own}ids`, [1, 2, 30]],
          [`${own}t:x`, [1]],
        ],
      );
      for (const x of indexes) assert.equal(await store.indexSize(x.shard, x.index), x.ids.length);
    });

    test("concurrency: appends from many actors issued in one tick all succeed", async () => {
      const s1 = shard();
      const s2 = shard();
      const e1 = (await store.acquireLease(s1, "A", 10_000))!;
      const e2 = (await store.acquireLease(s2, "A", 10_000))!;
      const actors = Array.from({ length: 200 }, (_, i) => `user.9.${run}-c${i}`);
      const sh = (i: number) => (i % 2 ? s1 : s2);
      const ep = (i: number) => (i % 2 ? e1 : e2);
      await Promise.all(actors.map((a, i) => store.append(sh(i), ep(i), a, 1, [text(`${a}#1`)])));
      // Several appends to one actor in one tick keep their order.
      await Promise.all(
        actors.flatMap((a, i) => [
          store.append(sh(i), ep(i), a, 2, [text(`${a}#2`)]),
          store.append(sh(i), ep(i), a, 3, [text(`${a}#3`), text(`${a}#4`)]),
        ]),
      );
      const journals = await Promise.all(actors.map((a, i) => store.readJournal(sh(i), a, 0)));
      journals.forEach((j, i) => {
        assert.deepEqual(
          j.map((x) => new TextDecoder().decode(x.data)),
          [1, 2, 3, 4].map((n) => `${actors[i]}#${n}`),
        );
      });
    });

    test("records: put, batched get, overwrite, delete, binary values, per shard", async () => {
      const s = shard();
      const other = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const eo = (await store.acquireLease(other, "A", 10_000))!;
      const actor = `channel.1.${run}-rec`;
      // Keys are the caller's: colons and braces must not matter.
      const [k1, k2, k3] = ["1:msg:1", "1:msg:{2}", "1:msg:3"];
      assert.deepEqual(await store.getRecords(s, [k1, k2]), [null, null]);
      assert.deepEqual(await store.getRecords(s, []), []);
      await store.append(
        s,
        e,
        actor,
        1,
        [bytes(1)],
        [
          { op: "put", key: k1, value: text("first") },
          { op: "put", key: k2, value: bytes(0x00, 0xff, 0x00) },
          { op: "put", key: k3, value: new Uint8Array(0) },
          { op: "put", key: k1, value: text("héllo ✓ 💬") }, // a later put of a key wins
        ],
      );
      const got = await store.getRecords(s, [k3, "1:msg:none", k1, k2, k1]);
      assert.ok(got.every((v) => v === null || v instanceof Uint8Array));
      assert.deepEqual(
        got.map((v) => (v === null ? null : [...v])),
        [[], null, [...text("héllo ✓ 💬")], [0x00, 0xff, 0x00], [...text("héllo ✓ 💬")]],
      );
      // The same key on another shard is another record.
      assert.deepEqual(await store.getRecords(other, [k1]), [null]);
      await store.append(
        other,
        eo,
        `${actor}-other`,
        1,
        [bytes(1)],
        [{ op: "put", key: k1, value: text("other") }],
      );
      assert.deepEqual(
        (await store.getRecords(other, [k1])).map((v) => new TextDecoder().decode(v!)),
        ["other"],
      );
      await store.append(
        s,
        e,
        actor,
        2,
        [bytes(2)],
        [
          { op: "delete", key: k2 },
          { op: "delete", key: "1:msg:never" },
          { op: "put", key: k3, value: bytes(3) },
        ],
      );
      assert.deepEqual(
        (await store.getRecords(s, [k1, k2, k3])).map((v) => (v === null ? null : v.length)),
        [text("héllo ✓ 💬").length, null, 1],
      );
      // Delete then put again in one append: order is kept.
      await store.append(
        s,
        e,
        actor,
        3,
        [bytes(3)],
        [
          { op: "delete", key: k2 },
          { op: "put", key: k2, value: bytes(9) },
        ],
      );
      assert.deepEqual(
        (await store.getRecords(s, [k2])).map((v) => [...v!]),
        [[9]],
      );
      assert.deepEqual(
        (await store.readJournal(s, actor, 0)).map((x) => x.seq),
        [1, 2, 3],
      );
    });

    test("index: range reads around anchors at both ends, reverse, limit", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const ix = `1:conv:{7}:${run}`;
      const even = Array.from({ length: 20 }, (_, i) => 2 * (i + 1)); // 2, 4, ..., 40
      // Added out of order, in two writes: the index orders them.
      await store.append(
        s,
        e,
        `channel.1.${run}-ix`,
        1,
        [bytes(1)],
        [
          { op: "index", index: ix, add: even.slice(10).reverse() },
          { op: "index", index: ix, add: even.slice(0, 10) },
        ],
      );
      const r = (range: Parameters<Store["rangeIndex"]>[2]) => store.rangeIndex(s, ix, range);
      const span = (from: number, to: number) => even.filter((x) => x >= from && x <= to);
      assert.equal(await store.indexSize(s, ix), 20);
      assert.deepEqual(await r({ limit: 100 }), even);
      assert.deepEqual(await r({ limit: 100, reverse: true }), even);
      // Oldest and newest ends.
      assert.deepEqual(await r({ limit: 3 }), [2, 4, 6]);
      assert.deepEqual(await r({ limit: 3, reverse: true }), [36, 38, 40]);
      // Before an anchor in the index, and one not in it.
      assert.deepEqual(await r({ before: 10, limit: 100 }), [2, 4, 6, 8]);
      assert.deepEqual(await r({ before: 10, limit: 2 }), [2, 4]);
      assert.deepEqual(await r({ before: 10, limit: 2, reverse: true }), [6, 8]);
      assert.deepEqual(await r({ before: 11, limit: 2, reverse: true }), [8, 10]);
      // After an anchor.
      assert.deepEqual(await r({ after: 36, limit: 10 }), [38, 40]);
      assert.deepEqual(await r({ after: 35, limit: 1 }), [36]);
      assert.deepEqual(await r({ after: 36, limit: 1, reverse: true }), [40]);
      assert.deepEqual(await r({ after: 0, limit: 2 }), [2, 4]);
      // Both anchors.
      assert.deepEqual(await r({ after: 10, before: 20, limit: 100 }), span(12, 18));
      assert.deepEqual(await r({ after: 10, before: 20, limit: 2 }), [12, 14]);
      assert.deepEqual(await r({ after: 10, before: 20, limit: 2, reverse: true }), [16, 18]);
      assert.deepEqual(await r({ after: 9, before: 21, limit: 100, reverse: true }), span(10, 20));
      // Nothing beyond the ends, nothing in an empty or inverted range.
      assert.deepEqual(await r({ before: 2, limit: 10 }), []);
      assert.deepEqual(await r({ before: 2, limit: 10, reverse: true }), []);
      assert.deepEqual(await r({ before: 0, limit: 10, reverse: true }), []);
      assert.deepEqual(await r({ after: 40, limit: 10 }), []);
      assert.deepEqual(await r({ after: 40, limit: 10, reverse: true }), []);
      assert.deepEqual(await r({ after: Number.MAX_SAFE_INTEGER, limit: 10 }), []);
      assert.deepEqual(await r({ after: 20, before: 22, limit: 10 }), []);
      assert.deepEqual(await r({ after: 20, before: 20, limit: 10 }), []);
      assert.deepEqual(await r({ after: 30, before: 10, limit: 10, reverse: true }), []);
      assert.deepEqual(await r({ limit: 0 }), []);
      assert.deepEqual(await r({ limit: 0, reverse: true }), []);
      // An index never written is empty.
      assert.deepEqual(await store.rangeIndex(s, `${ix}-none`, { limit: 10 }), []);
      assert.equal(await store.indexSize(s, `${ix}-none`), 0);

      // The extreme ids: 0 and 2^53 - 1.
      const top = Number.MAX_SAFE_INTEGER;
      const edge = `${ix}-edge`;
      await store.append(
        s,
        e,
        `channel.1.${run}-ix`,
        2,
        [bytes(2)],
        [{ op: "index", index: edge, add: [top, 1, 0] }],
      );
      const re = (range: Parameters<Store["rangeIndex"]>[2]) => store.rangeIndex(s, edge, range);
      assert.deepEqual(await re({ limit: 10 }), [0, 1, top]);
      assert.deepEqual(await re({ limit: 1, reverse: true }), [top]);
      assert.deepEqual(await re({ limit: 1 }), [0]);
      assert.deepEqual(await re({ after: 0, limit: 10 }), [1, top]);
      assert.deepEqual(await re({ before: top, limit: 10, reverse: true }), [0, 1]);
      assert.deepEqual(await re({ before: 1, limit: 10, reverse: true }), [0]);
      assert.deepEqual(await re({ after: 1, before: top, limit: 10 }), []);
    });

    test("index: removes, repeated adds, indexSize", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const actor = `channel.2.${run}-ixdel`;
      const ix = `1:topic:${run}`;
      await store.append(s, e, actor, 1, [bytes(1)], [{ op: "index", index: ix, add: [1, 2, 3, 3] }]);
      assert.equal(await store.indexSize(s, ix), 3);
      await store.append(s, e, actor, 2, [bytes(2)], [{ op: "index", index: ix, add: [2, 3, 4] }]);
      assert.equal(await store.indexSize(s, ix), 4);
      await store.append(s, e, actor, 3, [bytes(3)], [{ op: "unindex", index: ix, remove: [2, 99, 2] }]);
      assert.equal(await store.indexSize(s, ix), 3);
      assert.deepEqual(await store.rangeIndex(s, ix, { limit: 10 }), [1, 3, 4]);
      assert.deepEqual(await store.rangeIndex(s, ix, { after: 1, limit: 1 }), [3]);
      assert.deepEqual(await store.rangeIndex(s, ix, { before: 4, limit: 1, reverse: true }), [3]);
      // Add and remove in one append, in order.
      await store.append(
        s,
        e,
        actor,
        4,
        [bytes(4)],
        [
          { op: "unindex", index: ix, remove: [1, 3, 4] },
          { op: "index", index: ix, add: [5] },
          { op: "unindex", index: ix, remove: [5] },
        ],
      );
      assert.equal(await store.indexSize(s, ix), 0);
      assert.deepEqual(await store.rangeIndex(s, ix, { limit: 10 }), []);
      assert.deepEqual(await store.rangeIndex(s, ix, { limit: 10, reverse: true }), []);
      await store.append(s, e, actor, 5, [bytes(5)], [{ op: "index", index: ix, add: [7] }]);
      assert.deepEqual(await store.rangeIndex(s, ix, { limit: 10 }), [7]);
      assert.equal(await store.indexSize(s, ix), 1);
    });

    test("writes are atomic with the journal: a fenced append writes no record and no index entry", async () => {
      const s = shard();
      const actor = `channel.3.${run}-wfence`;
      const ix = `1:conv:${run}-wfence`;
      const put = (k: string, ...ids: number[]) => [
        { op: "put" as const, key: k, value: text(k) },
        { op: "index" as const, index: ix, add: ids },
      ];
      const e1 = (await store.acquireLease(s, "A", 10_000))!;
      await store.append(s, e1, actor, 1, [bytes(1)], put("m1", 1));
      await store.releaseLease(s, "A", e1);
      const e2 = (await store.acquireLease(s, "B", 10_000))!;
      // The old owner: append, appendMany, and a writes-only append are all refused.
      await fenced(store.append(s, e1, actor, 2, [bytes(2)], put("m2", 2)), s, e1);
      await fenced(store.append(s, e1, actor, 2, [], put("m2", 2)), s, e1);
      await fenced(
        store.appendMany(s, e1, [
          { actor, firstSeq: 2, entries: [bytes(2)], writes: put("m2", 2) },
          { actor: `${actor}-2`, firstSeq: 1, entries: [bytes(1)], writes: put("m3", 3) },
        ]),
        s,
        e1,
      );
      // An epoch never handed out.
      await fenced(store.append(s, e2 + 1, actor, 2, [bytes(2)], put("m2", 2)), s, e2 + 1);
      // And a shard nobody leased.
      const never = shard();
      await fenced(store.append(never, 1, actor, 1, [bytes(1)], put("m2", 2)), never, 1);
      assert.deepEqual(await store.getRecords(never, ["m2"]), [null]);
      assert.equal(await store.indexSize(never, ix), 0);

      assert.deepEqual(
        (await store.getRecords(s, ["m1", "m2", "m3"])).map((v) => v !== null),
        [true, false, false],
      );
      assert.deepEqual(await store.rangeIndex(s, ix, { limit: 10 }), [1]);
      assert.equal(await store.indexSize(s, ix), 1);
      assert.deepEqual(
        (await store.readJournal(s, actor, 0)).map((x) => x.seq),
        [1],
      );
      // The new owner writes, continuing the sequence.
      await store.append(s, e2, actor, 2, [bytes(2)], put("m2", 2));
      assert.deepEqual(await store.rangeIndex(s, ix, { limit: 10 }), [1, 2]);
    });

    test("writes are atomic with the journal: an item skipped for its seq writes none of its writes", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const [a, b, c] = ["a", "b", "c"].map((x) => `channel.4.${run}-wgap-${x}`) as [string, string, string];
      const ix = (x: string) => `1:conv:${x}`;
      await store.append(s, e, a, 1, [bytes(1)]);
      // append: a gap, an overlap and a replay all write nothing.
      for (const seq of [3, 1]) {
        await fenced(
          store.append(
            s,
            e,
            a,
            seq,
            [bytes(seq)],
            [
              { op: "put", key: `${a}:x`, value: bytes(1) },
              { op: "index", index: ix(a), add: [1] },
            ],
          ),
          s,
          e,
        );
      }
      assert.deepEqual(await store.getRecords(s, [`${a}:x`]), [null]);
      assert.equal(await store.indexSize(s, ix(a)), 0);
      // appendMany: the skipped item's writes are not applied, the others' are,
      // including those of an item with no entries.
      await store.append(s, e, b, 1, [bytes(1)], [{ op: "index", index: ix(b), add: [5] }]);
      assert.deepEqual(
        await store.appendMany(s, e, [
          {
            actor: a,
            firstSeq: 2,
            entries: [bytes(2)],
            writes: [
              { op: "put", key: `${a}:2`, value: bytes(2) },
              { op: "index", index: ix(a), add: [2, 3] },
            ],
          },
          {
            actor: b,
            firstSeq: 5,
            entries: [bytes(5)],
            writes: [
              { op: "put", key: `${b}:5`, value: bytes(5) },
              { op: "index", index: ix(b), add: [6] },
              { op: "unindex", index: ix(b), remove: [5] },
              { op: "delete", key: `${a}:2` },
            ],
          },
          { actor: c, firstSeq: 1, entries: [], writes: [{ op: "put", key: `${c}:0`, value: bytes(0) }] },
          { actor: c, firstSeq: 1, entries: [bytes(1)], writes: [{ op: "index", index: ix(c), add: [9] }] },
        ]),
        [true, false, true, true],
      );
      assert.deepEqual(
        (await store.getRecords(s, [`${a}:2`, `${b}:5`, `${c}:0`])).map((v) => (v === null ? null : [...v])),
        [[2], null, [0]],
      );
      assert.deepEqual(await store.rangeIndex(s, ix(a), { limit: 10 }), [2, 3]);
      assert.deepEqual(await store.rangeIndex(s, ix(b), { limit: 10 }), [5]);
      assert.deepEqual(await store.rangeIndex(s, ix(c), { limit: 10 }), [9]);
      assert.deepEqual(
        (await store.readJournal(s, b, 0)).map((x) => x.seq),
        [1],
      );
    });

    test("writes: a bad write is refused before anything of its append is written", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 10_000))!;
      const actor = `channel.5.${run}-wbad`;
      const ok = { op: "put" as const, key: "k", value: bytes(1) };
      for (const id of [-1, 1.5, 2 ** 53, Number.NaN]) {
        await assert.rejects(
          store.append(s, e, actor, 1, [bytes(1)], [ok, { op: "index", index: "i", add: [1, id] }]),
          RangeError,
        );
        await assert.rejects(
          store.appendMany(s, e, [
            { actor, firstSeq: 1, entries: [bytes(1)], writes: [ok] },
            {
              actor: `${actor}-2`,
              firstSeq: 1,
              entries: [bytes(1)],
              writes: [{ op: "unindex", index: "i", remove: [id] }],
            },
          ]),
          RangeError,
        );
      }
      await assert.rejects(
        store.append(s, e, actor, 1, [bytes(1)], [{ op: "put", key: "x".repeat(513), value: bytes(1) }]),
        RangeError,
      );
      await assert.rejects(store.rangeIndex(s, "i", { limit: -1 }), RangeError);
      await assert.rejects(store.rangeIndex(s, "i", { limit: 1, before: -1 }), RangeError);
      assert.deepEqual(await store.getRecords(s, ["k"]), [null]);
      assert.equal(await store.indexSize(s, "i"), 0);
      assert.deepEqual(await store.readJournal(s, actor, 0), []);
      assert.deepEqual(await store.readJournal(s, `${actor}-2`, 0), []);
    });

    test("index: 100k ids; range reads return exactly the ids asked for at either end and in the middle", async () => {
      const s = shard();
      const e = (await store.acquireLease(s, "A", 60_000))!;
      const actor = `channel.6.${run}-large`;
      const ix = `1:conv:${run}-large`;
      const N = 100_000;
      const BATCH = 10_000;
      for (let b = 0; b < N / BATCH; b++) {
        const ids = Array.from({ length: BATCH }, (_, i) => b * BATCH + i + 1);
        await store.append(
          s,
          e,
          actor,
          b + 1,
          [bytes(b)],
          [
            { op: "index", index: ix, add: ids },
            // The records of the first and last 100 ids.
            ...ids
              .filter((id) => id <= 100 || id > N - 100)
              .map((id) => ({ op: "put" as const, key: `m:${id}`, value: text(String(id)) })),
          ],
        );
      }
      assert.equal(await store.indexSize(s, ix), N);
      const seq = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
      // Newest 100 and their records: the read a conversation's first page makes.
      const newest = await store.rangeIndex(s, ix, { limit: 100, reverse: true });
      assert.deepEqual(newest, seq(N - 99, 100));
      const recs = await store.getRecords(
        s,
        newest.map((id) => `m:${id}`),
      );
      assert.deepEqual(
        recs.map((v) => Number(new TextDecoder().decode(v!))),
        newest,
      );
      assert.deepEqual(await store.rangeIndex(s, ix, { limit: 100 }), seq(1, 100));
      assert.deepEqual(
        await store.rangeIndex(s, ix, { before: 50_001, limit: 100, reverse: true }),
        seq(49_901, 100),
      );
      assert.deepEqual(await store.rangeIndex(s, ix, { after: 50_000, limit: 100 }), seq(50_001, 100));
      assert.deepEqual(await store.rangeIndex(s, ix, { after: N - 10, limit: 100 }), seq(N - 9, 10));
      assert.deepEqual(await store.rangeIndex(s, ix, { before: 11, limit: 100, reverse: true }), seq(1, 10));
      assert.deepEqual(
        await store.rangeIndex(s, ix, { after: 70_000, before: 70_004, limit: 100 }),
        seq(70_001, 3),
      );
      // Remove a block in the middle; reads skip over it.
      await store.append(
        s,
        e,
        actor,
        N / BATCH + 1,
        [bytes(0)],
        [{ op: "unindex", index: ix, remove: seq(40_001, 20_000) }],
      );
      assert.equal(await store.indexSize(s, ix), N - 20_000);
      assert.deepEqual(
        await store.rangeIndex(s, ix, { before: 60_003, limit: 4, reverse: true }),
        [39_999, 40_000, 60_001, 60_002],
      );
      assert.deepEqual(
        await store.rangeIndex(s, ix, { after: 39_998, limit: 4 }),
        [39_999, 40_000, 60_001, 60_002],
      );
    });

    test("persistence: data survives close and reopen", async () => {
      const s = shard();
      const actor = `user.3.${run}-persist`;
      const scope = `${run}:persist`;
      const e1 = (await store.acquireLease(s, "A", 60_000))!;
      await store.append(s, e1, actor, 1, [bytes(0, 1), bytes(0xff)]);
      await store.saveSnapshot(s, e1, actor, { seq: 1, data: "one" });
      await store.append(
        s,
        e1,
        `${actor}-w`,
        1,
        [bytes(1)],
        [
          { op: "put", key: "kept", value: bytes(4, 2) },
          { op: "index", index: "ix", add: [3, 1, 2] },
        ],
      );
      assert.equal(await store.nextId(scope), 1);
      await store.close();
      store = await backend.open();
      assert.deepEqual(
        (await store.getRecords(s, ["kept"])).map((v) => [...v!]),
        [[4, 2]],
      );
      assert.deepEqual(await store.rangeIndex(s, "ix", { limit: 2, reverse: true }), [2, 3]);
      assert.equal(await store.indexSize(s, "ix"), 3);
      assert.deepEqual(await store.loadSnapshot(s, actor), { seq: 1, data: "one" });
      assert.deepEqual(
        (await store.readJournal(s, actor, 0)).map((x) => [x.seq, [...x.data]]),
        [[2, [0xff]]],
      );
      assert.deepEqual(await store.leaseHolder(s), { node: "A", epoch: e1 });
      assert.equal(await store.acquireLease(s, "B", 60_000), null);
      await store.append(s, e1, actor, 3, [bytes(3)]);
      const e2 = (await store.acquireLease(s, "A", 60_000))!;
      assert.ok(e2 > e1);
      await fenced(store.append(s, e1, actor, 4, [bytes(4)]), s, e1);
      assert.equal(await store.nextId(scope), 2);
    });
  });
}

// ---------------------------------------------------------------- LMDB

let lmdbDir = "";
conformance("lmdb", {
  async setup() {
    // A dot in the name: DATA_DIR "chat.data" is a directory, not a file.
    lmdbDir = mkdtempSync(join(tmpdir(), "lmdb.store-"));
  },
  async open() {
    return createLmdbStore(lmdbDir);
  },
  async teardown() {
    rmSync(lmdbDir, { recursive: true, force: true });
  },
});

// ---------------------------------------------------------------- Redis

const redisSkip = requireBinaries("redis-server");
let redis: Service | undefined;
const PREFIX = "t:";
conformance(
  "redis",
  {
    async setup() {
      redis = await startRedis();
    },
    async open() {
      return createRedisStore(redis!.url, { prefix: PREFIX });
    },
    async teardown() {
      await redis?.stop();
    },
  },
  redisSkip,
);

// ---------------------------------------------------------------- Redis Cluster
// Three masters, no replicas (startRedisCluster): the shards' keys spread
// over all of them, so every script runs on whichever node holds its slot.

let redisCluster: RedisClusterService | undefined;
conformance(
  "redis cluster",
  {
    async setup() {
      redisCluster = await startRedisCluster(3);
    },
    async open() {
      return createRedisClusterStore(redisCluster!.urls, { prefix: PREFIX });
    },
    async teardown() {
      await redisCluster?.stop();
    },
  },
  requireBinaries("redis-server", "redis-cli"),
);

describe("redis store: key layout and redis-om schema", { skip: redisSkip }, () => {
  let svc: Service;
  let store: Store;
  let raw: ReturnType<typeof createClient>;

  before(async () => {
    svc = await startRedis();
    store = await createRedisStore(svc.url);
    raw = createClient({ url: svc.url });
    await raw.connect();
  });
  after(async () => {
    await store?.close();
    if (raw?.isOpen) await raw.quit();
    await svc?.stop();
  });

  test("repository.fetch reads the hash the fenced Lua script wrote, in redis-om's own layout", async () => {
    const e = (await store.acquireLease(17, "A", 10_000))!;
    await store.append(17, e, "user.1.42", 1, [bytes(1), bytes(2)]);
    await store.saveSnapshot(17, e, "user.1.42", { seq: 2, data: '{"x":"é"}' });

    const key = "Snapshot:{s17}:user.1.42";
    assert.deepEqual(
      { ...(await raw.hGetAll(key)) },
      {
        actor: "user.1.42",
        seq: "2",
        epoch: String(e),
        data: '{"x":"é"}',
      },
    );
    const repo = new Repository(snapshotSchema(), raw);
    const ent = await repo.fetch(snapshotEntityId(17, "user.1.42"));
    assert.equal(ent.actor, "user.1.42");
    assert.equal(ent.seq, 2);
    assert.equal(ent.epoch, e);
    assert.equal(ent.data, '{"x":"é"}');

    // redis-om's own save of the same entity writes the identical hash.
    const id = snapshotEntityId(18, "user.1.42");
    await repo.save(id, { actor: "user.1.42", seq: 2, epoch: e, data: '{"x":"é"}' });
    assert.deepEqual({ ...(await raw.hGetAll(`Snapshot:${id}`)) }, { ...(await raw.hGetAll(key)) });
  });

  test("every key carries its shard's (or counter's) hash tag", async () => {
    const e = (await store.acquireLease(5, "A", 10_000))!;
    await store.append(5, e, "channel.1.7", 1, [bytes(1), bytes(2)]);
    await store.saveSnapshot(5, e, "channel.1.7", { seq: 1, data: "s" });
    await store.nextId("1:message");
    const keys = (await raw.keys("*")).sort();
    for (const k of [
      "{s5}:lease",
      "{s5}:epoch",
      "{s5}:jlast",
      "{s5}:j:channel.1.7",
      "Snapshot:{s5}:channel.1.7",
      "ctr:{1:message}",
    ]) {
      assert.ok(keys.includes(k), `${k} in ${keys.join(", ")}`);
    }
    for (const k of keys) assert.match(k, /^[^{]*\{[^}]+\}/, `${k} has a hash tag`);
    assert.equal(await raw.type("{s5}:j:channel.1.7"), "stream");
    assert.equal(await raw.hGet("{s5}:jlast", "channel.1.7"), "2");
    assert.match((await raw.get("{s5}:lease"))!, new RegExp(`^A:${e}$`));
    assert.ok((await raw.pTTL("{s5}:lease")) > 0);
    assert.equal(await raw.pTTL("{s5}:epoch"), -1);
  });

  test("records are strings and indexes sorted sets (score = id), under the shard's tag", async () => {
    const e = (await store.acquireLease(6, "A", 10_000))!;
    await store.append(
      6,
      e,
      "channel.1.8",
      1,
      [bytes(1)],
      [
        { op: "put", key: "1:msg:{9}", value: bytes(0, 1) },
        { op: "index", index: "1:conv:8", add: [12, 3] },
      ],
    );
    assert.equal(await raw.type("{s6}:r:1:msg:{9}"), "string");
    assert.deepEqual(
      [...(await raw.sendCommand<Buffer>(["GET", "{s6}:r:1:msg:{9}"], { returnBuffers: true }))],
      [0, 1],
    );
    assert.equal(await raw.type("{s6}:x:1:conv:8"), "zset");
    assert.deepEqual(await raw.zRangeWithScores("{s6}:x:1:conv:8", 0, -1), [
      { value: "3", score: 3 },
      { value: "12", score: 12 },
    ]);
    assert.equal(await raw.pTTL("{s6}:r:1:msg:{9}"), -1);
    // Emptied by removes, the index key goes away (Redis drops empty sets).
    await store.append(
      6,
      e,
      "channel.1.8",
      2,
      [bytes(2)],
      [{ op: "unindex", index: "1:conv:8", remove: [3, 12] }],
    );
    assert.equal(await raw.exists("{s6}:x:1:conv:8"), 0);
  });

  test("scripts are reloaded after Redis loses its script cache (restart)", async () => {
    const e = (await store.acquireLease(9, "A", 60_000))!;
    await store.append(9, e, "user.1.9", 1, [bytes(1)]);
    await raw.scriptFlush();
    await store.append(9, e, "user.1.9", 2, [bytes(2)]);
    assert.equal((await store.readJournal(9, "user.1.9", 0)).length, 2);
  });

  test("a prefix with braces is rejected", async () => {
    await assert.rejects(createRedisStore(svc.url, { prefix: "{x}" }));
  });
});

describe(
  "redis cluster store: records and indexes live in their shard's slot",
  {
    skip: requireBinaries("redis-server", "redis-cli"),
  },
  () => {
    let cluster: RedisClusterService;
    let store: Store;
    const SHARDS = 24;

    before(async () => {
      cluster = await startRedisCluster(3);
      store = await createRedisClusterStore(cluster.urls);
    });
    after(async () => {
      await store?.close();
      await cluster?.stop();
    });

    test("every record and index key is in the slot (and on the master) of its shard's lease", async () => {
      for (let s = 1; s <= SHARDS; s++) {
        const e = (await store.acquireLease(s, "A", 60_000))!;
        // Braces in the caller's names must not move the key to another slot.
        await store.appendMany(s, e, [
          {
            actor: `channel.${s}.1`,
            firstSeq: 1,
            entries: [bytes(s)],
            writes: [
              { op: "put", key: `1:msg:{${s}}`, value: bytes(s) },
              { op: "put", key: `1:msg:${s}:b`, value: bytes(s, s) },
              { op: "index", index: `1:conv:{${s}}`, add: [s, s + 100] },
            ],
          },
        ]);
      }
      let records = 0;
      let indexes = 0;
      for (const url of cluster.urls) {
        const raw = createClient({ url });
        await raw.connect();
        try {
          const keys = [...(await raw.keys("{s*}:r:*")), ...(await raw.keys("{s*}:x:*"))];
          assert.ok(keys.length > 0, `${url} holds records or indexes of some shards`);
          for (const k of keys) {
            const shardTag = /^\{s(\d+)\}:/.exec(k)![1];
            const lease = `{s${shardTag}}:lease`;
            assert.equal(await raw.clusterKeySlot(k), await raw.clusterKeySlot(lease), k);
            assert.equal(await raw.exists(lease), 1, `${k}: its shard's lease is on the same master`);
            if (k.includes(":r:")) records++;
            else indexes++;
          }
        } finally {
          await raw.quit();
        }
      }
      assert.equal(records, 2 * SHARDS);
      assert.equal(indexes, SHARDS);
      // Reads are routed to each shard's master.
      for (let s = 1; s <= SHARDS; s++) {
        assert.deepEqual(
          (await store.getRecords(s, [`1:msg:{${s}}`, `1:msg:${s}:b`, "none"])).map((v) =>
            v ? [...v] : null,
          ),
          [[s], [s, s], null],
        );
        assert.deepEqual(await store.rangeIndex(s, `1:conv:{${s}}`, { limit: 10, reverse: true }), [
          s,
          s + 100,
        ]);
        assert.equal(await store.indexSize(s, `1:conv:{${s}}`), 2);
      }
    });
  },
);
