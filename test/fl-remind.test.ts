// Black-box tests of the feature levels closed on the "remind" branch
// (docs/feature-levels/201-372.md and 373-496.md): the moderation request
// channel (331), message reports (382, 435), message reminders (381, 399,
// 415) and the welcome message's custom text (416).

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  createChannel,
  eventsUntil,
  newUser,
  nodeOf,
  openQueue,
  requireBinaries,
  sleep,
  useCluster,
  useEmbedded,
  waitFor,
  type Ev,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();
let member: Member;
let seq = 0;

before(async () => {
  member = await newUser(srv);
});

async function registerRealm(auth: Member | null = null): Promise<Record<string, unknown>> {
  const r = await srv.api("POST", "/register", { fetch_event_types: ["realm"] }, auth ?? undefined);
  assertSuccess(r);
  return r.body;
}

/** A new channel (the owner subscribed, and `subscribers`); its id. */
async function channel(opts: { inviteOnly?: boolean; subscribers?: number[] } = {}): Promise<number> {
  const params = { name: `fl-remind-${++seq}`, invite_only: opts.inviteOnly ?? false };
  return (await createChannel(srv, [srv.owner.userId, ...(opts.subscribers ?? [])], params)).id;
}

describe("FL 331: realm moderation_request_channel_id", () => {
  test("an administrator sets it; members hear realm/update; register follows; -1 disables", async () => {
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, -1);
    const ch = await channel({ inviteOnly: true });
    const q = await openQueue(srv, member, ["realm"]);
    const r = await srv.api("PATCH", "/realm", { moderation_request_channel_id: ch });
    assertSuccess(r);
    assert.equal(r.body.moderation_request_channel_id, ch);
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "realm"));
    assert.deepEqual(
      evs.filter((e) => e.type === "realm").map((e) => [e.op, e.property, e.value]),
      [["update", "moderation_request_channel_id", ch]],
    );
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, ch);
    assertSuccess(await srv.api("PATCH", "/realm", { moderation_request_channel_id: -1 }));
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, -1);
  });

  test("members, unknown channels and bad values are refused and change nothing", async () => {
    const ch = await channel();
    assertError(
      await srv.api("PATCH", "/realm", { moderation_request_channel_id: ch }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertError(
      await srv.api("PATCH", "/realm", { moderation_request_channel_id: 999999 }),
      "Invalid channel ID",
    );
    assertError(
      await srv.api("PATCH", "/realm", { moderation_request_channel_id: "x" }),
      "moderation_request_channel_id is not valid JSON",
    );
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, -1);
  });
});

async function send(
  auth: Member | null,
  to: number | number[],
  content: string,
  topic = "t",
): Promise<number> {
  const body: Record<string, unknown> = Array.isArray(to)
    ? { type: "direct", to: JSON.stringify(to), content }
    : { type: "stream", to, topic, content };
  const r = await srv.api("POST", "/messages", body, auth ?? undefined);
  assertSuccess(r);
  return r.body.id as number;
}

/** The newest message of a narrow, as `auth` sees it. */
async function newest(auth: Member | null, narrow: unknown[]): Promise<Ev> {
  const r = await srv.api(
    "GET",
    "/messages",
    { anchor: "newest", num_before: 1, num_after: 0, narrow: JSON.stringify(narrow), apply_markdown: false },
    auth ?? undefined,
  );
  assertSuccess(r);
  return r.body.messages.at(-1);
}

describe("FL 382, 435: POST /messages/{message_id}/report", () => {
  test("register lists the report types", async () => {
    const reg = await registerRealm(member);
    assert.deepEqual(reg.server_report_message_types, [
      { key: "spam", name: "Spam" },
      { key: "harassment", name: "Harassment" },
      { key: "inappropriate", name: "Inappropriate content" },
      { key: "norms", name: "Violates community norms" },
      { key: "other", name: "Other reason" },
    ]);
  });

  test("disabled until a moderation request channel is set; bad input refused", async () => {
    const ch = await channel({ subscribers: [member.userId] });
    const id = await send(null, ch, "hello");
    assertError(
      await srv.api("POST", `/messages/${id}/report`, { report_type: "spam" }, member),
      "Message reporting is not enabled in this organization.",
    );
    assertError(
      await srv.api("POST", `/messages/${id}/report`, { report_type: "other" }, member),
      "An explanation is required.",
    );
    assertError(
      await srv.api("POST", `/messages/${id}/report`, { report_type: "__proto__" }, member),
      "Invalid report_type",
    );
    assertError(
      await srv.api("POST", `/messages/${id}/report`, {}, member),
      "Missing 'report_type' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api(
        "POST",
        `/messages/${id}/report`,
        { report_type: "spam", description: "x".repeat(1001) },
        member,
      ),
      "description is too long (limit: 1000 characters)",
    );
  });

  test("Notification Bot posts Zulip's report into the moderation channel", async () => {
    const mod = await channel({ inviteOnly: true });
    assertSuccess(await srv.api("PATCH", "/realm", { moderation_request_channel_id: mod }));
    const n = ++seq;
    const author = await newUser(srv, 400, `Author ${n}`);
    const reporter = await newUser(srv, 400, `Reporter ${n}`);
    const ch = await channel({ subscribers: [author.userId, reporter.userId] });
    const name = `fl-remind-${seq}`;
    const id = await send(author, ch, "buy ```stuff```\n```\ncode\n```");
    const r = await srv.api(
      "POST",
      `/messages/${id}/report`,
      { report_type: "spam", description: "Selling things." },
      reporter,
    );
    assertSuccess(r);
    const got = await newest(null, [{ operator: "channel", operand: mod }]);
    assert.equal(got.sender_full_name, "Notification Bot");
    assert.equal(got.subject, `Author ${n} moderation`);
    const sent = (await srv.api("GET", `/messages/${id}`, {}, author)).body.message.timestamp as number;
    const at = `<time:${new Date(sent * 1000).toISOString().slice(0, 19)}+00:00>`;
    assert.equal(
      got.content,
      `@_**Reporter ${n}|${reporter.userId}** reported a message sent by @_**Author ${n}|${author.userId}** at ${at}.\n` +
        "```quote\n**Spam**. Selling things.\n```\n\n" +
        `\`\`\`\` spoiler Original message at [#${name} > t](#narrow/channel/${ch}-${name}/topic/t/with/${id})\n` +
        "buy ```stuff```\n```\ncode\n```\n````",
    );
    // A direct message: the link goes to the conversation.
    const dm = await send(author, [reporter.userId], "hi there");
    assertSuccess(await srv.api("POST", `/messages/${dm}/report`, { report_type: "norms" }, reporter));
    const got2 = await newest(null, [{ operator: "channel", operand: mod }]);
    const ids = [author.userId, reporter.userId].sort((a, b) => a - b).join(",");
    assert.match(got2.content, /^@_\*\*Reporter .* reported a message sent by @_\*\*Author /);
    assert.ok(
      got2.content.includes(`[Original message](http://localhost/#narrow/dm/${ids}/near/${dm})`),
      got2.content,
    );
    assert.ok(got2.content.includes("**Violates community norms**. \n"));
  });

  test("a group direct message: the header names the other participants", async () => {
    const mod = await channel({ inviteOnly: true });
    assertSuccess(await srv.api("PATCH", "/realm", { moderation_request_channel_id: mod }));
    const n = ++seq;
    const a = await newUser(srv, 400, `GA ${n}`);
    const b = await newUser(srv, 400, `GB ${n}`);
    const c = await newUser(srv, 400, `GC ${n}`);
    const id = await send(a, [b.userId, c.userId], "group hello");
    assertSuccess(await srv.api("POST", `/messages/${id}/report`, { report_type: "harassment" }, c));
    const got = await newest(null, [{ operator: "channel", operand: mod }]);
    const [first, second] = [b, c].sort((x, y) => x.userId - y.userId);
    const name = (u: Member) => (u === b ? `GB ${n}` : `GC ${n}`);
    assert.ok(
      got.content.startsWith(
        `@_**GC ${n}|${c.userId}** reported a message sent by @_**GA ${n}|${a.userId}** to ` +
          `@_**${name(first!)}|${first!.userId}**, and @_**${name(second!)}|${second!.userId}** at <time:`,
      ),
      got.content,
    );
    const ids = [a.userId, b.userId, c.userId].sort((x, y) => x - y).join(",");
    assert.ok(
      got.content.includes(`[Original message](http://localhost/#narrow/dm/${ids}-group/near/${id})`),
    );
    assert.equal(got.subject, `GA ${n} moderation`);
  });

  test("a message the reporter cannot read is refused, and nothing is posted", async () => {
    const mod = await channel({ inviteOnly: true });
    assertSuccess(await srv.api("PATCH", "/realm", { moderation_request_channel_id: mod }));
    const secret = await channel({ inviteOnly: true });
    const id = await send(null, secret, "secret");
    assertError(
      await srv.api("POST", `/messages/${id}/report`, { report_type: "spam" }, member),
      "Invalid message(s)",
    );
    assertError(
      await srv.api("POST", `/messages/99999999/report`, { report_type: "spam" }, member),
      "Invalid message(s)",
    );
    assert.equal(await newest(null, [{ operator: "channel", operand: mod }]), undefined);
  });
});

/** The user's newest message from Notification Bot, once there is one with id > after. */
async function botDm(auth: Member, after: number): Promise<Ev | undefined> {
  const m = await newest(auth, [{ operator: "sender", operand: "notification-bot@zulip.com" }]).catch(
    () => undefined,
  );
  return m && m.id > after ? m : undefined;
}

describe("FL 381, 399, 415: message reminders", () => {
  test("register: max_reminder_note_length and an empty reminders list", async () => {
    const r = await srv.api("POST", "/register", { fetch_event_types: ["realm", "reminders"] }, member);
    assertSuccess(r);
    assert.equal(r.body.max_reminder_note_length, 1000);
    assert.deepEqual(r.body.reminders, []);
  });

  test("a reminder about a channel message: add event, list, delivery by Notification Bot, remove event", async () => {
    const n = ++seq;
    const user = await newUser(srv, 400, `Rem ${n}`);
    const ch = await channel({ subscribers: [user.userId] });
    const name = `fl-remind-${seq}`;
    const mid = await send(null, ch, "please review", "plans");
    const q = await openQueue(srv, user, ["reminders", "message"]);
    const at = Math.floor(Date.now() / 1000) + 2;
    const r = await srv.api(
      "POST",
      "/reminders",
      { message_id: mid, scheduled_delivery_timestamp: at, note: "\n  look again  \n" },
      user,
    );
    assertSuccess(r);
    const rid = r.body.reminder_id as number;
    assert.equal(typeof rid, "number");
    const expected =
      "You requested a reminder for the following message. Note:\n >   look again\n\n" +
      `@_**Olivia Owner|${srv.owner.userId}** [said](http://localhost/#narrow/channel/${ch}-${name}/topic/plans/near/${mid}) ` +
      `in [#${name} > plans](#narrow/channel/${ch}-${name}/topic/plans/with/${mid}):\n` +
      "```quote\nplease review\n```";
    const list = await srv.api("GET", "/reminders", {}, user);
    assertSuccess(list);
    assert.equal(list.body.reminders.length, 1);
    const rem = list.body.reminders[0];
    assert.deepEqual(
      { ...rem, rendered_content: typeof rem.rendered_content },
      {
        reminder_id: rid,
        to: [user.userId],
        type: "private",
        content: expected,
        rendered_content: "string",
        scheduled_delivery_timestamp: at,
        failed: false,
        reminder_target_message_id: mid,
      },
    );
    // Reminders are not scheduled messages.
    assert.deepEqual((await srv.api("GET", "/scheduled_messages", {}, user)).body.scheduled_messages, []);
    assertError(
      await srv.api("DELETE", `/scheduled_messages/${rid}`, {}, user),
      "Scheduled message does not exist",
      "BAD_REQUEST",
      404,
    );
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["reminders"] }, user);
    assert.deepEqual(reg.body.reminders, list.body.reminders);

    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "reminders"));
    assert.deepEqual(
      evs.filter((e) => e.type === "reminders").map(({ id: _id, ...e }) => e),
      [{ type: "reminders", op: "add", reminders: list.body.reminders }],
    );
    const got = await waitFor(() => botDm(user, mid), { timeoutMs: 8000, what: "the reminder" });
    assert.ok(got.timestamp <= at + 2, `delivered at ${got.timestamp}, due ${at}`);
    assert.equal(got.content, expected);
    assert.equal(got.type, "private");
    assert.deepEqual(
      got.display_recipient.map((u: { id: number }) => u.id).sort(),
      [user.userId, got.sender_id].sort(),
    );
    assert.ok(!got.flags.includes("read"));
    const later = await eventsUntil(srv, q, (e) =>
      e.some((x) => x.type === "reminders" && x.op === "remove"),
    );
    assert.ok(later.some((e) => e.type === "reminders" && e.op === "remove" && e.reminder_id === rid));
    assert.deepEqual((await srv.api("GET", "/reminders", {}, user)).body.reminders, []);
  });

  test("a direct message, deletion, and another user's reminder", async () => {
    const a = await newUser(srv, 400, `Ann ${++seq}`);
    const b = await newUser(srv, 400, `Bob ${seq}`);
    const dm = await send(a, [b.userId], "see you");
    const at = Math.floor(Date.now() / 1000) + 3600;
    const r = await srv.api("POST", "/reminders", { message_id: dm, scheduled_delivery_timestamp: at }, b);
    assertSuccess(r);
    const rid = r.body.reminder_id as number;
    const ids = [a.userId, b.userId].sort((x, y) => x - y).join(",");
    const rem = (await srv.api("GET", "/reminders", {}, b)).body.reminders[0];
    assert.equal(
      rem.content,
      "You requested a reminder for the following direct message.\n\n" +
        `@_**Ann ${seq}|${a.userId}** [said](http://localhost/#narrow/dm/${ids}/near/${dm}) to @_**Bob ${seq}|${b.userId}**:\n` +
        "```quote\nsee you\n```",
    );
    assertError(
      await srv.api("DELETE", `/reminders/${rid}`, {}, a),
      "Reminder does not exist",
      "BAD_REQUEST",
      404,
    );
    const q = await openQueue(srv, b, ["reminders"]);
    assertSuccess(await srv.api("DELETE", `/reminders/${rid}`, {}, b));
    const evs = await eventsUntil(srv, q, (e) => e.length > 0);
    assert.deepEqual(
      evs.map(({ id: _id, ...e }) => e),
      [{ type: "reminders", op: "remove", reminder_id: rid }],
    );
    assert.deepEqual((await srv.api("GET", "/reminders", {}, b)).body.reminders, []);
    assertError(
      await srv.api("DELETE", `/reminders/${rid}`, {}, b),
      "Reminder does not exist",
      "BAD_REQUEST",
      404,
    );
  });

  test("bad input is refused and schedules nothing", async () => {
    const ch = await channel({ subscribers: [member.userId] });
    const mid = await send(null, ch, "x");
    const future = Math.floor(Date.now() / 1000) + 3600;
    const post = (params: Record<string, unknown>) => srv.api("POST", "/reminders", params, member);
    assertError(
      await post({ message_id: mid, scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) - 10 }),
      "Scheduled delivery time must be in the future.",
    );
    assertError(
      await post({ message_id: 99999999, scheduled_delivery_timestamp: future }),
      "Invalid message(s)",
    );
    const secret = await channel({ inviteOnly: true });
    const hidden = await send(null, secret, "secret");
    assertError(
      await post({ message_id: hidden, scheduled_delivery_timestamp: future }),
      "Invalid message(s)",
    );
    assertError(
      await post({ message_id: mid, scheduled_delivery_timestamp: future, note: "n".repeat(1001) }),
      "Maximum reminder note length: 1000 characters",
    );
    assertError(
      await post({ message_id: "__proto__", scheduled_delivery_timestamp: future }),
      "message_id is not valid JSON",
    );
    assertError(
      await post({ scheduled_delivery_timestamp: future }),
      "Missing 'message_id' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await post({ message_id: mid, scheduled_delivery_timestamp: 1e15 }),
      "Invalid scheduled_delivery_timestamp",
    );
    assert.deepEqual((await srv.api("GET", "/reminders", {}, member)).body.reminders, []);
  });

  test("a reminder survives a restart and is delivered at its time", async () => {
    const ch = await channel({ subscribers: [member.userId] });
    const mid = await send(null, ch, "after restart");
    const at = Math.floor(Date.now() / 1000) + 2;
    assertSuccess(
      await srv.api("POST", "/reminders", { message_id: mid, scheduled_delivery_timestamp: at }, member),
    );
    await srv.restart();
    const got = await waitFor(() => botDm(member, mid), { timeoutMs: 8000, what: "the reminder" });
    assert.ok(got.content.includes("after restart"));
    assert.ok(got.timestamp <= Math.max(at + 2, Math.floor(Date.now() / 1000)));
    assert.deepEqual((await srv.api("GET", "/reminders", {}, member)).body.reminders, []);
  });
});

describe("FL 331, 381, 382: cluster mode", { skip: requireBinaries("nats-server", "redis-server") }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("a report goes to the moderation request channel set on PATCH /realm", async () => {
    const mod = await c.api("POST", "/channels/create", {
      name: "cluster moderation",
      subscribers: [1],
      invite_only: true,
    });
    assertSuccess(mod);
    const set = await c.api("PATCH", "/realm", { moderation_request_channel_id: mod.body.id });
    assertSuccess(set);
    const reg = await c.api("POST", "/register", { fetch_event_types: ["realm"] });
    assert.equal(reg.body.realm_moderation_request_channel_id, mod.body.id);
    const me = await newUser(c, "member", "Reporter");
    const ch = await createChannel(c, [me], { name: "cluster reported" });
    const sent = await c.api("POST", "/messages", {
      type: "stream",
      to: ch.id,
      topic: "x",
      content: "spam!",
    });
    assertSuccess(sent);
    assertSuccess(await c.api("POST", `/messages/${sent.body.id}/report`, { report_type: "spam" }, me));
    const got = await c.api("GET", "/messages", {
      anchor: "newest",
      num_before: 1,
      num_after: 0,
      narrow: [{ operator: "channel", operand: mod.body.id }],
      apply_markdown: false,
    });
    assertSuccess(got);
    const m = got.body.messages.at(-1);
    assert.equal(m.sender_full_name, "Notification Bot");
    assert.equal(m.subject, "Olivia Owner moderation");
    assert.ok(m.content.includes("**Spam**. \n") && m.content.includes("spam!"), m.content);
  });

  test("kill -9 of the node holding the user's shard before the time: delivered once", async () => {
    const me = await newUser(c, "member", "Reminded");
    const victim = nodeOf(c, { kind: "user", realm: 1, key: String(me.userId) });
    const ch = await createChannel(c, [me], { name: "cluster reminders" });
    const sent = await c.api("POST", "/messages", {
      type: "stream",
      to: ch.id,
      topic: "later",
      content: "remind me in the cluster",
    });
    assertSuccess(sent);
    const q = await openQueue(c, me, ["reminders"]);
    const at = Math.floor(Date.now() / 1000) + 3;
    const r = await c.api(
      "POST",
      "/reminders",
      { message_id: sent.body.id, scheduled_delivery_timestamp: at },
      me,
    );
    assertSuccess(r);
    const listed = await c.api("GET", "/reminders", {}, me);
    assertSuccess(listed);
    assert.deepEqual(
      listed.body.reminders.map((x: { reminder_id: number }) => x.reminder_id),
      [r.body.reminder_id],
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
          narrow: [{ operator: "sender", operand: "notification-bot@zulip.com" }],
          apply_markdown: false,
        },
        me,
      );
    const reminders = (b: Record<string, unknown>) =>
      (b.messages as { content: string }[]).filter((m) => m.content.includes("remind me in the cluster"));
    const got = await waitFor(
      async () => {
        const res = await fetch().catch(() => null);
        const found = res?.status === 200 ? reminders(res.body) : [];
        return found.length ? found : null;
      },
      { timeoutMs: 20_000, stepMs: 200, what: "the reminder after the kill" },
    );
    assert.equal(got.length, 1, "delivered after the kill");
    assert.ok(got[0]!.content.startsWith("You requested a reminder for the following message."));
    await sleep(2000);
    const again = await fetch();
    assertSuccess(again);
    assert.equal(reminders(again.body).length, 1);
    const empty = await c.api("GET", "/reminders", {}, me);
    assertSuccess(empty);
    assert.deepEqual(empty.body.reminders, []);
  });
});
