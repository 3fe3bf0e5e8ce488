// Black-box HTTP tests of GET /messages/{id}/history, POST /messages/render,
// GET /messages/{id}/read_receipts and GET /messages/matches_narrow, with
// the realm settings they honour (message_edit_history_visibility_policy,
// enable_read_receipts); the history and render flows also in cluster mode.

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  useCluster,
  useEmbedded,
  type Creds,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();
let seq = 0;

async function channel(subscribers: number[], extra: Obj = {}): Promise<{ id: number; name: string }> {
  const name = `extras ${++seq}`;
  const r = await srv.api("POST", "/channels/create", { name, subscribers, ...extra });
  assertSuccess(r);
  return { id: r.body.id as number, name };
}

async function send(auth: Creds, to: number | number[], content: string, topic = "t"): Promise<number> {
  const params: Obj = Array.isArray(to)
    ? { type: "direct", to: JSON.stringify(to), content }
    : { type: "stream", to, topic, content };
  const r = await srv.api("POST", "/messages", params, auth);
  assertSuccess(r);
  return r.body.id as number;
}

async function markRead(auth: Creds, id: number): Promise<void> {
  assertSuccess(await srv.api("POST", "/messages/flags", { messages: [id], op: "add", flag: "read" }, auth));
}

async function setPolicy(value: string): Promise<void> {
  assertSuccess(await srv.api("PATCH", "/realm", { message_edit_history_visibility_policy: value }));
}

describe("GET /messages/{id}/history", () => {
  let a: Member;
  let b: Member;
  let outsider: Member;
  let ch: { id: number; name: string };
  let ch2: { id: number; name: string };
  let msgId: number;
  let t0: number;

  before(async () => {
    a = await newUser(srv, 400, "Alice History");
    b = await newUser(srv, 400, "Bob History");
    outsider = await newUser(srv, 400, "Olga Outsider");
    ch = await channel([srv.owner.userId, a.userId, b.userId]);
    ch2 = await channel([srv.owner.userId, a.userId, b.userId]);
    t0 = Math.floor(Date.now() / 1000);
    msgId = await send(a, ch.id, "Hello!", "party at my houz");
    assertSuccess(await srv.api("PATCH", `/messages/${msgId}`, { content: "Howdy!" }, a));
    assertSuccess(await srv.api("PATCH", `/messages/${msgId}`, { topic: "party at my house" }));
    assertSuccess(await srv.api("PATCH", `/messages/${msgId}`, { stream_id: ch2.id }));
  });

  test("the original and each edit, oldest first, as Zulip fills them", async () => {
    const r = await srv.api("GET", `/messages/${msgId}/history`, {}, b);
    assertSuccess(r);
    const h = r.body.message_history as Obj[];
    assert.equal(h.length, 4);
    const now = Math.ceil(Date.now() / 1000);
    for (const s of h) assert.ok((s.timestamp as number) >= t0 && (s.timestamp as number) <= now);
    const strip = (s: Obj) => {
      const { timestamp: _t, ...rest } = s;
      return rest;
    };
    assert.deepEqual(strip(h[0]!), {
      content: "Hello!",
      rendered_content: "<p>Hello!</p>",
      topic: "party at my houz",
      user_id: a.userId,
    });
    const edit = strip(h[1]!);
    assert.match(String(edit.content_html_diff), /highlight_text_inserted">Howdy!</);
    assert.match(String(edit.content_html_diff), /highlight_text_deleted">Hello!</);
    delete edit.content_html_diff;
    assert.deepEqual(edit, {
      content: "Howdy!",
      rendered_content: "<p>Howdy!</p>",
      prev_content: "Hello!",
      prev_rendered_content: "<p>Hello!</p>",
      topic: "party at my houz",
      user_id: a.userId,
    });
    assert.deepEqual(strip(h[2]!), {
      content: "Howdy!",
      rendered_content: "<p>Howdy!</p>",
      topic: "party at my house",
      prev_topic: "party at my houz",
      user_id: srv.owner.userId,
    });
    assert.deepEqual(strip(h[3]!), {
      content: "Howdy!",
      rendered_content: "<p>Howdy!</p>",
      topic: "party at my house",
      prev_stream: ch.id,
      stream: ch2.id,
      user_id: srv.owner.userId,
    });
  });

  test("an unedited message, the empty topic and allow_empty_topic_name", async () => {
    const id = await send(a, ch.id, "plain", "");
    const r = await srv.api("GET", `/messages/${id}/history`, {}, a);
    assertSuccess(r);
    assert.equal(r.body.message_history.length, 1);
    assert.equal(r.body.message_history[0].topic, "general chat");
    const raw = await srv.api("GET", `/messages/${id}/history`, { allow_empty_topic_name: true }, a);
    assert.equal(raw.body.message_history[0].topic, "");
    const dm = await send(a, [b.userId], "a dm");
    const d = await srv.api("GET", `/messages/${dm}/history`, {}, b);
    assertSuccess(d);
    assert.equal(d.body.message_history[0].topic, "");
  });

  test("access: unknown ids, others' DMs, private channels; bad ids and types", async () => {
    const dm = await send(a, [b.userId], "secret dm");
    const priv = await channel([srv.owner.userId, a.userId], { invite_only: true });
    const pm = await send(a, priv.id, "private");
    for (const id of [999999999, dm, pm])
      assertError(await srv.api("GET", `/messages/${id}/history`, {}, outsider), "Invalid message(s)");
    assertError(await srv.api("GET", "/messages/abc/history", {}, a), "Not Found", "NOT_FOUND", 404);
    assertError(
      await srv.api("GET", `/messages/${msgId}/history`, { allow_empty_topic_name: "yes" }, a),
      "allow_empty_topic_name is not valid JSON",
    );
  });

  test("policy: moves only, then none (with its event and /register)", async () => {
    const q = await openQueue(srv, b, ["realm"]);
    try {
      await setPolicy("moves");
      const r = await srv.api("GET", `/messages/${msgId}/history`, {}, b);
      assertSuccess(r);
      // The content-only edit is gone; the topic and channel moves remain.
      assert.deepEqual(
        (r.body.message_history as Obj[]).map((s) => [s.prev_topic ?? null, s.prev_stream ?? null]),
        [
          [null, null],
          ["party at my houz", null],
          [null, ch.id],
        ],
      );
      assert.ok((r.body.message_history as Obj[]).every((s) => s.prev_content === undefined));
      await setPolicy("none");
      for (const id of [msgId, 999999999])
        assertError(
          await srv.api("GET", `/messages/${id}/history`, {}, b),
          "Message edit history is disabled in this organization",
        );
      const reg = await srv.api("POST", "/register", { fetch_event_types: ["realm"] }, b);
      assert.equal(reg.body.realm_message_edit_history_visibility_policy, "none");
      assert.equal(reg.body.realm_allow_edit_history, false);
      const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
      assert.deepEqual(
        evs.map((e) => [e.op, e.property, e.value]),
        [
          ["update", "message_edit_history_visibility_policy", "moves"],
          ["update", "message_edit_history_visibility_policy", "none"],
        ],
      );
      assertError(
        await srv.api("PATCH", "/realm", { message_edit_history_visibility_policy: "some" }),
        "Invalid message_edit_history_visibility_policy",
      );
      assertError(
        await srv.api("PATCH", "/realm", { message_edit_history_visibility_policy: "all" }, a),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      );
    } finally {
      await setPolicy("all");
    }
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["realm"] }, b);
    assert.equal(reg.body.realm_message_edit_history_visibility_policy, "all");
    assert.equal(reg.body.realm_allow_edit_history, true);
  });
});

describe("POST /messages/render", () => {
  test("the server's markdown: mentions, channel links, emoji, linkifiers", async () => {
    const u = await newUser(srv, 400, "Rita Render");
    const ch = await channel([srv.owner.userId]);
    assertSuccess(
      await srv.api("POST", "/realm/filters", {
        pattern: "#(?P<id>[0-9]+)",
        url_template: "https://tracker.example.com/{id}",
      }),
    );
    const r = await srv.api("POST", "/messages/render", { content: "**foo**" }, u);
    assertSuccess(r);
    assert.equal(r.body.rendered, "<p><strong>foo</strong></p>");
    const rich = await srv.api(
      "POST",
      "/messages/render",
      { content: `hi @**Rita Render** in #**${ch.name}** :octopus: see #42` },
      u,
    );
    assertSuccess(rich);
    const html = rich.body.rendered as string;
    assert.match(
      html,
      new RegExp(`<span class="user-mention" data-user-id="${u.userId}">@Rita Render</span>`),
    );
    assert.match(html, new RegExp(`<a class="stream" data-stream-id="${ch.id}"`));
    assert.match(html, /class="emoji emoji-1f419"/);
    assert.match(html, /href="https:\/\/tracker\.example\.com\/42"/);
  });

  test("errors: missing, too long; empty content renders empty; anonymous refused", async () => {
    const u = await newUser(srv);
    assertError(
      await srv.api("POST", "/messages/render", {}, u),
      "Missing 'content' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("POST", "/messages/render", { content: "x".repeat(10001) }, u),
      "content is too long (limit: 10000 characters)",
    );
    const empty = await srv.api("POST", "/messages/render", { content: "" }, u);
    assertSuccess(empty);
    assert.equal(empty.body.rendered, "");
    const anon = await srv.api("POST", "/messages/render", { content: "x" }, null);
    assert.equal(anon.status, 401);
  });
});

describe("GET /messages/{id}/read_receipts", () => {
  test("readers who share receipts, active, never the sender; the realm switch", async () => {
    const sender = await newUser(srv, 400, "Sam Sender");
    const reader = await newUser(srv, 400, "Rae Reader");
    const shy = await newUser(srv, 400, "Shy Reader");
    const gone = await newUser(srv, 400, "Gone Reader");
    const unread = await newUser(srv, 400, "Una Unread");
    const outsider = await newUser(srv, 400, "Otto Outsider");
    const ch = await channel([sender.userId, reader.userId, shy.userId, gone.userId, unread.userId], {
      invite_only: true,
    });
    const id = await send(sender, ch.id, "read me");
    for (const u of [reader, shy, gone]) await markRead(u, id);
    assertSuccess(await srv.api("PATCH", "/settings", { send_read_receipts: false }, shy));
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    const r = await srv.api("GET", `/messages/${id}/read_receipts`, {}, unread);
    assertSuccess(r);
    assert.deepEqual(r.body.user_ids, [reader.userId]);
    // Direct messages: the participants.
    const dm = await send(sender, [reader.userId, unread.userId], "dm read me");
    await markRead(reader, dm);
    assert.deepEqual((await srv.api("GET", `/messages/${dm}/read_receipts`, {}, sender)).body.user_ids, [
      reader.userId,
    ]);
    // No access: unknown, a private channel, another's DM.
    for (const m of [id, dm, 999999999])
      assertError(await srv.api("GET", `/messages/${m}/read_receipts`, {}, outsider), "Invalid message(s)");

    const q = await openQueue(srv, reader, ["realm"]);
    assertSuccess(await srv.api("PATCH", "/realm", { enable_read_receipts: false }));
    try {
      assertError(
        await srv.api("GET", `/messages/${id}/read_receipts`, {}, reader),
        "Read receipts are disabled in this organization.",
      );
      // Access is checked first, as in Zulip.
      assertError(await srv.api("GET", `/messages/${id}/read_receipts`, {}, outsider), "Invalid message(s)");
      const reg = await srv.api("POST", "/register", { fetch_event_types: ["realm"] }, reader);
      assert.equal(reg.body.realm_enable_read_receipts, false);
      const evs = await eventsUntil(srv, q, (e) => e.length >= 1);
      assert.deepEqual(
        evs.map((e) => [e.op, e.property, e.value]),
        [["update", "enable_read_receipts", false]],
      );
    } finally {
      assertSuccess(await srv.api("PATCH", "/realm", { enable_read_receipts: true }));
    }
    assertSuccess(await srv.api("GET", `/messages/${id}/read_receipts`, {}, reader));
  });
});

describe("GET /messages/matches_narrow", () => {
  test("the received ids that match, with search highlighting", async () => {
    const u = await newUser(srv, 400, "Mia Matcher");
    const ch = await channel([srv.owner.userId, u.userId]);
    const other = await channel([srv.owner.userId, u.userId]);
    const priv = await channel([srv.owner.userId], { invite_only: true });
    const m1 = await send(srv.owner, ch.id, "apple pie", "fruit <b>");
    const m2 = await send(srv.owner, ch.id, "banana", "fruit <b>");
    const m3 = await send(srv.owner, other.id, "apple tart", "dessert");
    const m4 = await send(srv.owner, priv.id, "apple secret", "x");
    const ids = JSON.stringify([m1, m2, m3, m4, 999999999]);
    const s = await srv.api(
      "GET",
      "/messages/matches_narrow",
      { msg_ids: ids, narrow: JSON.stringify([{ operator: "search", operand: "apple" }]) },
      u,
    );
    assertSuccess(s);
    assert.deepEqual(Object.keys(s.body.messages).map(Number).sort(), [m1, m3].sort());
    assert.match(s.body.messages[m1].match_content, /<span class="highlight">apple<\/span>/);
    assert.equal(s.body.messages[m1].match_subject, "fruit &#60;b&#62;");

    const c = await srv.api(
      "GET",
      "/messages/matches_narrow",
      { msg_ids: ids, narrow: JSON.stringify([["channel", ch.id]]) },
      u,
    );
    assertSuccess(c);
    assert.deepEqual(c.body.messages, {
      [m1]: { match_content: "<p>apple pie</p>", match_subject: "fruit &#60;b&#62;" },
      [m2]: { match_content: "<p>banana</p>", match_subject: "fruit &#60;b&#62;" },
    });
    const none = await srv.api("GET", "/messages/matches_narrow", { msg_ids: "[]", narrow: "[]" }, u);
    assertSuccess(none);
    assert.deepEqual(none.body.messages, {});
  });

  test("errors: missing and malformed parameters, bad narrows", async () => {
    const u = await newUser(srv);
    assertError(
      await srv.api("GET", "/messages/matches_narrow", { narrow: "[]" }, u),
      "Missing 'msg_ids' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("GET", "/messages/matches_narrow", { msg_ids: "[1]" }, u),
      "Missing 'narrow' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("GET", "/messages/matches_narrow", { msg_ids: '{"__proto__":1}', narrow: "[]" }, u),
      "msg_ids is not a list",
    );
    assertError(
      await srv.api("GET", "/messages/matches_narrow", { msg_ids: '["a"]', narrow: "[]" }, u),
      "msg_ids[0] is not an integer",
    );
    const bad = await srv.api(
      "GET",
      "/messages/matches_narrow",
      { msg_ids: "[1]", narrow: JSON.stringify([["bogus", "x"]]) },
      u,
    );
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, "BAD_NARROW");
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("message extras in cluster mode", { skip }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("history and render through the gateway", async () => {
    const me = await c.api("GET", "/users/me");
    assertSuccess(me);
    const ch = await c.api("POST", "/channels/create", {
      name: "cluster extras",
      subscribers: [me.body.user_id],
    });
    assertSuccess(ch);
    const sent = await c.api("POST", "/messages", {
      type: "stream",
      to: ch.body.id,
      topic: "t",
      content: "first",
    });
    assertSuccess(sent);
    const id = sent.body.id as number;
    assertSuccess(await c.api("PATCH", `/messages/${id}`, { content: "second" }));
    const h = await c.api("GET", `/messages/${id}/history`);
    assertSuccess(h);
    assert.deepEqual(
      (h.body.message_history as Obj[]).map((s) => [s.content, s.prev_content ?? null]),
      [
        ["first", null],
        ["second", "first"],
      ],
    );
    assertError(await c.api("GET", "/messages/999999999/history"), "Invalid message(s)");
    const r = await c.api("POST", "/messages/render", { content: "**bold** @**Nobody Here**" });
    assertSuccess(r);
    assert.equal(r.body.rendered, "<p><strong>bold</strong> @<strong>Nobody Here</strong></p>");
  });
});
