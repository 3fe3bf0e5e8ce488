// POST /register with all_public_streams: such a queue also gets the
// message events of public channels its user is not subscribed to (with no
// flags), never those of private channels; a normal queue of the same user
// does not; a guest may not register one; once the queue is gone the user
// is no longer addressed. Embedded, and in cluster mode with the watcher's
// queue on another node than the channel that sends.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { shardOf } from "../cluster/addressing.ts";
import { ownerOf } from "../cluster/placement/rendezvous.ts";
import { queueRef, realmRef } from "../actors/index.ts";
import type { Obj } from "../actors/types.ts";
import { channelConvRef } from "../actors/channel/refs.ts";
import { ok, err, startChat, type Chat } from "./support/chat.ts";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { makeApi, type Api } from "./support/embedded.ts";
import { until } from "./support/ops.ts";
import { requireBinaries } from "./support/services.ts";

const skip = requireBinaries("nats-server", "redis-server");
const REALM = 1;
const ROLE_GUEST = 600;

interface Watcher {
  userId: number;
  api: Api;
}

/** Every event of a queue so far (dont_block polls, acknowledging nothing). */
async function eventsOf(api: Api, queueId: string): Promise<Obj[]> {
  const r = ok(await api("GET", "/events", { queue_id: queueId, last_event_id: -1, dont_block: true }));
  return (r.events as Obj[]).filter((e) => e.type !== "heartbeat");
}

function messageIds(events: Obj[]): number[] {
  return events.filter((e) => e.type === "message").map((e) => (e.message as Obj).id as number);
}

async function send(owner: Api, channelId: number, content: string): Promise<number> {
  const r = ok(await owner("POST", "/messages", { type: "stream", to: channelId, topic: "t", content }));
  return r.id as number;
}

/**
 * The scenario, over HTTP only: `owner` owns the public and the private
 * channel, `w` is subscribed to neither.
 */
async function scenario(owner: Api, w: Watcher, pub: number, priv: number): Promise<void> {
  const all = ok(await w.api("POST", "/register", { all_public_streams: true, event_types: ["message"] }));
  const plain = ok(await w.api("POST", "/register", { event_types: ["message"] }));
  const allQ = all.queue_id as string;
  const plainQ = plain.queue_id as string;

  const hidden = await send(owner, priv, "secret");
  const m1 = await send(owner, pub, "hello **public**");
  const got = await until("the public message in the all_public_streams queue", async () => {
    const evs = await eventsOf(w.api, allQ);
    return messageIds(evs).includes(m1) ? evs : null;
  });
  const ev = got.find((e) => e.type === "message" && (e.message as Obj).id === m1)!;
  // Zulip gives a queue that only sees the message through all_public_streams no flags.
  assert.deepEqual(ev.flags, []);
  const msg = ev.message as Obj;
  assert.equal(msg.type, "stream");
  assert.equal(msg.stream_id, pub);
  assert.equal(msg.content, "hello **public**");
  assert.equal(msg.content_type, "text/x-markdown");
  assert.ok(!("user_flags" in ev));
  // The private channel's message (sent first, from another conversation): never.
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(!messageIds(await eventsOf(w.api, allQ)).includes(hidden), "no private channel message");
  // The same user's normal queue took the same delivery turn and kept nothing.
  assert.deepEqual(messageIds(await eventsOf(w.api, plainQ)), []);

  // The user's own flags win where it is a recipient (a DM here).
  const dm = ok(await owner("POST", "/messages", { type: "direct", to: [w.userId], content: "psst" }));
  await until("the DM in both queues", async () => {
    const a = await eventsOf(w.api, allQ);
    const p = await eventsOf(w.api, plainQ);
    return messageIds(a).includes(dm.id as number) && messageIds(p).includes(dm.id as number);
  });

  // Deleted: later public messages reach no queue of the user, and sends still work.
  ok(await w.api("DELETE", "/events", { queue_id: allQ }));
  const after1 = await send(owner, pub, "after delete");
  const dm2 = ok(await owner("POST", "/messages", { type: "direct", to: [w.userId], content: "again" }));
  await until("the second DM in the normal queue", async () =>
    messageIds(await eventsOf(w.api, plainQ)).includes(dm2.id as number),
  );
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(!messageIds(await eventsOf(w.api, plainQ)).includes(after1));
  const gone = await w.api("GET", "/events", { queue_id: allQ, last_event_id: -1, dont_block: true });
  err(gone, `Bad event queue ID: ${allQ}`, "BAD_EVENT_QUEUE_ID");
}

async function guestRefused(guest: Api): Promise<void> {
  const r = await guest("POST", "/register", { all_public_streams: true });
  err(r, "User not authorized for this query");
  const g = await guest("GET", "/events", { dont_block: true, all_public_streams: true });
  err(g, "User not authorized for this query");
  // Without the flag a guest registers as usual.
  ok(await guest("POST", "/register", { event_types: ["message"] }));
}

describe("all_public_streams - embedded", () => {
  let chat: Chat;
  before(async () => {
    chat = await startChat();
  });
  after(async () => {
    await chat?.stop();
  });

  test("a watcher queue gets public channel messages with no flags, never private ones", async () => {
    const me = chat.owner.userId;
    const pub = ok(await chat.api("POST", "/channels/create", { name: "open talk", subscribers: [me] }));
    const priv = ok(
      await chat.api("POST", "/channels/create", {
        name: "closed talk",
        subscribers: [me],
        invite_only: true,
      }),
    );
    const w = await chat.newUser();
    const realmId = chat.srv.bootstrapped!.realmId!;
    const view = async () =>
      (await chat.srv.node.call(realmRef(realmId), "roster", { sender: chat.owner.userId })).allPublic;
    await scenario(
      chat.api,
      { userId: w.userId, api: makeApi(chat.srv.url, w) },
      pub.id as number,
      priv.id as number,
    );
    // The realm's view no longer names the user: its sends address nobody extra.
    assert.ok(!((await view()) ?? []).includes(w.userId));
    const later = chat.events.find(
      (e) => e.event.type === "message" && (e.event.message as Obj).content === "after delete",
    )!;
    assert.ok(!later.userIds.includes(w.userId), "the send after the deletion addresses the user no more");
  });

  test("a narrowed queue, as Zulip's, also sees the public channels of its narrow", async () => {
    const me = chat.owner.userId;
    const pub = ok(await chat.api("POST", "/channels/create", { name: "narrow open", subscribers: [me] }));
    const other = ok(await chat.api("POST", "/channels/create", { name: "narrow other", subscribers: [me] }));
    const w = await chat.newUser();
    const api = makeApi(chat.srv.url, w);
    const q = ok(
      await api("POST", "/register", { narrow: [["channel", "narrow open"]], event_types: ["message"] }),
    ).queue_id as string;
    const g = await chat.newUser(ROLE_GUEST);
    const gApi = makeApi(chat.srv.url, g);
    const gq = ok(
      await gApi("POST", "/register", { narrow: [["channel", "narrow open"]], event_types: ["message"] }),
    ).queue_id as string;
    const skipped = await send(chat.api, other.id as number, "not in the narrow");
    const m = await send(chat.api, pub.id as number, "in the narrow");
    const evs = await until("the narrow's message", async () => {
      const e = await eventsOf(api, q);
      return messageIds(e).includes(m) ? e : null;
    });
    assert.deepEqual(evs.find((e) => (e.message as Obj).id === m)!.flags, []);
    assert.ok(!messageIds(evs).includes(skipped));
    // A guest's narrowed queue: never public channels it may not read.
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(messageIds(await eventsOf(gApi, gq)), []);
  });

  test("a guest may not register with all_public_streams", async () => {
    const g = await chat.newUser(ROLE_GUEST);
    await guestRefused(makeApi(chat.srv.url, g));
  });

  test("an expired watcher queue stops the deliveries", async () => {
    const me = chat.owner.userId;
    const pub = ok(await chat.api("POST", "/channels/create", { name: "open expiry", subscribers: [me] }));
    const w = await chat.newUser();
    const api = makeApi(chat.srv.url, w);
    const realmId = chat.srv.bootstrapped!.realmId!;
    const view = async () =>
      (await chat.srv.node.call(realmRef(realmId), "roster", { sender: chat.owner.userId })).allPublic;
    ok(
      await api("POST", "/register", {
        all_public_streams: true,
        event_types: ["message"],
        queue_lifespan_secs: 1,
      }),
    );
    assert.ok((await view())?.includes(w.userId));
    // GET /events (register-through-GET) takes lifespan_secs: a one-second queue.
    const short = ok(
      await api("GET", "/events", { dont_block: true, all_public_streams: true, lifespan_secs: 1 }),
    );
    assert.ok(typeof short.queue_id === "string");
    await until("both queues expired and the view withdrawn", async () => {
      await send(chat.api, pub.id as number, "tick");
      return !((await view()) ?? []).includes(w.userId);
    });
  });
});

describe("all_public_streams - cluster", { skip }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster({ nodes: ["n1", "n2"] });
  });
  after(async () => {
    await c?.stop();
  });

  test("the watcher's queue on the other node than the channel gets its messages", async () => {
    const nodes = [...c.nodes.keys()];
    const me = ok(await c.api("GET", "/users/me")).user_id as number;
    const nodeOf = (ref: Parameters<typeof shardOf>[0]) => ownerOf(shardOf(ref, c.shards), nodes)!;
    const pub = ok(await c.api("POST", "/channels/create", { name: "cluster open", subscribers: [me] }));
    const priv = ok(
      await c.api("POST", "/channels/create", {
        name: "cluster closed",
        subscribers: [me],
        invite_only: true,
      }),
    );
    const channelNode = nodeOf(channelConvRef(REALM, pub.id as number));
    let w: Watcher | undefined;
    for (let i = 0; i < 24 && !w; i++) {
      const email = `watcher${i}@example.com`;
      const password = `pw-${email}-x`;
      const created = ok(await c.api("POST", "/users", { email, password, full_name: `Watcher ${i}` }));
      const userId = created.user_id as number;
      if (nodeOf(queueRef(REALM, userId)) === channelNode) continue;
      const key = ok(await c.api("POST", "/fetch_api_key", { username: email, password }, null));
      w = { userId, api: makeApi(c.baseUrl, { email, apiKey: key.api_key as string }) };
    }
    assert.ok(w, "a user whose queue actor is on the other node");
    await scenario(c.api, w, pub.id as number, priv.id as number);

    const email = "guest-watcher@example.com";
    const password = `pw-${email}-x`;
    const g = ok(await c.api("POST", "/users", { email, password, full_name: "Guest Watcher" }));
    ok(await c.api("PATCH", `/users/${g.user_id as number}`, { role: ROLE_GUEST }));
    const key = ok(await c.api("POST", "/fetch_api_key", { username: email, password }, null));
    await guestRefused(makeApi(c.baseUrl, { email, apiKey: key.api_key as string }));
  });
});
