// Black-box HTTP tests of topics: GET /users/me/{stream_id}/topics, POST
// /user_topics, the legacy PATCH /users/me/subscriptions/muted_topics, and
// their user_topic events.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import {
  createChannel,
  err,
  eventsUntil,
  ok,
  openQueue,
  uniq,
  useChat,
  type EmbeddedHandle,
  type Ev,
} from "./support/index.ts";

const chat = useChat({ clearEvents: true });
const api = chat.api;

const channel = (subscribers: number[], params: Obj = {}) =>
  createChannel(chat, subscribers, { name: uniq("topics"), ...params });

async function send(to: number, topic: string): Promise<number> {
  return ok(await api("POST", "/messages", { type: "stream", to, topic, content: "x" })).id as number;
}

describe("topics - list", () => {
  test("most recent first, empty topic name, errors", async () => {
    const ch = await channel([chat.owner.userId]);
    const a = await send(ch.id, "alpha");
    const b = await send(ch.id, "");
    const c = await send(ch.id, "Alpha");
    void a;
    let r = ok(await api("GET", `/users/me/${ch.id}/topics`));
    assert.deepEqual(r.topics, [
      { name: "Alpha", max_id: c },
      { name: "general chat", max_id: b },
    ]);
    r = ok(await api("GET", `/users/me/${ch.id}/topics`, { allow_empty_topic_name: true }));
    assert.deepEqual((r.topics as Obj[])[1], { name: "", max_id: b });
    err(await api("GET", "/users/me/999999/topics"), "Invalid channel ID");
    const priv = await channel([chat.owner.userId], { invite_only: true });
    await send(priv.id, "hidden");
    const member = await chat.newUser();
    err(await api("GET", `/users/me/${priv.id}/topics`, {}, member), "Invalid channel ID");
    err(
      await api("GET", `/users/me/${ch.id}/topics`, { allow_empty_topic_name: "x" }),
      "allow_empty_topic_name is not valid JSON",
    );
  });

  test("protected history: a new subscriber sees only later topics", async () => {
    const m = await chat.newUser();
    const priv = await channel([chat.owner.userId], { invite_only: true });
    await send(priv.id, "before");
    ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: priv.name }],
        principals: [m.userId],
      }),
    );
    const later = await send(priv.id, "after");
    assert.deepEqual(ok(await api("GET", `/users/me/${priv.id}/topics`, {}, m)).topics, [
      { name: "after", max_id: later },
    ]);
  });
});

describe("topics - visibility policies", () => {
  test("POST /user_topics: 4 policies, empty-topic name, topics without messages, event", async () => {
    const m = await chat.newUser();
    const ch = await channel([m.userId]);
    for (const policy of [1, 2, 3, 0]) {
      chat.events.length = 0;
      ok(
        await api(
          "POST",
          "/user_topics",
          { stream_id: ch.id, topic: "never used", visibility_policy: policy },
          m,
        ),
      );
      const ev = chat.events.find((e) => e.event.type === "user_topic")!;
      assert.deepEqual(ev.userIds, [m.userId]);
      assert.deepEqual(
        [ev.event.stream_id, ev.event.topic_name, ev.event.visibility_policy],
        [ch.id, "never used", policy],
      );
      assert.equal(typeof ev.event.last_updated, "number");
    }
    chat.events.length = 0;
    ok(
      await api("POST", "/user_topics", { stream_id: ch.id, topic: "general chat", visibility_policy: 1 }, m),
    );
    assert.equal(chat.events.find((e) => e.event.type === "user_topic")!.event.topic_name, "");
  });

  test("POST /user_topics errors change nothing", async () => {
    const m = await chat.newUser();
    const ch = await channel([m.userId]);
    const priv = await channel([chat.owner.userId], { invite_only: true });
    err(
      await api("POST", "/user_topics", { stream_id: ch.id, topic: "t", visibility_policy: 7 }, m),
      "Invalid visibility_policy",
    );
    err(
      await api("POST", "/user_topics", { stream_id: 999999, topic: "t", visibility_policy: 1 }, m),
      "Invalid channel ID",
    );
    err(
      await api("POST", "/user_topics", { stream_id: priv.id, topic: "t", visibility_policy: 1 }, m),
      "Invalid channel ID",
    );
    err(
      await api("POST", "/user_topics", { stream_id: ch.id, topic: "t".repeat(61), visibility_policy: 1 }, m),
      "topic is too long (limit: 60 characters)",
    );
    err(
      await api("POST", "/user_topics", { stream_id: ch.id, visibility_policy: 1 }, m),
      "Missing 'topic' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(
      await api("POST", "/user_topics", { stream_id: "x", topic: "t", visibility_policy: 1 }, m),
      "stream_id is not valid JSON",
    );
    assert.equal(chat.events.filter((e) => e.event.type === "user_topic").length, 0);
  });

  test("legacy muted_topics add/remove", async () => {
    const m = await chat.newUser();
    const ch = await channel([m.userId]);
    ok(
      await api(
        "PATCH",
        "/users/me/subscriptions/muted_topics",
        { stream: ch.name, topic: "noise", op: "add" },
        m,
      ),
    );
    const ev = chat.events.find((e) => e.event.type === "user_topic")!;
    assert.equal(ev.event.visibility_policy, 1);
    // Feature level 169: a repeated add succeeds and changes nothing.
    ok(
      await api(
        "PATCH",
        "/users/me/subscriptions/muted_topics",
        { stream_id: ch.id, topic: "noise", op: "add" },
        m,
      ),
    );
    ok(
      await api(
        "PATCH",
        "/users/me/subscriptions/muted_topics",
        { stream_id: ch.id, topic: "noise", op: "remove" },
        m,
      ),
    );
    // Feature level 169: a repeated remove succeeds and changes nothing.
    ok(
      await api(
        "PATCH",
        "/users/me/subscriptions/muted_topics",
        { stream_id: ch.id, topic: "noise", op: "remove" },
        m,
      ),
    );
    err(
      await api("PATCH", "/users/me/subscriptions/muted_topics", { topic: "noise", op: "add" }, m),
      "Please supply 'stream'.",
    );
    err(
      await api(
        "PATCH",
        "/users/me/subscriptions/muted_topics",
        { stream: ch.name, stream_id: ch.id, topic: "n", op: "add" },
        m,
      ),
      "Please choose one: 'stream' or 'stream_id'.",
    );
    err(
      await api(
        "PATCH",
        "/users/me/subscriptions/muted_topics",
        { stream_id: ch.id, topic: "n", op: "mute" },
        m,
      ),
      "Invalid op",
    );
  });
});

describe("topics - legacy muted_topics event", () => {
  test("sent beside user_topic, only to queues that did not ask for user_topic", async () => {
    const m = await chat.newUser();
    const ch = await channel([m.userId]);
    const srv = { api } as EmbeddedHandle;
    const all = await openQueue(srv, m);
    const legacyOnly = await openQueue(srv, m, ["muted_topics"]);
    const modern = await openQueue(srv, m, ["user_topic", "muted_topics"]);
    ok(await api("POST", "/user_topics", { stream_id: ch.id, topic: "noise", visibility_policy: 1 }, m));
    ok(await api("POST", "/user_topics", { stream_id: ch.id, topic: "", visibility_policy: 1 }, m));
    const reg = ok(await api("POST", "/register", { fetch_event_types: ["muted_topics"] }, m));
    const kinds = (evs: Ev[]) => evs.map((e: Ev) => e.type as string);
    const got = await eventsUntil(srv, all, (evs) => evs.length >= 4);
    assert.deepEqual(kinds(got), ["muted_topics", "user_topic", "muted_topics", "user_topic"]);
    assert.deepEqual(got[0].muted_topics, [[ch.name, "noise", got[1].last_updated]]);
    // The list after the change, as /register's muted_topics; the empty topic
    // reads as its display name without the empty_topic_name capability.
    assert.deepEqual(got[2].muted_topics, reg.muted_topics);
    assert.deepEqual((got[2].muted_topics as Ev[]).map((r: Ev) => r[1]).sort(), ["general chat", "noise"]);
    assert.deepEqual(kinds(await eventsUntil(srv, legacyOnly, (evs) => evs.length >= 2)), [
      "muted_topics",
      "muted_topics",
    ]);
    const mod = await eventsUntil(srv, modern, (evs) => evs.length >= 2);
    assert.deepEqual(kinds(mod), ["user_topic", "user_topic"]);

    // Unmuting and following send the list without the topic.
    ok(await api("POST", "/user_topics", { stream_id: ch.id, topic: "noise", visibility_policy: 3 }, m));
    const next = await eventsUntil(srv, legacyOnly, (evs) => evs.length >= 1);
    assert.deepEqual(next[0].muted_topics, [[ch.name, "general chat", got[3].last_updated]]);

    // The legacy endpoint sends it too; a no-op add sends nothing.
    ok(
      await api(
        "PATCH",
        "/users/me/subscriptions/muted_topics",
        { stream_id: ch.id, topic: "noise", op: "add" },
        m,
      ),
    );
    const legacy = await eventsUntil(srv, legacyOnly, (evs) => evs.length >= 1);
    assert.equal(legacy.length, 1);
    assert.equal((legacy[0].muted_topics as Ev[]).length, 2);
  });

  test("with empty_topic_name the empty topic stays empty", async () => {
    const m = await chat.newUser();
    const ch = await channel([m.userId]);
    const srv = { api } as EmbeddedHandle;
    const r = ok(
      await api(
        "POST",
        "/register",
        { event_types: JSON.stringify(["muted_topics"]), client_capabilities: { empty_topic_name: true } },
        m,
      ),
    );
    const q = { id: r.queue_id as string, last: r.last_event_id as number, auth: m };
    ok(await api("POST", "/user_topics", { stream_id: ch.id, topic: "", visibility_policy: 1 }, m));
    const evs = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.deepEqual(
      evs.map((e: Ev) => e.muted_topics[0][1]),
      [""],
    );
  });
});
