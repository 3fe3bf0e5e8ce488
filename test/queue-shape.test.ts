// Per-queue filtering and shaping of events (actors/queue/shape.ts): the
// event_types filter, the narrow predicate for message events, the message
// conventions (apply_markdown, client_gravatar, per-user flags,
// local_message_id) and the capability rules of the spec's Events section 3.
import assert from "node:assert/strict";
import { test } from "node:test";
import { shapeForQueue } from "../actors/queue/index.ts";
import type { Obj } from "../actors/types.ts";
import { registration as reg } from "./support/fixtures.ts";

const message: Obj = {
  type: "message",
  message: {
    id: 9,
    type: "stream",
    display_recipient: "Denmark",
    subject: "",
    sender_email: "iago@example.com",
    content: "**hi**",
    rendered_content: "<p><strong>hi</strong></p>",
    avatar_url: "https://secure.gravatar.com/avatar/x",
    sender_avatar_source: "G",
  },
  user_flags: { "5": ["mentioned"], "6": ["read"] },
  sender_queue_id: "5:0123456789abcdef",
  local_id: "1.01",
};

test("queue shape - event_types filter; heartbeats always pass", () => {
  const r = reg({ eventTypes: ["user_status"] });
  assert.deepEqual(shapeForQueue({ type: "user_settings", op: "update" }, r, 1, "q"), []);
  assert.equal(shapeForQueue({ type: "user_status", user_id: 1 }, r, 1, "q").length, 1);
  assert.equal(shapeForQueue({ type: "heartbeat" }, r, 1, "q").length, 1);
});

test("queue shape - message: markdown, gravatar, flags, local id, empty topic", () => {
  const [plain] = shapeForQueue(message, reg(), 5, "other");
  const m = plain!.message as Obj;
  assert.equal(m.content, "**hi**");
  assert.equal(m.content_type, "text/x-markdown");
  assert.equal("rendered_content" in m, false);
  assert.equal("sender_avatar_source" in m, false);
  assert.equal(m.avatar_url, "https://secure.gravatar.com/avatar/x");
  assert.equal(m.subject, "general chat");
  assert.deepEqual(plain!.flags, ["mentioned"]);
  assert.equal("user_flags" in plain!, false);
  assert.equal("local_message_id" in plain!, false);

  const caps = { empty_topic_name: true };
  const [html] = shapeForQueue(
    message,
    reg({ applyMarkdown: true, clientGravatar: true, capabilities: caps }),
    5,
    "5:0123456789abcdef",
  );
  const h = html!.message as Obj;
  assert.equal(h.content, "<p><strong>hi</strong></p>");
  assert.equal(h.content_type, "text/html");
  assert.equal(h.avatar_url, null);
  assert.equal(h.subject, "");
  assert.equal(html!.local_message_id, "1.01");
  // No user_flags entry: no recipient; only an all_public_streams queue takes it, with no flags.
  assert.deepEqual(shapeForQueue(message, reg(), 7, "q"), []);
  assert.deepEqual(shapeForQueue(message, reg({ allPublicStreams: true }), 7, "q")[0]!.flags, []);
});

test("queue shape - narrow filters message events only", () => {
  const yes: [string, string][][] = [
    [["stream", "denmark"]],
    [
      ["channel", "Denmark"],
      ["topic", ""],
    ],
    [["sender", "IAGO@example.com"]],
    [["is", "mentioned"]],
    [["is", "unread"]],
  ];
  for (const narrow of yes)
    assert.equal(shapeForQueue(message, reg({ narrow }), 5, "q").length, 1, JSON.stringify(narrow));
  const no: [string, string][][] = [
    [["stream", "Verona"]],
    [["topic", "lunch"]],
    [["sender", "hamlet@example.com"]],
    [["is", "dm"]],
    [["is", "starred"]],
  ];
  for (const narrow of no)
    assert.equal(shapeForQueue(message, reg({ narrow }), 5, "q").length, 0, JSON.stringify(narrow));
  // Read for user 6: is:unread does not match.
  assert.equal(shapeForQueue(message, reg({ narrow: [["is", "unread"]] }), 6, "q").length, 0);
  // Other events ignore the narrow.
  assert.equal(shapeForQueue({ type: "user_status" }, reg({ narrow: [["stream", "x"]] }), 5, "q").length, 1);
});

test("queue shape - delete_message is split without bulk_message_deletion", () => {
  const e: Obj = {
    type: "delete_message",
    message_type: "stream",
    message_ids: [3, 4],
    stream_id: 1,
    topic: "",
  };
  const split = shapeForQueue(e, reg(), 1, "q");
  assert.deepEqual(split, [
    { type: "delete_message", message_type: "stream", stream_id: 1, topic: "general chat", message_id: 3 },
    { type: "delete_message", message_type: "stream", stream_id: 1, topic: "general chat", message_id: 4 },
  ]);
  const bulk = shapeForQueue(
    e,
    reg({ capabilities: { bulk_message_deletion: true, empty_topic_name: true } }),
    1,
    "q",
  );
  assert.deepEqual(bulk, [e]);
});

test("queue shape - typing, linkifiers, presence, realm_user capabilities", () => {
  const typing: Obj = { type: "typing", op: "start", message_type: "stream", stream_id: 1, topic: "t" };
  assert.deepEqual(shapeForQueue(typing, reg(), 1, "q"), []);
  assert.equal(
    shapeForQueue(typing, reg({ capabilities: { stream_typing_notifications: true } }), 1, "q").length,
    1,
  );
  assert.equal(shapeForQueue({ ...typing, message_type: "direct" }, reg(), 1, "q").length, 1);

  const linkifiers: Obj = { type: "realm_linkifiers", realm_linkifiers: [] };
  assert.deepEqual(shapeForQueue(linkifiers, reg(), 1, "q"), []);
  assert.deepEqual(
    shapeForQueue(linkifiers, reg({ capabilities: { linkifier_url_template: true } }), 1, "q"),
    [linkifiers],
  );

  const presence: Obj = {
    type: "presence",
    user_id: 4,
    email: "a@example.com",
    server_timestamp: 1.5,
    presence: { website: { client: "website", status: "active", timestamp: 1, pushable: false } },
    presences: { "4": { active_timestamp: 1, idle_timestamp: 1 } },
  };
  const [legacy] = shapeForQueue(presence, reg(), 1, "q");
  assert.equal("presences" in legacy!, false);
  assert.equal(legacy!.email, "a@example.com");
  assert.deepEqual(
    shapeForQueue(presence, reg({ capabilities: { simplified_presence_events: true } }), 1, "q"),
    [{ type: "presence", presences: { "4": { active_timestamp: 1, idle_timestamp: 1 } } }],
  );

  const add: Obj = {
    type: "realm_user",
    op: "add",
    person: { user_id: 4, avatar_url: "https://secure.gravatar.com/a" },
  };
  assert.equal(
    (shapeForQueue(add, reg({ clientGravatar: true }), 1, "q")[0]!.person as Obj).avatar_url,
    null,
  );
  assert.deepEqual(shapeForQueue(add, reg(), 1, "q"), [add]);
});

test("empty_topic_name: user_topic events name the empty topic by the display name without the capability", () => {
  const ev: Obj = { type: "user_topic", stream_id: 3, topic_name: "", last_updated: 1, visibility_policy: 1 };
  assert.deepEqual(shapeForQueue(ev, reg(), 5, "q"), [{ ...ev, topic_name: "general chat" }]);
  assert.deepEqual(shapeForQueue(ev, reg({ capabilities: { empty_topic_name: true } }), 5, "q"), [ev]);
  const named: Obj = { ...ev, topic_name: "lunch" };
  assert.deepEqual(shapeForQueue(named, reg(), 5, "q"), [named]);
});

test("empty_topic_name: update_message_flags message_details topics", () => {
  const ev: Obj = {
    type: "update_message_flags",
    op: "remove",
    flag: "read",
    messages: [1, 2],
    all: false,
    message_details: {
      "1": { type: "stream", stream_id: 3, topic: "" },
      "2": { type: "private", user_ids: [7] },
    },
  };
  const [without] = shapeForQueue(ev, reg(), 5, "q");
  assert.deepEqual((without!.message_details as Obj)["1"], {
    type: "stream",
    stream_id: 3,
    topic: "general chat",
  });
  assert.deepEqual((without!.message_details as Obj)["2"], { type: "private", user_ids: [7] });
  assert.deepEqual(shapeForQueue(ev, reg({ capabilities: { empty_topic_name: true } }), 5, "q"), [ev]);
});

test("empty_topic_name, stream_typing_notifications, bulk_message_deletion: both ways", () => {
  const typing: Obj = { type: "typing", op: "start", message_type: "stream", stream_id: 3, topic: "" };
  assert.deepEqual(shapeForQueue(typing, reg(), 5, "q"), []);
  assert.deepEqual(
    shapeForQueue(typing, reg({ capabilities: { stream_typing_notifications: true } }), 5, "q"),
    [{ ...typing, topic: "general chat" }],
  );
  assert.deepEqual(
    shapeForQueue(
      typing,
      reg({ capabilities: { stream_typing_notifications: true, empty_topic_name: true } }),
      5,
      "q",
    ),
    [typing],
  );
  const update: Obj = { type: "update_message", message_id: 1, topic: "", orig_subject: "x", subject: "" };
  assert.deepEqual(shapeForQueue(update, reg(), 5, "q"), [
    { ...update, topic: "general chat", subject: "general chat" },
  ]);
  assert.deepEqual(shapeForQueue(update, reg({ capabilities: { empty_topic_name: true } }), 5, "q"), [
    update,
  ]);
  const del: Obj = {
    type: "delete_message",
    message_type: "stream",
    stream_id: 3,
    topic: "",
    message_ids: [1, 2],
  };
  assert.deepEqual(
    shapeForQueue(
      del,
      reg({ capabilities: { bulk_message_deletion: true, empty_topic_name: true } }),
      5,
      "q",
    ),
    [del],
  );
  assert.deepEqual(
    shapeForQueue(del, reg(), 5, "q").map((e) => [e.message_id, e.topic, "message_ids" in e]),
    [
      [1, "general chat", false],
      [2, "general chat", false],
    ],
  );
});
