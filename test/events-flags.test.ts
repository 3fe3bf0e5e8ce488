// verify_action for message flags and unread counts (Zulip's
// test_events.py style): register with the message, update_message_flags
// and starred state, act, apply the events the queue got to that state,
// and compare with a fresh register. Channel messages have received rows
// (no stored row per recipient), so these check that the events and the
// state derived from spans and read-through marks agree.

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertSuccess,
  eventsUntil,
  newUser,
  useEmbedded,
  type Creds,
  type Ev,
  type Member,
  type Queue,
} from "./support/index.ts";

const KEYS = ["unread_msgs", "max_message_id", "starred_messages"];
const FETCH = ["message", "update_message_flags", "starred_messages"];

const srv = useEmbedded();

async function register(who: Creds): Promise<Ev> {
  const r = await srv.api("POST", "/register", { fetch_event_types: FETCH }, who);
  assertSuccess(r);
  return r.body;
}

/** Zulip's apply_event for the events below, on unread_msgs, max_message_id and starred_messages. */
function applyEvent(state: Ev, e: Ev): void {
  const u = state.unread_msgs;
  const dropUnread = (id: number) => {
    for (const list of [u.streams, u.pms, u.huddles]) {
      for (const entry of list)
        entry.unread_message_ids = entry.unread_message_ids.filter((x: number) => x !== id);
    }
    u.streams = u.streams.filter((s: Ev) => s.unread_message_ids.length);
    u.pms = u.pms.filter((s: Ev) => s.unread_message_ids.length);
    u.huddles = u.huddles.filter((s: Ev) => s.unread_message_ids.length);
    u.mentions = u.mentions.filter((x: number) => x !== id);
  };
  const addStreamUnread = (id: number, streamId: number, topic: string) => {
    let entry = u.streams.find((s: Ev) => s.stream_id === streamId && s.topic === topic);
    if (!entry) u.streams.push((entry = { stream_id: streamId, topic, unread_message_ids: [] }));
    entry.unread_message_ids = [...entry.unread_message_ids, id].sort((a, b) => a - b);
  };
  const recount = () => {
    u.count = [...u.streams, ...u.pms, ...u.huddles].reduce(
      (n: number, s: Ev) => n + s.unread_message_ids.length,
      0,
    );
  };
  switch (e.type) {
    case "message": {
      const m = e.message;
      state.max_message_id = Math.max(state.max_message_id, m.id);
      if (!e.flags.includes("read") && m.type === "stream") addStreamUnread(m.id, m.stream_id, m.subject);
      if (!e.flags.includes("read") && e.flags.includes("mentioned")) u.mentions.push(m.id);
      break;
    }
    case "update_message_flags": {
      if (e.flag === "starred") {
        const set = new Set<number>(state.starred_messages);
        for (const id of e.messages)
          if (e.op === "add") set.add(id);
          else set.delete(id);
        state.starred_messages = [...set].sort((a, b) => a - b);
      } else if (e.flag === "read" && e.op === "add") {
        if (e.all) {
          u.streams = [];
          u.pms = [];
          u.huddles = [];
          u.mentions = [];
        } else for (const id of e.messages) dropUnread(id);
      } else if (e.flag === "read" && e.op === "remove") {
        for (const id of e.messages) {
          const d = e.message_details[String(id)];
          if (d.type === "stream") addStreamUnread(id, d.stream_id, d.topic);
          if (d.mentioned) u.mentions.push(id);
        }
      }
      break;
    }
    default:
      assert.fail(`no apply rule for ${e.type}`);
  }
  recount();
}

async function verifyAction(who: Member, action: () => Promise<void>, count: number): Promise<Ev[]> {
  const state = await register(who);
  const q: Queue = { id: state.queue_id, last: state.last_event_id, auth: who };
  await action();
  const events = await eventsUntil(srv, q, (evs) => evs.length >= count);
  assert.equal(events.length, count, JSON.stringify(events));
  for (const e of events) applyEvent(state, e);
  const fresh = await register(who);
  for (const k of KEYS) assert.deepEqual(state[k], fresh[k], `${k} after applying ${JSON.stringify(events)}`);
  return events;
}

describe("verify_action: flags and unread counts", () => {
  let u: Member;
  let streamId: number;
  const sent: number[] = [];

  async function send(topic: string, content = "hi"): Promise<number> {
    const r = await srv.api("POST", "/messages", { type: "stream", to: streamId, topic, content });
    assertSuccess(r);
    sent.push(r.body.id);
    return r.body.id;
  }

  before(async () => {
    u = await newUser(srv);
    // A mention would also follow the topic (user_topic events, FL 235): not these tests' subject.
    assertSuccess(
      await srv.api("PATCH", "/settings", { automatically_follow_topics_where_mentioned: false }, u),
    );
    const name = `flags ${process.pid}`;
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: [srv.owner.userId, u.userId],
      }),
    );
    streamId = (await srv.api("GET", "/get_stream_id", { stream: name })).body.stream_id;
  });

  test("a channel message arrives unread", async () => {
    await verifyAction(u, async () => void (await send("alpha")), 1);
  });

  test("a mention arrives unread and mentioned", async () => {
    const full = (await srv.api("GET", `/users/${u.userId}`)).body.user.full_name as string;
    await verifyAction(u, async () => void (await send("alpha", `@**${full}** look`)), 1);
  });

  test("marking read, then unread, then starring", async () => {
    const id = await send("beta");
    await verifyAction(
      u,
      async () =>
        assertSuccess(
          await srv.api("POST", "/messages/flags", { messages: [id], op: "add", flag: "read" }, u),
        ),
      1,
    );
    await verifyAction(
      u,
      async () =>
        assertSuccess(
          await srv.api("POST", "/messages/flags", { messages: [id], op: "remove", flag: "read" }, u),
        ),
      1,
    );
    await verifyAction(
      u,
      async () =>
        assertSuccess(
          await srv.api("POST", "/messages/flags", { messages: [id], op: "add", flag: "starred" }, u),
        ),
      1,
    );
  });

  test("marking a topic, the channel, then everything read", async () => {
    await send("gamma");
    await send("gamma");
    await send("delta");
    await verifyAction(
      u,
      async () =>
        assertSuccess(
          await srv.api("POST", "/mark_topic_as_read", { stream_id: streamId, topic_name: "gamma" }, u),
        ),
      1,
    );
    await verifyAction(
      u,
      async () => assertSuccess(await srv.api("POST", "/mark_stream_as_read", { stream_id: streamId }, u)),
      1,
    );
    await send("epsilon");
    await verifyAction(u, async () => assertSuccess(await srv.api("POST", "/mark_all_as_read", {}, u)), 1);
  });

  test("marking a narrow read", async () => {
    await send("zeta");
    await send("zeta");
    await verifyAction(
      u,
      async () =>
        assertSuccess(
          await srv.api(
            "POST",
            "/messages/flags/narrow",
            {
              anchor: "oldest",
              num_before: 0,
              num_after: 100,
              narrow: JSON.stringify([{ operator: "channel", operand: streamId }]),
              op: "add",
              flag: "read",
            },
            u,
          ),
        ),
      1,
    );
  });
});
