// Black-box HTTP tests of the Notification Bot: cross_realm_bots and GET
// /users/{id}, PATCH /realm's announcement channel settings (errors,
// permissions, events), `announce` on channel creation, and the breadcrumbs
// of message moves (send_notification_to_old_thread / _new_thread).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import {
  createChannel,
  err,
  NOTIFICATION_BOT,
  ok,
  startChat,
  uniq,
  useChat,
  WELCOME_BOT,
  type User,
} from "./support/index.ts";

const BOT_EMAIL = NOTIFICATION_BOT.email;
const SETTINGS = [
  "new_stream_announcements_stream_id",
  "signup_announcements_stream_id",
  "zulip_update_announcements_stream_id",
];

const chat = useChat({ clearEvents: true });
const api = chat.api;

const channel = (params: Obj = {}, subscribers = [chat.owner.userId]) =>
  createChannel(chat, subscribers, { name: uniq("ann"), ...params });

async function messages(streamId: number, topic?: string, auth: User = chat.owner): Promise<Obj[]> {
  const narrow: Obj[] = [{ operator: "channel", operand: streamId }];
  if (topic !== undefined) narrow.push({ operator: "topic", operand: topic });
  const r = ok(
    await api(
      "GET",
      "/messages",
      { anchor: "newest", num_before: 100, num_after: 0, narrow, apply_markdown: false },
      auth,
    ),
  );
  return r.messages as Obj[];
}

async function send(streamId: number, topic: string, content = "hello"): Promise<number> {
  const r = ok(await api("POST", "/messages", { type: "stream", to: streamId, topic, content }));
  return r.id as number;
}

async function realmState(): Promise<Obj> {
  return ok(await api("POST", "/register", { fetch_event_types: ["realm"] }));
}

async function setAnnouncements(id: number): Promise<void> {
  ok(await api("PATCH", "/realm", { new_stream_announcements_stream_id: id }));
}

const mention = (u: User) => `@_**${u.fullName}|${u.userId}**`;

describe("Notification Bot", () => {
  test("is in cross_realm_bots, not in realm_users or GET /users", async () => {
    const r = ok(await api("POST", "/register", { fetch_event_types: ["realm_user"] }));
    const bots = r.cross_realm_bots as Obj[];
    // Notification Bot and Welcome Bot (feature level 416).
    assert.deepEqual(bots.map((b) => b.email).sort(), [BOT_EMAIL, WELCOME_BOT.email].sort());
    const bot = bots.find((b) => b.email === BOT_EMAIL)!;
    assert.equal(bot.email, BOT_EMAIL);
    assert.equal(bot.delivery_email, BOT_EMAIL);
    assert.equal(bot.full_name, "Notification Bot");
    assert.equal(bot.is_bot, true);
    assert.equal(bot.is_system_bot, true);
    assert.equal(bot.bot_type, 1);
    assert.equal(bot.bot_owner_id, null);
    assert.equal(bot.role, 400);
    assert.equal(bot.is_active, true);
    assert.equal(typeof bot.user_id, "number");
    const users = r.realm_users as Obj[];
    assert.ok(!users.some((u) => u.email === BOT_EMAIL));
    const list = ok(await api("GET", "/users")).members as Obj[];
    assert.ok(!list.some((u) => u.user_id === bot.user_id));
    const one = ok(await api("GET", `/users/${bot.user_id as number}`)).user as Obj;
    assert.deepEqual(one, bot);
    const byEmail = ok(await api("GET", `/users/${BOT_EMAIL}`)).user as Obj;
    assert.equal(byEmail.user_id, bot.user_id);
  });

  test("cannot be authenticated as", async () => {
    const r = await api("GET", "/users/me", {}, { email: BOT_EMAIL, apiKey: "" });
    assert.equal(r.status, 401);
  });
});

describe("PATCH /realm announcement channels", () => {
  test("defaults are -1 in /register", async () => {
    const fresh = await startChat();
    try {
      const r = ok(await fresh.api("POST", "/register", { fetch_event_types: ["realm"] }));
      for (const s of SETTINGS) assert.equal(r[`realm_${s}`], -1);
    } finally {
      await fresh.stop();
    }
  });

  test("admins set each setting; reply, /register and realm update events", async () => {
    const ch = await channel();
    for (const s of SETTINGS) {
      chat.events.length = 0;
      const r = ok(await api("PATCH", "/realm", { [s]: ch.id }));
      assert.equal(r[s], ch.id);
      assert.equal((await realmState())[`realm_${s}`], ch.id);
      const evs = chat.events.filter((e) => e.event.type === "realm" && e.event.property === s);
      assert.equal(evs.length, 1);
      assert.deepEqual(evs[0]!.event, { type: "realm", op: "update", property: s, value: ch.id });
      // To every active user (with a queue: the router resolves `everyone`).
      assert.deepEqual([evs[0]!.userIds, evs[0]!.everyone], [[], true]);
      // Unchanged: nothing to do, no event.
      chat.events.length = 0;
      const again = ok(await api("PATCH", "/realm", { [s]: ch.id }));
      assert.equal(again[s], undefined);
      assert.equal(chat.events.filter((e) => e.event.type === "realm").length, 0);
      // -1 disables.
      const off = ok(await api("PATCH", "/realm", { [s]: -1 }));
      assert.equal(off[s], -1);
      assert.equal((await realmState())[`realm_${s}`], -1);
    }
  });

  test("an admin may pick a private channel they are not subscribed to", async () => {
    const member = await chat.newUser(400);
    const admin = await chat.newUser(200);
    const name = uniq("priv");
    const r = ok(
      await api(
        "POST",
        "/channels/create",
        { name, subscribers: [member.userId], invite_only: true },
        member,
      ),
    );
    ok(await api("PATCH", "/realm", { signup_announcements_stream_id: r.id }, admin));
    assert.equal((await realmState()).realm_signup_announcements_stream_id, r.id);
    ok(await api("PATCH", "/realm", { signup_announcements_stream_id: -1 }, admin));
  });

  test("errors change nothing", async () => {
    const ch = await channel();
    await setAnnouncements(ch.id);
    const member = await chat.newUser(400);
    const moderator = await chat.newUser(300);
    const guest = await chat.newUser(600);
    for (const u of [member, moderator, guest]) {
      err(
        await api("PATCH", "/realm", { new_stream_announcements_stream_id: -1 }, u),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      );
    }
    err(await api("PATCH", "/realm", { new_stream_announcements_stream_id: 999999 }), "Invalid channel ID");
    const archived = await channel();
    ok(await api("DELETE", `/streams/${archived.id}`));
    err(
      await api("PATCH", "/realm", { zulip_update_announcements_stream_id: archived.id }),
      "Invalid channel ID",
    );
    err(
      await api("PATCH", "/realm", { new_stream_announcements_stream_id: "abc" }),
      "new_stream_announcements_stream_id is not valid JSON",
    );
    err(
      await api("PATCH", "/realm", { signup_announcements_stream_id: 1.5 }),
      "signup_announcements_stream_id is not an integer",
    );
    // One bad setting in a request applies none of the others.
    err(
      await api("PATCH", "/realm", {
        signup_announcements_stream_id: ch.id,
        new_stream_announcements_stream_id: 999999,
      }),
      "Invalid channel ID",
    );
    const st = await realmState();
    assert.equal(st.realm_new_stream_announcements_stream_id, ch.id);
    assert.equal(st.realm_signup_announcements_stream_id, -1);
    assert.equal(st.realm_zulip_update_announcements_stream_id, -1);
    assert.equal(chat.events.filter((e) => e.event.type === "realm" && e.event.op === "update").length, 1);
  });
});

describe("announce", () => {
  test("POST /channels/create announce posts in the announcements channel", async () => {
    const ann = await channel();
    await setAnnouncements(ann.id);
    const member = await chat.newUser(400);
    ok(await api("POST", "/users/me/subscriptions", { subscriptions: [{ name: ann.name }] }, member));
    const name = uniq("new");
    const created = ok(
      await api("POST", "/channels/create", { name, subscribers: [member.userId], announce: true }, member),
    );
    assert.deepEqual(Object.keys(created).sort(), ["id", "msg", "result"]);
    const msgs = await messages(ann.id, "new channels", member);
    assert.equal(msgs.length, 1);
    const m = msgs[0]!;
    assert.equal(m.content, `@_**${member.fullName}|${member.userId}** created a new channel #**${name}**.`);
    assert.equal(m.sender_email, BOT_EMAIL);
    assert.equal(m.sender_full_name, "Notification Bot");
    assert.equal(m.subject, "new channels");
    assert.equal(m.client, "Internal");
    // Read for the creator, unread for the other subscribers.
    assert.deepEqual(m.flags, ["read"]);
    const ownerView = (await messages(ann.id, "new channels"))[0]!;
    assert.deepEqual(ownerView.flags, []);
    // The message event goes to the channel's subscribers (named by the
    // channel: the queue shards know whose queues they are), not to the bot.
    const ev = chat.events.find((e) => e.event.type === "message" && (e.event.message as Obj).id === m.id)!;
    assert.equal(ev.channel, ann.id);
    assert.deepEqual(ev.userIds, []);
  });

  test("without announce, or with the setting disabled: nothing", async () => {
    const ann = await channel();
    await setAnnouncements(ann.id);
    await channel({});
    await channel({ announce: false });
    assert.equal((await messages(ann.id)).length, 0);
    await setAnnouncements(-1);
    await channel({ announce: true });
    assert.equal((await messages(ann.id)).length, 0);
    // The announcements channel archived: nothing either (and no error).
    await setAnnouncements(ann.id);
    ok(await api("DELETE", `/streams/${ann.id}`));
    await channel({ announce: true });
  });

  test("legacy POST /users/me/subscriptions: one and several created channels", async () => {
    const ann = await channel();
    await setAnnouncements(ann.id);
    const existing = await channel();
    const a = uniq("leg");
    ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: existing.name }, { name: a }],
        announce: true,
      }),
    );
    const b = uniq("leg");
    const c = uniq("leg");
    const r = ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: b }, { name: c }],
        announce: true,
      }),
    );
    assert.deepEqual(Object.keys(r).sort(), [
      "already_subscribed",
      "msg",
      "new_subscription_messages_sent",
      "result",
      "subscribed",
    ]);
    // Only existing channels: no announcement.
    ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: existing.name }],
        announce: true,
      }),
    );
    const msgs = (await messages(ann.id, "new channels")).map((m) => m.content);
    assert.deepEqual(msgs, [
      `${mention(chat.owner)} created a new channel #**${a}**.`,
      `${mention(chat.owner)} created the following channels: #**${b}**, #**${c}**.`,
    ]);
    await setAnnouncements(-1);
  });

  test("bad announce value is an error and creates nothing", async () => {
    const name = uniq("bad");
    err(
      await api("POST", "/channels/create", { name, subscribers: [chat.owner.userId], announce: "maybe" }),
      "announce is not valid JSON",
    );
    err(await api("GET", "/get_stream_id", { stream: name }), `Invalid channel name '${name}'`);
  });
});

describe("move breadcrumbs", () => {
  async function topicWith(streamId: number, n: number): Promise<{ topic: string; ids: number[] }> {
    const topic = uniq("t");
    const ids: number[] = [];
    for (let i = 0; i < n; i++) ids.push(await send(streamId, topic, `m${i}`));
    return { topic, ids };
  }

  test("topic edit, change_all, defaults: new thread only", async () => {
    const ch = await channel();
    const { topic, ids } = await topicWith(ch.id, 2);
    const to = uniq("moved");
    const r = ok(await api("PATCH", `/messages/${ids[0]}`, { topic: to, propagate_mode: "change_all" }));
    assert.deepEqual(Object.keys(r).sort(), ["detached_uploads", "msg", "result"]);
    const there = await messages(ch.id, to);
    assert.equal(there.length, 3);
    const last = there[there.length - 1]!;
    assert.equal(last.sender_email, BOT_EMAIL);
    assert.equal(
      last.content,
      `This topic was moved here from #**${ch.name}>${topic}** by ${mention(chat.owner)}.`,
    );
    assert.deepEqual(last.flags, []);
    assert.equal((await messages(ch.id, topic)).length, 0);
  });

  test("topic edit with both flags, all moved", async () => {
    const ch = await channel();
    const { topic, ids } = await topicWith(ch.id, 1);
    const to = uniq("moved");
    ok(
      await api("PATCH", `/messages/${ids[0]}`, {
        topic: to,
        send_notification_to_old_thread: true,
        send_notification_to_new_thread: true,
      }),
    );
    const old = await messages(ch.id, topic);
    assert.equal(old.length, 1);
    assert.equal(old[0]!.content, `This topic was moved to #**${ch.name}>${to}** by ${mention(chat.owner)}.`);
    const nw = await messages(ch.id, to);
    assert.equal(
      nw[nw.length - 1]!.content,
      `This topic was moved here from #**${ch.name}>${topic}** by ${mention(chat.owner)}.`,
    );
  });

  test("partial moves: one message, several messages, into a topic with messages", async () => {
    const ch = await channel();
    const { topic, ids } = await topicWith(ch.id, 4);
    const dest = uniq("dest");
    await send(ch.id, dest, "already here");
    // change_one of a 4-message topic into a topic with messages.
    ok(
      await api("PATCH", `/messages/${ids[0]}`, {
        topic: dest,
        propagate_mode: "change_one",
        send_notification_to_old_thread: true,
      }),
    );
    let old = await messages(ch.id, topic);
    assert.equal(
      old[old.length - 1]!.content,
      `A message was moved from this topic to #**${ch.name}>${dest}** by ${mention(chat.owner)}.`,
    );
    let nw = await messages(ch.id, dest);
    const slug = `${ch.id}-${ch.name.replace(/ /g, "-")}`;
    const link = `http://localhost/#narrow/channel/${slug}/topic/${dest.replace(/ /g, ".20")}/near/${ids[0]}`;
    assert.equal(
      nw[nw.length - 1]!.content,
      `[A message](${link}) was moved here from #**${ch.name}>${topic}** by ${mention(chat.owner)}.`,
    );
    // change_later from the 2nd of the remaining 3: it, the last one and the bot's notice move.
    ok(
      await api("PATCH", `/messages/${ids[2]}`, {
        topic: dest,
        propagate_mode: "change_later",
        send_notification_to_old_thread: true,
      }),
    );
    old = await messages(ch.id, topic);
    assert.equal(
      old[old.length - 1]!.content,
      `3 messages were moved from this topic to #**${ch.name}>${dest}** by ${mention(chat.owner)}.`,
    );
    nw = await messages(ch.id, dest);
    assert.equal(
      nw[nw.length - 1]!.content,
      `3 messages were moved here from #**${ch.name}>${topic}** by ${mention(chat.owner)}.`,
    );
  });

  test("send_notification_to_new_thread=false and no flags: nothing", async () => {
    const ch = await channel();
    const { topic, ids } = await topicWith(ch.id, 1);
    const to = uniq("quiet");
    ok(await api("PATCH", `/messages/${ids[0]}`, { topic: to, send_notification_to_new_thread: false }));
    assert.equal((await messages(ch.id, to)).length, 1);
    assert.equal((await messages(ch.id, topic)).length, 0);
    // A content-only edit sends nothing.
    ok(await api("PATCH", `/messages/${ids[0]}`, { content: "edited" }));
    assert.equal((await messages(ch.id)).length, 1);
  });

  test("resolving a topic sends no moved-here notice", async () => {
    const ch = await channel();
    const { topic, ids } = await topicWith(ch.id, 1);
    ok(await api("PATCH", `/messages/${ids[0]}`, { topic: `✔ ${topic}`, propagate_mode: "change_all" }));
    assert.equal((await messages(ch.id)).length, 1);
  });

  test("move to another channel: defaults, both flags, partial", async () => {
    const a = await channel();
    const b = await channel();
    const t1 = await topicWith(a.id, 2);
    ok(await api("PATCH", `/messages/${t1.ids[0]}`, { stream_id: b.id, propagate_mode: "change_all" }));
    let inB = await messages(b.id, t1.topic);
    assert.equal(inB.length, 3);
    assert.equal(
      inB[2]!.content,
      `This topic was moved here from #**${a.name}>${t1.topic}** by ${mention(chat.owner)}.`,
    );
    assert.equal((await messages(a.id, t1.topic)).length, 0);

    const t2 = await topicWith(a.id, 3);
    const to = uniq("x");
    ok(
      await api("PATCH", `/messages/${t2.ids[1]}`, {
        stream_id: b.id,
        topic: to,
        propagate_mode: "change_later",
        send_notification_to_old_thread: true,
        send_notification_to_new_thread: true,
      }),
    );
    const inA = await messages(a.id, t2.topic);
    assert.equal(inA.length, 2);
    assert.equal(
      inA[1]!.content,
      `2 messages were moved from this topic to #**${b.name}>${to}** by ${mention(chat.owner)}.`,
    );
    inB = await messages(b.id, to);
    assert.equal(inB.length, 3);
    assert.equal(
      inB[2]!.content,
      `2 messages were moved here from #**${a.name}>${t2.topic}** by ${mention(chat.owner)}.`,
    );

    const t3 = await topicWith(a.id, 1);
    ok(
      await api("PATCH", `/messages/${t3.ids[0]}`, {
        stream_id: b.id,
        send_notification_to_old_thread: true,
        send_notification_to_new_thread: false,
      }),
    );
    assert.equal((await messages(b.id, t3.topic)).length, 1);
    const left = await messages(a.id, t3.topic);
    assert.equal(left.length, 1);
    assert.equal(
      left[0]!.content,
      `This topic was moved to #**${b.name}>${t3.topic}** by ${mention(chat.owner)}.`,
    );
  });

  test("breadcrumbs reach a private target channel the bot is not in", async () => {
    const a = await channel();
    const priv = await channel({ invite_only: true });
    const t = await topicWith(a.id, 1);
    ok(await api("PATCH", `/messages/${t.ids[0]}`, { stream_id: priv.id }));
    const inP = await messages(priv.id, t.topic);
    assert.equal(inP.length, 2);
    assert.equal(inP[1]!.sender_email, BOT_EMAIL);
  });

  test("a failed move sends nothing", async () => {
    const a = await channel();
    const t = await topicWith(a.id, 1);
    err(await api("PATCH", `/messages/${t.ids[0]}`, { stream_id: 999999 }), "Invalid channel ID");
    assert.equal((await messages(a.id)).length, 1);
    err(
      await api("PATCH", `/messages/${t.ids[0]}`, { topic: "x", send_notification_to_old_thread: "nope" }),
      "send_notification_to_old_thread is not valid JSON",
    );
    assert.equal((await messages(a.id)).length, 1);
  });
});
