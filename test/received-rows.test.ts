// Received rows (actors/channel/received.ts, gateway/received.ts): a
// channel message stores nothing for its ordinary recipients; whether a
// user received it follows from their subscription spans, and its flags
// from their read-through mark and entries. Black-box: the cost of a send
// read off /metrics (user-actor turns do not grow with the subscribers),
// and the Zulip semantics of UserMessage rows through the HTTP API.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import { ok, subscribeTo, uniq, useChat, useEnv, type Creds, type User } from "./support/index.ts";
import { bearer, metric, raw } from "./support/ops.ts";

const TOKEN = `received-rows-${process.pid}`;

describe("received rows", () => {
  useEnv({ ADMIN_TOKEN: TOKEN });
  const chat = useChat();

  const channel = (name: string, who: User[]) =>
    subscribeTo(chat, name, { principals: [chat.owner.userId, ...who.map((u) => u.userId)] });

  async function send(streamId: number, topic: string, content = "hello"): Promise<number> {
    const r = ok(await chat.api("POST", "/messages", { type: "stream", to: streamId, topic, content }));
    return r.id as number;
  }

  async function subscribe(u: User, name: string): Promise<void> {
    ok(await chat.api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] }, u));
  }

  async function unsubscribe(u: User, name: string): Promise<void> {
    ok(await chat.api("DELETE", "/users/me/subscriptions", { subscriptions: [name] }, u));
  }

  async function flagsOf(u: Creds, streamId: number): Promise<Map<number, string[]>> {
    const r = ok(
      await chat.api(
        "GET",
        "/messages",
        {
          anchor: "oldest",
          num_before: 0,
          num_after: 100,
          narrow: [{ operator: "channel", operand: streamId }],
        },
        u,
      ),
    );
    return new Map((r.messages as Obj[]).map((m) => [m.id as number, m.flags as string[]]));
  }

  async function unread(u: Creds): Promise<{ ids: number[]; max: number }> {
    const r = ok(await chat.api("POST", "/register", { fetch_event_types: ["message"] }, u));
    const m = r.unread_msgs as { count: number; streams: { unread_message_ids: number[] }[] };
    const ids = m.streams.flatMap((s) => s.unread_message_ids).sort((a, b) => a - b);
    assert.equal(m.count, ids.length);
    return { ids, max: r.max_message_id as number };
  }

  async function unreadNarrow(u: Creds): Promise<number[]> {
    const r = ok(
      await chat.api(
        "GET",
        "/messages",
        { anchor: "newest", num_before: 100, num_after: 0, narrow: [{ operator: "is", operand: "unread" }] },
        u,
      ),
    );
    return (r.messages as Obj[]).map((m) => m.id as number);
  }

  /** User-actor turns so far (the node's turn histogram). */
  async function userTurns(): Promise<number> {
    const r = await raw(`${chat.srv.url}/metrics`, bearer(TOKEN));
    assert.equal(r.status, 200, r.text);
    return metric(r.text, "zulip_actors_turn_duration_seconds_count", { kind: "user" });
  }

  test("a channel send costs the same user-actor work at 3 and at 40 subscribers", async () => {
    const many: User[] = [];
    for (let i = 0; i < 40; i++) many.push(await chat.newUser());
    const small = await channel(uniq("small"), many.slice(0, 2));
    const big = await channel(uniq("big"), many);
    await send(small, "warm");
    await send(big, "warm");
    const costOf = async (streamId: number) => {
      const t0 = await userTurns();
      for (let i = 0; i < 5; i++) await send(streamId, "cost");
      return (await userTurns()) - t0;
    };
    const smallCost = await costOf(small);
    const bigCost = await costOf(big);
    // One row per send (the sender's); a row per subscriber would be 5 x 41.
    assert.ok(
      smallCost > 0 && bigCost <= smallCost + 5,
      `user turns: ${bigCost} at 41 subscribers, ${smallCost} at 3`,
    );
  });

  test("received follows the subscription spans; flags follow marks and entries", async () => {
    const u = await chat.newUser();
    const name = uniq("spans");
    const ch = await channel(name, []);
    const before = await send(ch, "t", "before u subscribed");
    await subscribe(u, name);
    const m2 = await send(ch, "t");
    const m3 = await send(ch, "t");
    let flags = await flagsOf(u, ch);
    assert.deepEqual(flags.get(before), ["read", "historical"]);
    assert.deepEqual(flags.get(m2), []);
    const state = await unread(u);
    assert.deepEqual(state.ids, [m2, m3]);
    assert.equal(state.max, m3);
    assert.deepEqual(await unreadNarrow(u), [m2, m3]);

    ok(await chat.api("POST", "/messages/flags", { messages: [m2], op: "add", flag: "read" }, u));
    ok(await chat.api("POST", "/messages/flags", { messages: [m3], op: "add", flag: "starred" }, u));
    flags = await flagsOf(u, ch);
    assert.deepEqual(flags.get(m2), ["read"]);
    assert.deepEqual(flags.get(m3), ["starred"]);
    assert.deepEqual((await unread(u)).ids, [m3]);

    // Unsubscribed: messages sent meanwhile were not received.
    await unsubscribe(u, name);
    const away = await send(ch, "t", "while away");
    await subscribe(u, name);
    const back = await send(ch, "other", "after coming back");
    flags = await flagsOf(u, ch);
    assert.deepEqual(flags.get(away), ["read", "historical"]);
    assert.deepEqual(flags.get(back), []);
    assert.deepEqual((await unread(u)).ids, [m3, back]);

    // Marking unread a received row with no entry.
    ok(await chat.api("POST", "/messages/flags", { messages: [m2], op: "remove", flag: "read" }, u));
    assert.deepEqual((await unread(u)).ids, [m2, m3, back]);

    // A topic, then the whole channel, read.
    ok(await chat.api("POST", "/mark_topic_as_read", { stream_id: ch, topic_name: "other" }, u));
    assert.deepEqual((await unread(u)).ids, [m2, m3]);
    ok(await chat.api("POST", "/mark_stream_as_read", { stream_id: ch }, u));
    assert.deepEqual((await unread(u)).ids, []);
    const later = await send(ch, "t");
    assert.deepEqual((await unread(u)).ids, [later]);
    ok(await chat.api("POST", "/mark_all_as_read", {}, u));
    assert.deepEqual((await unread(u)).ids, []);
    assert.deepEqual((await flagsOf(u, ch)).get(later), ["read"]);
  });

  test("a move keeps a received row's flags in the target channel", async () => {
    const u = await chat.newUser();
    const from = uniq("move-from");
    const to = uniq("move-to");
    const src = await channel(from, [u]);
    const dst = await channel(to, [u]);
    const read = await send(src, "moving");
    const fresh = await send(src, "moving");
    ok(await chat.api("POST", "/messages/flags", { messages: [read], op: "add", flag: "read" }, u));
    ok(
      await chat.api("PATCH", `/messages/${read}`, {
        stream_id: dst,
        propagate_mode: "change_all",
        send_notification_to_old_thread: false,
        send_notification_to_new_thread: false,
      }),
    );
    const flags = await flagsOf(u, dst);
    assert.deepEqual(flags.get(read), ["read"]);
    assert.deepEqual(flags.get(fresh), []);
    assert.deepEqual((await unread(u)).ids, [fresh]);
  });
});
