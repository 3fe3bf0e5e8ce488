// Black-box HTTP tests of scheduled messages: GET/POST /scheduled_messages,
// PATCH/DELETE /scheduled_messages/{id}, their errors and events,
// /register's `scheduled_messages`, delivery at the time as an ordinary
// send (and Zulip's `failed` when the send is refused then), a restart
// before the time, and in cluster mode a kill -9 of the node holding the
// owner's shard before the time (delivered once all the same).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NOTIFICATION_BOT_ID } from "../actors/realm/index.ts";
import { userBehavior } from "../actors/user/index.ts";
import {
  assertError,
  assertSuccess,
  createChannel,
  drain,
  eventsUntil,
  newUser,
  nodeOf,
  openQueue,
  requireBinaries,
  sleep,
  useCluster,
  useEmbedded,
  waitFor,
  type ApiResult,
  type Creds,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();

const channel = async (subscribers: number[], params: Record<string, unknown> = {}): Promise<number> =>
  (await createChannel(srv, subscribers, params)).id;

const nowS = () => Math.floor(Date.now() / 1000);

async function schedule(auth: Creds, params: Record<string, unknown>): Promise<number> {
  const r = await srv.api("POST", "/scheduled_messages", params, auth);
  assertSuccess(r);
  assert.equal(typeof r.body.scheduled_message_id, "number");
  return r.body.scheduled_message_id as number;
}

async function scheduled(auth: Creds): Promise<Record<string, unknown>[]> {
  const r = await srv.api("GET", "/scheduled_messages", {}, auth);
  assertSuccess(r);
  return r.body.scheduled_messages;
}

/** The newest messages of a narrow, as GET /messages shows them. */
async function newest(auth: Creds, narrow: unknown[], n = 5): Promise<Record<string, unknown>[]> {
  const r = await srv.api(
    "GET",
    "/messages",
    { anchor: "newest", num_before: n, num_after: 0, narrow, apply_markdown: false },
    auth,
  );
  assertSuccess(r);
  return r.body.messages;
}

describe("scheduled messages", () => {
  test("create, list, edit and delete, with events to the owner only and /register", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const third = await newUser(srv);
    const ch = await channel([me.userId]);
    const q = await openQueue(srv, me, ["scheduled_messages"]);
    const qOther = await openQueue(srv, other, ["scheduled_messages"]);
    const later = nowS() + 3600;

    const a = await schedule(me, {
      type: "stream",
      to: String(ch),
      topic: "plans",
      content: "**Later**",
      scheduled_delivery_timestamp: later + 10,
    });
    const b = await schedule(me, {
      type: "direct",
      to: JSON.stringify([other.userId]),
      content: "To you",
      scheduled_delivery_timestamp: later,
    });
    const c = await schedule(me, {
      type: "private",
      to: JSON.stringify([third.userId, other.userId, me.userId]),
      content: "Group",
      scheduled_delivery_timestamp: later + 20,
    });
    const d = await schedule(me, {
      type: "channel",
      to: String(ch),
      topic: "x",
      content: "to delete",
      scheduled_delivery_timestamp: later + 30,
    });
    assert.ok(a < b && b < c && c < d);

    const got = await scheduled(me);
    // Ordered by delivery time.
    assert.deepEqual(
      got.map((m) => m.scheduled_message_id),
      [b, a, c, d],
    );
    assert.deepEqual(got[1], {
      scheduled_message_id: a,
      to: ch,
      type: "stream",
      content: "**Later**",
      rendered_content: "<p><strong>Later</strong></p>",
      scheduled_delivery_timestamp: later + 10,
      failed: false,
      topic: "plans",
    });
    assert.deepEqual(got[0], {
      scheduled_message_id: b,
      to: [other.userId],
      type: "private",
      content: "To you",
      rendered_content: "<p>To you</p>",
      scheduled_delivery_timestamp: later,
      failed: false,
    });
    // A group shows everyone but the sender.
    assert.deepEqual(
      got[2]!.to,
      [other.userId, third.userId].sort((x, y) => x - y),
    );

    // Nobody else sees or touches them.
    assert.deepEqual(await scheduled(other), []);
    assertError(
      await srv.api("PATCH", `/scheduled_messages/${a}`, { content: "mine now" }, other),
      "Scheduled message does not exist",
      "BAD_REQUEST",
      404,
    );
    assertError(
      await srv.api("DELETE", `/scheduled_messages/${a}`, {}, other),
      "Scheduled message does not exist",
      "BAD_REQUEST",
      404,
    );

    const reg = await srv.api("POST", "/register", { fetch_event_types: ["scheduled_messages"] }, me);
    assertSuccess(reg);
    assert.deepEqual(reg.body.scheduled_messages, got);

    // Edit: content and time; then retarget a channel message to a DM.
    assertSuccess(
      await srv.api(
        "PATCH",
        `/scheduled_messages/${a}`,
        { content: "_Edited_", scheduled_delivery_timestamp: later + 40 },
        me,
      ),
    );
    assertSuccess(await srv.api("PATCH", `/scheduled_messages/${a}`, { topic: "new topic" }, me));
    let edited = (await scheduled(me)).find((m) => m.scheduled_message_id === a)!;
    assert.equal(edited.content, "_Edited_");
    assert.equal(edited.rendered_content, "<p><em>Edited</em></p>");
    assert.equal(edited.topic, "new topic");
    assert.equal(edited.scheduled_delivery_timestamp, later + 40);
    assertSuccess(
      await srv.api(
        "PATCH",
        `/scheduled_messages/${a}`,
        { type: "direct", to: JSON.stringify([third.userId]) },
        me,
      ),
    );
    edited = (await scheduled(me)).find((m) => m.scheduled_message_id === a)!;
    assert.equal(edited.type, "private");
    assert.deepEqual(edited.to, [third.userId]);
    assert.equal("topic" in edited, false);
    assert.equal(edited.content, "_Edited_");

    assertSuccess(await srv.api("DELETE", `/scheduled_messages/${d}`, {}, me));
    assertError(
      await srv.api("DELETE", `/scheduled_messages/${d}`, {}, me),
      "Scheduled message does not exist",
      "BAD_REQUEST",
      404,
    );
    assert.deepEqual(
      (await scheduled(me)).map((m) => m.scheduled_message_id),
      [b, c, a],
    );

    const evs = await eventsUntil(srv, q, (e) => e.length >= 8);
    assert.deepEqual(
      evs.map((e) => [e.type, e.op]),
      [
        ["scheduled_messages", "add"],
        ["scheduled_messages", "add"],
        ["scheduled_messages", "add"],
        ["scheduled_messages", "add"],
        ["scheduled_messages", "update"],
        ["scheduled_messages", "update"],
        ["scheduled_messages", "update"],
        ["scheduled_messages", "remove"],
      ],
    );
    assert.deepEqual(evs[0].scheduled_messages, [got[1]]);
    assert.deepEqual(evs[6].scheduled_message, edited);
    assert.equal(evs[7].scheduled_message_id, d);
    assert.deepEqual(await drain(srv, qOther), []);
  });

  test("documented errors and bad input, answered without a change", async () => {
    const me = await newUser(srv);
    const ch = await channel([me.userId]);
    const secretName = `secret-${process.pid}`;
    const secret = await channel([srv.owner.userId], { invite_only: true, name: secretName });
    const later = nowS() + 3600;
    const base = {
      type: "stream",
      to: String(ch),
      topic: "t",
      content: "c",
      scheduled_delivery_timestamp: later,
    };
    const q = await openQueue(srv, me, ["scheduled_messages"]);
    const post = (params: Record<string, unknown>) => srv.api("POST", "/scheduled_messages", params, me);

    for (const ts of [nowS() - 10, 0, -5]) {
      assertError(
        await post({ ...base, scheduled_delivery_timestamp: ts }),
        "Scheduled delivery time must be in the future.",
      );
    }
    assertError(
      await post({ ...base, scheduled_delivery_timestamp: "soon" }),
      "scheduled_delivery_timestamp is not valid JSON",
    );
    assertError(
      await post({ ...base, scheduled_delivery_timestamp: 1.5 }),
      "scheduled_delivery_timestamp is not an integer",
    );
    assertError(await post({ ...base, type: "bogus" }), "Invalid type");
    for (const name of ["type", "to", "content", "scheduled_delivery_timestamp"]) {
      const params: Record<string, unknown> = { ...base };
      delete params[name];
      assertError(await post(params), `Missing '${name}' argument`, "REQUEST_VARIABLE_MISSING");
    }
    assertError(await post({ ...base, to: "[1]" }), "Invalid data type for channel ID");
    assertError(await post({ ...base, to: "general" }), "Invalid data type for channel ID");
    assertError(await post({ ...base, type: "direct", to: "5" }), "Invalid data type for recipients");
    assertError(await post({ ...base, type: "direct", to: "nobody" }), "Invalid data type for recipients");
    assertError(
      await post({ ...base, type: "direct", to: '["a"]' }),
      "Recipient list may only contain user IDs",
    );
    assertError(await post({ ...base, type: "direct", to: "[999999]" }), "Invalid user ID 999999");
    assertError(await post({ ...base, type: "direct", to: "[]" }), "Message must have recipients");
    assertError(await post({ ...base, content: "   " }), "Message must not be empty");
    const { topic: _t, ...noTopic } = base;
    assertError(await post(noTopic), "Missing topic");
    // Someone else's private channel, and one that does not exist: the send's own checks.
    assertError(
      await post({ ...base, to: String(secret) }),
      `Not authorized to send to channel '${secretName}'`,
    );
    assertError(
      await post({ ...base, to: "987654" }),
      "Channel with ID '987654' does not exist",
      "STREAM_DOES_NOT_EXIST",
    );
    // __proto__-style names are ordinary (unknown) parameters.
    const proto = await post({ ...base, __proto__x: 1, constructor: "x" });
    assertSuccess(proto);
    const id = proto.body.scheduled_message_id as number;

    const patch = (path: string | number, params: Record<string, unknown>) =>
      srv.api("PATCH", `/scheduled_messages/${path}`, params, me);
    assertError(await patch(id, {}), "Nothing to change");
    assertError(
      await patch(id, { type: "direct" }),
      "Recipient required when updating type of scheduled message.",
    );
    assertError(
      await patch(id, { type: "stream", to: String(ch) }),
      "Topic required when updating scheduled message type to stream.",
    );
    assertError(
      await patch(id, { scheduled_delivery_timestamp: nowS() - 1 }),
      "Scheduled delivery time must be in the future.",
    );
    assertError(
      await patch(999999, { content: "x" }),
      "Scheduled message does not exist",
      "BAD_REQUEST",
      404,
    );
    assertError(await patch(id, { content: "" }), "Message must not be empty");
    assertError(await patch(id, { to: "[1]" }), "Invalid data type for channel ID");
    for (const bad of ["abc", "-1", "1.5"]) {
      const r = await patch(bad, { content: "x" });
      assert.equal(r.status, 404, bad);
    }
    assertError(
      await srv.api("DELETE", "/scheduled_messages/999999", {}, me),
      "Scheduled message does not exist",
      "BAD_REQUEST",
      404,
    );
    assert.equal((await srv.api("GET", "/scheduled_messages", {}, null)).status, 401);

    // Only the one valid request changed anything.
    const list = await scheduled(me);
    assert.deepEqual(
      list.map((m) => [m.scheduled_message_id, m.content, m.topic]),
      [[id, "c", "t"]],
    );
    const evs = await eventsUntil(srv, q, (e) => e.length >= 1);
    await sleep(100);
    evs.push(...(await drain(srv, q)));
    assert.deepEqual(
      evs.map((e) => e.op),
      ["add"],
    );
  });

  test("a client cannot pass the internal send key or check-only flag of a send", async () => {
    const me = await newUser(srv);
    const ch = await channel([me.userId]);
    for (let i = 0; i < 2; i++) {
      const r = await srv.api(
        "POST",
        "/messages",
        { type: "stream", to: ch, topic: "keys", content: "twice", send_key: "k", check_only: true },
        me,
      );
      assertSuccess(r);
      assert.equal(typeof r.body.id, "number");
    }
    assert.equal((await newest(me, [{ operator: "channel", operand: ch }])).length, 2);
  });

  test("delivered at its time as an ordinary send, visible in GET /messages, then gone", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const ch = await channel([me.userId, other.userId]);
    const q = await openQueue(srv, me, ["scheduled_messages", "message"]);
    const qOther = await openQueue(srv, other, ["message"]);
    const at = nowS() + 2;
    const id = await schedule(me, {
      type: "stream",
      to: String(ch),
      topic: "on time",
      content: "Delivered **later**",
      scheduled_delivery_timestamp: at,
    });
    const dm = await schedule(me, {
      type: "direct",
      to: JSON.stringify([other.userId]),
      content: "DM later",
      scheduled_delivery_timestamp: at,
    });
    assert.equal((await newest(other, [{ operator: "channel", operand: ch }])).length, 0);

    const msg = await waitFor(async () => (await newest(other, [{ operator: "channel", operand: ch }]))[0], {
      timeoutMs: 5000,
      what: "the channel message",
    });
    const deliveredAt = Date.now();
    assert.ok(deliveredAt <= (at + 1) * 1000 + 500, `delivered ${deliveredAt - at * 1000} ms after its time`);
    assert.equal(msg.sender_id, me.userId);
    assert.equal(msg.subject, "on time");
    assert.equal(msg.content, "Delivered **later**");
    assert.ok((msg.timestamp as number) >= at);
    const dmMsg = await waitFor(
      async () => (await newest(other, [{ operator: "dm", operand: [me.userId] }]))[0],
      { timeoutMs: 3000, what: "the direct message" },
    );
    assert.equal(dmMsg.content, "DM later");
    assert.equal(dmMsg.sender_id, me.userId);

    // Gone from the list once sent; an edit answers "already sent", a delete still succeeds.
    await waitFor(async () => (await scheduled(me)).length === 0, { timeoutMs: 3000, what: "an empty list" });
    assertError(
      await srv.api("PATCH", `/scheduled_messages/${id}`, { content: "too late" }, me),
      "Scheduled message was already sent",
    );
    const evs = await eventsUntil(srv, q, (e) => e.filter((x) => x.op === "remove").length >= 2);
    const removes = evs.filter((e) => e.type === "scheduled_messages" && e.op === "remove");
    assert.deepEqual(removes.map((e) => e.scheduled_message_id).sort(), [id, dm].sort());
    // The channel message reached the other subscriber's queue once.
    const got = await eventsUntil(srv, qOther, (e) => e.filter((x) => x.type === "message").length >= 2);
    assert.equal(got.filter((e) => e.type === "message" && e.message.subject === "on time").length, 1);
    assertSuccess(await srv.api("DELETE", `/scheduled_messages/${id}`, {}, me));
  });

  test("a send refused at delivery time marks it failed; editing needs a new time and reschedules it", async () => {
    const me = await newUser(srv);
    const chName = `doomed-${process.pid}`;
    const ch = await channel([me.userId], { name: chName });
    const q = await openQueue(srv, me, ["scheduled_messages"]);
    const at = nowS() + 2;
    const id = await schedule(me, {
      type: "stream",
      to: String(ch),
      topic: "doomed",
      content: "never sent",
      scheduled_delivery_timestamp: at,
    });
    // The channel is archived before the time: the send is refused then.
    assertSuccess(await srv.api("DELETE", `/streams/${ch}`, {}));
    const failed = await waitFor(
      async () => (await scheduled(me)).find((m) => m.scheduled_message_id === id && m.failed === true),
      { timeoutMs: 5000, what: "failed: true" },
    );
    assert.equal(failed.content, "never sent");
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.op === "update"));
    const upd = evs.find((e) => e.op === "update");
    assert.equal(upd.scheduled_message.failed, true);
    assert.equal(upd.scheduled_message.scheduled_message_id, id);
    // Notification Bot tells the user, in a direct message left unread.
    const notice = await waitFor(
      async () => (await newest(me, [], 1)).find((m) => m.sender_id === NOTIFICATION_BOT_ID),
      { timeoutMs: 3000, what: "the failure notice" },
    );
    assert.equal(
      notice.content,
      `The message you scheduled for <time:${new Date(at * 1000).toISOString().slice(0, 19)}+00:00> ` +
        "was not sent because of the following error:\n\n" +
        `> Not authorized to send to channel '${chName}'\n\n` +
        "[View scheduled messages](#scheduled)",
    );
    assert.equal(notice.type, "private");
    assert.equal((notice.flags as string[]).includes("read"), false);
    assert.deepEqual(
      (notice.display_recipient as { id: number }[]).map((r) => r.id).sort((x, y) => x - y),
      [me.userId, NOTIFICATION_BOT_ID],
    );
    // The conversation with the bot reads like any other.
    const withBot = await newest(me, [{ operator: "dm", operand: [NOTIFICATION_BOT_ID] }]);
    assert.deepEqual(
      withBot.map((m) => m.id),
      [notice.id],
    );
    const reg = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: ["recent_private_conversations", "message"] },
      me,
    );
    assertSuccess(reg);

    assertError(
      await srv.api("PATCH", `/scheduled_messages/${id}`, { content: "again" }, me),
      "Scheduled delivery time must be in the future.",
    );
    const ch2 = await channel([me.userId]);
    assertSuccess(
      await srv.api(
        "PATCH",
        `/scheduled_messages/${id}`,
        { to: String(ch2), scheduled_delivery_timestamp: nowS() + 2 },
        me,
      ),
    );
    const again = (await scheduled(me)).find((m) => m.scheduled_message_id === id)!;
    assert.equal(again.failed, false);
    const msg = await waitFor(async () => (await newest(me, [{ operator: "channel", operand: ch2 }]))[0], {
      timeoutMs: 5000,
      what: "the rescheduled message",
    });
    assert.equal(msg.content, "never sent");
  });

  test("a restart before the time still delivers, once", async () => {
    const me = await newUser(srv);
    const ch = await channel([me.userId]);
    const at = nowS() + 3;
    await schedule(me, {
      type: "stream",
      to: String(ch),
      topic: "restart",
      content: "survives a restart",
      scheduled_delivery_timestamp: at,
    });
    await srv.restart();
    const msg = await waitFor(async () => (await newest(me, [{ operator: "channel", operand: ch }]))[0], {
      timeoutMs: 8000,
      what: "the message after the restart",
    });
    assert.equal(msg.content, "survives a restart");
    await sleep(1500);
    assert.equal((await newest(me, [{ operator: "channel", operand: ch }])).length, 1);
  });
});

describe("scheduled messages - user actor state", () => {
  const ref = { kind: "user" as const, realm: 1, key: "7" };

  test("a snapshot written before scheduled messages existed reads as none", () => {
    const old = JSON.parse(userBehavior.toSnapshot(userBehavior.initial(ref))) as Record<string, unknown>;
    delete old.scheduled;
    assert.deepEqual(userBehavior.fromSnapshot(JSON.stringify(old), ref).scheduled, []);
  });
});

describe("scheduled messages - delivery turn", () => {
  const ref = { kind: "user" as const, realm: 1, key: "7" };
  const msg = (id: number, deliverAt: number) => ({
    id,
    type: "stream",
    to: [3],
    topic: "t",
    content: "c",
    rendered: "<p>c</p>",
    deliverAt,
    readBySender: null,
    client: "test",
    failed: false,
    failureMessage: null,
    delivered: false,
    attempts: 0,
    sending: false,
  });

  test("a message more than 10 minutes late fails (Zulip's cutoff); a due one is handed off with its key", async () => {
    const now = 1_800_000_000_000;
    let s = userBehavior.initial(ref);
    s = userBehavior.apply(s, { type: "created", email: "u@example.com", fullName: "U", role: 400 }, ref);
    s = userBehavior.apply(s, { type: "schedSaved", msg: msg(1, now / 1000 - 601) }, ref);
    s = userBehavior.apply(s, { type: "schedSaved", msg: msg(2, now / 1000 - 1) }, ref);
    const armed: number[] = [];
    const ctx = {
      self: ref,
      now: () => now,
      call: async () => ({}),
      nextId: async () => 0,
      schedule: (_k: string, ms: number) => void armed.push(ms),
      parked: () => [],
    };
    const d = await userBehavior.handlers.deliverScheduled!(s, {}, ctx, null);
    assert.deepEqual(d.facts, [
      { type: "schedSending", ids: [2] },
      { type: "schedFailed", id: 1, message: "Message could not be sent at the scheduled time." },
    ]);
    assert.equal(d.events!.length, 1);
    assert.equal((d.events![0]!.event.scheduled_message as Record<string, unknown>).failed, true);
    assert.deepEqual(
      d.handoffs!.map((h) => [h.subject, h.data.id, h.data.attempt, h.data.key]),
      [["scheduled.send", 2, 1, "scheduled:7:2:1"]],
    );
    // Nothing else waits for a timer.
    assert.deepEqual(armed, []);
    for (const f of d.facts!) s = userBehavior.apply(s, f, ref);
    assert.deepEqual(
      s.scheduled.map((m) => [m.id, m.failed, m.sending, m.attempts]),
      [
        [1, true, false, 0],
        [2, false, true, 1],
      ],
    );
  });
});

const skipCluster = requireBinaries("nats-server", "redis-server");

describe("scheduled messages - cluster", { skip: skipCluster }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("kill -9 of the node holding the owner's shard before the time: delivered once", async () => {
    // A user whose actor lives on n1 or n2; the victim is that node.
    const me = await newUser(c, "member", "Scheduler");
    const userId = me.userId;
    const victim = nodeOf(c, { kind: "user", realm: 1, key: String(userId) });
    const ch = await createChannel(c, [me], { name: "cluster scheduled" });
    const q = await openQueue(c, me, ["scheduled_messages"]);

    const at = Math.floor(Date.now() / 1000) + 3;
    const post = await c.api(
      "POST",
      "/scheduled_messages",
      {
        type: "stream",
        to: String(ch.id),
        topic: "failover",
        content: "after the kill",
        scheduled_delivery_timestamp: at,
      },
      me,
    );
    assertSuccess(post);
    const id = post.body.scheduled_message_id as number;
    const listed = await c.api("GET", "/scheduled_messages", {}, me);
    assertSuccess(listed);
    assert.deepEqual(
      listed.body.scheduled_messages.map((m: { scheduled_message_id: number }) => m.scheduled_message_id),
      [id],
    );
    const evs = await eventsUntil(c, q, (e) => e.length >= 1);
    assert.equal(evs[0].op, "add");

    await c.nodes.get(victim)!.stop("SIGKILL");
    const fetch = () =>
      c.api(
        "GET",
        "/messages",
        {
          anchor: "newest",
          num_before: 10,
          num_after: 0,
          narrow: [{ operator: "channel", operand: ch.id }],
          apply_markdown: false,
        },
        me,
      );
    const msgs = await waitFor(
      async () => {
        const r = await fetch().catch(() => null);
        const all = r?.status === 200 ? (r.body.messages as Record<string, unknown>[]) : [];
        const got = all.filter((m) => m.subject === "failover");
        return got.length ? got : null;
      },
      { timeoutMs: 20_000, stepMs: 200, what: "the message after the kill" },
    );
    assert.equal(msgs.length, 1, "delivered after the kill");
    assert.equal(msgs[0]!.content, "after the kill");
    assert.equal(msgs[0]!.sender_id, userId);
    // Once: nothing more arrives, and the list is empty.
    await sleep(2000);
    const again = await fetch();
    assertSuccess(again);
    assert.equal(
      (again.body.messages as Record<string, unknown>[]).filter((m) => m.subject === "failover").length,
      1,
    );
    const empty = await c.api("GET", "/scheduled_messages", {}, me);
    assertSuccess(empty);
    assert.deepEqual(empty.body.scheduled_messages, []);
  });
});

describe("scheduled messages - cluster, crash after the send", { skip: skipCluster }, () => {
  // Every node dies right after journaling a delivery's send (its arguments
  // carry the send key): the message is durable, its sender never heard.
  const crash = { ZULIP_TEST_CRASH_AFTER_APPEND: "scheduled:" };
  const c = useCluster({ nodes: ["n1", "n2"], nodeEnv: { n1: crash, n2: crash } });

  test("the attempt repeated on the surviving node sends nothing more", async () => {
    const ownerId = (await c.api("GET", "/users/me")).body.user_id as number;
    const ch = await c.api("POST", "/channels/create", { name: "crash scheduled", subscribers: [ownerId] });
    assertSuccess(ch);
    const post = await c.api("POST", "/scheduled_messages", {
      type: "stream",
      to: String(ch.body.id),
      topic: "crash",
      content: "sent once",
      scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) + 2,
    });
    assertSuccess(post);
    const fetch = async () => {
      const r = await c
        .api("GET", "/messages", {
          anchor: "newest",
          num_before: 10,
          num_after: 0,
          narrow: [{ operator: "channel", operand: ch.body.id }],
          apply_markdown: false,
        })
        .catch(() => null);
      return r?.status === 200
        ? (r.body.messages as Record<string, unknown>[]).filter((m) => m.subject === "crash")
        : null;
    };
    // One node died after the append.
    const end = Date.now() + 30_000;
    let exited = false;
    while (!exited && Date.now() < end) {
      exited = [...c.nodes.values()].some((n) => n.child.exitCode !== null || n.child.signalCode !== null);
      if (!exited) await sleep(100);
    }
    assert.ok(exited, "a node crashed after journaling the send");
    // The user's state says sent once the repeated attempt found the message.
    let listed: unknown[] | null = null;
    while (Date.now() < end) {
      const r = await c.api("GET", "/scheduled_messages").catch(() => null);
      if (r?.status === 200 && r.body.scheduled_messages.length === 0) {
        listed = r.body.scheduled_messages;
        break;
      }
      await sleep(200);
    }
    assert.deepEqual(listed, [], "the scheduled message was marked sent");
    const msgs = await fetch();
    assert.ok(msgs);
    assert.equal(msgs.length, 1);
    assert.equal(msgs[0]!.content, "sent once");
  });
});

export type { ApiResult, Member };
