// Black-box HTTP tests of synchronized drafts: GET/POST /drafts,
// PATCH/DELETE /drafts/{id}, their events, /register's `drafts`, the
// enable_drafts_synchronization setting, a restart on the same data
// directory, and the main flow in cluster mode.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { userBehavior } from "../actors/user/index.ts";
import {
  assertError,
  assertSuccess,
  createChannel,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  useCluster,
  useEmbedded,
  type ApiResult,
  type Creds,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();

const channel = async (subscribers: number[], params: Record<string, unknown> = {}): Promise<number> =>
  (await createChannel(srv, subscribers, params)).id;

function list(auth: Creds): Promise<ApiResult> {
  return srv.api("GET", "/drafts", {}, auth);
}

async function drafts(auth: Creds): Promise<Record<string, unknown>[]> {
  const r = await list(auth);
  assertSuccess(r);
  assert.equal(r.body.count, r.body.drafts.length);
  return r.body.drafts;
}

async function create(auth: Creds, items: unknown[]): Promise<number[]> {
  const r = await srv.api("POST", "/drafts", { drafts: items }, auth);
  assertSuccess(r);
  return r.body.ids as number[];
}

describe("drafts", () => {
  test("create, list, edit and delete, with events to the owner only and /register", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const third = await newUser(srv);
    const ch = await channel([me.userId]);
    const q = await openQueue(srv, me, ["drafts"]);
    const qOther = await openQueue(srv, other, ["drafts"]);

    const before = Math.floor(Date.now() / 1000);
    const ids = await create(me, [
      { type: "stream", to: [ch], topic: "sync drafts", content: "Channel draft", timestamp: 1595479019 },
      { type: "private", to: [other.userId], topic: "ignored", content: "DM draft", timestamp: 1595479000 },
      { type: "", to: [ch], topic: "ignored", content: "  Unaddressed \n\n" },
      { type: "private", to: [third.userId, other.userId, me.userId], topic: "", content: "Group" },
    ]);
    assert.equal(ids.length, 4);
    assert.ok(ids[0]! < ids[1]! && ids[1]! < ids[2]! && ids[2]! < ids[3]!);
    const now = Math.ceil(Date.now() / 1000);

    const got = await drafts(me);
    // Oldest edit first.
    assert.deepEqual(
      got.map((d) => d.id),
      [ids[1], ids[0], ids[2], ids[3]],
    );
    const [dm, stream, unaddressed, group] = got as Record<string, unknown>[];
    assert.deepEqual(stream, {
      id: ids[0],
      type: "stream",
      to: [ch],
      topic: "sync drafts",
      content: "Channel draft",
      timestamp: 1595479019,
    });
    assert.deepEqual(dm, {
      id: ids[1],
      type: "private",
      to: [other.userId],
      topic: "",
      content: "DM draft",
      timestamp: 1595479000,
    });
    assert.equal(unaddressed!.type, "");
    assert.deepEqual(unaddressed!.to, []);
    assert.equal(unaddressed!.topic, "");
    assert.equal(unaddressed!.content, "Unaddressed");
    const ts = unaddressed!.timestamp as number;
    assert.ok(Number.isInteger(ts) && ts >= before && ts <= now, String(ts));
    // A group shows everyone but the user, by id.
    assert.deepEqual(
      group!.to,
      [other.userId, third.userId].sort((a, b) => a - b),
    );

    // Nobody else sees them.
    assert.deepEqual(await drafts(other), []);
    assertError(
      await srv.api(
        "PATCH",
        `/drafts/${ids[0]}`,
        { draft: { type: "", to: [], topic: "", content: "X" } },
        other,
      ),
      "Draft does not exist",
      "BAD_REQUEST",
      404,
    );
    assertError(
      await srv.api("DELETE", `/drafts/${ids[0]}`, {}, other),
      "Draft does not exist",
      "BAD_REQUEST",
      404,
    );

    // /register: newest edit first.
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["drafts"] }, me);
    assertSuccess(reg);
    assert.deepEqual(
      reg.body.drafts.map((d: { id: number }) => d.id),
      [ids[3], ids[2], ids[0], ids[1]],
    );

    const edited = { type: "stream", to: [ch], topic: "new topic", content: "Edited", timestamp: 1595479100 };
    assertSuccess(await srv.api("PATCH", `/drafts/${ids[0]}`, { draft: edited }, me));
    const after = (await drafts(me)).find((d) => d.id === ids[0]);
    assert.deepEqual(after, { id: ids[0], ...edited });

    assertSuccess(await srv.api("DELETE", `/drafts/${ids[1]}`, {}, me));
    assert.deepEqual(
      (await drafts(me)).map((d) => d.id),
      [ids[0], ids[2], ids[3]],
    );

    const evs = await eventsUntil(srv, q, (e) => e.length >= 3);
    assert.deepEqual(
      evs.map((e) => [e.type, e.op]),
      [
        ["drafts", "add"],
        ["drafts", "update"],
        ["drafts", "remove"],
      ],
    );
    assert.deepEqual(evs[0].drafts, [stream, dm, unaddressed, group]);
    assert.deepEqual(evs[1].draft, after);
    assert.equal(evs[2].draft_id, ids[1]);
    assert.deepEqual(await eventsUntil(srv, qOther, () => false), []);
  });

  test("normalization: stripping, truncation, recipients, fractional timestamps", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const ch = await channel([me.userId]);
    const long = "é".repeat(10001);
    const topic = "t".repeat(61);
    const ids = await create(me, [
      { type: "stream", to: [ch], topic, content: long, timestamp: 1595479019.9 },
      { type: "private", to: [], topic: "x", content: "to nobody", timestamp: 10 },
      { type: "private", to: [me.userId], topic: "", content: "note to self", timestamp: 11 },
      {
        type: "private",
        to: [other.userId, me.userId, other.userId],
        topic: "",
        content: "1:1",
        timestamp: 12,
      },
      { type: "stream", to: [ch], topic: "  spaced  ", content: "x", timestamp: null },
    ]);
    const byId = new Map((await drafts(me)).map((d) => [d.id, d]));
    const d0 = byId.get(ids[0])!;
    assert.equal(d0.timestamp, 1595479019);
    assert.equal(d0.topic, "t".repeat(57) + "...");
    const content = d0.content as string;
    assert.equal([...content].length, 10000);
    assert.ok(content.endsWith("\n[message truncated]"));
    assert.deepEqual([byId.get(ids[1])!.type, byId.get(ids[1])!.to], ["", []]);
    assert.deepEqual([byId.get(ids[2])!.type, byId.get(ids[2])!.to], ["private", [me.userId]]);
    assert.deepEqual(byId.get(ids[3])!.to, [other.userId]);
    // Zulip keeps a channel draft's topic as sent (no stripping).
    assert.equal(byId.get(ids[4])!.topic, "  spaced  ");
    // An empty list creates nothing.
    assert.deepEqual(await create(me, []), []);
    assert.equal((await drafts(me)).length, 5);
  });

  test("errors: every documented failure, exact texts, and nothing changes", async () => {
    const me = await newUser(srv);
    const gone = await newUser(srv);
    const goneEmail = (await srv.api("GET", `/users/${gone.userId}`)).body.user.email as string;
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    const ch = await channel([me.userId]);
    const priv = await channel([srv.owner.userId], { invite_only: true });
    const [keep] = await create(me, [{ type: "stream", to: [ch], topic: "keep", content: "Keep" }]);
    const snapshot = await drafts(me);

    const good = { type: "stream", to: [ch], topic: "t", content: "c" };
    const cases: [unknown, string][] = [
      ["not json", "drafts is not valid JSON"],
      [{ type: "stream" }, "drafts is not a list"],
      [[1], "drafts[0] is not a dict"],
      [[{ to: [], topic: "", content: "c" }], "drafts[0] field is missing: type"],
      [[{ ...good, type: "huddle" }], 'Invalid drafts[0]["type"]'],
      [[{ ...good, type: 1 }], 'Invalid drafts[0]["type"]'],
      [[{ ...good, to: "1" }], 'drafts[0]["to"] is not a list'],
      [[{ ...good, to: ["a"] }], 'drafts[0]["to"][0] is not an integer'],
      [[{ ...good, to: [1.5] }], 'drafts[0]["to"][0] is not an integer'],
      [[{ ...good, topic: 5 }], 'drafts[0]["topic"] is not a string'],
      [[{ ...good, content: 5 }], 'drafts[0]["content"] is not a string'],
      [[{ ...good, content: " \n\t " }], 'drafts[0]["content"] cannot be blank'],
      [[{ ...good, timestamp: "now" }], 'drafts[0]["timestamp"]["int"] is not an integer'],
      [[{ ...good, timestamp: true }], 'drafts[0]["timestamp"]["int"] is not an integer'],
      [[{ ...good, id: 5 }], 'Argument "id" at drafts[0]["id"] is unexpected'],
      [[good, { ...good, content: "" }], 'drafts[1]["content"] cannot be blank'],
      // Past the shape, Zulip's own checks, draft after draft.
      [[{ ...good, content: "a\u0000b" }], "Message must not contain null bytes"],
      [[{ ...good, timestamp: -1 }], "Timestamp must not be negative."],
      [[{ ...good, timestamp: 1e300 }], "Invalid timestamp"],
      [[{ ...good, topic: "a\u0000" }], "Topic must not contain null bytes"],
      [[{ ...good, to: [] }], "Must specify exactly 1 channel ID for channel messages"],
      [[{ ...good, to: [ch, ch] }], "Must specify exactly 1 channel ID for channel messages"],
      [[{ ...good, to: [999999] }], "Invalid channel ID"],
      [[{ ...good, to: [priv] }], "Invalid channel ID"],
      [[{ type: "private", to: [999999], topic: "", content: "c" }], "Invalid user ID 999999"],
      [
        [{ type: "private", to: [gone.userId], topic: "", content: "c" }],
        `'${goneEmail}' is no longer using Zulip.`,
      ],
      // A later draft's failure keeps the earlier valid ones out too.
      [[good, good, { ...good, to: [999999] }], "Invalid channel ID"],
    ];
    for (const [value, msg] of cases) {
      const raw = typeof value === "string" ? value : JSON.stringify(value);
      assertError(await srv.api("POST", "/drafts", { drafts: raw }, me), msg);
    }
    // JSON text the test client cannot build from an object.
    for (const [raw, msg] of [
      [
        '[{"type":"stream","to":[1],"topic":"t","content":"c","__proto__":1}]',
        'Argument "__proto__" at drafts[0]["__proto__"] is unexpected',
      ],
      [`[{"type":"stream","to":[${ch}],"topic":"t","content":"c","timestamp":1e400}]`, "Invalid timestamp"],
      [
        `[{"type":"stream","to":[${ch}],"topic":"t","content":"c","timestamp":-1e400}]`,
        "Timestamp must not be negative.",
      ],
      ['[{"type":"stream","to":[5.0],"topic":"t","content":"c"}]', 'drafts[0]["to"][0] is not an integer'],
    ] as const) {
      assertError(await srv.api("POST", "/drafts", { drafts: raw }, me), msg);
    }
    assertError(
      await srv.api("POST", "/drafts", {}, me),
      "Missing 'drafts' argument",
      "REQUEST_VARIABLE_MISSING",
    );

    // PATCH: the shape first, then the draft's existence, then Zulip's checks.
    assertError(
      await srv.api("PATCH", `/drafts/${keep}`, {}, me),
      "Missing 'draft' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(await srv.api("PATCH", `/drafts/${keep}`, { draft: [good] }, me), "draft is not a dict");
    assertError(
      await srv.api("PATCH", `/drafts/${keep}`, { draft: { ...good, content: "" } }, me),
      'draft["content"] cannot be blank',
    );
    assertError(
      await srv.api("PATCH", "/drafts/999999", { draft: { ...good, to: [999999] } }, me),
      "Draft does not exist",
      "BAD_REQUEST",
      404,
    );
    assertError(
      await srv.api("PATCH", `/drafts/${keep}`, { draft: { ...good, to: [999999] } }, me),
      "Invalid channel ID",
    );
    assertError(
      await srv.api("PATCH", `/drafts/${keep}`, { draft: { ...good, content: "\u0000" } }, me),
      "Message must not contain null bytes",
    );
    assertError(
      await srv.api("DELETE", "/drafts/999999", {}, me),
      "Draft does not exist",
      "BAD_REQUEST",
      404,
    );
    assertError(
      await srv.api("DELETE", "/drafts/99999999999999999999", {}, me),
      "Draft does not exist",
      "BAD_REQUEST",
      404,
    );
    assert.equal((await srv.api("PATCH", "/drafts/abc", { draft: good }, me)).status, 404);
    assert.equal((await srv.api("DELETE", "/drafts/-1", {}, me)).status, 404);
    assert.equal((await srv.api("GET", "/drafts", {}, null)).status, 401);
    assert.equal((await srv.api("POST", "/drafts", { drafts: [good] }, null)).status, 401);

    assert.deepEqual(await drafts(me), snapshot);
  });

  test("a user holds at most 1000 drafts; /register shows them all", async () => {
    const me = await newUser(srv);
    const many = Array.from({ length: 1000 }, (_, i) => ({
      type: "",
      to: [],
      topic: "",
      content: `d${i}`,
      timestamp: 1000 + i,
    }));
    assert.equal((await create(me, many)).length, 1000);
    const one = [{ type: "", to: [], topic: "", content: "one more" }];
    assertError(await srv.api("POST", "/drafts", { drafts: one }, me), "Too many drafts (limit: 1000)");
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["drafts"] }, me);
    assert.equal(reg.body.drafts.length, 1000);
    assert.equal(reg.body.drafts[0].content, "d999");
    const ids = (await drafts(me)).map((d) => d.id as number);
    assertSuccess(await srv.api("DELETE", `/drafts/${ids[0]}`, {}, me));
    assert.equal((await create(me, one)).length, 1);
  });

  test("turning enable_drafts_synchronization off deletes the drafts silently and refuses the endpoints", async () => {
    const me = await newUser(srv);
    const ch = await channel([me.userId]);
    const [id] = await create(me, [{ type: "stream", to: [ch], topic: "t", content: "c" }]);
    const q = await openQueue(srv, me, ["drafts", "user_settings"]);

    assertSuccess(await srv.api("PATCH", "/settings", { enable_drafts_synchronization: false }, me));
    const off = "User has disabled synchronizing drafts.";
    assertError(await list(me), off);
    const good = { type: "", to: [], topic: "", content: "c" };
    assertError(await srv.api("POST", "/drafts", { drafts: [good] }, me), off);
    // The setting is checked before the parameters.
    assertError(await srv.api("POST", "/drafts", {}, me), off);
    assertError(await srv.api("POST", "/drafts", { drafts: "nope" }, me), off);
    assertError(await srv.api("PATCH", `/drafts/${id}`, { draft: good }, me), off);
    assertError(await srv.api("PATCH", `/drafts/${id}`, { draft: 1 }, me), off);
    assertError(await srv.api("DELETE", `/drafts/${id}`, {}, me), off);
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["drafts", "user_settings"] }, me);
    assert.deepEqual(reg.body.drafts, []);
    assert.equal(reg.body.user_settings.enable_drafts_synchronization, false);

    // No drafts event: only the setting's.
    const evs = await eventsUntil(srv, q, (e) => e.length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    evs.push(...(await eventsUntil(srv, q, () => false)));
    assert.deepEqual(
      evs.map((e) => [e.type, e.property]),
      [["user_settings", "enable_drafts_synchronization"]],
    );

    // Back on: the old drafts are gone, new ones work.
    assertSuccess(await srv.api("PATCH", "/settings", { enable_drafts_synchronization: true }, me));
    assert.deepEqual(await drafts(me), []);
    assertError(
      await srv.api("PATCH", `/drafts/${id}`, { draft: good }, me),
      "Draft does not exist",
      "BAD_REQUEST",
      404,
    );
    assert.equal((await create(me, [good])).length, 1);
  });

  test("drafts and their ids survive a restart on the same data directory", async () => {
    const me: Member = await newUser(srv);
    const ids = await create(me, [
      { type: "", to: [], topic: "", content: "kept", timestamp: 5 },
      { type: "", to: [], topic: "", content: "removed", timestamp: 6 },
    ]);
    assertSuccess(
      await srv.api(
        "PATCH",
        `/drafts/${ids[0]}`,
        { draft: { type: "", to: [], topic: "", content: "kept 2", timestamp: 7 } },
        me,
      ),
    );
    assertSuccess(await srv.api("DELETE", `/drafts/${ids[1]}`, {}, me));
    const beforeRestart = await drafts(me);

    await srv.restart();

    assert.deepEqual(await drafts(me), beforeRestart);
    assert.equal(beforeRestart[0]!.content, "kept 2");
    const [next] = await create(me, [{ type: "", to: [], topic: "", content: "after" }]);
    assert.ok(next! > ids[1]!, `${next} > ${ids[1]}`);
  });
});

describe("drafts - user actor state", () => {
  const ref = { kind: "user" as const, realm: 1, key: "7" };

  test("a snapshot written before drafts existed reads as no drafts", () => {
    const old = JSON.parse(userBehavior.toSnapshot(userBehavior.initial(ref))) as Record<string, unknown>;
    delete old.drafts;
    assert.deepEqual(userBehavior.fromSnapshot(JSON.stringify(old), ref).drafts, []);
  });

  test("the settings fact that turns synchronization off clears the drafts; others keep them", () => {
    const draft = { id: 3, type: "", to: [], topic: "", content: "c", timestamp: 1 };
    let s = userBehavior.initial(ref);
    s = userBehavior.apply(s, { type: "draftsSaved", drafts: [draft] }, ref);
    s = userBehavior.apply(s, { type: "settings", values: { enter_sends: true }, bySelf: true }, ref);
    assert.deepEqual(s.drafts, [draft]);
    s = userBehavior.apply(
      s,
      { type: "settings", values: { enable_drafts_synchronization: false }, bySelf: true },
      ref,
    );
    assert.deepEqual(s.drafts, []);
  });
});

const skipCluster = requireBinaries("nats-server", "redis-server");

describe("drafts - cluster", { skip: skipCluster }, () => {
  const c = useCluster();

  test("create, edit, delete with events, /register and the setting across processes", async () => {
    const me = await newUser(c, "member", "Drafter");
    const ch = await createChannel(c, [me], { name: "cluster drafts" });
    const q = await openQueue(c, me, ["drafts"]);

    const ownerId = (await c.api("GET", "/users/me")).body.user_id as number;
    const post = await c.api(
      "POST",
      "/drafts",
      {
        drafts: [
          { type: "stream", to: [ch.id], topic: "t", content: "in a channel", timestamp: 100 },
          { type: "private", to: [ownerId], topic: "", content: "to the owner", timestamp: 200 },
        ],
      },
      me,
    );
    assertSuccess(post);
    const [a, b] = post.body.ids as number[];
    assertSuccess(
      await c.api(
        "PATCH",
        `/drafts/${a}`,
        { draft: { type: "", to: [], topic: "", content: "edited", timestamp: 300 } },
        me,
      ),
    );
    assertSuccess(await c.api("DELETE", `/drafts/${b}`, {}, me));
    assertError(await c.api("DELETE", `/drafts/${b}`, {}, me), "Draft does not exist", "BAD_REQUEST", 404);
    const got = await c.api("GET", "/drafts", {}, me);
    assertSuccess(got);
    assert.deepEqual(got.body.drafts, [
      { id: a, type: "", to: [], topic: "", content: "edited", timestamp: 300 },
    ]);
    const evs = await eventsUntil(c, q, (e) => e.length >= 3);
    assert.deepEqual(
      evs.map((e) => e.op),
      ["add", "update", "remove"],
    );
    assert.deepEqual(evs[0].drafts[1], {
      id: b,
      type: "private",
      to: [ownerId],
      topic: "",
      content: "to the owner",
      timestamp: 200,
    });
    const state = await c.api("POST", "/register", { fetch_event_types: ["drafts"] }, me);
    assert.deepEqual(state.body.drafts, got.body.drafts);

    assertSuccess(await c.api("PATCH", "/settings", { enable_drafts_synchronization: false }, me));
    assertError(await c.api("GET", "/drafts", {}, me), "User has disabled synchronizing drafts.");
    assertSuccess(await c.api("PATCH", "/settings", { enable_drafts_synchronization: true }, me));
    assert.deepEqual((await c.api("GET", "/drafts", {}, me)).body.drafts, []);
  });
});
