// Black-box HTTP tests of messages: POST /messages (channel, direct,
// legacy forms), GET /messages (anchors, windows, narrows), GET
// /messages/{id}, POST /messages/flags and /messages/flags/narrow, the
// Zulip Markdown dialect, and the message / update_message_flags events.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import { createChannel, err, ok, uniq, useChat, type User } from "./support/index.ts";

const chat = useChat({ clearEvents: true });
const api = chat.api;

const channel = (subscribers: number[], params: Obj = {}) =>
  createChannel(chat, subscribers, { name: uniq("msgs"), ...params });

async function send(params: Obj, auth: User = chat.owner): Promise<number> {
  return ok(await api("POST", "/messages", params, auth)).id as number;
}

async function fetch(params: Obj, auth: User = chat.owner): Promise<Obj> {
  return ok(
    await api("GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0, ...params }, auth),
  );
}

describe("messages - send", () => {
  test("channel message by name and by id; event with per-user flags; ids increase", async () => {
    const m = await chat.newUser(400, "Mia Member");
    const ch = await channel([chat.owner.userId, m.userId]);
    chat.events.length = 0;
    const id1 = await send({
      type: "stream",
      to: ch.name,
      topic: "greetings",
      content: "hello @**Mia Member**",
    });
    const id2 = await send({
      type: "channel",
      to: JSON.stringify([ch.id]),
      subject: "greetings",
      content: "again",
    });
    const id3 = await send({ type: "channel", to: ch.id, topic: "greetings", content: "third" });
    assert.ok(id1 < id2 && id2 < id3);
    const ev = chat.events.find((e) => e.event.type === "message" && (e.event.message as Obj).id === id1)!;
    // The channel's subscribers by the channel (the queue shards expand it), and the sender.
    assert.equal(ev.channel, ch.id);
    assert.deepEqual(ev.userIds, [chat.owner.userId]);
    const flags = ev.event.user_flags as Record<string, string[]>;
    assert.deepEqual(flags[String(chat.owner.userId)], ["read"]);
    assert.deepEqual(flags[String(m.userId)], ["mentioned"]);
    const msg = ev.event.message as Obj;
    assert.equal(msg.content, "hello @**Mia Member**");
    assert.equal(
      msg.rendered_content,
      `<p>hello <span class="user-mention" data-user-id="${m.userId}">@Mia Member</span></p>`,
    );
    assert.equal(msg.display_recipient, ch.name);
    assert.equal(msg.stream_id, ch.id);
    assert.equal(msg.subject, "greetings");
    assert.equal(msg.type, "stream");
  });

  test("direct messages: ids, emails, legacy private; the conversation is shared", async () => {
    const a = await chat.newUser();
    const b = await chat.newUser();
    const id1 = await send({ type: "direct", to: [a.userId], content: "hi a" });
    const id2 = await send({ type: "private", to: a.email, content: "hi again" });
    await send({ type: "private", to: JSON.stringify([a.email, b.email]), content: "group" });
    const r = await fetch({ narrow: [["dm", [chat.owner.userId]]] }, a);
    assert.deepEqual(
      (r.messages as Obj[]).map((x) => x.id),
      [id1, id2],
    );
    const first = (r.messages as Obj[])[0]!;
    assert.equal(first.type, "private");
    assert.equal(first.subject, "");
    assert.deepEqual(
      (first.display_recipient as Obj[]).map((u) => u.id).sort(),
      [chat.owner.userId, a.userId].sort(),
    );
    assert.deepEqual(first.flags, []);
    const legacy = await fetch(
      { narrow: JSON.stringify([{ operator: "pm-with", operand: chat.owner.email }]) },
      a,
    );
    assert.deepEqual(
      (legacy.messages as Obj[]).map((x) => x.id),
      [id1, id2],
    );
  });

  test("errors change nothing", async () => {
    const guest = await chat.newUser(600);
    const ch = await channel([chat.owner.userId]);
    const priv = await channel([chat.owner.userId], { invite_only: true });
    const member = await chat.newUser();
    const before = await fetch({ narrow: [["channel", ch.id]] });
    err(
      await api("POST", "/messages", { type: "stream", to: ch.name, topic: "t" }),
      "Missing 'content' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(
      await api("POST", "/messages", { type: "stream", to: ch.name, topic: "t", content: "   " }),
      "Message must not be empty",
    );
    err(
      await api("POST", "/messages", { type: "bogus", to: ch.name, topic: "t", content: "x" }),
      "Invalid type",
    );
    err(await api("POST", "/messages", { type: "stream", to: ch.name, content: "x" }), "Missing topic");
    err(
      await api("POST", "/messages", { type: "stream", to: "no such channel", topic: "t", content: "x" }),
      "Channel 'no such channel' does not exist",
      "STREAM_DOES_NOT_EXIST",
    );
    err(
      await api("POST", "/messages", { type: "stream", to: 999999, topic: "t", content: "x" }),
      "Channel with ID '999999' does not exist",
      "STREAM_DOES_NOT_EXIST",
    );
    err(
      await api("POST", "/messages", {
        type: "stream",
        to: JSON.stringify([ch.id, priv.id]),
        topic: "t",
        content: "x",
      }),
      "Must specify exactly 1 channel ID for channel messages",
    );
    err(
      await api("POST", "/messages", { type: "stream", to: priv.name, topic: "t", content: "x" }, member),
      `Not authorized to send to channel '${priv.name}'`,
    );
    err(
      await api("POST", "/messages", { type: "stream", to: ch.name, topic: "t", content: "x" }, guest),
      `Not authorized to send to channel '${ch.name}'`,
    );
    err(
      await api("POST", "/messages", { type: "stream", to: ch.name, topic: "bad\u0000", content: "x" }),
      "Invalid character in topic, at position 3!",
    );
    err(
      await api("POST", "/messages", { type: "direct", to: [999999], content: "x" }),
      "Invalid user ID: 999999",
    );
    err(
      await api("POST", "/messages", { type: "direct", to: "ghost@example.com", content: "x" }),
      "Invalid email 'ghost@example.com'",
    );
    assert.deepEqual(await fetch({ narrow: [["channel", ch.id]] }), before);
    assert.equal(chat.events.filter((e) => e.event.type === "message").length, 0);
  });

  test("limits: topic truncated at 60, content at 10000; general chat reads as empty", async () => {
    const ch = await channel([chat.owner.userId]);
    const id = await send({ type: "stream", to: ch.name, topic: "t".repeat(70), content: "c".repeat(10050) });
    const [m] = (await fetch({ narrow: [["channel", ch.id]], apply_markdown: false })).messages as Obj[];
    assert.equal(m!.id, id);
    assert.equal(m!.subject, "t".repeat(57) + "...");
    assert.equal((m!.content as string).length, 10000);
    assert.ok((m!.content as string).endsWith("\n[message truncated]"));
    const id2 = await send({ type: "stream", to: ch.name, topic: "general chat", content: "x" });
    const r = await fetch({
      narrow: [
        ["channel", ch.id],
        ["topic", ""],
      ],
      allow_empty_topic_name: true,
    });
    assert.deepEqual(
      (r.messages as Obj[]).map((x) => [x.id, x.subject]),
      [[id2, ""]],
    );
    const r2 = await fetch({
      narrow: [
        ["channel", ch.id],
        ["topic", "general chat"],
      ],
    });
    assert.deepEqual(
      (r2.messages as Obj[]).map((x) => [x.id, x.subject]),
      [[id2, "general chat"]],
    );
    await api("PATCH", `/streams/${ch.id}`, { topics_policy: "disable_empty_topic" });
    err(
      await api("POST", "/messages", { type: "stream", to: ch.name, topic: "", content: "x" }),
      "Sending messages to the general chat is not allowed in this channel.",
    );
  });
});

describe("messages - fetch", () => {
  test("anchors, windows and found_* flags", async () => {
    const ch = await channel([chat.owner.userId]);
    const ids: number[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(await send({ type: "stream", to: ch.name, topic: "w", content: `m${i}` }));
    const narrow = [["channel", ch.name]];
    let r = await fetch({ narrow, anchor: "newest", num_before: 2 });
    assert.deepEqual(
      (r.messages as Obj[]).map((x) => x.id),
      ids.slice(3),
    );
    assert.equal(r.anchor, 10000000000000000);
    assert.deepEqual(
      [r.found_anchor, r.found_oldest, r.found_newest, r.history_limited],
      [false, false, true, false],
    );
    r = await fetch({ narrow, anchor: "oldest", num_before: 0, num_after: 2 });
    assert.deepEqual(
      (r.messages as Obj[]).map((x) => x.id),
      ids.slice(0, 2),
    );
    assert.deepEqual([r.anchor, r.found_oldest, r.found_newest], [0, true, false]);
    r = await fetch({ narrow, anchor: String(ids[2]), num_before: 1, num_after: 1 });
    assert.deepEqual(
      (r.messages as Obj[]).map((x) => x.id),
      ids.slice(1, 4),
    );
    assert.equal(r.found_anchor, true);
    r = await fetch({ narrow, anchor: String(ids[2]), num_before: 0, num_after: 10, include_anchor: false });
    assert.deepEqual(
      (r.messages as Obj[]).map((x) => x.id),
      ids.slice(3),
    );
    assert.equal(r.found_newest, true);
    // Everything the owner sent is read: first_unread falls back to newest.
    r = await fetch({ narrow, anchor: "first_unread", num_before: 1, num_after: 1 });
    assert.equal(r.anchor, 10000000000000000);
    assert.deepEqual(
      (r.messages as Obj[]).map((x) => x.id),
      ids.slice(4),
    );
    err(await api("GET", "/messages", { num_before: 1 }), "Missing 'anchor' argument.");
    err(await api("GET", "/messages", { anchor: "sideways" }), "Invalid anchor");
    err(
      await api("GET", "/messages", { anchor: "newest", num_before: 4000, num_after: 1001 }),
      "Too many messages requested (maximum 5000).",
    );
    err(
      await api("GET", "/messages", { anchor: "5", num_before: 1, num_after: 1, include_anchor: false }),
      "The anchor can only be excluded at an end of the range",
    );
    err(await api("GET", "/messages", { anchor: "newest", num_before: -1 }), "num_before is too small");
    err(
      await api("GET", "/messages", { anchor: "newest", narrow: [["is", "bogus"]] }),
      "Invalid narrow operator: unknown 'is' operand bogus",
      "BAD_NARROW",
    );
    err(
      await api("GET", "/messages", { anchor: "newest", narrow: [["bogus", "x"]] }),
      "Invalid narrow operator: unknown operator bogus",
      "BAD_NARROW",
    );
    err(await api("GET", "/messages", { anchor: "newest", narrow: "[[" }), "narrow is not valid JSON");
  });

  test("narrows: topic, sender, is:unread, is:starred, search; flags and first_unread", async () => {
    const m = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    const a = await send({ type: "stream", to: ch.name, topic: "apples", content: "red apple pie" });
    const b = await send({ type: "stream", to: ch.name, topic: "pears", content: "green pear" }, m);
    const c = await send({ type: "stream", to: ch.name, topic: "apples", content: "another apple" });
    const ids = (r: Obj) => (r.messages as Obj[]).map((x) => x.id);
    assert.deepEqual(
      ids(
        await fetch(
          {
            narrow: [
              ["stream", ch.name],
              ["topic", "APPLES"],
            ],
          },
          m,
        ),
      ),
      [a, c],
    );
    assert.deepEqual(
      ids(
        await fetch(
          {
            narrow: [
              ["stream", ch.name],
              ["sender", m.email],
            ],
          },
          m,
        ),
      ),
      [b],
    );
    assert.deepEqual(
      ids(
        await fetch(
          { narrow: [["stream", ch.name], { operator: "sender", operand: m.userId, negated: true }] },
          m,
        ),
      ),
      [a, c],
    );
    assert.deepEqual(
      ids(
        await fetch(
          {
            narrow: [
              ["is", "unread"],
              ["stream", ch.id],
            ],
          },
          m,
        ),
      ),
      [a, c],
    );
    const first = await fetch(
      { narrow: [["stream", ch.id]], anchor: "first_unread", num_before: 0, num_after: 1 },
      m,
    );
    assert.equal(first.anchor, a);
    const s = await fetch(
      {
        narrow: [
          ["stream", ch.id],
          ["search", "apple"],
        ],
      },
      m,
    );
    assert.deepEqual(ids(s), [a, c]);
    assert.equal(
      (s.messages as Obj[])[0]!.match_content,
      '<p>red <span class="highlight">apple</span> pie</p>',
    );
    // Cross-conversation narrows come from the user's own index.
    assert.deepEqual(ids(await fetch({ narrow: [["search", "pear"]] }, m)).includes(b), true);
    chat.events.length = 0;
    const r = ok(await api("POST", "/messages/flags", { messages: [a, c], op: "add", flag: "starred" }, m));
    assert.deepEqual(r.messages, [a, c]);
    const ev = chat.events.find((e) => e.event.type === "update_message_flags")!;
    assert.deepEqual(ev.userIds, [m.userId]);
    assert.deepEqual(
      [ev.event.op, ev.event.flag, ev.event.messages, ev.event.all],
      ["add", "starred", [a, c], false],
    );
    assert.deepEqual(ids(await fetch({ narrow: [["is", "starred"]] }, m)), [a, c]);
    const one = ok(await api("GET", `/messages/${a}`, {}, m));
    assert.deepEqual((one.message as Obj).flags, ["starred"]);
    assert.equal(one.raw_content, "red apple pie");
    ok(await api("POST", "/messages/flags", { messages: [a], op: "add", flag: "read" }, m));
    assert.deepEqual(ids(await fetch({ narrow: [["is", "unread"]] }, m)), [c]);
    chat.events.length = 0;
    ok(await api("POST", "/messages/flags", { messages: [a], op: "remove", flag: "read" }, m));
    const rm = chat.events.find((e) => e.event.type === "update_message_flags")!;
    assert.deepEqual(rm.event.message_details, {
      [String(a)]: { type: "stream", stream_id: ch.id, topic: "apples" },
    });
  });

  test("flag errors change nothing; other users' messages are invalid", async () => {
    const m = await chat.newUser();
    const other = await chat.newUser();
    const id = await send({ type: "direct", to: [other.userId], content: "secret" });
    err(
      await api("POST", "/messages/flags", { messages: [id], op: "add", flag: "starred" }, m),
      "Invalid message(s)",
    );
    err(await api("GET", `/messages/${id}`, {}, m), "Invalid message(s)");
    err(
      await api("POST", "/messages/flags", { messages: [id], op: "add", flag: "mentioned" }, other),
      "Flag not editable: 'mentioned'",
    );
    err(
      await api("POST", "/messages/flags", { messages: [id], op: "add", flag: "shiny" }, other),
      "Invalid flag: 'shiny'",
    );
    err(
      await api("POST", "/messages/flags", { messages: [id], op: "toggle", flag: "starred" }, other),
      "Invalid message flag operation: 'toggle'",
    );
    err(
      await api("POST", "/messages/flags", { messages: "x", op: "add", flag: "starred" }, other),
      "messages is not valid JSON",
    );
    assert.deepEqual((ok(await api("GET", `/messages/${id}`, {}, other)).message as Obj).flags, []);
  });

  test("flags/narrow marks a window read and reports counts", async () => {
    const m = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    const ids: number[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(await send({ type: "stream", to: ch.name, topic: "n", content: `x${i}` }));
    const r = ok(
      await api(
        "POST",
        "/messages/flags/narrow",
        {
          anchor: "oldest",
          num_before: 0,
          num_after: 2,
          narrow: [["channel", ch.id]],
          op: "add",
          flag: "read",
        },
        m,
      ),
    );
    assert.deepEqual(r, {
      result: "success",
      msg: "",
      processed_count: 2,
      updated_count: 2,
      first_processed_id: ids[0],
      last_processed_id: ids[1],
      found_oldest: true,
      found_newest: false,
    });
    const un = await fetch(
      {
        narrow: [
          ["channel", ch.id],
          ["is", "unread"],
        ],
      },
      m,
    );
    assert.deepEqual(
      (un.messages as Obj[]).map((x) => x.id),
      [ids[2]],
    );
    const outsider = await chat.newUser();
    const r2 = ok(
      await api(
        "POST",
        "/messages/flags/narrow",
        {
          anchor: "newest",
          num_before: 5,
          num_after: 0,
          narrow: [["channel", ch.id]],
          op: "remove",
          flag: "read",
        },
        outsider,
      ),
    );
    assert.equal(r2.updated_count, 0);
    assert.deepEqual(r2.ignored_because_not_subscribed_channels, [ch.id]);
  });

  test("private channel with protected history hides older messages from new subscribers", async () => {
    const m = await chat.newUser();
    const ch = await channel([chat.owner.userId], { invite_only: true });
    const old = await send({ type: "stream", to: ch.id, topic: "t", content: "before" });
    ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: ch.name }],
        principals: [m.userId],
      }),
    );
    const fresh = await send({ type: "stream", to: ch.id, topic: "t", content: "after" });
    const r = await fetch(
      { narrow: [["channel", ch.id]], anchor: "oldest", num_after: 10, num_before: 0 },
      m,
    );
    assert.deepEqual(
      (r.messages as Obj[]).map((x) => x.id),
      [fresh],
    );
    assert.equal(r.history_limited, true);
    assert.ok(old < fresh);
    const outsider = await chat.newUser();
    err(
      await api("GET", "/messages", { anchor: "newest", narrow: [["channel", ch.id]] }, outsider),
      `Invalid narrow operator: unknown channel ${ch.id}`,
      "BAD_NARROW",
    );
  });
});

describe("messages - markdown", () => {
  test("channel links, emoji, code blocks, quotes, wildcard mentions", async () => {
    const m = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    chat.events.length = 0;
    const content = `see #**${ch.name}** :+1: @**all**\n\n> quoted\n\n\`\`\`js\nlet x = 1 < 2;\n\`\`\``;
    const id = await send({ type: "stream", to: ch.id, topic: "md", content });
    const ev = chat.events.find((e) => e.event.type === "message")!;
    const html = (ev.event.message as Obj).rendered_content as string;
    assert.ok(
      html.includes(`<a class="stream" data-stream-id="${ch.id}" href="/#narrow/channel/${ch.id}-`),
      html,
    );
    assert.ok(html.includes('class="emoji emoji-1f44d"'), html);
    assert.ok(
      html.includes('<span class="user-mention channel-wildcard-mention" data-user-id="*">@all</span>'),
      html,
    );
    assert.ok(html.includes("<blockquote>\n<p>quoted</p>\n</blockquote>"), html);
    assert.ok(
      html.includes(
        '<div class="codehilite" data-code-language="js"><pre><span></span><code>let x = 1 &lt; 2;',
      ),
      html,
    );
    const flags = ev.event.user_flags as Record<string, string[]>;
    assert.deepEqual(flags[String(m.userId)], ["stream_wildcard_mentioned"]);
    const r = await fetch({ narrow: [["channel", ch.id]] }, m);
    const got = (r.messages as Obj[]).find((x) => x.id === id)!;
    assert.deepEqual(got.flags, ["stream_wildcard_mentioned", "wildcard_mentioned"]);
  });
});

describe("messages - reactions, edits, deletion", () => {
  test("reactions add/remove with events and exact errors", async () => {
    const m = await chat.newUser();
    const outsider = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    const id = await send({ type: "stream", to: ch.id, topic: "r", content: "react to me" });
    chat.events.length = 0;
    ok(await api("POST", `/messages/${id}/reactions`, { emoji_name: "smile" }, m));
    const ev = chat.events.find((e) => e.event.type === "reaction")!;
    assert.equal(ev.event.op, "add");
    assert.equal(ev.event.emoji_name, "smile");
    assert.equal(ev.event.reaction_type, "unicode_emoji");
    assert.equal(ev.event.user_id, m.userId);
    assert.ok(ev.userIds.includes(chat.owner.userId));
    err(
      await api("POST", `/messages/${id}/reactions`, { emoji_name: "smile" }, m),
      "Reaction already exists.",
      "REACTION_ALREADY_EXISTS",
    );
    err(
      await api("POST", `/messages/${id}/reactions`, { emoji_name: "no_such_emoji_x" }, m),
      "Emoji 'no_such_emoji_x' does not exist",
    );
    err(
      await api("POST", `/messages/${id}/reactions`, {}, m),
      "Missing 'emoji_name' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    // A private channel's message is invalid for a non-subscriber; a public
    // one's is not (Zulip's access_message: public history).
    const priv = await channel([chat.owner.userId], { invite_only: true });
    const privId = await send({ type: "stream", to: priv.id, topic: "r", content: "secret" });
    err(
      await api("POST", `/messages/${privId}/reactions`, { emoji_name: "smile" }, outsider),
      "Invalid message(s)",
    );
    ok(await api("POST", `/messages/${id}/reactions`, { emoji_name: "tada" }, outsider));
    ok(await api("DELETE", `/messages/${id}/reactions`, { emoji_name: "tada" }, outsider));
    err(await api("POST", "/messages/99999999/reactions", { emoji_name: "smile" }, m), "Invalid message(s)");
    const got = ok(await api("GET", `/messages/${id}`, {}, m)).message as Obj;
    assert.equal((got.reactions as Obj[]).length, 1);
    assert.equal((got.reactions as Obj[])[0]!.user_id, m.userId);
    ok(await api("DELETE", `/messages/${id}/reactions`, { emoji_name: "smile" }, m));
    err(
      await api("DELETE", `/messages/${id}/reactions`, { emoji_name: "smile" }, m),
      "Reaction doesn't exist.",
      "REACTION_DOES_NOT_EXIST",
    );
    assert.deepEqual((ok(await api("GET", `/messages/${id}`, {}, m)).message as Obj).reactions, []);
  });

  test("edit content and move a topic; permissions; events", async () => {
    const m = await chat.newUser();
    const guest = await chat.newUser(600);
    const ch = await channel([chat.owner.userId, m.userId, guest.userId]);
    const a = await send({ type: "stream", to: ch.id, topic: "old", content: "first" });
    const b = await send({ type: "stream", to: ch.id, topic: "old", content: "second" });
    chat.events.length = 0;
    ok(await api("PATCH", `/messages/${a}`, { content: "first *edited*" }));
    const ev = chat.events.find((e) => e.event.type === "update_message")!;
    assert.equal(ev.event.orig_content, "first");
    assert.equal(ev.event.rendered_content, "<p>first <em>edited</em></p>");
    const got = ok(await api("GET", `/messages/${a}`)).message as Obj;
    assert.equal(got.content, "<p>first <em>edited</em></p>");
    assert.equal(typeof got.last_edit_timestamp, "number");
    assert.equal((got.edit_history as Obj[])[0]!.prev_content, "first");
    err(
      await api("PATCH", `/messages/${a}`, { content: "hijack" }, m),
      "You don't have permission to edit this message",
    );
    err(
      await api("PATCH", `/messages/${a}`, { topic: "x" }, guest),
      "You don't have permission to edit this message",
    );
    err(await api("PATCH", `/messages/${a}`, {}), "Nothing to change");
    err(
      await api("PATCH", `/messages/${a}`, { topic: "x", propagate_mode: "change_some" }),
      "Invalid propagate_mode",
    );
    chat.events.length = 0;
    ok(
      await api(
        "PATCH",
        `/messages/${a}`,
        { topic: "new", propagate_mode: "change_all", send_notification_to_new_thread: false },
        m,
      ),
    );
    const mv = chat.events.find((e) => e.event.type === "update_message")!;
    assert.deepEqual([mv.event.orig_subject, mv.event.subject, mv.event.message_ids], ["old", "new", [a, b]]);
    const r = await fetch(
      {
        narrow: [
          ["channel", ch.id],
          ["topic", "new"],
        ],
      },
      m,
    );
    assert.deepEqual(
      (r.messages as Obj[]).map((x) => x.id),
      [a, b],
    );
    // The user's own index follows the move.
    const idx = await fetch({ narrow: [["topic", "new"]] }, m);
    assert.deepEqual(
      (idx.messages as Obj[]).map((x) => x.id),
      [a, b],
    );
    const topics = ok(await api("GET", `/users/me/${ch.id}/topics`, {}, m)).topics as Obj[];
    assert.deepEqual(topics, [{ name: "new", max_id: b }]);
  });

  test("delete: sender or admin; event; gone everywhere", async () => {
    const m = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    const id = await send({ type: "stream", to: ch.id, topic: "d", content: "bye" });
    err(await api("DELETE", `/messages/${id}`, {}, m), "You don't have permission to delete this message");
    chat.events.length = 0;
    ok(await api("DELETE", `/messages/${id}`));
    const ev = chat.events.find((e) => e.event.type === "delete_message")!;
    assert.deepEqual(
      [ev.event.message_type, ev.event.message_ids, ev.event.stream_id, ev.event.topic],
      ["stream", [id], ch.id, "d"],
    );
    assert.ok(ev.userIds.includes(m.userId));
    err(await api("GET", `/messages/${id}`, {}, m), "Invalid message(s)");
    err(await api("DELETE", `/messages/${id}`), "Invalid message(s)");
    assert.deepEqual((await fetch({ narrow: [["channel", ch.id]] }, m)).messages, []);
  });
});

describe("messages - register and event queues", () => {
  test("register: subscriptions, streams, max_message_id, unread_msgs, user_topics; message reaches a queue", async () => {
    const m = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    const reg = ok(
      await api(
        "POST",
        "/register",
        { event_types: ["message", "subscription", "update_message_flags", "user_topic", "stream"] },
        m,
      ),
    );
    assert.ok((reg.subscriptions as Obj[]).some((s) => s.stream_id === ch.id));
    assert.ok((reg.streams as Obj[]).some((s) => s.stream_id === ch.id));
    assert.ok(Array.isArray(reg.unsubscribed) && Array.isArray(reg.never_subscribed));
    const id = await send({
      type: "stream",
      to: ch.id,
      topic: "reg",
      content: "ping @**" + m.fullName + "**",
    });
    const dm = await send({ type: "direct", to: [m.userId], content: "hi" });
    const ev = ok(
      await api("GET", "/events", { queue_id: reg.queue_id, last_event_id: -1, dont_block: true }, m),
    );
    const msgs = (ev.events as Obj[]).filter((e) => e.type === "message");
    assert.deepEqual(
      msgs.map((e) => (e.message as Obj).id),
      [id, dm],
    );
    assert.deepEqual(msgs[0]!.flags, ["mentioned"]);
    // register's apply_markdown defaults to false.
    assert.equal((msgs[0]!.message as Obj).content_type, "text/x-markdown");
    assert.equal((msgs[0]!.message as Obj).content, "ping @**" + m.fullName + "**");
    const reg2 = ok(
      await api(
        "POST",
        "/register",
        { fetch_event_types: ["message", "update_message_flags", "user_topic"] },
        m,
      ),
    );
    assert.equal(reg2.max_message_id, dm);
    const unread = reg2.unread_msgs as Obj;
    assert.equal(unread.count, 2);
    assert.deepEqual(unread.streams, [{ stream_id: ch.id, topic: "reg", unread_message_ids: [id] }]);
    assert.deepEqual(unread.pms, [
      { other_user_id: chat.owner.userId, sender_id: chat.owner.userId, unread_message_ids: [dm] },
    ]);
    assert.deepEqual(unread.mentions, [id]);
    // The mention followed the topic (automatically_follow_topics_where_mentioned, FL 235).
    assert.deepEqual(
      (reg2.user_topics as Obj[]).map((t) => [t.stream_id, t.topic_name, t.visibility_policy]),
      [[ch.id, "reg", 3]],
    );
  });
});

describe("messages - linkifiers", () => {
  test("content and topic_links use the realm's linkifiers", async () => {
    ok(
      await api("POST", "/realm/filters", {
        pattern: "#(?P<id>[0-9]+)",
        url_template: "https://tracker.example/{id}",
      }),
    );
    const ch = await channel([chat.owner.userId]);
    const id = await send({ type: "stream", to: ch.id, topic: "bug #42", content: "see #7 and `#8`" });
    const m = ok(await api("GET", `/messages/${id}`)).message as Obj;
    assert.deepEqual(m.topic_links, [{ text: "#42", url: "https://tracker.example/42" }]);
    assert.ok(
      (m.content as string).includes(
        '<a href="https://tracker.example/7" target="_blank" rel="noopener noreferrer" title="https://tracker.example/7">#7</a>',
      ),
      m.content as string,
    );
    assert.ok((m.content as string).includes("<code>#8</code>"), m.content as string);
  });
});

describe("messages - more narrows", () => {
  const ids = (r: Obj) => (r.messages as Obj[]).map((x) => x.id as number);
  const narrowErr = async (narrow: unknown, msg: string, code = "BAD_NARROW", auth?: User) =>
    err(await api("GET", "/messages", { anchor: "newest", num_before: 10, narrow }, auth), msg, code);

  test("has: link, image, attachment, reaction, negated; bad operand", async () => {
    const m = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    const link = await send({ type: "stream", to: ch.id, topic: "h", content: "see https://example.com/x" });
    const plain = await send({ type: "stream", to: ch.id, topic: "h", content: "nothing here" });
    const img = await send({
      type: "stream",
      to: ch.id,
      topic: "h",
      content: "[pic.png](/user_uploads/2/ab/pic.png)",
    });
    ok(await api("POST", `/messages/${plain}/reactions`, { emoji_name: "smile" }, m));
    const inCh = (has: string, negated = false) => [
      ["channel", ch.id],
      { operator: "has", operand: has, negated },
    ];
    assert.deepEqual(ids(await fetch({ narrow: inCh("link") }, m)), [link, img]);
    assert.deepEqual(ids(await fetch({ narrow: inCh("image") }, m)), [img]);
    assert.deepEqual(ids(await fetch({ narrow: inCh("attachment") }, m)), [img]);
    assert.deepEqual(ids(await fetch({ narrow: inCh("reaction") }, m)), [plain]);
    assert.deepEqual(ids(await fetch({ narrow: inCh("link", true) }, m)), [plain]);
    // Without a channel term the user's own index is read, the content judged by the channel.
    const all = ids(await fetch({ narrow: [["has", "reaction"]] }, m));
    assert.ok(all.includes(plain) && !all.includes(link));
    await narrowErr([["has", "bogus"]], "Invalid narrow operator: unknown 'has' operand bogus");
  });

  test("dm-including, group-pm-with, negated dm and is:dm, both-kinds error", async () => {
    const m = await chat.newUser();
    const u2 = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    const cm = await send({ type: "stream", to: ch.id, topic: "t", content: "channel msg" });
    const d1 = await send({ type: "direct", to: [m.userId], content: "one to one" });
    const g = await send({ type: "direct", to: [m.userId, u2.userId], content: "group" });
    const d2 = await send({ type: "direct", to: [chat.owner.userId], content: "u2 to owner" }, u2);
    assert.deepEqual(ids(await fetch({ narrow: [["dm-including", u2.userId]] }, m)), [g]);
    assert.deepEqual(ids(await fetch({ narrow: [["dm-including", m.email]] }, m)), [d1, g]);
    assert.deepEqual(ids(await fetch({ narrow: [["group-pm-with", u2.email]] }, m)), [g]);
    assert.deepEqual(ids(await fetch({ narrow: [["group-pm-with", chat.owner.userId]] }, u2)), [g]);
    const notD1 = ids(
      await fetch({ narrow: [{ operator: "dm", operand: [chat.owner.userId], negated: true }] }, m),
    );
    assert.ok(!notD1.includes(d1) && notD1.includes(g) && notD1.includes(cm));
    const notDm = ids(await fetch({ narrow: [{ operator: "is", operand: "dm", negated: true }] }, m));
    assert.ok(notDm.includes(cm) && !notDm.includes(d1) && !notDm.includes(g));
    const allDm = ids(await fetch({ narrow: [["is", "dm"]] }, chat.owner));
    assert.ok(allDm.includes(d1) && allDm.includes(g) && allDm.includes(d2) && !allDm.includes(cm));
    await narrowErr([["dm-including", 99999]], "Invalid narrow operator: unknown user 99999");
    await narrowErr([["group-pm-with", "nobody@x.y"]], "Invalid narrow operator: unknown user nobody@x.y");
    await narrowErr([["dm", "nobody@x.y"]], "Invalid narrow operator: unknown user in nobody@x.y");
    await narrowErr(
      [
        ["channel", ch.id],
        ["dm", [m.userId]],
      ],
      "Invalid narrow operator: No message can be both a channel message and direct message",
    );
    await narrowErr(
      [
        ["topic", "x"],
        ["is", "dm"],
      ],
      "Invalid narrow operator: No message can be both a channel message and direct message",
    );
  });

  test("negated channel, topic and sender across conversations; id; near", async () => {
    const m = await chat.newUser();
    const a = await channel([chat.owner.userId, m.userId]);
    const b = await channel([chat.owner.userId, m.userId]);
    const a1 = await send({ type: "stream", to: a.id, topic: "x", content: "a1" });
    const b1 = await send({ type: "stream", to: b.id, topic: "y", content: "b1" }, m);
    const b2 = await send({ type: "stream", to: b.id, topic: "x", content: "b2" });
    const mine = (r: Obj) => ids(r).filter((id) => [a1, b1, b2].includes(id));
    const neg = (operator: string, operand: string | number): Obj => ({ operator, operand, negated: true });
    assert.deepEqual(mine(await fetch({ narrow: [neg("channel", a.id)] }, m)), [b1, b2]);
    assert.deepEqual(mine(await fetch({ narrow: [neg("topic", "x")] }, m)), [b1]);
    assert.deepEqual(mine(await fetch({ narrow: [neg("sender", m.email)] }, m)), [a1, b2]);
    assert.deepEqual(ids(await fetch({ narrow: [["id", String(b1)]] }, m)), [b1]);
    assert.deepEqual(
      ids(
        await fetch(
          {
            narrow: [
              ["channel", b.id],
              ["id", b2],
            ],
          },
          m,
        ),
      ),
      [b2],
    );
    assert.deepEqual(
      ids(
        await fetch(
          {
            narrow: [
              ["channel", b.id],
              ["near", String(b1)],
            ],
          },
          m,
        ),
      ),
      [b1, b2],
    );
    await narrowErr([["id", "abc"]], "Invalid narrow operator: Invalid message ID");
    await narrowErr([["id", "99999999999"]], "Invalid narrow operator: Invalid message ID");
    await narrowErr([["sender", "nobody@x.y"]], "Invalid narrow operator: unknown user nobody@x.y");
    // Operand types (Zulip's NarrowParameter validators).
    await narrowErr(
      [{ operator: "sender", operand: [1] }],
      "operand is not a string or integer",
      "BAD_REQUEST",
    );
    await narrowErr(
      [{ operator: "dm", operand: {} }],
      "operand is not a string or an integer list",
      "BAD_REQUEST",
    );
    await narrowErr([{ operator: "dm", operand: ["a"] }], "operand[0] is not an integer", "BAD_REQUEST");
    await narrowErr([{ operator: "topic", operand: 5 }], "operand is not a string", "BAD_REQUEST");
    await narrowErr([["search", "   "]], "operand cannot be blank.", "BAD_REQUEST");
  });

  test("with: the message's conversation; public history; bad and duplicate operators", async () => {
    const m = await chat.newUser();
    const outsider = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    const t1 = await send({ type: "stream", to: ch.id, topic: "one", content: "first" });
    await send({ type: "stream", to: ch.id, topic: "two", content: "other topic" });
    const t1b = await send({ type: "stream", to: ch.id, topic: "one", content: "second" }, m);
    // A stale channel/topic is replaced by the message's conversation.
    const r = await fetch(
      {
        narrow: [
          ["channel", ch.id],
          ["topic", "two"],
          ["with", t1],
        ],
      },
      m,
    );
    assert.deepEqual(ids(r), [t1, t1b]);
    // Someone who never received it reads it through public history.
    const h = await fetch({ narrow: [["with", String(t1b)]] }, outsider);
    assert.deepEqual(ids(h), [t1, t1b]);
    assert.deepEqual((h.messages as Obj[])[0]!.flags, ["read", "historical"]);
    const dm = await send({ type: "direct", to: [m.userId], content: "dm" });
    assert.deepEqual(ids(await fetch({ narrow: [["with", dm]] }, m)), [dm]);
    // An inaccessible message: ignored when the rest names a conversation, else an error.
    const priv = await channel([chat.owner.userId], { invite_only: true });
    const secret = await send({ type: "stream", to: priv.id, topic: "s", content: "secret" });
    assert.deepEqual(
      ids(
        await fetch(
          {
            narrow: [
              ["dm", [chat.owner.userId]],
              ["with", secret],
            ],
          },
          m,
        ),
      ),
      [dm],
    );
    await narrowErr([["with", secret]], "Invalid narrow operator: Invalid 'with' operator", "BAD_NARROW", m);
    await narrowErr([["with", "abc"]], "Invalid narrow operator: Invalid 'with' operator");
    await narrowErr(
      [
        ["with", t1],
        ["with", t1b],
      ],
      "Invalid narrow operator combination: Duplicate 'with' operators.",
    );
  });

  test("channels:public includes unreceived public history; web-public; bad operand", async () => {
    const m = await chat.newUser();
    const guest = await chat.newUser(600);
    const pub = await channel([chat.owner.userId]);
    const priv = await channel([chat.owner.userId], { invite_only: true });
    const p1 = await send({ type: "stream", to: pub.id, topic: "t", content: "public one" });
    const x1 = await send({ type: "stream", to: priv.id, topic: "t", content: "private one" });
    const d1 = await send({ type: "direct", to: [m.userId], content: "dm" });
    const r = await fetch({ narrow: [["channels", "public"]] }, m);
    const got = ids(r);
    assert.ok(got.includes(p1) && !got.includes(x1) && !got.includes(d1));
    assert.deepEqual((r.messages as Obj[]).find((x) => x.id === p1)!.flags, ["read", "historical"]);
    // An is: term limits the read to the user's own messages (Zulip's ok_to_include_history).
    assert.ok(
      !ids(
        await fetch(
          {
            narrow: [
              ["channels", "public"],
              ["is", "unread"],
            ],
          },
          m,
        ),
      ).includes(p1),
    );
    // Guests get no public history.
    assert.ok(!ids(await fetch({ narrow: [["channels", "public"]] }, guest)).includes(p1));
    // Windows over the merge are exact.
    const w = await fetch(
      { narrow: [["channels", "public"]], anchor: String(p1), num_before: 0, num_after: 0 },
      m,
    );
    assert.deepEqual([ids(w), w.found_anchor], [[p1], true]);
    const notPub = ids(
      await fetch({ narrow: [{ operator: "channels", operand: "public", negated: true }] }, chat.owner),
    );
    assert.ok(notPub.includes(x1) && notPub.includes(d1) && !notPub.includes(p1));
    assert.deepEqual(ids(await fetch({ narrow: [["channels", "web-public"]] }, m)), []);
    await narrowErr([["channels", "bogus"]], "Invalid narrow operator: unknown channels operand bogus");
  });

  test("in:home leaves out muted channels and topics; in:all keeps them; is:followed", async () => {
    const m = await chat.newUser();
    const a = await channel([chat.owner.userId, m.userId]);
    const quiet = await channel([chat.owner.userId, m.userId]);
    ok(await api("POST", "/user_topics", { stream_id: a.id, topic: "noise", visibility_policy: 1 }, m));
    ok(await api("PATCH", `/users/me/subscriptions/${quiet.id}`, { property: "is_muted", value: true }, m));
    ok(await api("POST", "/user_topics", { stream_id: quiet.id, topic: "keep", visibility_policy: 2 }, m));
    ok(await api("POST", "/user_topics", { stream_id: a.id, topic: "fav", visibility_policy: 3 }, m));
    const normal = await send({ type: "stream", to: a.id, topic: "fine", content: "x" });
    const noisy = await send({ type: "stream", to: a.id, topic: "noise", content: "x" });
    const hushed = await send({ type: "stream", to: quiet.id, topic: "hush", content: "x" });
    const kept = await send({ type: "stream", to: quiet.id, topic: "keep", content: "x" });
    const fav = await send({ type: "stream", to: a.id, topic: "fav", content: "x" });
    const dm = await send({ type: "direct", to: [m.userId], content: "x" });
    const mine = (r: Obj) => ids(r).filter((id) => [normal, noisy, hushed, kept, fav, dm].includes(id));
    assert.deepEqual(mine(await fetch({ narrow: [["in", "home"]] }, m)), [normal, kept, fav, dm]);
    assert.deepEqual(mine(await fetch({ narrow: [["in", "all"]] }, m)), [
      normal,
      noisy,
      hushed,
      kept,
      fav,
      dm,
    ]);
    assert.deepEqual(mine(await fetch({ narrow: [{ operator: "in", operand: "home", negated: true }] }, m)), [
      noisy,
      hushed,
    ]);
    assert.deepEqual(mine(await fetch({ narrow: [["is", "muted"]] }, m)), [noisy, hushed]);
    // Inside one channel only its muted topics count; the channel's own mute does not.
    assert.deepEqual(
      ids(
        await fetch(
          {
            narrow: [
              ["channel", quiet.id],
              ["in", "home"],
            ],
          },
          m,
        ),
      ),
      [hushed, kept],
    );
    assert.deepEqual(
      ids(
        await fetch(
          {
            narrow: [
              ["channel", a.id],
              ["in", "home"],
            ],
          },
          m,
        ),
      ),
      [normal, fav],
    );
    assert.deepEqual(mine(await fetch({ narrow: [["is", "followed"]] }, m)), [fav]);
    await narrowErr([["in", "bogus"]], "Invalid narrow operator: unknown 'in' operand bogus");
  });

  test("flags/narrow uses the same narrow (has:link)", async () => {
    const m = await chat.newUser();
    const ch = await channel([chat.owner.userId, m.userId]);
    const link = await send({ type: "stream", to: ch.id, topic: "h", content: "https://example.com" });
    const plain = await send({ type: "stream", to: ch.id, topic: "h", content: "plain" });
    const r = ok(
      await api(
        "POST",
        "/messages/flags/narrow",
        {
          anchor: "oldest",
          num_before: 0,
          num_after: 100,
          narrow: [
            ["channel", ch.id],
            ["has", "link"],
          ],
          op: "add",
          flag: "read",
        },
        m,
      ),
    );
    assert.deepEqual([r.processed_count, r.updated_count, r.first_processed_id], [1, 1, link]);
    const unread = ids(
      await fetch(
        {
          narrow: [
            ["channel", ch.id],
            ["is", "unread"],
          ],
        },
        m,
      ),
    );
    assert.deepEqual(unread, [plain]);
  });
});

describe("messages - historical flags and max_message_id", () => {
  test("starring an unreceived public message creates a historical row", async () => {
    const m = await chat.newUser();
    const guest = await chat.newUser(600);
    const pub = await channel([chat.owner.userId]);
    const priv = await channel([chat.owner.userId], { invite_only: true });
    const p1 = await send({ type: "stream", to: pub.id, topic: "t", content: "public" });
    const x1 = await send({ type: "stream", to: priv.id, topic: "t", content: "private" });
    const before = ok(await api("GET", "/users/me", {}, m)).max_message_id as number;
    // Errors change nothing.
    err(
      await api("POST", "/messages/flags", { messages: [p1, x1], op: "add", flag: "starred" }, m),
      "Invalid message(s)",
    );
    err(
      await api("POST", "/messages/flags", { messages: [p1], op: "add", flag: "starred" }, guest),
      "Invalid message(s)",
    );
    err(
      await api("POST", "/messages/flags", { messages: [p1], op: "add", flag: "mentioned" }, m),
      "Flag not editable: 'mentioned'",
    );
    assert.deepEqual((ok(await api("GET", `/messages/${p1}`, {}, m)).message as Obj).flags, [
      "read",
      "historical",
    ]);
    chat.events.length = 0;
    const r = ok(await api("POST", "/messages/flags", { messages: [p1], op: "add", flag: "starred" }, m));
    assert.deepEqual(r.messages, [p1]);
    const ev = chat.events.find((e) => e.event.type === "update_message_flags")!;
    assert.deepEqual(
      [ev.event.op, ev.event.flag, ev.event.messages, ev.userIds],
      ["add", "starred", [p1], [m.userId]],
    );
    const got = ok(await api("GET", `/messages/${p1}`, {}, m)).message as Obj;
    assert.deepEqual(got.flags, ["read", "starred", "historical"]);
    const starred = await fetch({ narrow: [["is", "starred"]] }, m);
    assert.deepEqual(
      (starred.messages as Obj[]).map((x) => [x.id, x.flags]),
      [[p1, ["read", "starred", "historical"]]],
    );
    // The row stays when the flag goes; marking it unread is ignored (not subscribed).
    ok(await api("POST", "/messages/flags", { messages: [p1], op: "remove", flag: "starred" }, m));
    const un = ok(await api("POST", "/messages/flags", { messages: [p1], op: "remove", flag: "read" }, m));
    assert.deepEqual(un.messages, []);
    assert.deepEqual((ok(await api("GET", `/messages/${p1}`, {}, m)).message as Obj).flags, [
      "read",
      "historical",
    ]);
    // The historical row counts as a message the user has.
    assert.equal(ok(await api("GET", "/users/me", {}, m)).max_message_id, Math.max(before, p1));
  });

  test("flags/narrow on a public channel stars unreceived messages too", async () => {
    const m = await chat.newUser();
    const pub = await channel([chat.owner.userId]);
    const p1 = await send({ type: "stream", to: pub.id, topic: "", content: "one" });
    const r = ok(
      await api(
        "POST",
        "/messages/flags/narrow",
        {
          anchor: "oldest",
          num_before: 0,
          num_after: 10,
          narrow: [["channel", pub.id]],
          op: "add",
          flag: "starred",
        },
        m,
      ),
    );
    assert.deepEqual([r.processed_count, r.updated_count], [1, 1]);
    const got = ok(await api("GET", `/messages/${p1}`, { allow_empty_topic_name: true }, m)).message as Obj;
    assert.deepEqual([got.flags, got.subject], [["read", "starred", "historical"], ""]);
  });

  test("GET /users/me max_message_id: -1 without messages, then the newest received", async () => {
    const m = await chat.newUser();
    assert.equal(ok(await api("GET", "/users/me", {}, m)).max_message_id, -1);
    const id = await send({ type: "direct", to: [m.userId], content: "hi" });
    assert.equal(ok(await api("GET", "/users/me", {}, m)).max_message_id, id);
    const ch = await channel([chat.owner.userId]);
    await send({ type: "stream", to: ch.id, topic: "t", content: "not for m" });
    assert.equal(ok(await api("GET", "/users/me", {}, m)).max_message_id, id);
  });
});

describe("messages - moves between channels", () => {
  const ids = (r: Obj) => (r.messages as Obj[]).map((x) => x.id as number);

  test("change_later to another channel: events, flags stay, guests lose access, errors change nothing", async () => {
    const m = await chat.newUser();
    const n = await chat.newUser();
    const g = await chat.newUser(600);
    const from = await channel([chat.owner.userId, m.userId, g.userId]);
    const to = await channel([chat.owner.userId, m.userId, n.userId]);
    const priv = await channel([chat.owner.userId], { invite_only: true });
    const a1 = await send({ type: "stream", to: from.id, topic: "mv", content: "one" });
    const a2 = await send({ type: "stream", to: from.id, topic: "mv", content: "two" }, m);
    const a3 = await send({ type: "stream", to: from.id, topic: "mv", content: "three" });
    ok(await api("POST", "/messages/flags", { messages: [a3], op: "add", flag: "starred" }, m));
    const dm = await send({ type: "direct", to: [m.userId], content: "dm" });
    const before = await fetch({ narrow: [["channel", from.id]] }, m);
    // A guest who may see both channels still may not move (can_move_messages_between_channels_group).
    const g2 = await chat.newUser(600);
    const both = await channel([chat.owner.userId, g2.userId]);
    const b1 = await send({ type: "stream", to: both.id, topic: "x", content: "x" });
    err(
      await api("PATCH", `/messages/${b1}`, { stream_id: both.id, topic: "y" }, g2),
      "You don't have permission to edit this message",
    );
    const other = await channel([chat.owner.userId, g2.userId]);
    err(
      await api("PATCH", `/messages/${b1}`, { stream_id: other.id }, g2),
      "You don't have permission to move this message",
    );
    err(await api("PATCH", `/messages/${a1}`, { stream_id: to.id }, g), "Invalid channel ID");
    err(
      await api("PATCH", `/messages/${dm}`, { stream_id: to.id }, m),
      "Direct messages cannot be moved to channels.",
    );
    err(
      await api("PATCH", `/messages/${a2}`, { stream_id: to.id, content: "x" }, m),
      "Cannot change message content while changing channel",
    );
    err(await api("PATCH", `/messages/${a1}`, { stream_id: 999999 }, m), "Invalid channel ID");
    err(await api("PATCH", `/messages/${a1}`, { stream_id: priv.id }, m), "Invalid channel ID");
    err(
      await api("PATCH", `/messages/${a1}`, { stream_id: to.id, propagate_mode: "bogus" }, m),
      "Invalid propagate_mode",
    );
    err(await api("PATCH", `/messages/${a1}`, { stream_id: "x" }, m), "stream_id is not valid JSON");
    assert.deepEqual(await fetch({ narrow: [["channel", from.id]] }, m), before);

    chat.events.length = 0;
    ok(
      await api(
        "PATCH",
        `/messages/${a2}`,
        {
          stream_id: to.id,
          topic: "moved",
          propagate_mode: "change_later",
          send_notification_to_old_thread: false,
          // Move notifications: test/announce.test.ts.
          send_notification_to_new_thread: false,
        },
        m,
      ),
    );
    const ev = chat.events.find((e) => e.event.type === "update_message")!;
    assert.deepEqual(
      [
        ev.event.stream_id,
        ev.event.new_stream_id,
        ev.event.orig_subject,
        ev.event.subject,
        ev.event.propagate_mode,
      ],
      [from.id, to.id, "mv", "moved", "change_later"],
    );
    assert.deepEqual([ev.event.message_id, ev.event.message_ids, ev.event.user_id], [a2, [a2, a3], m.userId]);
    assert.deepEqual(ev.userIds.sort(), [chat.owner.userId, m.userId, n.userId].sort());
    const del = chat.events.find((e) => e.event.type === "delete_message")!;
    assert.deepEqual(del.userIds, [g.userId]);
    assert.deepEqual(del.event, {
      type: "delete_message",
      message_ids: [a2, a3],
      message_type: "stream",
      stream_id: from.id,
      topic: "mv",
    });

    assert.deepEqual(ids(await fetch({ narrow: [["channel", from.id]] }, m)), [a1]);
    const moved = await fetch(
      {
        narrow: [
          ["channel", to.id],
          ["topic", "moved"],
        ],
      },
      m,
    );
    assert.deepEqual(
      (moved.messages as Obj[]).map((x) => [x.id, x.flags, x.display_recipient, x.stream_id]),
      [
        [a2, ["read"], to.name, to.id],
        [a3, ["starred"], to.name, to.id],
      ],
    );
    const hist = (moved.messages as Obj[])[1]!.edit_history as Obj[];
    assert.deepEqual(
      [hist[0]!.prev_stream, hist[0]!.stream, hist[0]!.prev_topic, hist[0]!.topic],
      [from.id, to.id, "mv", "moved"],
    );
    // m's own index follows (is:starred across channels).
    const starred = await fetch({ narrow: [["is", "starred"]] }, m);
    assert.deepEqual(
      (starred.messages as Obj[]).map((x) => [x.id, x.stream_id]),
      [[a3, to.id]],
    );
    // n reads the public target's history; the guest lost the messages.
    const forN = await fetch({ narrow: [["channel", to.id]] }, n);
    assert.deepEqual(ids(forN), [a2, a3]);
    err(await api("GET", `/messages/${a2}`, {}, g), "Invalid message(s)");
    assert.deepEqual(ids(await fetch({ narrow: [["channel", from.id]] }, g)), [a1]);
    const topicsTo = ok(await api("GET", `/users/me/${to.id}/topics`, {}, m)).topics as Obj[];
    assert.deepEqual(topicsTo, [{ name: "moved", max_id: a3 }]);
  });

  test("into a private channel with protected history: subscribers gain read rows, others lose access", async () => {
    const m = await chat.newUser();
    const q = await chat.newUser();
    const outsider = await chat.newUser();
    const from = await channel([chat.owner.userId, m.userId, outsider.userId]);
    const priv = await channel([chat.owner.userId, m.userId, q.userId], {
      invite_only: true,
      history_public_to_subscribers: false,
    });
    const a1 = await send({ type: "stream", to: from.id, topic: "t", content: "secret soon" });
    chat.events.length = 0;
    ok(
      await api(
        "PATCH",
        `/messages/${a1}`,
        { stream_id: priv.id, send_notification_to_new_thread: false },
        chat.owner,
      ),
    );
    const ev = chat.events.find((e) => e.event.type === "update_message")!;
    assert.equal(ev.event.subject, undefined);
    assert.equal(ev.event.orig_subject, "t");
    assert.ok(!ev.userIds.includes(outsider.userId));
    const del = chat.events.find((e) => e.event.type === "delete_message")!;
    assert.deepEqual(del.userIds, [outsider.userId]);
    const forQ = await fetch({ narrow: [["channel", priv.id]] }, q);
    assert.deepEqual(
      (forQ.messages as Obj[]).map((x) => [x.id, x.flags]),
      [[a1, ["read"]]],
    );
    err(await api("GET", `/messages/${a1}`, {}, outsider), "Invalid message(s)");
    assert.deepEqual(ids(await fetch({ narrow: [["channel", from.id]] }, chat.owner)), []);
  });
});
