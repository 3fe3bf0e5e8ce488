// History reads beside the writer (Behavior.readers): GET /messages and
// GET /messages/{id} answer while a send to the same channel is still being
// committed (its store write held by the test), from the last durable state
// (never the pending message), and every send acknowledged before a read
// began is in that read. A channel GET /messages also answers while the
// other actors it asks (the channel directory, the caller's user actor, the
// realm) are committing writes of their own.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { AppendItem, RecordWrite, Store } from "../cluster/storage/contract.ts";
import { assertSuccess, startEmbedded, type EmbeddedHandle } from "./support/index.ts";
import { overriding } from "./support/store-wrap.ts";

/**
 * Holds every store append that indexes a message of one channel, or that
 * appends to an actor `actors` matches, while closed. `close(n)` resolves
 * when n such appends are waiting.
 */
class CommitGate {
  /** The tail of the channel's id index name (docs/storage.md: `<realm>:c:<channel>:ids`). */
  indexTail: string | null = null;
  /** Storage ids of actors whose appends are held (`<kind>.<realm>.<key>`). */
  actors: RegExp | null = null;
  closed = false;
  private waiting: (() => void)[] = [];
  private onHeld: (() => void) | null = null;
  private want = 1;

  close(n = 1): Promise<void> {
    this.closed = true;
    this.want = n;
    return new Promise((r) => (this.onHeld = r));
  }

  open(): void {
    this.closed = false;
    for (const w of this.waiting.splice(0)) w();
  }

  /** Resolves at once unless closed and `writes` add to the channel's index or `actor` is held. */
  pass(actor: string, writes: readonly RecordWrite[] | undefined): Promise<void> {
    const indexes = writes?.some(
      (w) => w.op === "index" && this.indexTail !== null && w.index.endsWith(this.indexTail),
    );
    if (!this.closed || !(indexes || this.actors?.test(actor))) return Promise.resolve();
    return new Promise((r) => {
      this.waiting.push(r);
      if (this.waiting.length < this.want) return;
      this.onHeld?.();
      this.onHeld = null;
    });
  }

  wrap(store: Store): Store {
    const append: Store["append"] = async (shard, epoch, actor, firstSeq, entries, writes) => {
      await this.pass(actor, writes);
      return store.append(shard, epoch, actor, firstSeq, entries, writes);
    };
    const appendMany: Store["appendMany"] = async (shard, epoch, items: AppendItem[]) => {
      await Promise.all(items.map((it) => this.pass(it.actor, it.writes)));
      return store.appendMany(shard, epoch, items);
    };
    return overriding(store, { append, appendMany });
  }
}

const gate = new CommitGate();
let srv: EmbeddedHandle;
let channelId: number;

before(async () => {
  srv = await startEmbedded({ wrapStore: (s) => gate.wrap(s) });
  const name = "history reads";
  assertSuccess(await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] }));
  const r = await srv.api("GET", "/get_stream_id", { stream: name });
  assertSuccess(r);
  channelId = r.body.stream_id as number;
});
after(() => srv.stop());

async function send(content: string): Promise<number> {
  const r = await srv.api("POST", "/messages", { type: "stream", to: channelId, topic: "reads", content });
  assertSuccess(r);
  return r.body.id as number;
}

async function newest(n: number): Promise<{ id: number; flags: string[] }[]> {
  const r = await srv.api("GET", "/messages", {
    narrow: [{ operator: "channel", operand: channelId }],
    anchor: "newest",
    num_before: n,
    num_after: 0,
  });
  assertSuccess(r);
  return r.body.messages as { id: number; flags: string[] }[];
}

async function newestIds(n: number): Promise<number[]> {
  return (await newest(n)).map((m) => m.id);
}

test("a history read answers while a send to its channel is being committed, without the pending message", async () => {
  const first = await send("durable");
  gate.indexTail = `:c:${channelId}:ids`;
  const held = gate.close();
  const pending = send("pending");
  await held;
  // A read queued behind the held batch would only answer once the gate
  // opens: open it late so such a read fails the assertions instead of hanging.
  const late = setTimeout(() => gate.open(), 10_000);
  try {
    const ids = await newestIds(100);
    assert.equal(gate.closed, true, "the read answered while the send's commit was held");
    assert.deepEqual(ids, [first], "the read sees the durable message, not the pending one");
    const one = await srv.api("GET", `/messages/${first}`);
    assertSuccess(one);
    assert.equal(gate.closed, true, "GET /messages/{id} answered while the send's commit was held");
    assert.equal(one.body.message.content, "<p>durable</p>");
  } finally {
    clearTimeout(late);
    gate.open();
  }
  const second = await pending;
  assert.deepEqual(await newestIds(100), [first, second]);
});

test("a channel read answers while the directory, the caller's user actor and the realm are committing", async () => {
  const id = await send("flagged later");
  gate.indexTail = null;
  const me = srv.owner.userId;
  gate.actors = new RegExp(`^(user\\.\\d+\\.${me}|channel\\.\\d+\\.directory|realm\\.\\d+\\.realm)$`);
  const held = gate.close(3);
  const writes = Promise.all([
    srv.api("POST", "/messages/flags", { messages: [id], op: "add", flag: "starred" }),
    srv.api("POST", "/users/me/subscriptions/properties", {
      subscription_data: [{ stream_id: channelId, property: "color", value: "#76ce90" }],
    }),
    srv.api("PATCH", "/realm", { description: "held" }),
  ]);
  await held;
  const late = setTimeout(() => gate.open(), 10_000);
  try {
    const msgs = await newest(1);
    assert.equal(gate.closed, true, "the read answered while the other actors' commits were held");
    assert.equal(msgs[0]?.id, id);
    assert.ok(!msgs[0]!.flags.includes("starred"), "the read does not see the pending flag");
  } finally {
    clearTimeout(late);
    gate.open();
    gate.actors = null;
  }
  for (const r of await writes) assertSuccess(r);
  // Acknowledged before this read began: in it.
  assert.ok((await newest(1))[0]!.flags.includes("starred"));
});

test("every acknowledged send is in the next read (read-your-writes)", async () => {
  for (let i = 0; i < 20; i++) {
    const id = await send(`ryw ${i}`);
    assert.deepEqual(await newestIds(1), [id]);
  }
  // Many sends in flight at once, each followed by a read once it is acknowledged.
  await Promise.all(
    Array.from({ length: 30 }, async (_, i) => {
      const id = await send(`parallel ${i}`);
      const ids = await newestIds(100);
      assert.ok(ids.includes(id), `message ${id} acknowledged but missing from the next read`);
    }),
  );
});
