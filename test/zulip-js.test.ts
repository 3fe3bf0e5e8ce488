// The real JavaScript client: zulip-js from npm drives an embedded server
// exactly as its users call it ({username, apiKey, realm} config). Its
// encoding is what makes this worth testing: POST bodies are multipart
// (form-data) with arrays JSON-encoded, GET/PATCH/DELETE parameters go in
// the query string through URLSearchParams (arrays comma-joined, null as
// "null"), messages.retrieve JSON-encodes the narrow, and callOnEachEvent
// registers with event_types=null.
//
// zulip-js calls our server does not serve (not tested here): GET
// /realm/filters (filters.retrieve; removed from Zulip's API in favour of
// GET /realm/linkifiers), /users/me/pointer (removed from Zulip).
//
//   node --import tsx --test test/zulip-js.test.ts

import assert from "node:assert/strict";
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  newUser,
  startEmbedded,
  withoutGreeting,
  type EmbeddedHandle,
  type Member,
} from "./support/index.ts";

// zulip-js is CommonJS without type declarations: the part used here.
type Params = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = Promise<any>;
interface ZulipClient {
  callEndpoint(endpoint: string, method?: string, params?: Params): Reply;
  users: {
    retrieve(p?: Params): Reply;
    create(p: Params): Reply;
    me: {
      getProfile(): Reply;
      subscriptions: { add(p: Params): Reply; remove(p: Params): Reply };
    };
  };
  streams: {
    retrieve(p?: Params): Reply;
    getStreamId(p: string | Params): Reply;
    subscriptions: { retrieve(p?: Params): Reply };
    topics: { retrieve(p: Params): Reply };
    deleteById(p: Params): Reply;
  };
  messages: {
    send(p: Params): Reply;
    retrieve(p: Params): Reply;
    getById(p: Params): Reply;
    update(p: Params): Reply;
    deleteById(p: Params): Reply;
    flags: { add(p: Params): Reply; remove(p: Params): Reply };
    render(p: Params): Reply;
    getHistoryById(p: Params): Reply;
  };
  typing: { send(p: Params): Reply };
  reactions: { add(p: Params): Reply; remove(p: Params): Reply };
  queues: { register(p?: Params): Reply; deregister(p: Params): Reply };
  events: { retrieve(p: Params): Reply };
  emojis: { retrieve(p?: Params): Reply };
  server: { settings(p?: Params): Reply };
}
const zulipInit = createRequire(import.meta.url)("zulip-js") as (config: Params) => Promise<ZulipClient>;

let srv: EmbeddedHandle;
let z: ZulipClient;
let other: Member;
let zOther: ZulipClient;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function ok(r: any): any {
  assert.equal(r.result, "success", JSON.stringify(r));
  assert.equal(r.msg, "");
  return r;
}

before(async () => {
  srv = await startEmbedded();
  other = await newUser(srv, 400, "Jay Ess");
  z = await zulipInit({ username: srv.owner.email, apiKey: srv.owner.apiKey, realm: srv.baseUrl });
  // realm ending in /api is the other form zulip-js accepts.
  zOther = await zulipInit({ username: other.email, apiKey: other.apiKey, realm: `${srv.baseUrl}/api` });
});
after(async () => {
  await srv?.stop();
});

describe("zulip-js against the embedded server", () => {
  test("server.settings (no auth needed, Basic header sent anyway)", async () => {
    const r = ok(await z.server.settings());
    assert.equal(typeof r.zulip_version, "string");
    assert.equal(r.zulip_feature_level, 496);
    assert.equal(r.realm_name, "Test Org");
  });

  test("users.me.getProfile and users.retrieve", async () => {
    const me = ok(await z.users.me.getProfile());
    assert.equal(me.user_id, srv.owner.userId);
    assert.equal(me.email, srv.owner.email);
    assert.equal(me.is_owner, true);
    const all = ok(await z.users.retrieve({ client_gravatar: true }));
    const ids = (all.members as { user_id: number }[]).map((m) => m.user_id);
    assert.ok(ids.includes(srv.owner.userId) && ids.includes(other.userId), JSON.stringify(ids));
    const one = ok(await z.callEndpoint(`/users/${other.userId}`, "GET"));
    assert.equal(one.user.full_name, "Jay Ess");
  });

  test("users.create (multipart POST)", async () => {
    const r = ok(
      await z.users.create({ email: "js-made@example.com", password: "js-made-pw-1", full_name: "JS Made" }),
    );
    assert.equal(typeof r.user_id, "number");
    const back = ok(await z.callEndpoint(`/users/${r.user_id}`, "GET"));
    assert.equal(back.user.email, "js-made@example.com");
  });

  test("settings (PATCH in the query string) and status", async () => {
    const r = ok(
      await z.callEndpoint("/settings", "PATCH", { twenty_four_hour_time: true, emojiset: "text" }),
    );
    assert.equal(r.ignored_parameters_unsupported, undefined);
    const reg = ok(await z.queues.register({ fetch_event_types: ["user_settings"] }));
    assert.equal(reg.user_settings.twenty_four_hour_time, true);
    assert.equal(reg.user_settings.emojiset, "text");
    ok(await z.callEndpoint("/users/me/status", "POST", { status_text: "writing tests", emoji_name: "car" }));
    const status = ok(await z.queues.register({ fetch_event_types: ["user_status"] }));
    assert.equal(status.user_status[srv.owner.userId].status_text, "writing tests");
    ok(await z.queues.deregister({ queue_id: reg.queue_id }));
    ok(await z.queues.deregister({ queue_id: status.queue_id }));
  });

  let channelId = 0;

  test("channels: subscribe-create, retrieve, getStreamId, update, topics", async () => {
    const add = ok(
      await z.users.me.subscriptions.add({
        subscriptions: JSON.stringify([{ name: "js room", description: "for zulip-js" }]),
        principals: JSON.stringify([srv.owner.email, other.email]),
      }),
    );
    assert.deepEqual(add.subscribed[srv.owner.userId] ?? add.subscribed[srv.owner.email], ["js room"]);
    const id = ok(await z.streams.getStreamId("js room"));
    channelId = id.stream_id;
    assert.equal(typeof channelId, "number");
    const listed = ok(await z.streams.retrieve());
    const mine = (listed.streams as { stream_id: number; description: string }[]).find(
      (s) => s.stream_id === channelId,
    );
    assert.equal(mine?.description, "for zulip-js");
    const subs = ok(await z.streams.subscriptions.retrieve());
    assert.ok((subs.subscriptions as { stream_id: number }[]).some((s) => s.stream_id === channelId));
    ok(await z.callEndpoint(`/streams/${channelId}`, "PATCH", { description: "updated by zulip-js" }));
    const one = ok(await z.callEndpoint(`/streams/${channelId}`, "GET"));
    assert.equal(one.stream.description, "updated by zulip-js");
    const members = ok(await z.callEndpoint(`/streams/${channelId}/members`, "GET"));
    assert.deepEqual([...members.subscribers].sort(), [srv.owner.userId, other.userId].sort());
  });

  let messageId = 0;

  test("messages: send to a channel (legacy subject) and direct, retrieve with a narrow", async () => {
    const sent = ok(
      await z.messages.send({
        to: "js room",
        type: "stream",
        subject: "greetings",
        content: "Hello **zulip-js**",
      }),
    );
    messageId = sent.id;
    assert.equal(typeof messageId, "number");
    const dm = ok(await z.messages.send({ to: other.email, type: "private", content: "psst" }));
    assert.equal(typeof dm.id, "number");
    const got = ok(
      await z.messages.retrieve({
        anchor: "newest",
        num_before: 10,
        num_after: 0,
        narrow: [
          { operator: "stream", operand: "js room" },
          { operator: "topic", operand: "greetings" },
        ],
      }),
    );
    const ids = (got.messages as { id: number }[]).map((m) => m.id);
    assert.deepEqual(ids, [messageId]);
    assert.equal(got.messages[0].content, "<p>Hello <strong>zulip-js</strong></p>");
    const dms = ok(
      await zOther.messages.retrieve({
        anchor: "newest",
        num_before: 5,
        num_after: 0,
        narrow: [{ operator: "is", operand: "dm" }],
      }),
    );
    // Welcome Bot's greeting of the new user (FL 416) is a DM too; the test's own is the subject.
    assert.deepEqual(
      withoutGreeting(dms.messages as { id: number; sender_email: string }[]).map((m) => m.id),
      [dm.id],
    );
    const topics = ok(await z.streams.topics.retrieve({ stream_id: channelId }));
    assert.deepEqual(
      (topics.topics as { name: string; max_id: number }[]).map((t) => [t.name, t.max_id]),
      [["greetings", messageId]],
    );
  });

  test("messages: getById, update (PATCH query string), flags, reactions", async () => {
    const one = ok(await z.messages.getById({ message_id: messageId, apply_markdown: false }));
    assert.equal(one.message.content, "Hello **zulip-js**");
    ok(await z.messages.update({ message_id: messageId, content: "Hello again" }));
    const edited = ok(await z.messages.getById({ message_id: messageId }));
    assert.equal(edited.message.content, "<p>Hello again</p>");

    const starred = ok(await zOther.messages.flags.add({ flag: "starred", messages: [messageId] }));
    assert.deepEqual(starred.messages, [messageId]);
    const mine = ok(await zOther.messages.getById({ message_id: messageId }));
    assert.ok(mine.message.flags.includes("starred"), JSON.stringify(mine.message.flags));
    ok(await zOther.messages.flags.remove({ flag: "starred", messages: [messageId] }));
    const unstarred = ok(await zOther.messages.getById({ message_id: messageId }));
    assert.ok(!unstarred.message.flags.includes("starred"));

    ok(await z.reactions.add({ message_id: messageId, emoji_name: "octopus" }));
    const reacted = ok(await z.messages.getById({ message_id: messageId }));
    assert.deepEqual(
      (reacted.message.reactions as { emoji_name: string; user_id: number }[]).map((r) => [
        r.emoji_name,
        r.user_id,
      ]),
      [["octopus", srv.owner.userId]],
    );
    ok(await z.reactions.remove({ message_id: messageId, emoji_name: "octopus" }));
    const plain = ok(await z.messages.getById({ message_id: messageId }));
    assert.deepEqual(plain.message.reactions, []);
  });

  test("messages: deleteById (DELETE with message_id also in the query)", async () => {
    const sent = ok(
      await z.messages.send({ to: "js room", type: "stream", topic: "doomed", content: "bye" }),
    );
    ok(await z.messages.deleteById({ message_id: sent.id }));
    const gone = await z.messages.getById({ message_id: sent.id });
    assert.equal(gone.result, "error");
    assert.equal(gone.msg, "Invalid message(s)");
  });

  test("user groups through callEndpoint (arrays JSON-encoded in multipart)", async () => {
    const made = ok(
      await z.callEndpoint("/user_groups/create", "POST", {
        name: "js-group",
        description: "made by zulip-js",
        members: [srv.owner.userId, other.userId],
      }),
    );
    const groups = ok(await z.callEndpoint("/user_groups", "GET"));
    const g = (groups.user_groups as { id: number; name: string; members: number[] }[]).find(
      (x) => x.id === made.group_id,
    );
    assert.deepEqual([...g!.members].sort(), [srv.owner.userId, other.userId].sort());
    ok(await z.callEndpoint(`/user_groups/${made.group_id}`, "PATCH", { description: "renamed" }));
    ok(await z.callEndpoint(`/user_groups/${made.group_id}/members`, "POST", { delete: [other.userId] }));
    const members = ok(await z.callEndpoint(`/user_groups/${made.group_id}/members`, "GET"));
    assert.deepEqual(members.members, [srv.owner.userId]);
  });

  test("linkifiers and custom emoji lists", async () => {
    const made = ok(
      await z.callEndpoint("/realm/filters", "POST", {
        pattern: "#(?P<id>[0-9]+)",
        url_template: "https://tracker.example.com/{id}",
      }),
    );
    const list = ok(await z.callEndpoint("/realm/linkifiers", "GET"));
    assert.deepEqual(
      (list.linkifiers as { id: number; pattern: string }[]).map((l) => [l.id, l.pattern]),
      [[made.id, "#(?P<id>[0-9]+)"]],
    );
    const sent = ok(
      await z.messages.send({ to: "js room", type: "stream", topic: "links", content: "see #42" }),
    );
    const msg = ok(await z.messages.getById({ message_id: sent.id }));
    assert.match(msg.message.content, /href="https:\/\/tracker\.example\.com\/42"/);
    ok(await z.callEndpoint(`/realm/filters/${made.id}`, "DELETE"));
    const emoji = ok(await z.emojis.retrieve());
    assert.deepEqual(emoji.emoji, {});
  });

  test("register with event_types and poll events.retrieve until a message arrives", async () => {
    const q = ok(await zOther.queues.register({ event_types: ["message"] }));
    assert.equal(typeof q.queue_id, "string");
    const poll = zOther.events.retrieve({ queue_id: q.queue_id, last_event_id: q.last_event_id });
    await new Promise((r) => setTimeout(r, 50));
    const sent = ok(await z.messages.send({ to: "js room", type: "stream", topic: "live", content: "ping" }));
    const got = ok(await poll);
    const messages = (got.events as { type: string; message?: { id: number } }[]).filter(
      (e) => e.type === "message",
    );
    assert.deepEqual(
      messages.map((e) => e.message!.id),
      [sent.id],
    );
    // Acknowledge and check nothing else is pending.
    const last = Math.max(...(got.events as { id: number }[]).map((e) => e.id));
    const rest = ok(
      await zOther.events.retrieve({ queue_id: q.queue_id, last_event_id: last, dont_block: true }),
    );
    assert.deepEqual(rest.events, []);
    ok(await zOther.queues.deregister({ queue_id: q.queue_id }));
    const after = await zOther.events.retrieve({
      queue_id: q.queue_id,
      last_event_id: last,
      dont_block: true,
    });
    assert.equal(after.code, "BAD_EVENT_QUEUE_ID");
  });

  test("typing, render, edit history and marking read, as a client sends them", async () => {
    const q = ok(await zOther.queues.register({ event_types: ["typing", "update_message_flags"] }));
    ok(await z.typing.send({ to: [other.userId], op: "start" }));
    const typing = ok(await zOther.events.retrieve({ queue_id: q.queue_id, last_event_id: -1 }));
    const started = (typing.events as { type: string; op?: string; sender?: { user_id: number } }[]).find(
      (e) => e.type === "typing",
    );
    assert.equal(started?.op, "start");
    assert.equal(started?.sender?.user_id, srv.owner.userId);
    const rendered = ok(await z.messages.render({ content: "**bold**" }));
    assert.equal(rendered.rendered, "<p><strong>bold</strong></p>");
    const sent = ok(
      await z.messages.send({ to: "js room", type: "stream", topic: "read me", content: "first" }),
    );
    ok(await z.messages.update({ message_id: sent.id, content: "second" }));
    const history = ok(await z.messages.getHistoryById({ message_id: sent.id }));
    assert.deepEqual(
      (history.message_history as { content: string }[]).map((h) => h.content),
      ["first", "second"],
    );
    // The other user received it (a subscriber) and marks it read, then everything.
    ok(await zOther.messages.flags.add({ flag: "read", messages: [sent.id] }));
    const stream = ok(await z.streams.getStreamId("js room")).stream_id as number;
    ok(await zOther.callEndpoint("/mark_stream_as_read", "POST", { stream_id: stream }));
    ok(await zOther.callEndpoint("/mark_all_as_read", "POST", {}));
    const reg = ok(await zOther.queues.register({ fetch_event_types: ["message"] }));
    assert.equal(reg.unread_msgs.count, 0);
    ok(await zOther.queues.deregister({ queue_id: q.queue_id }));
  });

  test("drafts and scheduled messages through callEndpoint", async () => {
    const stream = ok(await z.streams.getStreamId("js room")).stream_id as number;
    const made = ok(
      await z.callEndpoint("/drafts", "POST", {
        drafts: JSON.stringify([
          { type: "stream", to: [stream], topic: "later", content: "a draft", timestamp: 1 },
        ]),
      }),
    );
    const [draftId] = made.ids as number[];
    ok(
      await z.callEndpoint(`/drafts/${draftId}`, "PATCH", {
        draft: JSON.stringify({ type: "", to: [], topic: "", content: "edited", timestamp: 2 }),
      }),
    );
    const drafts = ok(await z.callEndpoint("/drafts", "GET"));
    assert.equal(
      (drafts.drafts as { id: number; content: string }[]).find((d) => d.id === draftId)?.content,
      "edited",
    );
    ok(await z.callEndpoint(`/drafts/${draftId}`, "DELETE"));
    const at = Math.floor(Date.now() / 1000) + 3600;
    const sched = ok(
      await z.callEndpoint("/scheduled_messages", "POST", {
        type: "stream",
        to: stream,
        topic: "future",
        content: "an hour from now",
        scheduled_delivery_timestamp: at,
      }),
    );
    const listed = ok(await z.callEndpoint("/scheduled_messages", "GET"));
    const mine = (listed.scheduled_messages as { scheduled_message_id: number; content: string }[]).find(
      (m) => m.scheduled_message_id === sched.scheduled_message_id,
    );
    assert.equal(mine?.content, "an hour from now");
    ok(await z.callEndpoint(`/scheduled_messages/${sched.scheduled_message_id}`, "DELETE"));
  });

  test("a file upload (multipart from a read stream) linked in a message", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zulip-js-upload-"));
    try {
      const path = join(dir, "notes.txt");
      writeFileSync(path, "uploaded by zulip-js\n");
      const up = ok(await z.callEndpoint("/user_uploads", "POST", { file: createReadStream(path) }));
      assert.match(up.url as string, /^\/user_uploads\/\d+\/.+\/notes\.txt$/);
      ok(
        await z.messages.send({
          to: "js room",
          type: "stream",
          topic: "files",
          content: `[notes](${up.url})`,
        }),
      );
      const files = ok(await z.callEndpoint("/attachments", "GET"));
      const a = (files.attachments as { path_id: string; message_ids: number[] }[]).find((x) =>
        (up.url as string).endsWith(x.path_id),
      );
      assert.equal(a?.message_ids.length, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("callOnEachEvent's default register (event_types=null) gets Zulip's answer", async () => {
    // events_wrapper.js registers with {event_types: null}, sent as the
    // multipart text "null". Zulip declares event_types as
    // Json[list[str]] | None, so the decoded null is "not a list" there too:
    // callOnEachEvent works only when given event types.
    const r = await zOther.queues.register({ event_types: null });
    assert.deepEqual(r, { result: "error", msg: "event_types is not a list", code: "BAD_REQUEST" });
    const q = ok(await zOther.queues.register({ event_types: ["message", "realm_user"] }));
    ok(await z.callEndpoint(`/users/${other.userId}`, "PATCH", { full_name: "Jay Ess Two" }));
    ok(await z.messages.send({ to: "js room", type: "stream", topic: "live", content: "pong" }));
    const seen = new Set<string>();
    let last = q.last_event_id as number;
    for (let i = 0; i < 20 && !(seen.has("message") && seen.has("realm_user")); i++) {
      const got = ok(
        await zOther.events.retrieve({ queue_id: q.queue_id, last_event_id: last, dont_block: true }),
      );
      for (const e of got.events as { id: number; type: string }[]) {
        seen.add(e.type);
        last = Math.max(last, e.id);
      }
      if (!(seen.has("message") && seen.has("realm_user"))) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(seen.has("message") && seen.has("realm_user"), [...seen].join(","));
    ok(await zOther.queues.deregister({ queue_id: q.queue_id }));
  });

  test("channels: unsubscribe (DELETE query string) and delete", async () => {
    const removed = ok(
      await zOther.users.me.subscriptions.remove({ subscriptions: JSON.stringify(["js room"]) }),
    );
    assert.deepEqual(removed.removed, ["js room"]);
    const subs = ok(await zOther.streams.subscriptions.retrieve());
    assert.ok(!(subs.subscriptions as { stream_id: number }[]).some((s) => s.stream_id === channelId));
    ok(await z.streams.deleteById({ stream_id: channelId }));
    const listed = ok(await z.streams.retrieve());
    assert.ok(!(listed.streams as { stream_id: number }[]).some((s) => s.stream_id === channelId));
  });
});
