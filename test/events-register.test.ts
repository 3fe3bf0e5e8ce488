// POST /register beyond its reply shape: the register race (an event that
// lands in the new queue while the initial state is fetched is in the state
// and never delivered), the empty_topic_name capability in the initial
// state, and unauthenticated (spectator) register.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { registerTestHooks } from "../gateway/routes/events.ts";
import { assertError, makeApi, ok, uniq, useChat } from "./support/index.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const chat = useChat();
after(() => {
  registerTestHooks.afterQueue = undefined;
});

async function drainNow(api: ReturnType<typeof makeApi>, queueId: string, last: number): Promise<Json[]> {
  const r = await api("GET", "/events", { queue_id: queueId, last_event_id: last, dont_block: true });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.events.filter((e: Json) => e.type !== "heartbeat");
}

describe("register race", () => {
  test("register race - an event between queue creation and the state fetch is in the state, not in the queue", async () => {
    const me = await chat.newUser();
    const api = makeApi(chat.srv.url, me);
    let fired = 0;
    registerTestHooks.afterQueue = async (caller) => {
      if (caller.userId !== me.userId || fired++) return;
      ok(await api("POST", "/users/me/status", { status_text: "racing" }));
    };
    let reg: Json;
    try {
      const r = await api("POST", "/register", { event_types: ["user_status"] });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      reg = r.body;
    } finally {
      registerTestHooks.afterQueue = undefined;
    }
    assert.equal(fired, 1);
    // The event did land in the queue (id 0) and the state reflects it...
    assert.equal(reg.last_event_id, 0);
    assert.equal(reg.user_status[String(me.userId)].status_text, "racing");
    // ...so the client never sees it as an event.
    assert.deepEqual(await drainNow(api, reg.queue_id, reg.last_event_id), []);
    // And it misses none that come later.
    ok(await api("POST", "/users/me/status", { status_text: "later" }));
    const later = await drainNow(api, reg.queue_id, reg.last_event_id);
    assert.deepEqual(
      later.map((e) => [e.type, e.status_text]),
      [["user_status", "later"]],
    );
    assert.equal(later[0].id, 1);
  });

  test("register race - without an event in between, last_event_id is -1 and the next event is 0", async () => {
    const me = await chat.newUser();
    const api = makeApi(chat.srv.url, me);
    const reg = ok(await api("POST", "/register", { event_types: ["user_status"] })) as Json;
    assert.equal(reg.last_event_id, -1);
    ok(await api("POST", "/users/me/status", { status_text: "first" }));
    const evs = await drainNow(api, reg.queue_id, -1);
    assert.deepEqual(
      evs.map((e) => [e.id, e.status_text]),
      [[0, "first"]],
    );
  });
});

describe("register capabilities", () => {
  test("register - empty_topic_name: unread_msgs and user_topics name the empty topic both ways", async () => {
    const me = await chat.newUser();
    const other = await chat.newUser();
    const name = uniq("empty");
    const ch = ok(
      await chat.api("POST", "/channels/create", { name, subscribers: [me.userId, other.userId] }),
    ) as Json;
    const otherApi = makeApi(chat.srv.url, other);
    ok(await otherApi("POST", "/messages", { type: "stream", to: ch.id, topic: "", content: "hello" }));
    const api = makeApi(chat.srv.url, me);
    ok(await api("POST", "/user_topics", { stream_id: ch.id, topic: "", visibility_policy: 3 }));

    const fetchTypes = ["message", "update_message_flags", "user_topic"];
    const legacy = ok(await api("POST", "/register", { fetch_event_types: fetchTypes })) as Json;
    const modern = ok(
      await api("POST", "/register", {
        fetch_event_types: fetchTypes,
        client_capabilities: { empty_topic_name: true },
      }),
    ) as Json;
    const topicsOf = (reg: Json) =>
      reg.unread_msgs.streams.filter((s: Json) => s.stream_id === ch.id).map((s: Json) => s.topic);
    assert.deepEqual(topicsOf(legacy), ["general chat"]);
    assert.deepEqual(topicsOf(modern), [""]);
    const userTopicsOf = (reg: Json) =>
      reg.user_topics.filter((t: Json) => t.stream_id === ch.id).map((t: Json) => t.topic_name);
    assert.deepEqual(userTopicsOf(legacy), ["general chat"]);
    assert.deepEqual(userTopicsOf(modern), [""]);
  });
});

describe("spectator register", () => {
  test("register - spectators need public access; client_gravatar and include_subscribers do not change that", async () => {
    const anon = makeApi(chat.srv.url, null);
    for (const params of [{}, { client_gravatar: true }, { include_subscribers: true }]) {
      const r = await anon("POST", "/register", params, null);
      assertError(r, "Not logged in: API authentication or user session required", "UNAUTHORIZED", 401);
    }
    // No queue was created for anybody.
    const queues = (await chat.srv.node.call(
      { kind: "queue", realm: 1, key: String(chat.owner.userId), shardKey: String(chat.owner.userId) },
      "list",
      {},
    )) as Json[];
    assert.deepEqual(queues, []);
  });
});

describe("router registry", () => {
  test("events - recipients without queues cost no queue actor activation; a new queue is not skipped", async () => {
    const users = [];
    for (let i = 0; i < 20; i++) users.push(await chat.newUser());
    const [listener, ...idle] = users;
    const name = uniq("fanout");
    const ch = ok(
      await chat.api("POST", "/channels/create", { name, subscribers: users.map((u) => u.userId) }),
    ) as Json;
    const lApi = makeApi(chat.srv.url, listener!);
    const reg = ok(await lApi("POST", "/register", { event_types: ["message"] })) as Json;
    const router = chat.srv.router;
    const send = async (content: string) =>
      ok(await chat.api("POST", "/messages", { type: "stream", to: ch.id, topic: "t", content }));

    // First message: queue actors of users never seen are asked (and report back).
    await send("one");
    await drainNow(lApi, reg.queue_id, -1);
    const before = { ...router.stats };
    const activations = chat.srv.node.catalog.stats.activations;
    await send("two");
    const got = await drainNow(lApi, reg.queue_id, -1);
    assert.deepEqual(
      got.map((e) => e.message.content),
      ["one", "two"],
    );
    // Second message: the 19 queue-less subscribers are not even looked at
    // (the event names the channel, the shards their users with queues), only
    // the listener's actor (and the sender's, who has no queue) is asked.
    const fannedTwo = router.stats.fanned - before.fanned;
    const looked = router.stats.local + router.stats.skipped - before.local - before.skipped;
    assert.ok(looked <= 2, JSON.stringify([before, router.stats]));
    assert.ok(router.stats.local - before.local <= 2, JSON.stringify([before, router.stats]));
    // No queue actor was activated for it (the channel's own actors may be).
    assert.ok(chat.srv.node.catalog.stats.activations - activations <= 1);

    // A user who registers now gets the next message.
    const late = idle[0]!;
    const lateApi = makeApi(chat.srv.url, late);
    const lateReg = ok(await lateApi("POST", "/register", { event_types: ["message"] })) as Json;
    await send("three");
    const lateGot = await drainNow(lateApi, lateReg.queue_id, -1);
    assert.deepEqual(
      lateGot.map((e) => e.message.content),
      ["three"],
    );
    // And once its queue is gone it is skipped again.
    ok(await lateApi("DELETE", "/events", { queue_id: lateReg.queue_id }));
    const mark = { ...router.stats };
    await send("four");
    assert.equal(router.stats.fanned - mark.fanned, fannedTwo, JSON.stringify([mark, router.stats]));
  });
});
