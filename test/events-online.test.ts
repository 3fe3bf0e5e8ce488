// Events reach the online only: a message to a channel whose subscribers
// mostly have no event queue activates no queue actor for them (read from
// the node's actor-activation counter), in embedded mode and in cluster mode
// (real nats-server and redis-server), including after kill -9 of the node
// that served a queue's shard; and queues registered while messages are
// being sent get every message after their register (cluster/live-queues.ts).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { queueRef } from "../actors/index.ts";
import { shardOf } from "../cluster/addressing.ts";
import type { RouterHost } from "../cluster/event-router.ts";
import { LiveQueues, liveQueuesId } from "../cluster/live-queues.ts";
import { createLmdbStore, type Store } from "../cluster/storage/index.ts";
import {
  assertSuccess,
  createChannel,
  makeApi,
  newUser,
  nodeOf,
  requireBinaries,
  useChat,
  useCluster,
  useEmbedded,
  useEnv,
  waitFor,
  type Api,
  type Creds,
} from "./support/index.ts";
import { bearer, metric, raw } from "./support/ops.ts";

const skip = requireBinaries("nats-server", "redis-server");
const TOKEN = `online-token-${process.pid}`;
const REALM = 1;

type Person = Creds & { userId: number };
interface Queue {
  api: Api;
  id: string;
  last: number;
}

let n = 0;

async function register(baseUrl: string, who: Person): Promise<Queue> {
  const api = makeApi(baseUrl, who);
  const r = await api("POST", "/register", { event_types: ["message"], fetch_event_types: ["message"] });
  assertSuccess(r);
  return { api, id: r.body.queue_id, last: r.body.last_event_id };
}

/** Message ids of the message events queued since the last read (non-blocking). */
async function received(q: Queue): Promise<number[]> {
  const r = await q.api("GET", "/events", { queue_id: q.id, last_event_id: q.last, dont_block: true });
  assertSuccess(r);
  const ids: number[] = [];
  for (const e of r.body.events as { id: number; type: string; message?: { id: number } }[]) {
    q.last = Math.max(q.last, e.id);
    if (e.type === "message") ids.push(e.message!.id);
  }
  return ids;
}

/** Poll until the queue holds `want` (every id), returning all ids read. */
async function receiveAll(q: Queue, want: number[], ms = 15_000): Promise<number[]> {
  const got: number[] = [];
  await waitFor(
    async () => {
      got.push(...(await received(q)));
      return want.every((id) => got.includes(id));
    },
    { what: `messages ${want.join(",")}`, timeoutMs: ms },
  );
  return got;
}

async function channel(api: Api, members: Person[]): Promise<number> {
  return (await createChannel({ api }, members, { name: `online ${++n}` })).id;
}

async function send(api: Api, channelId: number, content: string): Promise<number> {
  const r = await api("POST", "/messages", { type: "stream", to: channelId, topic: "t", content });
  assertSuccess(r);
  return r.body.id as number;
}

/** Queue actor activations so far, summed over the given /metrics URLs. */
async function queueActivations(urls: string[]): Promise<number> {
  let sum = 0;
  for (const url of urls) {
    const r = await raw(url, bearer(TOKEN));
    assert.equal(r.status, 200, r.text);
    const v = metric(r.text, "zulip_actors_actor_activations_total", { kind: "queue" });
    if (!Number.isNaN(v)) sum += v;
  }
  return sum;
}

describe("events online - embedded", () => {
  useEnv({ ADMIN_TOKEN: TOKEN });
  const srv = useEmbedded();

  test("events online - only subscribers with a queue get the message; the others' queue actors are never activated", async () => {
    const metrics = [`${srv.baseUrl}/metrics`];
    const start = await queueActivations(metrics);
    const people: Person[] = [];
    for (let i = 0; i < 30; i++) people.push(await newUser(srv));
    const online = people.slice(0, 4);
    const queues = [];
    for (const p of online) queues.push(await register(srv.baseUrl, p));
    const registered = await queueActivations(metrics);
    const ch = await channel(srv.api, people);
    const first = await send(srv.api, ch, "first");
    const second = await send(srv.api, ch, "second");
    for (const q of queues) assert.deepEqual(await receiveAll(q, [first, second]), [first, second]);
    // Only the four registrations activated queue actors: creating 30 users,
    // a channel for them and two messages to it activated none.
    assert.ok(registered - start <= online.length, `${registered - start} activations to register`);
    assert.equal(await queueActivations(metrics), registered, "queue actors of offline users activated");

    // A queue deleted: its user is skipped again; a new one: delivered to.
    const gone = queues.pop()!;
    assertSuccess(await gone.api("DELETE", "/events", { queue_id: gone.id }));
    const late = await register(srv.baseUrl, people[10]!);
    const third = await send(srv.api, ch, "third");
    for (const q of [...queues, late]) assert.deepEqual(await receiveAll(q, [third]), [third]);
    assert.ok((await queueActivations(metrics)) - registered <= 1, "only the late registration activated");
  });

  test("events online - queues registered while events are emitted get every event after their register", async () => {
    // user_status: the register state and the event come from the writer's
    // own actor, so "after the register" is exact: every status newer than
    // the one in the queue's register state must reach the queue.
    const people: Person[] = [];
    for (let i = 0; i < 12; i++) people.push(await newUser(srv));
    const [writer, ...others] = people as [Person, ...Person[]];
    const writerApi = makeApi(srv.baseUrl, writer);
    const texts: string[] = [];
    let writing = true;
    const writes = (async () => {
      for (let i = 1; writing; i++) {
        assertSuccess(await writerApi("POST", "/users/me/status", { status_text: `s${i}` }));
        texts.push(`s${i}`);
      }
    })();
    // Registrations interleaved with the writes, each by a user who never had a queue.
    const queues = await Promise.all(
      others.map(async (p, i) => {
        await new Promise((r) => setTimeout(r, i * 15));
        const api = makeApi(srv.baseUrl, p);
        const r = await api("POST", "/register", {
          event_types: ["user_status"],
          fetch_event_types: ["user_status"],
        });
        assertSuccess(r);
        const seen = (r.body.user_status[String(writer.userId)]?.status_text as string | undefined) ?? null;
        return { api, id: r.body.queue_id as string, last: r.body.last_event_id as number, seen };
      }),
    );
    await new Promise((r) => setTimeout(r, 200));
    writing = false;
    await writes;
    // The registrations did race with the writes.
    assert.ok(queues.some((q) => q.seen !== null));
    assert.ok(queues.some((q) => q.seen !== texts[texts.length - 1]));
    for (const [i, q] of queues.entries()) {
      const want = texts.slice(q.seen === null ? 0 : texts.indexOf(q.seen) + 1);
      const got: string[] = [];
      await waitFor(
        async () => {
          const r = await q.api("GET", "/events", {
            queue_id: q.id,
            last_event_id: q.last,
            dont_block: true,
          });
          assertSuccess(r);
          for (const e of r.body.events as { id: number; type: string; status_text?: string }[]) {
            q.last = e.id;
            if (e.type === "user_status") got.push(e.status_text!);
          }
          return want.every((t) => got.includes(t));
        },
        { what: `queue ${i}: ${want.length} statuses` },
      );
      // Every status after the register, once, in order. Statuses the
      // register state already had may come first: under a steady stream the
      // register race loop gives up after 4 fetches (docs/events.md).
      if (got.length === 0) {
        assert.deepEqual(want, [], `queue ${i}`);
        continue;
      }
      const from = texts.indexOf(got[0]!);
      assert.ok(from >= 0 && from <= texts.length - want.length, `queue ${i}: ${got.join(",")}`);
      assert.deepEqual(got, texts.slice(from), `queue ${i}: every status after its register, once, in order`);
    }
  });
});

describe("events online - queue expiry", () => {
  const chat = useChat();

  test("events online - a queue collected after its idle timeout takes its user out of the registry", async () => {
    const who = await chat.newUser();
    const ch = await channel(chat.api, [who as Person]);
    const api = makeApi(chat.srv.url, who);
    const r = await api("POST", "/register", { event_types: ["message"], idle_queue_timeout: 1 });
    assertSuccess(r);
    const router = chat.srv.router;
    const shard = shardOf(queueRef(REALM, who.userId), chat.srv.node.shards);
    assert.equal(router.live.skips(shard, REALM, who.userId), false, "registered: delivered to");
    // Nobody polls: the expiry timer collects the queue, and the registry lets the user go.
    await waitFor(async () => router.live.skips(shard, REALM, who.userId), {
      what: "the expired queue's user skipped",
    });
    const before = { ...router.stats };
    await send(chat.api, ch, "after expiry");
    assert.equal(router.stats.local, before.local, "nobody delivered to");
    assert.ok(router.stats.skipped > before.skipped);
    const gone = await api("GET", "/events", {
      queue_id: r.body.queue_id,
      last_event_id: -1,
      dont_block: true,
    });
    assert.equal(gone.body.code, "BAD_EVENT_QUEUE_ID");
  });
});

describe("events online - the registry in the store", () => {
  test("events online - the next owner loads the set from snapshot and journal; a fenced owner cannot add", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zulip-live-"));
    const store: Store = createLmdbStore(dir);
    const SHARD = 3;
    const owner = (node: string, epoch: number): RouterHost => ({
      nodeId: node,
      shards: 8,
      serves: () => true,
      request: () => Promise.reject(new Error("no requests here")),
      store,
      epoch: () => epoch,
    });
    try {
      const e1 = (await store.acquireLease(SHARD, "a", 60_000))!;
      const a = new LiveQueues(owner("a", e1));
      a.acquired(SHARD);
      await waitFor(async () => a.count(SHARD) !== null, { what: "loaded" });
      // Concurrent adds share writes; sequential ones cross the snapshot interval.
      await Promise.all(Array.from({ length: 300 }, (_, i) => a.add(SHARD, `1:${i}`)));
      for (let i = 300; i < 1200; i++) await a.add(SHARD, `1:${i}`);
      for (let i = 0; i < 1200; i += 12) a.remove(SHARD, `1:${i}`);
      await a.add(SHARD, "1:0"); // back, after its removal
      assert.equal(a.count(SHARD), 1101);
      assert.ok((await store.loadSnapshot(SHARD, liveQueuesId(SHARD)))!.seq > 0, "a snapshot was taken");

      // kill -9 of "a": its lease runs out and "b" takes the shard.
      await store.releaseLease(SHARD, "a", e1);
      const e2 = (await store.acquireLease(SHARD, "b", 60_000))!;
      const b = new LiveQueues(owner("b", e2));
      b.acquired(SHARD);
      await waitFor(async () => b.count(SHARD) !== null, { what: "loaded by the next owner" });
      assert.equal(b.count(SHARD), 1101);
      assert.equal(b.skips(SHARD, 1, 0), false);
      assert.equal(b.skips(SHARD, 1, 12), true);
      assert.equal(b.skips(SHARD, 1, 13), false);
      assert.equal(b.skips(SHARD, 1, 5000), true);
      // The old owner's write is fenced: its registration must fail.
      await assert.rejects(a.add(SHARD, "1:9999"));
      assert.equal(b.skips(SHARD, 1, 9999), true);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("events online - cluster", { skip }, () => {
  // Parked polls end every 2 s with a heartbeat (node processes inherit it).
  const c = useCluster({
    nodes: ["n1", "n2"],
    adminPorts: true,
    env: { ADMIN_TOKEN: TOKEN, EVENT_QUEUE_HEARTBEAT_MS: "2000" },
  });

  test("events online - cluster: offline subscribers cost no activation, before and after kill -9; a queued event survives the kill", async () => {
    const names = [...c.nodes.keys()];
    const metricsOf = (ids: string[]) =>
      ids.map((id) => `http://127.0.0.1:${c.nodes.get(id)!.adminPort}/metrics`);
    const nodeOfPerson = (p: Person) => nodeOf(c, queueRef(REALM, p.userId), names);
    const people: Person[] = [];
    for (let i = 0; i < 40; i++) people.push(await newUser(c));
    // Two users with queues on each node.
    const online = names.flatMap((name) => people.filter((p) => nodeOfPerson(p) === name).slice(0, 2));
    assert.equal(online.length, 4);
    const offline = people.filter((p) => !online.includes(p));
    const queues = new Map<Person, Queue>();
    for (const p of online) queues.set(p, await register(c.baseUrl, p));
    const ch = await channel(c.api, people);

    const before = await queueActivations(metricsOf(names));
    const first = await send(c.api, ch, "first");
    for (const q of queues.values()) assert.deepEqual(await receiveAll(q, [first]), [first]);
    assert.equal(await queueActivations(metricsOf(names)), before, "offline users' queue actors activated");

    // A message no client has read yet, then kill -9 of the node that holds
    // a queue's shard: the next owner has the event, and still skips the
    // offline users of the shards it takes over.
    const victim = nodeOfPerson(online[0]!);
    const survivor = names.find((x) => x !== victim)!;
    const second = await send(c.api, ch, "second");
    // Every queue has it (read without acknowledging): the router's job is done.
    for (const q of queues.values())
      await waitFor(
        async () => {
          const r = await q.api("GET", "/events", {
            queue_id: q.id,
            last_event_id: q.last,
            dont_block: true,
          });
          return r.status === 200 && (r.body.events as { type: string }[]).some((e) => e.type === "message");
        },
        { what: "the second message queued" },
      );
    await c.nodes.get(victim)!.stop("SIGKILL");
    for (const q of queues.values()) assert.deepEqual(await receiveAll(q, [second], 30_000), [second]);

    const moved = offline.filter((p) => nodeOfPerson(p) === victim).length;
    assert.ok(moved >= 5, `${moved} offline users on the killed node's shards`);
    const after = await queueActivations(metricsOf([survivor]));
    const third = await send(c.api, ch, "third");
    for (const q of queues.values()) assert.deepEqual(await receiveAll(q, [third]), [third]);
    assert.equal(
      await queueActivations(metricsOf([survivor])),
      after,
      "queue actors of offline users activated after the failover",
    );
  });
});
