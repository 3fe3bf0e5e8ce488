// Black-box HTTP tests of GET /users/{user_id}/status, alert words
// (GET/POST/DELETE /users/me/alert_words) and muted users
// (POST/DELETE /users/me/muted_users/{id}): replies, Zulip's errors, events,
// /register keys, and their effect on new messages (has_alert_word; a muted
// sender's messages arrive read). The main flow also runs on a cluster.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { alertedUsers, buildMatcher, realmMatcher } from "../actors/channel/alert-words.ts";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  useCluster,
  useEmbedded,
  withoutGreeting,
  type Api,
  type Creds,
  type Ev,
} from "./support/index.ts";

const srv = useEmbedded();

let chan = 0;

/** A fresh public channel with these subscribers. */
async function channel(api: Api, users: Creds[]): Promise<string> {
  const name = `prefs-${process.pid}-${++chan}`;
  for (const u of users) {
    const r = await api("POST", "/users/me/subscriptions", { subscriptions: JSON.stringify([{ name }]) }, u);
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  return name;
}

async function sendTo(api: Api, from: Creds, to: string, content: string): Promise<number> {
  const r = await api("POST", "/messages", { type: "stream", to, topic: "t", content }, from);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.id as number;
}

async function flagsOf(api: Api, who: Creds, id: number): Promise<string[]> {
  const r = await api(
    "GET",
    "/messages",
    { anchor: id, num_before: 0, num_after: 0, narrow: "[]", apply_markdown: false },
    who,
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const m = (r.body.messages as { id: number; flags: string[] }[]).find((x) => x.id === id);
  assert.ok(m, `message ${id} not visible`);
  return m.flags;
}

function messageEvent(evs: Ev[], id: number): Ev {
  return evs.find((e) => e.type === "message" && e.message.id === id);
}

describe("GET /users/{user_id}/status", () => {
  test("another user's status; empty when none; errors", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const plain = await srv.api("GET", `/users/${other.userId}/status`, {}, me);
    assertSuccess(plain);
    assert.deepEqual(plain.body.status, {});
    assertSuccess(
      await srv.api("POST", "/users/me/status", { status_text: "on vacation", emoji_name: "car" }, other),
    );
    const set = await srv.api("GET", `/users/${other.userId}/status`, {}, me);
    assertSuccess(set);
    assert.deepEqual(set.body.status, {
      status_text: "on vacation",
      emoji_name: "car",
      emoji_code: "1f697",
      reaction_type: "unicode_emoji",
    });
    // A guest reads it too (every member is visible in this realm).
    const guest = await newUser(srv, 600);
    assert.deepEqual(
      (await srv.api("GET", `/users/${other.userId}/status`, {}, guest)).body.status,
      set.body.status,
    );

    assertError(await srv.api("GET", "/users/99999999/status", {}, me), "No such user");
    assertError(await srv.api("GET", "/users/99999999999999999999/status", {}, me), "No such user");
    const bot = await srv.api("POST", "/bots", { full_name: "Status Bot", short_name: `sbot${process.pid}` });
    assertSuccess(bot);
    assertError(await srv.api("GET", `/users/${bot.body.user_id}/status`, {}, me), "No such user");
    const gone = await newUser(srv);
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    assertError(await srv.api("GET", `/users/${gone.userId}/status`, {}, me), "User is deactivated");
    assert.equal((await srv.api("GET", "/users/abc/status", {}, me)).status, 404);
    assert.equal((await srv.api("GET", `/users/${other.userId}/status`, {}, null)).status, 401);
  });
});

describe("alert words", () => {
  test("add, list, remove, with events and /register", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const q = await openQueue(srv, me, ["alert_words"]);
    const qOther = await openQueue(srv, other, ["alert_words"]);
    assert.deepEqual((await srv.api("GET", "/users/me/alert_words", {}, me)).body.alert_words, []);

    const added = await srv.api(
      "POST",
      "/users/me/alert_words",
      { alert_words: JSON.stringify(["  Foo ", "bar", "", "  ", "BAR", "multi word"]) },
      me,
    );
    assertSuccess(added);
    // Stripped, blanks dropped, case-insensitive duplicates once (the last spelling).
    assert.deepEqual(added.body.alert_words, ["Foo", "BAR", "multi word"]);
    // Words already present (in any case) are ignored.
    const again = await srv.api("POST", "/users/me/alert_words", { alert_words: '["foo","new"]' }, me);
    assert.deepEqual(again.body.alert_words, ["Foo", "BAR", "multi word", "new"]);
    assert.deepEqual(
      (await srv.api("GET", "/users/me/alert_words", {}, me)).body.alert_words,
      again.body.alert_words,
    );

    const removed = await srv.api(
      "DELETE",
      "/users/me/alert_words",
      { alert_words: '["bar","MULTI WORD","nope"]' },
      me,
    );
    assertSuccess(removed);
    assert.deepEqual(removed.body.alert_words, ["Foo", "new"]);

    const reg = await srv.api("POST", "/register", { fetch_event_types: '["alert_words"]' }, me);
    assertSuccess(reg);
    assert.deepEqual(reg.body.alert_words, ["Foo", "new"]);
    assert.deepEqual(
      (await srv.api("POST", "/register", { fetch_event_types: '["alert_words"]' }, other)).body.alert_words,
      [],
    );

    const evs = await eventsUntil(srv, q, (e) => e.length >= 3);
    assert.deepEqual(
      evs.map((e) => [e.type, e.alert_words]),
      [
        ["alert_words", ["Foo", "BAR", "multi word"]],
        ["alert_words", ["Foo", "BAR", "multi word", "new"]],
        ["alert_words", ["Foo", "new"]],
      ],
    );
    assert.deepEqual(await eventsUntil(srv, qOther, () => false), []);
  });

  test("bad input is refused and changes nothing", async () => {
    const me = await newUser(srv);
    assertSuccess(await srv.api("POST", "/users/me/alert_words", { alert_words: '["keep"]' }, me));
    const cases: [string, Record<string, unknown>, string, string?][] = [
      ["POST", {}, "Missing 'alert_words' argument", "REQUEST_VARIABLE_MISSING"],
      ["DELETE", {}, "Missing 'alert_words' argument", "REQUEST_VARIABLE_MISSING"],
      ["POST", { alert_words: "keep" }, "alert_words is not valid JSON"],
      ["POST", { alert_words: '"keep"' }, "alert_words is not a list"],
      ["POST", { alert_words: '{"__proto__": 1}' }, "alert_words is not a list"],
      ["POST", { alert_words: '["ok", 5]' }, "alert_words[1] is not a string"],
      ["DELETE", { alert_words: "[null]" }, "alert_words[0] is not a string"],
      [
        "POST",
        { alert_words: JSON.stringify(["long".repeat(26)]) },
        "alert_words[0] is too long (limit: 100 characters)",
      ],
      // The limit applies before stripping.
      [
        "POST",
        { alert_words: JSON.stringify([` ${"x".repeat(100)}`]) },
        "alert_words[0] is too long (limit: 100 characters)",
      ],
    ];
    for (const [method, params, msg, code] of cases) {
      assertError(await srv.api(method, "/users/me/alert_words", params, me), msg, code ?? "BAD_REQUEST");
    }
    // 100 code points is fine.
    const edge = await srv.api(
      "POST",
      "/users/me/alert_words",
      { alert_words: JSON.stringify(["é".repeat(100)]) },
      me,
    );
    assertSuccess(edge);
    assert.deepEqual(edge.body.alert_words, ["keep", "é".repeat(100)]);
    assert.equal((await srv.api("GET", "/users/me/alert_words", {}, null)).status, 401);
  });

  test("has_alert_word on new messages, by Zulip's word boundaries", async () => {
    const watcher = await newUser(srv);
    const sender = await newUser(srv);
    const bystander = await newUser(srv);
    const name = await channel(srv.api, [watcher, sender, bystander]);
    assertSuccess(
      await srv.api("POST", "/users/me/alert_words", { alert_words: '["one","two words","☃"]' }, watcher),
    );
    const q = await openQueue(srv, watcher, ["message"]);
    const alerts: [string, boolean][] = [
      ["Normal alert one time", true],
      ["Normal alert one", true],
      ["one at the start", true],
      ["This one? should alert", true],
      ["Case of ONE, won't stop me", true],
      ["(one)", true],
      ['"one" quoted', false],
      ["say TWO WORDS now", true],
      ["a ☃ here", true],
      ["Don't alert on clone, onerous or someone", false],
      ["Don't alert on http://t.co/one/ URLs", false],
      ["nothing here", false],
    ];
    const ids: number[] = [];
    for (const [content, want] of alerts) {
      const id = await sendTo(srv.api, sender, name, content);
      ids.push(id);
      assert.equal((await flagsOf(srv.api, watcher, id)).includes("has_alert_word"), want, content);
      assert.ok(!(await flagsOf(srv.api, bystander, id)).includes("has_alert_word"), content);
    }
    const evs = await eventsUntil(srv, q, (e) => e.filter((x) => x.type === "message").length >= ids.length);
    ids.forEach((id, i) => {
      assert.equal(messageEvent(evs, id).flags.includes("has_alert_word"), alerts[i]![1], alerts[i]![0]);
    });
    // An is:alerted narrow finds them.
    const narrow = await srv.api(
      "GET",
      "/messages",
      {
        anchor: "newest",
        num_before: 50,
        num_after: 0,
        narrow: JSON.stringify([{ operator: "is", operand: "alerted" }]),
      },
      watcher,
    );
    assertSuccess(narrow);
    const alerted = (narrow.body.messages as { id: number }[]).map((m) => m.id);
    assert.deepEqual(
      alerted,
      ids.filter((_, i) => alerts[i]![1]),
    );

    // Zulip flags the sender's own message too (its server does not skip
    // the sender; only the web app leaves own messages unhighlighted).
    const own = await sendTo(srv.api, watcher, name, "my own one");
    assert.deepEqual(await flagsOf(srv.api, watcher, own), ["read", "has_alert_word"]);

    // Removing the word stops the flag on new messages.
    assertSuccess(await srv.api("DELETE", "/users/me/alert_words", { alert_words: '["ONE"]' }, watcher));
    const after = await sendTo(srv.api, sender, name, "one more");
    assert.ok(!(await flagsOf(srv.api, watcher, after)).includes("has_alert_word"));
    // In direct messages too.
    const dm = await srv.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify([watcher.userId]), content: "two words!" },
      sender,
    );
    assertSuccess(dm);
    assert.deepEqual(await flagsOf(srv.api, watcher, dm.body.id), ["has_alert_word"]);
  });
});

describe("alert word matcher", () => {
  test("overlapping words, many users, and a stale cache", () => {
    const m = buildMatcher({ "1": ["he", "she"], "2": ["hers", "SHE"], "3": ["x y"] });
    assert.deepEqual([...alertedUsers(m, "ushers")].sort(), []);
    assert.deepEqual([...alertedUsers(m, "she, hers")].sort(), [1, 2]);
    assert.deepEqual([...alertedUsers(m, "he")].sort(), [1]);
    assert.deepEqual([...alertedUsers(m, "a X Y.")].sort(), [3]);
    // Linear in the content: a long adversarial text is quick.
    const big = buildMatcher({ "1": ["a".repeat(100), `${"a".repeat(99)}b`] });
    const t0 = performance.now();
    assert.equal(alertedUsers(big, "a".repeat(10000)).size, 0);
    assert.ok(performance.now() - t0 < 500);
    // A stamp this process has no words for must be asked for again.
    const realm = 1_000_000 + process.pid;
    assert.ok(realmMatcher(realm, "s1", { "1": ["w"] }));
    assert.ok(realmMatcher(realm, "s1", undefined));
    assert.equal(realmMatcher(realm, "s0", undefined), undefined);
    assert.equal(realmMatcher(realm, undefined, undefined), null);
  });
});

describe("muted users", () => {
  test("mute and unmute, with events, /register and Zulip's errors", async () => {
    const me = await newUser(srv);
    const target = await newUser(srv);
    const other = await newUser(srv);
    const q = await openQueue(srv, me, ["muted_users"]);
    const qTarget = await openQueue(srv, target, ["muted_users"]);
    const before = Math.floor(Date.now() / 1000);
    assertSuccess(await srv.api("POST", `/users/me/muted_users/${target.userId}`, {}, me));
    const reg = await srv.api("POST", "/register", { fetch_event_types: '["muted_users"]' }, me);
    assertSuccess(reg);
    assert.equal(reg.body.muted_users.length, 1);
    const entry = reg.body.muted_users[0];
    assert.deepEqual(Object.keys(entry).sort(), ["id", "timestamp"]);
    assert.equal(entry.id, target.userId);
    assert.ok(entry.timestamp >= before && entry.timestamp <= Math.ceil(Date.now() / 1000));

    assertError(
      await srv.api("POST", `/users/me/muted_users/${target.userId}`, {}, me),
      "User already muted",
    );
    assertError(await srv.api("POST", `/users/me/muted_users/${me.userId}`, {}, me), "Cannot mute self");
    assertError(await srv.api("POST", "/users/me/muted_users/99999999", {}, me), "No such user");
    assertError(await srv.api("DELETE", "/users/me/muted_users/99999999", {}, me), "No such user");
    assertError(
      await srv.api("DELETE", `/users/me/muted_users/${other.userId}`, {}, me),
      "User is not muted",
    );
    assertError(await srv.api("DELETE", `/users/me/muted_users/${me.userId}`, {}, me), "User is not muted");
    assert.equal((await srv.api("POST", "/users/me/muted_users/abc", {}, me)).status, 404);
    assert.equal((await srv.api("POST", "/users/me/muted_users/__proto__", {}, me)).status, 404);
    assert.equal((await srv.api("POST", `/users/me/muted_users/${target.userId}`, {}, null)).status, 401);

    // Bots and deactivated users may be muted.
    const bot = await srv.api("POST", "/bots", { full_name: "Mute Bot", short_name: `mbot${process.pid}` });
    assertSuccess(bot);
    assertSuccess(await srv.api("POST", `/users/me/muted_users/${bot.body.user_id}`, {}, me));
    const gone = await newUser(srv);
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    assertSuccess(await srv.api("POST", `/users/me/muted_users/${gone.userId}`, {}, me));

    assertSuccess(await srv.api("DELETE", `/users/me/muted_users/${target.userId}`, {}, me));
    const list = (await srv.api("POST", "/register", { fetch_event_types: '["muted_users"]' }, me)).body
      .muted_users;
    assert.deepEqual(
      list.map((m: { id: number }) => m.id),
      [bot.body.user_id, gone.userId],
    );

    const evs = await eventsUntil(srv, q, (e) => e.length >= 4);
    assert.deepEqual(
      evs.map((e) => [e.type, e.muted_users.map((m: { id: number }) => m.id)]),
      [
        ["muted_users", [target.userId]],
        ["muted_users", [target.userId, bot.body.user_id]],
        ["muted_users", [target.userId, bot.body.user_id, gone.userId]],
        ["muted_users", [bot.body.user_id, gone.userId]],
      ],
    );
    assert.deepEqual(await eventsUntil(srv, qTarget, () => false), []);
  });

  test("a muted sender's messages arrive read; muting marks old ones read", async () => {
    const me = await newUser(srv);
    const loud = await newUser(srv);
    const friend = await newUser(srv);
    const name = await channel(srv.api, [me, loud, friend]);
    const old = await sendTo(srv.api, loud, name, "before the mute");
    const oldDm = await srv.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify([me.userId]), content: "hi" },
      loud,
    );
    assertSuccess(oldDm);
    assert.deepEqual(await flagsOf(srv.api, me, old), []);
    const q = await openQueue(srv, me, ["message", "update_message_flags"]);

    assertSuccess(await srv.api("POST", `/users/me/muted_users/${loud.userId}`, {}, me));
    assert.deepEqual(await flagsOf(srv.api, me, old), ["read"]);
    assert.deepEqual(await flagsOf(srv.api, me, oldDm.body.id), ["read"]);

    const mention = await sendTo(
      srv.api,
      loud,
      name,
      `@**${(await srv.api("GET", "/users/me", {}, me)).body.full_name}** hey`,
    );
    const dm = await srv.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify([me.userId]), content: "psst" },
      loud,
    );
    assertSuccess(dm);
    assert.deepEqual(await flagsOf(srv.api, me, mention), ["read", "mentioned"]);
    assert.deepEqual(await flagsOf(srv.api, me, dm.body.id), ["read"]);
    // Only for the muter.
    assert.deepEqual(await flagsOf(srv.api, friend, mention), []);
    // Others' messages are unaffected.
    const fromFriend = await sendTo(srv.api, friend, name, "normal");
    assert.deepEqual(await flagsOf(srv.api, me, fromFriend), []);

    const evs = await eventsUntil(srv, q, (e) => e.filter((x) => x.type === "message").length >= 3);
    const flagsEv = evs.find((e) => e.type === "update_message_flags");
    assert.deepEqual(
      { op: flagsEv.op, flag: flagsEv.flag, messages: flagsEv.messages, all: flagsEv.all },
      { op: "add", flag: "read", messages: [old, oldDm.body.id], all: false },
    );
    assert.deepEqual(messageEvent(evs, mention).flags, ["read", "mentioned"]);
    assert.deepEqual(messageEvent(evs, dm.body.id).flags, ["read"]);
    assert.deepEqual(messageEvent(evs, fromFriend).flags, []);

    // No unread trace in /register.
    const reg = await srv.api("POST", "/register", { fetch_event_types: '["message"]' }, me);
    assertSuccess(reg);
    assert.deepEqual(reg.body.unread_msgs.mentions, []);
    // Welcome Bot's greeting of the new user (FL 416) is not the subject.
    assert.deepEqual(withoutGreeting(reg.body.unread_msgs.pms as { sender_id: number }[]), []);

    // After unmuting, new messages are unread again.
    assertSuccess(await srv.api("DELETE", `/users/me/muted_users/${loud.userId}`, {}, me));
    const later = await sendTo(srv.api, loud, name, "after");
    assert.deepEqual(await flagsOf(srv.api, me, later), []);
  });
});

const skipCluster = requireBinaries("nats-server", "redis-server");

describe("user prefs - cluster", { skip: skipCluster }, () => {
  const c = useCluster();

  async function user(n: number): Promise<Creds & { userId: number }> {
    const email = `prefs${n}@example.com`;
    const r = await c.api("POST", "/users", { email, password: `prefs-pw-${n}-x`, full_name: `Prefs ${n}` });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const k = await c.api("POST", "/fetch_api_key", { username: email, password: `prefs-pw-${n}-x` }, null);
    return { email, apiKey: k.body.api_key, userId: r.body.user_id };
  }

  test("status, alert words and mutes across nodes", async () => {
    const a = await user(1);
    const b = await user(2);
    assertSuccess(await c.api("POST", "/users/me/status", { status_text: "busy" }, b));
    assert.deepEqual((await c.api("GET", `/users/${b.userId}/status`, {}, a)).body.status, {
      status_text: "busy",
    });

    const name = await channel(c.api, [a, b]);
    assertSuccess(await c.api("POST", "/users/me/alert_words", { alert_words: '["deploy"]' }, a));
    assert.deepEqual((await c.api("GET", "/users/me/alert_words", {}, a)).body.alert_words, ["deploy"]);
    const hit = await sendTo(c.api, b, name, "Deploy is done.");
    assert.deepEqual(await flagsOf(c.api, a, hit), ["has_alert_word"]);
    assert.deepEqual(await flagsOf(c.api, b, hit), ["read"]);

    assertSuccess(await c.api("POST", `/users/me/muted_users/${b.userId}`, {}, a));
    const reg = await c.api("POST", "/register", { fetch_event_types: '["muted_users","alert_words"]' }, a);
    assert.deepEqual(
      reg.body.muted_users.map((m: { id: number }) => m.id),
      [b.userId],
    );
    assert.deepEqual(reg.body.alert_words, ["deploy"]);
    assert.deepEqual(await flagsOf(c.api, a, hit), ["read", "has_alert_word"]);
    const muted = await sendTo(c.api, b, name, "deploy again");
    assert.deepEqual(await flagsOf(c.api, a, muted), ["read", "has_alert_word"]);
    assertError(await c.api("POST", `/users/me/muted_users/${b.userId}`, {}, a), "User already muted");
    assertSuccess(await c.api("DELETE", `/users/me/muted_users/${b.userId}`, {}, a));
    const fresh = await sendTo(c.api, b, name, "quiet");
    assert.deepEqual(await flagsOf(c.api, a, fresh), []);
  });
});
