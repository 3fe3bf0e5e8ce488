// Black-box HTTP tests of the bulk mark-as-read endpoints: POST
// /mark_all_as_read, /mark_stream_as_read, /mark_topic_as_read. Their
// replies, the update_message_flags events a registered queue receives,
// unread_msgs in POST /register and flags in GET /messages before and
// after, channel access and topic errors, bad input; the main flow also in
// cluster mode.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import {
  createChannel,
  err,
  eventsUntil,
  makeApi,
  newUser,
  ok,
  openQueue,
  requireBinaries,
  uniq,
  useChat,
  useCluster,
  waitFor,
  type Api,
  type ApiHolder,
  type Creds,
  type Ev,
  type Queue,
  type User,
} from "./support/index.ts";

async function unreadIds(api: Api, who?: Creds): Promise<number[]> {
  const r = ok(await api("POST", "/register", { fetch_event_types: ["message"] }, who));
  const u = r.unread_msgs as {
    count: number;
    streams: { unread_message_ids: number[] }[];
    pms: { unread_message_ids: number[] }[];
    huddles: { unread_message_ids: number[] }[];
  };
  const ids = [...u.streams, ...u.pms, ...u.huddles]
    .flatMap((x) => x.unread_message_ids)
    .sort((a, b) => a - b);
  assert.equal(u.count, ids.length);
  return ids;
}

/** The caller's flags of a channel's messages, by id (GET /messages). */
async function flagsIn(api: Api, streamId: number, who?: Creds): Promise<Record<number, string[]>> {
  const r = ok(
    await api(
      "GET",
      "/messages",
      {
        anchor: "oldest",
        num_before: 0,
        num_after: 100,
        narrow: [{ operator: "channel", operand: streamId }],
      },
      who,
    ),
  );
  const out: Record<number, string[]> = {};
  for (const m of r.messages as Obj[]) out[m.id as number] = m.flags as string[];
  return out;
}

const flagEvents = (evs: Ev[]) => evs.filter((e) => e.type === "update_message_flags");

/** The flag events a queue got, up to and including a marker event caused afterwards. */
async function flagEventsUntilMarker(srv: ApiHolder, q: Queue, api: Api, who: Creds, markerId: number) {
  ok(await api("POST", "/messages/flags", { messages: [markerId], op: "add", flag: "starred" }, who));
  const evs = await eventsUntil(srv, q, (all) =>
    all.some((e) => e.type === "update_message_flags" && e.flag === "starred"),
  );
  const flags = flagEvents(evs);
  assert.equal(flags.at(-1)?.flag, "starred", "marker arrived");
  return flags.slice(0, -1);
}

function readEvent(messages: number[], all = false): Obj {
  return { type: "update_message_flags", op: "add", operation: "add", flag: "read", messages, all };
}

function strip(e: Ev): Obj {
  const { id: _id, ...rest } = e as Obj;
  return rest;
}

describe("mark read - embedded", () => {
  const chat = useChat();
  const api = chat.api;
  const srv = chat;
  const channel = async (subscribers: number[], params: Obj = {}) =>
    (await createChannel(chat, subscribers, { name: uniq("mark"), ...params })).id;
  async function send(to: number, topic: string): Promise<number> {
    return ok(await api("POST", "/messages", { type: "stream", to, topic, content: "x" })).id as number;
  }

  test("mark_stream_as_read: reply, event with the changed ids, unreads and flags after", async () => {
    const m = await chat.newUser();
    const a = await channel([chat.owner.userId, m.userId]);
    const b = await channel([chat.owner.userId, m.userId]);
    const a1 = await send(a, "Alpha");
    const a2 = await send(a, "beta");
    const b1 = await send(b, "gamma");
    const dm = ok(await api("POST", "/messages", { type: "direct", to: [m.userId], content: "hi" }))
      .id as number;
    const a3 = await send(a, "alpha");
    ok(await api("POST", "/messages/flags", { messages: [a2], op: "add", flag: "read" }, m));
    assert.deepEqual(await unreadIds(api, m), [a1, b1, dm, a3]);

    const q = await openQueue(srv, m, ["update_message_flags"]);
    const r = await api("POST", "/mark_stream_as_read", { stream_id: a }, m);
    assert.deepEqual(r.body, { result: "success", msg: "" });
    assert.equal(r.status, 200);
    // Again: nothing left to change, so no event.
    ok(await api("POST", "/mark_stream_as_read", { stream_id: a }, m));
    const evs = await flagEventsUntilMarker(srv, q, api, m, b1);
    assert.deepEqual(evs.map(strip), [readEvent([a1, a3])]);

    assert.deepEqual(await unreadIds(api, m), [b1, dm]);
    const flags = await flagsIn(api, a, m);
    for (const id of [a1, a2, a3]) assert.ok(flags[id]!.includes("read"), `${id} read`);
    assert.ok(!(await flagsIn(api, b, m))[b1]!.includes("read"));
    // Only the caller's flags change.
    assert.ok(!(await flagsIn(api, a))[a1]!.includes("historical"));
  });

  test("mark_topic_as_read: case-insensitive topic, only that topic, no such topic", async () => {
    const m = await chat.newUser();
    const a = await channel([chat.owner.userId, m.userId]);
    const other = await channel([chat.owner.userId, m.userId]);
    const t1 = await send(a, "Lunch Plans");
    const t2 = await send(a, "other");
    const t3 = await send(a, "lunch plans");
    const o1 = await send(other, "only here");
    const q = await openQueue(srv, m, ["update_message_flags"]);

    ok(await api("POST", "/mark_topic_as_read", { stream_id: a, topic_name: "LUNCH PLANS" }, m));
    assert.deepEqual(await unreadIds(api, m), [t2, o1]);

    err(
      await api("POST", "/mark_topic_as_read", { stream_id: a, topic_name: "nope" }, m),
      "No such topic 'nope'",
    );
    // A topic of another channel is no topic of this one.
    err(
      await api("POST", "/mark_topic_as_read", { stream_id: a, topic_name: "only here" }, m),
      "No such topic 'only here'",
    );
    err(
      await api("POST", "/mark_topic_as_read", { stream_id: a, topic_name: "__proto__" }, m),
      "No such topic '__proto__'",
    );
    // Topic names are not stripped before the lookup.
    err(
      await api("POST", "/mark_topic_as_read", { stream_id: a, topic_name: " other" }, m),
      "No such topic ' other'",
    );
    // A topic whose messages are all read already: success, no event.
    ok(await api("POST", "/mark_topic_as_read", { stream_id: a, topic_name: "lunch plans" }, m));
    const evs = await flagEventsUntilMarker(srv, q, api, m, t2);
    assert.deepEqual(evs.map(strip), [readEvent([t1, t3])]);
    assert.deepEqual(await unreadIds(api, m), [t2, o1]);
  });

  test("mark_topic_as_read: the empty topic, by its display name or by empty string", async () => {
    const m = await chat.newUser();
    const a = await channel([chat.owner.userId, m.userId]);
    const e1 = await send(a, "");
    const n1 = await send(a, "named");
    const e2 = await send(a, "");
    ok(await api("POST", "/mark_topic_as_read", { stream_id: a, topic_name: "general chat" }, m));
    assert.deepEqual(await unreadIds(api, m), [n1]);
    ok(await api("POST", "/messages/flags", { messages: [e1, e2], op: "remove", flag: "read" }, m));
    ok(await api("POST", "/mark_topic_as_read", { stream_id: a, topic_name: "" }, m));
    assert.deepEqual(await unreadIds(api, m), [n1]);
    const b = await channel([chat.owner.userId, m.userId]);
    await send(b, "named");
    err(
      await api("POST", "/mark_topic_as_read", { stream_id: b, topic_name: "general chat" }, m),
      "No such topic ''",
    );
  });

  test("mark_all_as_read: complete, an all-event without ids, every unread read", async () => {
    const m = await chat.newUser();
    const other = await chat.newUser();
    const a = await channel([chat.owner.userId, m.userId]);
    const s1 = await send(a, "t");
    const dm = ok(await api("POST", "/messages", { type: "direct", to: [m.userId], content: "hi" }))
      .id as number;
    const group = ok(
      await api("POST", "/messages", { type: "direct", to: [m.userId, other.userId], content: "all" }),
    ).id as number;
    assert.deepEqual(await unreadIds(api, m), [s1, dm, group]);
    const otherBefore = await unreadIds(api, other);

    const q = await openQueue(srv, m, ["update_message_flags"]);
    const r = await api("POST", "/mark_all_as_read", {}, m);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { result: "success", msg: "", complete: true });
    assert.deepEqual(await unreadIds(api, m), []);
    assert.deepEqual(await unreadIds(api, other), otherBefore, "others' flags unchanged");
    // Zulip sends the event even when nothing was unread.
    ok(await api("POST", "/mark_all_as_read", {}, m));
    const evs = await flagEventsUntilMarker(srv, q, api, m, s1);
    assert.deepEqual(evs.map(strip), [readEvent([], true), readEvent([], true)]);
    assert.ok((await flagsIn(api, a, m))[s1]!.includes("read"));
  });

  test("channel access: unknown, private unsubscribed, archived, guests; public unsubscribed works", async () => {
    const m = await chat.newUser();
    const guest = await chat.newUser(600);
    const priv = await channel([chat.owner.userId], { invite_only: true });
    await send(priv, "secret");
    const pub = await channel([chat.owner.userId, m.userId]);
    const p1 = await send(pub, "t");
    const gone = await channel([chat.owner.userId, m.userId]);
    await send(gone, "t");
    ok(await api("DELETE", `/streams/${gone}`));
    const before = await unreadIds(api, m);

    for (const [id, who] of [
      [999999, m],
      [priv, m],
      [gone, m],
      [pub, guest],
    ] as [number, User][]) {
      err(await api("POST", "/mark_stream_as_read", { stream_id: id }, who), "Invalid channel ID");
      err(
        await api("POST", "/mark_topic_as_read", { stream_id: id, topic_name: "t" }, who),
        "Invalid channel ID",
      );
    }
    assert.deepEqual(await unreadIds(api, m), before, "errors change nothing");

    // Unsubscribed from a public channel: its messages the user has still become read.
    const name = ok(await api("GET", `/streams/${pub}`)).stream as Obj;
    ok(await api("DELETE", "/users/me/subscriptions", { subscriptions: [name.name] }, m));
    ok(await api("POST", "/mark_topic_as_read", { stream_id: pub, topic_name: "T" }, m));
    assert.ok((await flagsIn(api, pub, m))[p1]!.includes("read"));
  });

  test("protected history: only received messages change, no rows appear for older ones", async () => {
    const m = await chat.newUser();
    const priv = await channel([chat.owner.userId], {
      invite_only: true,
      history_public_to_subscribers: false,
    });
    const old = await send(priv, "before");
    const name = (ok(await api("GET", `/streams/${priv}`)).stream as Obj).name as string;
    ok(await api("POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: [m.userId] }));
    const later = await send(priv, "after");
    const q = await openQueue(srv, m, ["update_message_flags"]);
    err(
      await api("POST", "/mark_topic_as_read", { stream_id: priv, topic_name: "before" }, m),
      "No such topic 'before'",
    );
    ok(await api("POST", "/mark_stream_as_read", { stream_id: priv }, m));
    const evs = await flagEventsUntilMarker(srv, q, api, m, later);
    assert.deepEqual(evs.map(strip), [readEvent([later])]);
    assert.deepEqual(Object.keys(await flagsIn(api, priv, m)).map(Number), [later]);
    // Still not the user's message: no row appeared for it.
    err(
      await api("POST", "/messages/flags", { messages: [old], op: "add", flag: "starred" }, m),
      "Invalid message(s)",
    );
  });

  test("public history: unreceived messages stay without rows", async () => {
    const m = await chat.newUser();
    const pub = await channel([chat.owner.userId]);
    const old = await send(pub, "old");
    const q = await openQueue(srv, m, ["update_message_flags"]);
    ok(await api("POST", "/mark_stream_as_read", { stream_id: pub }, m));
    err(
      await api("POST", "/mark_topic_as_read", { stream_id: pub, topic_name: "old" }, m),
      "No such topic 'old'",
    );
    const evs = await flagEventsUntilMarker(srv, q, api, m, old);
    assert.deepEqual(evs, []);
    // Read as history: read and historical, not a row of the user's.
    const flags = (await flagsIn(api, pub, m))[old]!;
    assert.ok(flags.includes("historical"));
  });

  test("bad input: Zulip-style errors, nothing changes", async () => {
    const m = await chat.newUser();
    const a = await channel([chat.owner.userId, m.userId]);
    await send(a, "t");
    const before = await unreadIds(api, m);
    err(
      await api("POST", "/mark_stream_as_read", {}, m),
      "Missing 'stream_id' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(await api("POST", "/mark_stream_as_read", { stream_id: "abc" }, m), "stream_id is not valid JSON");
    err(await api("POST", "/mark_stream_as_read", { stream_id: "1.5" }, m), "stream_id is not an integer");
    err(await api("POST", "/mark_stream_as_read", { stream_id: '"5"' }, m), "stream_id is not an integer");
    err(await api("POST", "/mark_stream_as_read", { stream_id: "-1" }, m), "Invalid channel ID");
    err(
      await api("POST", "/mark_stream_as_read", { stream_id: "123456789012345678901234567890" }, m),
      "stream_id is too large",
    );
    err(
      await api("POST", "/mark_topic_as_read", { stream_id: a }, m),
      "Missing 'topic_name' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(
      await api("POST", "/mark_topic_as_read", { topic_name: "t" }, m),
      "Missing 'stream_id' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(
      await api("POST", "/mark_topic_as_read", { stream_id: a, topic_name: "x".repeat(100_000) }, m),
      `No such topic '${"x".repeat(100_000)}'`,
    );
    const anon = await api("POST", "/mark_all_as_read", {}, null);
    assert.equal(anon.status, 401);
    assert.deepEqual(await unreadIds(api, m), before);
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("mark read - cluster", { skip }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("topic, channel and all: events, unreads", async () => {
    const me = await newUser(c, "member", "Reader");
    const api = makeApi(c.baseUrl, me);
    const srv = { api };
    // Welcome Bot greets the new user (FL 416): read it first, so that the
    // unreads below are the test's own.
    const greeting = await waitFor(
      async () => {
        const ids = await unreadIds(api);
        return ids.length ? ids : null;
      },
      { what: "Welcome Bot's greeting" },
    );
    assert.equal(greeting.length, 1);
    ok(await api("POST", "/messages/flags", { messages: greeting, op: "add", flag: "read" }));
    const ch = (await createChannel(c, [me], { name: "cluster reads" })).id;
    const send = async (topic: string) =>
      ok(await c.api("POST", "/messages", { type: "stream", to: ch, topic, content: "x" })).id as number;
    const a1 = await send("Alpha");
    const b1 = await send("beta");
    const dm = ok(await c.api("POST", "/messages", { type: "direct", to: [me.userId], content: "hi" }))
      .id as number;
    assert.deepEqual(await unreadIds(api), [a1, b1, dm]);

    const q = await openQueue(srv, me, ["update_message_flags"]);
    ok(await api("POST", "/mark_topic_as_read", { stream_id: ch, topic_name: "ALPHA" }));
    assert.deepEqual(await unreadIds(api), [b1, dm]);
    err(
      await api("POST", "/mark_topic_as_read", { stream_id: ch, topic_name: "zeta" }),
      "No such topic 'zeta'",
    );
    err(await api("POST", "/mark_stream_as_read", { stream_id: 999999 }), "Invalid channel ID");
    ok(await api("POST", "/mark_stream_as_read", { stream_id: ch }));
    assert.deepEqual(await unreadIds(api), [dm]);
    assert.deepEqual((await api("POST", "/mark_all_as_read", {})).body, {
      result: "success",
      msg: "",
      complete: true,
    });
    assert.deepEqual(await unreadIds(api), []);
    const evs = await flagEventsUntilMarker(srv, q, api, me, a1);
    assert.deepEqual(evs.map(strip), [readEvent([a1]), readEvent([b1]), readEvent([], true)]);
  });
});
