// The event log's stored entries (cluster/event-log.ts): one channel
// message reaches the entries of every shard its recipients live in, in one
// pass of the router; its JSON text is made once for all of them, and each
// entry still stores the same form as before (its key, realm, time, events,
// users), read back by the next owner of the shard.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import { EventLog, eventLogId } from "../cluster/event-log.ts";
import type { RouterHost } from "../cluster/event-router.ts";
import { createLmdbStore, type Store } from "../cluster/storage/index.ts";

const SHARDS = 3;
let dir: string;
let store: Store;
let epochs: number[];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "event-log-text-"));
  store = createLmdbStore(dir, { exclusive: true });
  epochs = [];
  for (let s = 0; s < SHARDS; s++) epochs.push((await store.acquireLease(s, "n1", 60_000))!);
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function openLog(): Promise<EventLog> {
  const host = {
    nodeId: "n1",
    shards: SHARDS,
    serves: () => true,
    request: () => Promise.reject(new Error("no requests here")),
    store,
    epoch: (s: number) => epochs[s]!,
  } satisfies RouterHost;
  const log = new EventLog(host);
  for (let s = 0; s < SHARDS; s++) log.acquired(s);
  for (let s = 0; s < SHARDS; s++) assert.ok(await log.ready(s));
  return log;
}

/** An event that counts how often it is serialized. */
function counted(body: Obj): { event: Obj; serialized: () => number } {
  let n = 0;
  const event = {
    ...body,
    toJSON() {
      n++;
      return body;
    },
  } as unknown as Obj;
  return { event, serialized: () => n };
}

async function storedEntries(shard: number): Promise<unknown[]> {
  const entries = await store.readJournal(shard, eventLogId(shard), 0);
  return entries.map((e) => JSON.parse(Buffer.from(e.data).toString("utf8")) as unknown);
}

test("event log - an event given to every shard in one pass is serialized once; each entry stores it", async () => {
  const log = await openLog();
  const message: Obj = {
    type: "message",
    message: { id: 7, content: 'a "quoted" \u2028 line' },
    user_flags: {},
  };
  const { event, serialized } = counted(message);
  const other: Obj = { type: "typing", op: "start" };
  const start = Date.now();
  const durable = [
    log.append(0, 2, "channel.2.5", [
      [10, [event]],
      [11, [event]],
    ]),
    log.append(1, 2, "channel.2.5", [[20, [event]]]),
    // A user of shard 2 gets the message and another event; one gets the other alone.
    log.append(2, 2, "channel.2.5", [
      [30, [event, other]],
      [31, [other]],
    ]),
  ];
  await Promise.all(durable.map((d) => d.durable));
  assert.equal(serialized(), 1, "three shards' entries, one serialization");

  const [s0] = await storedEntries(0);
  const [s1] = await storedEntries(1);
  const [s2] = await storedEntries(2);
  const t = (s0 as { t: number }).t;
  assert.ok(t >= start && t <= Date.now());
  assert.deepEqual(s0, { k: "channel.2.5", r: 2, t, e: [message], a: [10, 11] });
  assert.deepEqual(s1, { k: "channel.2.5", r: 2, t: (s1 as { t: number }).t, e: [message], a: [20] });
  assert.deepEqual(s2, {
    k: "channel.2.5",
    r: 2,
    t: (s2 as { t: number }).t,
    e: [message, other],
    a: [30],
    s: [[31, 1]],
  });

  // After the check phase the text is made anew: an object is never
  // trusted to be unchanged beyond the pass that serialized it.
  await new Promise((r) => setImmediate(r));
  await log.append(0, 2, "channel.2.5", [[10, [event]]]).durable;
  assert.equal(serialized(), 2);

  // The next owner of the shards reads the same entries back.
  const next = await openLog();
  assert.deepEqual(
    (await next.replay(2, 2, 30, 0)).map((f) => f.fact),
    [{ type: "logged", entry: 1, key: "channel.2.5", events: [message, other] }],
  );
  assert.deepEqual(
    (await next.replay(2, 2, 31, 0)).map((f) => f.fact),
    [{ type: "logged", entry: 1, key: "channel.2.5", events: [other] }],
  );
  assert.deepEqual(
    (await next.replay(0, 2, 10, 0)).map((f) => (f.fact as Obj).events),
    [[message], [message]],
  );
});
