// Black-box HTTP tests of typing notifications: POST /typing (direct and
// channel), POST /messages/{id}/typing, their `typing` and
// `typing_edit_message` events (who gets them, the stream_typing_notifications
// capability, receives_typing_notifications), the senders' settings and
// Zulip's validation errors; the main flow again in cluster mode.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  drain,
  eventsUntil,
  makeApi,
  newUser,
  requireBinaries,
  useCluster,
  useEmbedded,
  type Creds,
  type Ev,
  type Member,
  type Queue,
} from "./support/index.ts";

const NOBODY = 1;

const srv = useEmbedded();

/** A queue for typing events; `caps` are client_capabilities. */
async function typingQueue(auth: Creds, caps: Record<string, boolean> = {}): Promise<Queue> {
  const r = await srv.api(
    "POST",
    "/register",
    { event_types: ["typing", "typing_edit_message"], client_capabilities: caps },
    auth,
  );
  assertSuccess(r);
  return { id: r.body.queue_id, last: r.body.last_event_id, auth };
}

async function emailOf(userId: number): Promise<string> {
  return (await srv.api("GET", `/users/${userId}`)).body.user.email as string;
}

let channelSeq = 0;
async function channel(subscribers: number[], params: Record<string, unknown> = {}): Promise<number> {
  const r = await srv.api("POST", "/channels/create", {
    name: `typing-${++channelSeq}-${process.pid}`,
    subscribers,
    ...params,
  });
  assertSuccess(r);
  return r.body.id as number;
}

/** Nothing more arrives on these queues (events are delivered after the reply). */
async function quiet(...qs: Queue[]): Promise<void> {
  await new Promise((r) => setTimeout(r, 150));
  for (const q of qs) assert.deepEqual(await drain(srv, q), []);
}

describe("POST /typing, direct", () => {
  test("start and stop reach every participant, the typing user included, and nobody else", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const outsider = await newUser(srv);
    const qa = await typingQueue(a);
    const qb = await typingQueue(b);
    const qo = await typingQueue(outsider);
    assertSuccess(await srv.api("POST", "/typing", { op: "start", to: JSON.stringify([b.userId]) }, a));
    assertSuccess(
      await srv.api("POST", "/typing", { type: "direct", op: "stop", to: JSON.stringify([b.userId]) }, a),
    );
    const sender = { user_id: a.userId, email: await emailOf(a.userId) };
    const recipients = [{ user_id: b.userId, email: await emailOf(b.userId) }, sender];
    for (const q of [qa, qb]) {
      const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
      assert.deepEqual(
        evs.map(({ id: _id, ...e }: Ev) => e),
        [
          { type: "typing", op: "start", message_type: "direct", sender, recipients },
          { type: "typing", op: "stop", message_type: "direct", sender, recipients },
        ],
      );
    }
    await quiet(qo);
  });

  test("receives_typing_notifications false: that user hears nothing, the others do", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const c = await newUser(srv);
    assertSuccess(await srv.api("PATCH", "/settings", { receives_typing_notifications: false }, b));
    const qb = await typingQueue(b);
    const qc = await typingQueue(c);
    const to = JSON.stringify([b.userId, c.userId]);
    assertSuccess(await srv.api("POST", "/typing", { op: "start", to }, a));
    const evs = await eventsUntil(srv, qc, (e) => e.length >= 1);
    assert.equal(evs.length, 1);
    assert.equal(evs[0].sender.user_id, a.userId);
    await quiet(qb);
    // Turned back on, the events come again.
    assertSuccess(await srv.api("PATCH", "/settings", { receives_typing_notifications: true }, b));
    assertSuccess(await srv.api("POST", "/typing", { op: "stop", to }, a));
    assert.equal((await eventsUntil(srv, qb, (e) => e.length >= 1)).length, 1);
  });

  test("receives_typing_notifications set by an administrator (target_users) is honoured too", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const target = { user_ids: [b.userId], skip_if_already_edited: false };
    assertSuccess(
      await srv.api("PATCH", "/settings", { target_users: target, receives_typing_notifications: false }),
    );
    const qb = await typingQueue(b);
    assertSuccess(await srv.api("POST", "/typing", { op: "start", to: JSON.stringify([b.userId]) }, a));
    await quiet(qb);
    assertSuccess(
      await srv.api("PATCH", "/settings", { target_users: target, receives_typing_notifications: true }),
    );
    assertSuccess(await srv.api("POST", "/typing", { op: "stop", to: JSON.stringify([b.userId]) }, a));
    assert.equal((await eventsUntil(srv, qb, (e) => e.length >= 1))[0].op, "stop");
  });

  test("a deactivated recipient is named but not notified", async () => {
    const a = await newUser(srv);
    const gone = await newUser(srv);
    const qa = await typingQueue(a);
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    assertSuccess(await srv.api("POST", "/typing", { op: "start", to: JSON.stringify([gone.userId]) }, a));
    const evs = await eventsUntil(srv, qa, (e) => e.length >= 1);
    assert.deepEqual(
      evs[0].recipients.map((r: Ev) => r.user_id),
      [gone.userId, a.userId],
    );
  });

  test("errors: Zulip's texts, and nothing is sent", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const qb = await typingQueue(b);
    const to = JSON.stringify([b.userId]);
    const cases: [Record<string, unknown>, string, string?][] = [
      [{ to }, "Missing 'op' argument", "REQUEST_VARIABLE_MISSING"],
      [{ op: "begin", to }, "Invalid op"],
      [{ op: "start", to, type: "private" }, "Invalid type"],
      [{ op: "start" }, "Missing 'to' argument"],
      [{ op: "start", to: "null" }, "Missing 'to' argument"],
      [{ op: "start", to: "[]" }, "Empty 'to' list"],
      [{ op: "start", to: "not json" }, "to is not valid JSON"],
      [{ op: "start", to: '["x"]' }, "to[0] is not an integer"],
      [{ op: "start", to: "[99999999]" }, "Invalid user ID 99999999"],
      [{ op: "start", to: JSON.stringify([b.userId, 99999998]) }, "Invalid user ID 99999998"],
      [{ op: "start", to: '{"__proto__": 1}' }, "to is not a list"],
    ];
    for (const [params, msg, code] of cases) {
      assertError(await srv.api("POST", "/typing", params, a), msg, code ?? "BAD_REQUEST");
    }
    await quiet(qb);
  });

  test("send_private_typing_notifications false: refused", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const qb = await typingQueue(b);
    assertSuccess(await srv.api("PATCH", "/settings", { send_private_typing_notifications: false }, a));
    assertError(
      await srv.api("POST", "/typing", { op: "start", to: JSON.stringify([b.userId]) }, a),
      "User has disabled typing notifications for direct messages",
    );
    await quiet(qb);
  });
});

describe("POST /typing, channel", () => {
  test("subscribers with the stream_typing_notifications capability hear it; others do not", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const outsider = await newUser(srv);
    const id = await channel([a.userId, b.userId]);
    const qCapable = await typingQueue(b, { stream_typing_notifications: true });
    const qEmpty = await typingQueue(b, { stream_typing_notifications: true, empty_topic_name: true });
    const qLegacy = await typingQueue(b);
    const qOut = await typingQueue(outsider, { stream_typing_notifications: true });
    const qSelf = await typingQueue(a, { stream_typing_notifications: true });
    assertSuccess(
      await srv.api("POST", "/typing", { type: "stream", op: "start", stream_id: id, topic: " lunch " }, a),
    );
    assertSuccess(
      await srv.api(
        "POST",
        "/typing",
        { type: "channel", op: "stop", stream_id: id, topic: "general chat" },
        a,
      ),
    );
    const sender = { user_id: a.userId, email: await emailOf(a.userId) };
    const expected = (emptyName: string) => [
      { type: "typing", op: "start", message_type: "stream", sender, stream_id: id, topic: "lunch" },
      { type: "typing", op: "stop", message_type: "stream", sender, stream_id: id, topic: emptyName },
    ];
    const strip = (evs: Ev[]) => evs.map(({ id: _id, ...e }: Ev) => e);
    assert.deepEqual(strip(await eventsUntil(srv, qCapable, (e) => e.length >= 2)), expected("general chat"));
    assert.deepEqual(strip(await eventsUntil(srv, qSelf, (e) => e.length >= 2)), expected("general chat"));
    assert.deepEqual(strip(await eventsUntil(srv, qEmpty, (e) => e.length >= 2)), expected(""));
    await quiet(qLegacy, qOut);
  });

  test("a public channel's non-subscriber may type there; only subscribers hear it", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const id = await channel([b.userId]);
    const qa = await typingQueue(a, { stream_typing_notifications: true });
    const qb = await typingQueue(b, { stream_typing_notifications: true });
    assertSuccess(
      await srv.api("POST", "/typing", { type: "stream", op: "start", stream_id: id, topic: "t" }, a),
    );
    assert.equal((await eventsUntil(srv, qb, (e) => e.length >= 1)).length, 1);
    await quiet(qa);
  });

  test("errors: missing fields, access, can_send_message_group, the sender's setting", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const guest = await newUser(srv, 600);
    const open = await channel([a.userId, b.userId]);
    const secret = await channel([b.userId], { invite_only: true });
    const closed = await channel([a.userId, b.userId], { can_send_message_group: NOBODY });
    const archived = await channel([a.userId, b.userId]);
    assertSuccess(await srv.api("DELETE", `/streams/${archived}`));
    const qb = await typingQueue(b, { stream_typing_notifications: true });
    const s = (p: Record<string, unknown>) => ({ type: "stream", op: "start", ...p });
    const cases: [Creds, Record<string, unknown>, string][] = [
      [a, s({ topic: "t" }), "Missing 'stream_id' argument"],
      [a, s({ stream_id: "null", topic: "t" }), "Missing 'stream_id' argument"],
      [a, s({ stream_id: open }), "Missing topic"],
      [a, s({ stream_id: '"1"', topic: "t" }), "stream_id is not an integer"],
      [a, s({ stream_id: 99999999, topic: "t" }), "Invalid channel ID"],
      [a, s({ stream_id: secret, topic: "t" }), "Invalid channel ID"],
      [a, s({ stream_id: archived, topic: "t" }), "Invalid channel ID"],
      [guest, s({ stream_id: open, topic: "t" }), "Invalid channel ID"],
      [a, s({ stream_id: closed, topic: "t" }), "You do not have permission to post in this channel."],
    ];
    for (const [who, params, msg] of cases) {
      assertError(await srv.api("POST", "/typing", params, who), msg, "BAD_REQUEST");
    }
    assertSuccess(await srv.api("PATCH", "/settings", { send_stream_typing_notifications: false }, a));
    assertError(
      await srv.api("POST", "/typing", s({ stream_id: open, topic: "t" }), a),
      "User has disabled typing notifications for channel messages",
    );
    await quiet(qb);
  });
});

describe("POST /messages/{id}/typing", () => {
  test("channel message: typing_edit_message to the subscribers", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const outsider = await newUser(srv);
    const id = await channel([a.userId, b.userId]);
    const sent = await srv.api("POST", "/messages", { type: "stream", to: id, topic: "t", content: "hi" }, a);
    assertSuccess(sent);
    const mid = sent.body.id as number;
    const qb = await typingQueue(b);
    const qo = await typingQueue(outsider);
    assertSuccess(await srv.api("POST", `/messages/${mid}/typing`, { op: "start" }, a));
    assertSuccess(await srv.api("POST", `/messages/${mid}/typing`, { op: "stop" }, a));
    const evs = await eventsUntil(srv, qb, (e) => e.length >= 2);
    const recipient = { type: "channel", channel_id: id, topic: "t" };
    assert.deepEqual(
      evs.map(({ id: _id, ...e }: Ev) => e),
      [
        { type: "typing_edit_message", op: "start", sender_id: a.userId, message_id: mid, recipient },
        { type: "typing_edit_message", op: "stop", sender_id: a.userId, message_id: mid, recipient },
      ],
    );
    await quiet(qo);
  });

  test("direct message: recipient user_ids are the participants who hear it", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const sent = await srv.api("POST", "/messages", { type: "direct", to: `[${b.userId}]`, content: "x" }, a);
    const mid = sent.body.id as number;
    const qb = await typingQueue(b);
    assertSuccess(await srv.api("POST", `/messages/${mid}/typing`, { op: "start" }, a));
    const [ev] = await eventsUntil(srv, qb, (e) => e.length >= 1);
    assert.equal(ev.type, "typing_edit_message");
    assert.deepEqual(ev.recipient.type, "direct");
    assert.deepEqual(
      [...ev.recipient.user_ids].sort((x: number, y: number) => x - y),
      [a.userId, b.userId].sort((x, y) => x - y),
    );
  });

  test("errors: op, unknown or unreadable message, someone else's message, settings", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const c = await newUser(srv);
    const secret = await channel([a.userId, b.userId], { invite_only: true });
    const sent = await srv.api(
      "POST",
      "/messages",
      { type: "stream", to: secret, topic: "t", content: "x" },
      a,
    );
    const mid = sent.body.id as number;
    const qb = await typingQueue(b);
    assertError(
      await srv.api("POST", `/messages/${mid}/typing`, {}, a),
      "Missing 'op' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(await srv.api("POST", `/messages/${mid}/typing`, { op: "go" }, a), "Invalid op");
    assertError(await srv.api("POST", `/messages/99999999/typing`, { op: "start" }, a), "Invalid message(s)");
    assertError(await srv.api("POST", `/messages/${mid}/typing`, { op: "start" }, c), "Invalid message(s)");
    assertError(
      await srv.api("POST", `/messages/${mid}/typing`, { op: "start" }, b),
      "You don't have permission to edit this message",
    );
    assertSuccess(await srv.api("PATCH", "/settings", { send_stream_typing_notifications: false }, a));
    assertError(
      await srv.api("POST", `/messages/${mid}/typing`, { op: "start" }, a),
      "User has disabled typing notifications for channel messages",
    );
    await quiet(qb);
  });
});

describe("POST /register typing constants", () => {
  test("Zulip's defaults", async () => {
    const r = await srv.api("POST", "/register", { fetch_event_types: ["realm"] });
    assert.equal(r.body.server_typing_started_expiry_period_milliseconds, 45000);
    assert.equal(r.body.server_typing_stopped_wait_period_milliseconds, 12000);
    assert.equal(r.body.server_typing_started_wait_period_milliseconds, 30000);
  });
});

describe("typing in cluster mode", { skip: requireBinaries("nats-server", "redis-server") }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("direct and channel typing reach queues on other nodes", async () => {
    const users: (Member & { api: ReturnType<typeof makeApi> })[] = [];
    for (let i = 0; i < 3; i++) {
      const email = `typing${i}@example.com`;
      const password = `pw-typing-${i}-x`;
      const created = await c.api("POST", "/users", { email, password, full_name: `Typer ${i}` });
      assertSuccess(created);
      const key = await c.api("POST", "/fetch_api_key", { username: email, password }, null);
      const creds = { email, apiKey: key.body.api_key as string };
      users.push({ ...creds, userId: created.body.user_id as number, api: makeApi(c.baseUrl, creds) });
    }
    const [a, b, d] = users as [(typeof users)[0], (typeof users)[0], (typeof users)[0]];
    const ch = await c.api("POST", "/channels/create", {
      name: "typing-cluster",
      subscribers: [a.userId, b.userId],
    });
    assertSuccess(ch);
    const reg = async (u: typeof a) => {
      const r = await u.api("POST", "/register", {
        event_types: ["typing"],
        client_capabilities: { stream_typing_notifications: true },
      });
      assertSuccess(r);
      return { id: r.body.queue_id as string, last: r.body.last_event_id as number };
    };
    const qb = await reg(b);
    const qd = await reg(d);
    assertSuccess(await a.api("POST", "/typing", { op: "start", to: JSON.stringify([b.userId]) }));
    assertSuccess(
      await a.api("POST", "/typing", { type: "stream", op: "start", stream_id: ch.body.id, topic: "t" }),
    );
    const got: Ev[] = [];
    for (let i = 0; i < 80 && got.length < 2; i++) {
      const r = await b.api("GET", "/events", { queue_id: qb.id, last_event_id: qb.last, dont_block: true });
      for (const e of r.body.events as Ev[]) {
        qb.last = Math.max(qb.last, e.id);
        if (e.type === "typing") got.push(e);
      }
      if (got.length < 2) await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(
      got.map((e) => [e.message_type, e.sender.user_id]),
      [
        ["direct", a.userId],
        ["stream", a.userId],
      ],
    );
    const other = await d.api("GET", "/events", {
      queue_id: qd.id,
      last_event_id: qd.last,
      dont_block: true,
    });
    assert.deepEqual(
      (other.body.events as Ev[]).filter((e) => e.type === "typing"),
      [],
    );
  });
});
