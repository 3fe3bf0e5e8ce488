// Black-box HTTP tests: bulk message actions in a private channel with
// protected history (history_public_to_subscribers=false) change only the
// messages the acting user may access. A late subscriber's topic move,
// rename or resolve (change_all / change_later), its breadcrumbs and
// events, flags by narrow, and the events of single-message changes must
// not reach (or reveal) the messages sent before they joined.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import { createChannel, err, NOTIFICATION_BOT, ok, uniq, useChat, type User } from "./support/index.ts";

const chat = useChat({ clearEvents: true });
const api = chat.api;

const BOT_EMAIL = NOTIFICATION_BOT.email;
const mention = (u: User) => `@_**${u.fullName}|${u.userId}**`;

const channel = (subscribers: number[], params: Obj = {}) =>
  createChannel(chat, subscribers, { name: uniq("sec"), ...params });

async function send(
  streamId: number,
  topic: string,
  content: string,
  auth: User = chat.owner,
): Promise<number> {
  return ok(await api("POST", "/messages", { type: "stream", to: streamId, topic, content }, auth))
    .id as number;
}

async function subscribe(name: string, u: User): Promise<void> {
  ok(await api("POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: [u.userId] }));
}

async function unsubscribe(name: string, u: User): Promise<void> {
  ok(await api("DELETE", "/users/me/subscriptions", { subscriptions: [name] }, u));
}

/** A topic's messages as `auth` (the owner, an early subscriber, by default) reads them. */
async function inTopic(streamId: number, topic: string, auth: User = chat.owner): Promise<Obj[]> {
  const r = ok(
    await api(
      "GET",
      "/messages",
      {
        anchor: "oldest",
        num_before: 0,
        num_after: 100,
        apply_markdown: false,
        narrow: [
          ["channel", streamId],
          ["topic", topic],
        ],
      },
      auth,
    ),
  );
  return r.messages as Obj[];
}

const ids = (msgs: Obj[]) => msgs.filter((m) => m.sender_email !== BOT_EMAIL).map((m) => m.id as number);
const botTexts = (msgs: Obj[]) => msgs.filter((m) => m.sender_email === BOT_EMAIL).map((m) => m.content);

function eventsOf(type: string): { event: Obj; userIds: number[] }[] {
  return chat.events.filter((e) => e.event.type === type) as unknown as { event: Obj; userIds: number[] }[];
}

/**
 * A private channel with protected history, subscribers: the owner and
 * `early`. Two older messages in topic `t`, then `late` joins, then two
 * newer messages there; `later` joins last (receives none of them).
 */
async function protectedTopic(): Promise<{
  ch: { id: number; name: string };
  t: string;
  old: number[];
  fresh: number[];
  early: User;
  late: User;
  later: User;
}> {
  const early = await chat.newUser();
  const late = await chat.newUser();
  const later = await chat.newUser();
  const ch = await channel([chat.owner.userId, early.userId], {
    invite_only: true,
    history_public_to_subscribers: false,
  });
  const t = uniq("topic");
  const old = [await send(ch.id, t, "old secret 1"), await send(ch.id, t, "old secret 2", early)];
  await subscribe(ch.name, late);
  const fresh = [await send(ch.id, t, "new 1", late), await send(ch.id, t, "new 2")];
  await subscribe(ch.name, later);
  // The late subscriber sees only the newer messages.
  assert.deepEqual(ids(await inTopic(ch.id, t, late)), fresh);
  chat.events.length = 0;
  return { ch, t, old, fresh, early, late, later };
}

describe("moves between channels", () => {
  test("change_all by a late subscriber moves only the messages they received", async () => {
    const s = await protectedTopic();
    const pub = await channel([chat.owner.userId, s.late.userId]);
    ok(
      await api(
        "PATCH",
        `/messages/${s.fresh[0]}`,
        { stream_id: pub.id, propagate_mode: "change_all", send_notification_to_old_thread: true },
        s.late,
      ),
    );
    // The older messages stay where they were, untouched.
    const left = await inTopic(s.ch.id, s.t);
    assert.deepEqual(ids(left), s.old);
    for (const m of left.filter((x) => x.sender_email !== BOT_EMAIL)) {
      assert.equal(m.edit_history, undefined);
      assert.equal(m.last_moved_timestamp, undefined);
    }
    const moved = await inTopic(pub.id, s.t);
    assert.deepEqual(ids(moved), s.fresh);
    // Zulip: change_all moved every message visible to the mover.
    assert.deepEqual(botTexts(moved), [
      `This topic was moved here from #**${s.ch.name}>${s.t}** by ${mention(s.late)}.`,
    ]);
    assert.deepEqual(botTexts(left), [
      `This topic was moved to #**${pub.name}>${s.t}** by ${mention(s.late)}.`,
    ]);
    const [ev] = eventsOf("update_message");
    assert.ok(ev);
    assert.deepEqual(ev.event.message_ids, s.fresh);
    // A subscriber who received none of the moved messages hears nothing.
    assert.ok(!ev.userIds.includes(s.later.userId));
    assert.ok(ev.userIds.includes(s.early.userId));
    // An inaccessible message cannot be the anchor either.
    err(
      await api(
        "PATCH",
        `/messages/${s.old[0]}`,
        { stream_id: pub.id, propagate_mode: "change_all" },
        s.late,
      ),
      "Invalid message(s)",
    );
    assert.deepEqual(ids(await inTopic(s.ch.id, s.t)), s.old);
  });

  test("change_later skips messages sent while the mover was away; the notice counts the moved ones", async () => {
    const s = await protectedTopic();
    await unsubscribe(s.ch.name, s.late);
    const away = await send(s.ch.id, s.t, "sent while away");
    await subscribe(s.ch.name, s.late);
    const back = await send(s.ch.id, s.t, "after return");
    const pub = await channel([chat.owner.userId, s.late.userId]);
    chat.events.length = 0;
    ok(
      await api(
        "PATCH",
        `/messages/${s.fresh[1]}`,
        { stream_id: pub.id, propagate_mode: "change_later", send_notification_to_old_thread: true },
        s.late,
      ),
    );
    assert.deepEqual(ids(await inTopic(s.ch.id, s.t)), [...s.old, s.fresh[0]!, away]);
    const moved = await inTopic(pub.id, s.t);
    assert.deepEqual(ids(moved), [s.fresh[1]!, back]);
    assert.deepEqual(botTexts(moved), [
      `2 messages were moved here from #**${s.ch.name}>${s.t}** by ${mention(s.late)}.`,
    ]);
    assert.deepEqual(botTexts(await inTopic(s.ch.id, s.t)), [
      `2 messages were moved from this topic to #**${pub.name}>${s.t}** by ${mention(s.late)}.`,
    ]);
    const [ev] = eventsOf("update_message");
    assert.deepEqual(ev!.event.message_ids, [s.fresh[1]!, back]);
  });

  test("change_later from the oldest accessible message is a whole-topic move for the mover", async () => {
    const s = await protectedTopic();
    const pub = await channel([chat.owner.userId, s.late.userId]);
    ok(
      await api(
        "PATCH",
        `/messages/${s.fresh[0]}`,
        { stream_id: pub.id, propagate_mode: "change_later", send_notification_to_old_thread: true },
        s.late,
      ),
    );
    assert.deepEqual(ids(await inTopic(s.ch.id, s.t)), s.old);
    // The wording must not reveal that older, inaccessible messages stayed.
    assert.deepEqual(botTexts(await inTopic(pub.id, s.t)), [
      `This topic was moved here from #**${s.ch.name}>${s.t}** by ${mention(s.late)}.`,
    ]);
    assert.deepEqual(botTexts(await inTopic(s.ch.id, s.t)), [
      `This topic was moved to #**${pub.name}>${s.t}** by ${mention(s.late)}.`,
    ]);
  });

  test("into a protected channel: older target messages the mover cannot read do not show in the notice", async () => {
    const s = await protectedTopic();
    const pub = await channel([chat.owner.userId, s.late.userId]);
    const mine = await send(pub.id, s.t, "to be moved", s.late);
    chat.events.length = 0;
    ok(await api("PATCH", `/messages/${mine}`, { stream_id: s.ch.id, propagate_mode: "change_all" }, s.late));
    const there = await inTopic(s.ch.id, s.t);
    assert.deepEqual(ids(there), [...s.old, ...s.fresh, mine]);
    // The late subscriber's view of the target topic already had messages.
    assert.deepEqual(botTexts(there), [
      `[A message](http://localhost/#narrow/channel/${s.ch.id}-${s.ch.name.replace(/ /g, "-")}/topic/${s.t.replace(/ /g, ".20")}/near/${mine}) was moved here from #**${pub.name}>${s.t}** by ${mention(s.late)}.`,
    ]);
    // Into a fresh topic whose only messages are older than the mover's subscription.
    const hidden = uniq("hidden");
    await send(s.ch.id, hidden, "before anyone late", s.early);
    // `later` joined before that message; a newer user joins now.
    const newest = await chat.newUser();
    await subscribe(s.ch.name, newest);
    await subscribe(pub.name, newest);
    const two = [await send(pub.id, hidden, "a", newest), await send(pub.id, hidden, "b", newest)];
    ok(
      await api("PATCH", `/messages/${two[0]}`, { stream_id: s.ch.id, propagate_mode: "change_all" }, newest),
    );
    const target = await inTopic(s.ch.id, hidden);
    assert.equal(ids(target).length, 3);
    assert.deepEqual(botTexts(target), [
      `This topic was moved here from #**${pub.name}>${hidden}** by ${mention(newest)}.`,
    ]);
  });

  test("out of a protected channel into a private one: only holders of the moved messages hear of it", async () => {
    const s = await protectedTopic();
    const priv = await channel([chat.owner.userId, s.early.userId], { invite_only: true });
    ok(
      await api(
        "PATCH",
        `/messages/${s.old[0]}`,
        { stream_id: priv.id, propagate_mode: "change_later", send_notification_to_new_thread: false },
        s.early,
      ),
    );
    // The early subscriber may move everything; the late ones lose what they had.
    assert.deepEqual(ids(await inTopic(priv.id, s.t)), [...s.old, ...s.fresh]);
    const del = eventsOf("delete_message");
    assert.equal(del.length, 1);
    assert.deepEqual(del[0]!.userIds, [s.late.userId]);
    const upd = eventsOf("update_message")[0]!;
    assert.ok(!upd.userIds.includes(s.later.userId));
    assert.ok(!upd.userIds.includes(s.late.userId));
  });
});

describe("topic edits within a protected channel", () => {
  test("rename with change_all by a late subscriber leaves the older messages in their topic", async () => {
    const s = await protectedTopic();
    const to = uniq("renamed");
    ok(
      await api(
        "PATCH",
        `/messages/${s.fresh[1]}`,
        { topic: to, propagate_mode: "change_all", send_notification_to_old_thread: true },
        s.late,
      ),
    );
    const left = await inTopic(s.ch.id, s.t);
    assert.deepEqual(ids(left), s.old);
    for (const m of left.filter((x) => x.sender_email !== BOT_EMAIL)) assert.equal(m.edit_history, undefined);
    const renamed = await inTopic(s.ch.id, to);
    assert.deepEqual(ids(renamed), s.fresh);
    assert.deepEqual(botTexts(renamed), [
      `This topic was moved here from #**${s.ch.name}>${s.t}** by ${mention(s.late)}.`,
    ]);
    assert.deepEqual(botTexts(left), [
      `This topic was moved to #**${s.ch.name}>${to}** by ${mention(s.late)}.`,
    ]);
    const ev = eventsOf("update_message")[0]!;
    assert.deepEqual(ev.event.message_ids, s.fresh);
    assert.ok(!ev.userIds.includes(s.later.userId));
    assert.ok(ev.userIds.includes(s.early.userId));
    // The late subscriber's topic list and view show only their part moved.
    assert.deepEqual(ids(await inTopic(s.ch.id, to, s.late)), s.fresh);
    assert.deepEqual(ids(await inTopic(s.ch.id, s.t, s.late)), []);
  });

  test("rename with change_later into a topic with only inaccessible messages reads as a whole-topic move", async () => {
    const s = await protectedTopic();
    const existing = uniq("existing");
    await send(s.ch.id, existing, "older, in the target topic", s.early);
    const newest = await chat.newUser();
    await subscribe(s.ch.name, newest);
    const mine = await send(s.ch.id, s.t, "mine", newest);
    chat.events.length = 0;
    ok(await api("PATCH", `/messages/${mine}`, { topic: existing, propagate_mode: "change_later" }, newest));
    assert.deepEqual(ids(await inTopic(s.ch.id, s.t)), [...s.old, ...s.fresh]);
    const there = await inTopic(s.ch.id, existing);
    assert.equal(ids(there).length, 2);
    assert.deepEqual(botTexts(there), [
      `This topic was moved here from #**${s.ch.name}>${s.t}** by ${mention(newest)}.`,
    ]);
    assert.deepEqual(eventsOf("update_message")[0]!.event.message_ids, [mine]);
  });

  test("resolve and unresolve by a late subscriber change only their messages", async () => {
    const s = await protectedTopic();
    const resolved = `✔ ${s.t}`;
    ok(
      await api(
        "PATCH",
        `/messages/${s.fresh[0]}`,
        { topic: resolved, propagate_mode: "change_all" },
        s.late,
      ),
    );
    assert.deepEqual(ids(await inTopic(s.ch.id, s.t)), s.old);
    assert.deepEqual(ids(await inTopic(s.ch.id, resolved)), s.fresh);
    assert.deepEqual(eventsOf("update_message")[0]!.event.message_ids, s.fresh);
    // Unresolving an accessible message with change_all still leaves the older ones be.
    chat.events.length = 0;
    ok(await api("PATCH", `/messages/${s.fresh[1]}`, { topic: s.t, propagate_mode: "change_all" }, s.late));
    assert.deepEqual(ids(await inTopic(s.ch.id, s.t)), [...s.old, ...s.fresh]);
    assert.deepEqual(eventsOf("update_message")[0]!.event.message_ids, s.fresh);
    for (const m of await inTopic(s.ch.id, s.t))
      if (s.old.includes(m.id as number)) assert.equal(m.edit_history, undefined);
  });
});

describe("flags and single-message events", () => {
  test("flags by narrow touch only the late subscriber's messages", async () => {
    const s = await protectedTopic();
    for (const flag of ["starred", "read"]) {
      const op = flag === "read" ? "remove" : "add";
      const r = ok(
        await api(
          "POST",
          "/messages/flags/narrow",
          {
            anchor: "oldest",
            num_before: 0,
            num_after: 100,
            narrow: [
              ["channel", s.ch.id],
              ["topic", s.t],
            ],
            op,
            flag,
          },
          s.late,
        ),
      );
      assert.equal(r.processed_count, 2);
      assert.equal(r.first_processed_id, s.fresh[0]);
      assert.equal(r.last_processed_id, s.fresh[1]);
    }
    // No historical rows were made for the older messages.
    err(await api("GET", `/messages/${s.old[0]}`, {}, s.late), "Invalid message(s)");
    err(
      await api("POST", "/messages/flags", { messages: [s.old[0]], op: "add", flag: "starred" }, s.late),
      "Invalid message(s)",
    );
    const starred = ok(
      await api(
        "GET",
        "/messages",
        { anchor: "newest", num_before: 100, narrow: [["is", "starred"]] },
        s.late,
      ),
    );
    assert.deepEqual(
      (starred.messages as Obj[]).map((m) => m.id),
      s.fresh,
    );
  });

  test("edits, reactions and deletion of an older message reach only those who received it", async () => {
    const s = await protectedTopic();
    ok(await api("PATCH", `/messages/${s.old[0]}`, { content: "old secret, edited" }));
    const upd = eventsOf("update_message")[0]!;
    assert.equal(upd.event.content, "old secret, edited");
    assert.deepEqual(upd.userIds.sort(), [chat.owner.userId, s.early.userId].sort());
    ok(await api("POST", `/messages/${s.old[0]}/reactions`, { emoji_name: "smile" }));
    assert.deepEqual(eventsOf("reaction")[0]!.userIds.sort(), [chat.owner.userId, s.early.userId].sort());
    ok(await api("DELETE", `/messages/${s.old[0]}`));
    assert.deepEqual(
      eventsOf("delete_message")[0]!.userIds.sort(),
      [chat.owner.userId, s.early.userId].sort(),
    );
    // A newer message's changes still reach every subscriber who has it.
    ok(await api("POST", `/messages/${s.fresh[1]}/reactions`, { emoji_name: "smile" }));
    const r = eventsOf("reaction")[1]!;
    assert.ok(r.userIds.includes(s.late.userId));
    assert.ok(!r.userIds.includes(s.later.userId));
  });
});
