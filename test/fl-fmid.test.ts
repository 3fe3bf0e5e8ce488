// Feature level 256: a channel's first_message_id is the id of its oldest
// message, set at the first send and kept current when messages are
// deleted or moved, with the `stream` update event (property
// "first_message_id") to those who may see the channel.
// Feature level 323: is_recently_active turns false when the periodic
// sweep finds no message in the last 180 days, true again at a send.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { startEmbedded, type EmbeddedHandle } from "./support/embedded.ts";
import { requireBinaries } from "./support/services.ts";
import {
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  openQueue,
  type ApiHolder,
  type Ev,
  type Member,
} from "./support/zulip-asserts.ts";
import type { Creds } from "./support/embedded.ts";
import { startChat, type Chat } from "./support/chat.ts";
import { channelDirectoryRef } from "../actors/channel-directory/refs.ts";

async function create(h: ApiHolder, name: string, extra: Record<string, unknown> = {}): Promise<number> {
  const r = await h.api("POST", "/users/me/subscriptions", {
    subscriptions: JSON.stringify([{ name }]),
    ...extra,
  });
  assertSuccess(r);
  const id = await h.api("GET", "/get_stream_id", { stream: name });
  assertSuccess(id);
  return id.body.stream_id as number;
}

async function send(h: ApiHolder, to: string, topic = "t", auth?: Creds): Promise<number> {
  const r = await h.api("POST", "/messages", { type: "stream", to, topic, content: "hi" }, auth);
  assertSuccess(r);
  return r.body.id as number;
}

async function firstId(h: ApiHolder, streamId: number, auth?: Creds): Promise<unknown> {
  const r = await h.api("GET", `/streams/${streamId}`, {}, auth);
  assertSuccess(r);
  return (r.body.stream as Ev).first_message_id;
}

const updates = (evs: Ev[]) =>
  evs.filter((e) => e.type === "stream" && e.op === "update" && e.property === "first_message_id");

describe("FL 256: first_message_id (embedded)", () => {
  let srv: EmbeddedHandle;
  let member: Member;
  before(async () => {
    srv = await startEmbedded();
    member = await newUser(srv, 400);
  });
  after(async () => {
    await srv?.stop();
  });

  test("FL 256: set at the first send, shown by GET /streams, register and subscriptions", async () => {
    const id = await create(srv, "fmid one");
    assert.equal(await firstId(srv, id), null);
    const q = await openQueue(srv, srv.owner, ["stream"]);
    const m1 = await send(srv, "fmid one");
    await send(srv, "fmid one", "other");
    assert.equal(await firstId(srv, id), m1);
    // The first send is silent, as in Zulip (clients set it from the message).
    assert.deepEqual(updates(await drain(srv, q)), []);
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["subscription", "stream"] });
    assertSuccess(reg);
    assert.equal((reg.body.subscriptions as Ev[]).find((s) => s.stream_id === id).first_message_id, m1);
    assert.equal((reg.body.streams as Ev[]).find((s) => s.stream_id === id).first_message_id, m1);
    const all = await srv.api("GET", "/streams");
    assertSuccess(all);
    assert.equal((all.body.streams as Ev[]).find((s) => s.stream_id === id).first_message_id, m1);
  });

  test("FL 256: deleting the oldest message moves first_message_id on, with the stream update event", async () => {
    const id = await create(srv, "fmid del", { principals: JSON.stringify([member.userId]) });
    const m1 = await send(srv, "fmid del");
    const m2 = await send(srv, "fmid del");
    const m3 = await send(srv, "fmid del");
    const q = await openQueue(srv, member, ["stream"]);
    // A message that is not the oldest: nothing changes.
    assertSuccess(await srv.api("DELETE", `/messages/${m2}`));
    assert.equal(await firstId(srv, id), m1);
    assertSuccess(await srv.api("DELETE", `/messages/${m1}`));
    assert.equal(await firstId(srv, id), m3);
    const evs = updates(await eventsUntil(srv, q, (e) => updates(e).length >= 1));
    assert.deepEqual(evs, [
      {
        type: "stream",
        op: "update",
        stream_id: id,
        name: "fmid del",
        property: "first_message_id",
        value: m3,
        id: evs[0].id,
      },
    ]);
    // The last message gone: null again; the next send sets it again.
    assertSuccess(await srv.api("DELETE", `/messages/${m3}`));
    assert.equal(await firstId(srv, id), null);
    const last = updates(await eventsUntil(srv, q, (e) => updates(e).length >= 1));
    assert.equal(last[0].value, null);
    const m4 = await send(srv, "fmid del");
    assert.equal(await firstId(srv, id), m4);
  });

  test("FL 256: the event reaches only those who may see the channel", async () => {
    const id = await create(srv, "fmid secret", { invite_only: true });
    const m1 = await send(srv, "fmid secret");
    const m2 = await send(srv, "fmid secret");
    const owners = await openQueue(srv, srv.owner, ["stream"]);
    const outsider = await openQueue(srv, member, ["stream"]);
    assertSuccess(await srv.api("DELETE", `/messages/${m1}`));
    const evs = updates(await eventsUntil(srv, owners, (e) => updates(e).length >= 1));
    assert.equal(evs[0].value, m2);
    assert.equal(evs[0].stream_id, id);
    assert.deepEqual(updates(await drain(srv, outsider)), []);
  });

  test("FL 256: a move takes first_message_id out of the source and into the target", async () => {
    const a = await create(srv, "fmid src");
    const b = await create(srv, "fmid dst");
    const m1 = await send(srv, "fmid src", "moving");
    const m2 = await send(srv, "fmid src", "staying");
    const later = await send(srv, "fmid dst");
    assert.equal(await firstId(srv, b), later);
    const q = await openQueue(srv, srv.owner, ["stream"]);
    assertSuccess(await srv.api("PATCH", `/messages/${m1}`, { stream_id: b, propagate_mode: "change_all" }));
    assert.equal(await firstId(srv, a), m2);
    assert.equal(await firstId(srv, b), m1);
    const evs = updates(await eventsUntil(srv, q, (e) => updates(e).length >= 2));
    assert.deepEqual(
      evs.map((e) => [e.stream_id, e.value]).sort((x, y) => x[0] - y[0]),
      [
        [a, m2],
        [b, m1],
      ].sort((x, y) => x[0] - y[0]),
    );
  });

  test("FL 256: deleting a topic (bulk removal) moves first_message_id on", async () => {
    const id = await create(srv, "fmid bulk");
    await send(srv, "fmid bulk", "gone");
    const m2 = await send(srv, "fmid bulk", "kept");
    const q = await openQueue(srv, srv.owner, ["stream"]);
    // Deleting a topic goes through the conversation's bulk removal.
    assertSuccess(await srv.api("POST", `/streams/${id}/delete_topic`, { topic_name: "gone" }));
    assert.equal(await firstId(srv, id), m2);
    const evs = updates(await eventsUntil(srv, q, (e) => updates(e).length >= 1));
    assert.equal(evs[0].value, m2);
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("FL 256: first_message_id (cluster)", { skip }, () => {
  let c: TestCluster;
  before(async () => {
    if (!skip) c = await startCluster();
  });
  after(async () => {
    await c?.stop();
  });

  test("FL 256: the first send sets it and deleting the oldest moves it on, with the event", async () => {
    const id = await create(c, "fmid cluster");
    const m1 = await send(c, "fmid cluster");
    const m2 = await send(c, "fmid cluster");
    assert.equal(await firstId(c, id), m1);
    const q = await openQueue(c, c.owner, ["stream"]);
    assertSuccess(await c.api("DELETE", `/messages/${m1}`));
    assert.equal(await firstId(c, id), m2);
    const evs = updates(await eventsUntil(c, q, (e) => updates(e).length >= 1));
    assert.equal(evs[0].value, m2);
    // FL 323: the sends recorded their day through the directory; the channel is active.
    const r = await c.api("GET", `/streams/${id}`);
    assertSuccess(r);
    assert.equal((r.body.stream as Ev).is_recently_active, true);
  });
});

const actives = (evs: Ev[]) =>
  evs.filter((e) => e.type === "stream" && e.op === "update" && e.property === "is_recently_active");

describe("FL 323: is_recently_active", () => {
  let chat: Chat;
  before(async () => {
    chat = await startChat();
  });
  after(async () => {
    await chat?.stop();
  });

  async function recentlyActive(id: number): Promise<unknown> {
    const r = await chat.api("GET", `/streams/${id}`);
    assertSuccess(r);
    return (r.body.stream as Ev).is_recently_active;
  }

  test("FL 323: the sweep turns channels without a message in 180 days inactive; a send turns them active", async () => {
    const member = await chat.newUser(400);
    const idle = await create(chat, "fmid idle");
    const busy = await create(chat, "fmid busy", { principals: JSON.stringify([member.userId]) });
    const secret = await create(chat, "fmid hidden", { invite_only: true });
    await send(chat, "fmid busy");
    await send(chat, "fmid hidden");
    assert.deepEqual([await recentlyActive(idle), await recentlyActive(busy)], [true, true]);
    const realmId = chat.srv.bootstrapped!.realmId!;
    const sweep = async (days: number) =>
      (await chat.srv.node.call(channelDirectoryRef(realmId), "sweepRecentlyActive", {
        now: Date.now() + days * 86400_000,
      })) as { inactive: number[] };
    const q = await openQueue(chat, member, ["stream"]);
    const ownerQ = await openQueue(chat, chat.owner, ["stream"]);
    // Ten days on: nothing is stale; a channel that never had a message counts from its creation.
    const early = await sweep(10);
    for (const id of [idle, busy, secret]) assert.ok(!early.inactive.includes(id));
    assert.deepEqual(
      [await recentlyActive(idle), await recentlyActive(busy), await recentlyActive(secret)],
      [true, true, true],
    );
    // 181 days on: all three; the private channel's event reaches only who may see it.
    const late = await sweep(181);
    for (const id of [idle, busy, secret]) assert.ok(late.inactive.includes(id));
    assert.equal(await recentlyActive(busy), false);
    const memberEvs = actives(
      await eventsUntil(
        chat,
        q,
        (e) => actives(e).filter((x) => x.stream_id === busy || x.stream_id === idle).length >= 2,
      ),
    );
    const idleEv = memberEvs.find((e) => e.stream_id === idle);
    assert.deepEqual(idleEv, {
      type: "stream",
      op: "update",
      stream_id: idle,
      name: "fmid idle",
      property: "is_recently_active",
      value: false,
      id: idleEv.id,
    });
    assert.ok(memberEvs.some((e) => e.stream_id === busy && e.value === false));
    assert.ok(!memberEvs.some((e) => e.stream_id === secret));
    const ownerEvs = actives(
      await eventsUntil(chat, ownerQ, (e) => actives(e).some((x) => x.stream_id === secret)),
    );
    assert.ok(ownerEvs.some((e) => e.stream_id === secret && e.value === false));
    // Nothing left to change: a repeated sweep is silent.
    assert.deepEqual((await sweep(181)).inactive, []);
    // register shows the flag.
    const reg = await chat.api("POST", "/register", { fetch_event_types: ["subscription"] }, member);
    assertSuccess(reg);
    assert.equal(
      (reg.body.subscriptions as Ev[]).find((s) => s.stream_id === busy).is_recently_active,
      false,
    );
    // A send makes the channel active again, with the event.
    await send(chat, "fmid busy", "t", member);
    assert.equal(await recentlyActive(busy), true);
    const back = actives(await eventsUntil(chat, q, (e) => actives(e).length >= 1));
    assert.deepEqual(
      back.map((e) => [e.stream_id, e.value]),
      [[busy, true]],
    );
  });
});
