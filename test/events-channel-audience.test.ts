// A channel message's event names its channel, not its subscribers
// (OutEvent.channel): each queue shard expands it from its index of the
// subscriptions of its users with a queue (cluster/event-router.ts). So a
// send to N subscribers of whom k have a queue looks at k users, not N; the
// index follows subscription changes and is rebuilt when a shard's registry
// is loaded again.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { OutEvent } from "../actors/types.ts";
import { makeApi, ok, uniq, useChat, type User } from "./support/index.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const chat = useChat();

async function listen(u: User): Promise<{ api: ReturnType<typeof makeApi>; id: string }> {
  const api = makeApi(chat.srv.url, u);
  const reg = ok(await api("POST", "/register", { event_types: ["message"] })) as Json;
  return { api, id: reg.queue_id };
}

async function contents(q: { api: ReturnType<typeof makeApi>; id: string }): Promise<string[]> {
  const r = await q.api("GET", "/events", { queue_id: q.id, last_event_id: -1, dont_block: true });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // Channel messages only: Notification Bot's DM to a user someone else subscribed is not the subject here.
  return (r.body.events as Json[])
    .filter((e) => e.type === "message" && e.message.type === "stream")
    .map((e) => e.message.content);
}

async function send(channelId: number, content: string): Promise<void> {
  ok(await chat.api("POST", "/messages", { type: "stream", to: channelId, topic: "t", content }));
}

function messageEvents(from: number): OutEvent[] {
  return chat.events.slice(from).filter((e) => e.event.type === "message");
}

describe("channel audience", () => {
  test("channel audience - a send to 40 subscribers of whom 3 have a queue looks at those 3 only", async () => {
    const users: User[] = [];
    for (let i = 0; i < 40; i++) users.push(await chat.newUser());
    const online = users.slice(0, 3);
    const queues = [];
    for (const u of online) queues.push(await listen(u));
    const ch = ok(
      await chat.api("POST", "/channels/create", {
        name: uniq("audience"),
        subscribers: users.map((u) => u.userId),
      }),
    ) as Json;
    await send(ch.id, "warm");
    const router = chat.srv.router;
    const before = { ...router.stats };
    const from = chat.events.length;
    await send(ch.id, "counted");
    for (const q of queues) assert.deepEqual(await contents(q), ["warm", "counted"]);
    const [ev] = messageEvents(from);
    // The event names the channel and the sender, not the 40 subscribers.
    assert.equal(ev!.channel, ch.id);
    assert.deepEqual(ev!.userIds, [chat.owner.userId]);
    const d = (k: keyof typeof before) => router.stats[k] - before[k];
    // Looked at: the 3 with a queue (through the index) and the listed sender (no queue).
    assert.equal(d("fanned"), online.length, JSON.stringify([before, router.stats]));
    assert.ok(d("local") + d("skipped") <= online.length + 1, JSON.stringify([before, router.stats]));
  });

  test("channel audience - a queue's user who subscribes gets the next message, after unsubscribing none", async () => {
    const [u, other] = [await chat.newUser(), await chat.newUser()];
    const q = await listen(u);
    const name = uniq("later");
    const ch = ok(await chat.api("POST", "/channels/create", { name, subscribers: [other.userId] })) as Json;
    await send(ch.id, "before");
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: [u.userId],
      }),
    );
    await send(ch.id, "subscribed");
    ok(
      await chat.api("DELETE", "/users/me/subscriptions", { subscriptions: [name], principals: [u.userId] }),
    );
    await send(ch.id, "after");
    assert.deepEqual(await contents(q), ["subscribed"]);
  });

  test("channel audience - the index is read again from the directory when a shard's registry is loaded again", async () => {
    const [u, v] = [await chat.newUser(), await chat.newUser()];
    const qu = await listen(u);
    const name = uniq("reload");
    const ch = ok(await chat.api("POST", "/channels/create", { name, subscribers: [u.userId] })) as Json;
    // v subscribes after registering: the index learns it from the event.
    const qv = await listen(v);
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: [v.userId],
      }),
    );
    await send(ch.id, "one");
    // As after a failover: every shard's registry and index are loaded anew.
    const node = chat.srv.node;
    for (const shard of node.servingShards()) chat.srv.router.acquiredShard(shard);
    await send(ch.id, "two");
    assert.deepEqual(await contents(qu), ["one", "two"]);
    assert.deepEqual(await contents(qv), ["one", "two"]);
  });
});

// Realm-wide events (OutEvent.everyone) are expanded the same way, from the
// shards' registries of users with a queue: creating a user costs the same
// in any size of organization, and reaches those who are online.
describe("realm audience", () => {
  async function realmUserAdds(q: { api: ReturnType<typeof makeApi>; id: string }): Promise<number[]> {
    const r = await q.api("GET", "/events", { queue_id: q.id, last_event_id: -1, dont_block: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body.events as Json[])
      .filter((e) => e.type === "realm_user" && e.op === "add")
      .map((e) => e.person.user_id as number);
  }

  test("realm audience - a bot created in a realm of 40 users of whom 3 have a queue looks at those 3 only", async () => {
    const users: User[] = [];
    for (let i = 0; i < 40; i++) users.push(await chat.newUser());
    const queues = [];
    for (const u of users.slice(0, 3)) {
      const api = makeApi(chat.srv.url, u);
      const reg = ok(await api("POST", "/register", { event_types: ["realm_user"] })) as Json;
      queues.push({ api, id: reg.queue_id as string });
    }
    const router = chat.srv.router;
    const before = { ...router.stats };
    const from = chat.events.length;
    const bot = ok(
      await chat.api("POST", "/bots", {
        full_name: uniq("Audience Bot"),
        short_name: `audience${process.pid}`,
      }),
    ) as Json;
    for (const q of queues) assert.deepEqual(await realmUserAdds(q), [bot.user_id]);
    const add = chat.events.slice(from).find((e) => e.event.type === "realm_user" && e.event.op === "add")!;
    // The event names the new bot, not the realm's users.
    assert.deepEqual([add.userIds, add.everyone], [[bot.user_id], true]);
    // Every realm-wide event of the creation (realm_user add, the system
    // groups' add_members) reached the users with a queue, and nobody else
    // of the 40 was looked at: without a queue, only the listed bot.
    const wide = chat.events.slice(from).filter((e) => e.everyone);
    const withQueue = chat.srv.node
      .servingShards()
      .reduce((n, shard) => n + (router.live.count(shard) ?? 0), 0);
    assert.ok(withQueue < 20, `users with a queue: ${withQueue}`);
    const d = (k: keyof typeof before) => router.stats[k] - before[k];
    const stats = JSON.stringify({ wide: wide.length, withQueue, before, after: router.stats });
    assert.equal(d("fanned"), wide.length * withQueue, stats);
    assert.ok(d("skipped") <= wide.length, stats);
  });
});
