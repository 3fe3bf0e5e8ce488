// Feature levels of the realm's message editing, deletion and moving
// settings: PATCH /realm sets them (100, 138, 150, 162), the edit, move and
// delete paths enforce them (100, 138, 162, 172), topic moves and resolves
// follow the realm's groups (316, 367), and a description change is a
// realm/update_dict (464).
//
// Nothing here can set a message's send time, so the time limits are set
// to one second and the checks wait out Zulip's 20 s grace period once:
// the old messages are sent in `before`, the checks that need them old run
// last and wait only for what the earlier tests did not already use up.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { startEmbedded, type EmbeddedHandle } from "./support/embedded.ts";
import type { ApiResult, Creds } from "./support/embedded.ts";
import { requireBinaries } from "./support/services.ts";
import { startChat, type Chat } from "./support/chat.ts";
import { typedCall } from "../actors/protocol.ts";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  type ApiHolder,
  type Ev,
  type Member,
} from "./support/zulip-asserts.ts";

let srv: EmbeddedHandle;
let admin: Member;
let moderator: Member;
let member: Member;
let other: Member;
const CH = "rlim main";
const CH2 = "rlim other";
/** Messages of `member` sent in `before`, and when (ms). */
let oldEdit: number;
let oldDelete: number;
let oldTopicMsg: number;
let oldMoveMsg: number;
let sentAt: number;

async function send(h: ApiHolder, auth: Creds, topic: string, content: string, to = CH): Promise<number> {
  const r = await h.api("POST", "/messages", { type: "stream", to, topic, content }, auth);
  assertSuccess(r);
  return r.body.id as number;
}

async function realmState(h: ApiHolder, auth?: Creds): Promise<Record<string, unknown>> {
  const r = await h.api("POST", "/register", { fetch_event_types: ["realm"] }, auth);
  assertSuccess(r);
  return r.body;
}

async function patchRealm(params: Record<string, unknown>, auth?: Creds): Promise<ApiResult> {
  return await srv.api("PATCH", "/realm", params, auth);
}

async function systemGroupId(name: string): Promise<number> {
  const r = await srv.api("GET", "/user_groups");
  assertSuccess(r);
  return (r.body.user_groups as Ev[]).find((g) => g.name === name).id as number;
}

/** Wait until `ms` have passed since the old messages were sent. */
async function ageOldMessages(ms: number): Promise<void> {
  const left = sentAt + ms - Date.now();
  if (left > 0) await new Promise((r) => setTimeout(r, left));
}

before(async () => {
  srv = await startEmbedded();
  admin = await newUser(srv, 200);
  moderator = await newUser(srv, 300);
  member = await newUser(srv, 400);
  other = await newUser(srv, 400);
  for (const name of [CH, CH2]) {
    const subscriptions = JSON.stringify([{ name }]);
    assertSuccess(await srv.api("POST", "/users/me/subscriptions", { subscriptions }));
    const principals = JSON.stringify([admin, moderator, member, other].map((u) => u.userId));
    assertSuccess(await srv.api("POST", "/users/me/subscriptions", { subscriptions, principals }));
  }
  sentAt = Date.now();
  oldEdit = await send(srv, member, "edits", "old edit");
  oldDelete = await send(srv, member, "deletes", "old delete");
  oldTopicMsg = await send(srv, member, "old topic", "old one");
  oldMoveMsg = await send(srv, member, "to move", "old move");
});

after(async () => {
  await srv?.stop();
});

describe("FL 464: the realm description", () => {
  test("FL 464: a description change is sent as realm/update_dict with its rendering", async () => {
    const q = await openQueue(srv, member, ["realm"]);
    const r = await patchRealm({ description: "Hello *there*" });
    assertSuccess(r);
    const evs = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.equal(evs.length, 1);
    const e = evs[0];
    assert.equal(e.type, "realm");
    assert.equal(e.op, "update_dict");
    assert.equal(e.property, "default");
    assert.equal(e.data.description, "Hello *there*");
    assert.equal(typeof e.data.rendered_description, "string");
    assert.match(e.data.rendered_description, /^<p>.*<\/p>$/s);
    assert.equal((await realmState(srv)).realm_description, "Hello *there*");
  });
});

describe("FL 138, 150: message editing settings", () => {
  test("FL 138: register reports Zulip's defaults and null once the edit limit is unlimited", async () => {
    let s = await realmState(srv, member);
    assert.equal(s.realm_allow_message_editing, true);
    assert.equal(s.realm_message_content_edit_limit_seconds, 600);
    const r = await patchRealm({ message_content_edit_limit_seconds: JSON.stringify("unlimited") });
    assertSuccess(r);
    assert.equal(r.body.message_content_edit_limit_seconds, null);
    s = await realmState(srv, member);
    assert.equal(s.realm_message_content_edit_limit_seconds, null);
    // A bare word is taken as the string too.
    assertSuccess(await patchRealm({ message_content_edit_limit_seconds: 900 }));
    assertSuccess(await patchRealm({ message_content_edit_limit_seconds: "unlimited" }));
    assert.equal((await realmState(srv)).realm_message_content_edit_limit_seconds, null);
  });

  test("FL 150: one update_dict event per changed edit setting; the reply lists only what changed", async () => {
    const q = await openQueue(srv, member, ["realm"]);
    const r = await patchRealm({ allow_message_editing: false, message_content_edit_limit_seconds: 1200 });
    assertSuccess(r);
    assert.equal(r.body.allow_message_editing, false);
    assert.equal(r.body.message_content_edit_limit_seconds, 1200);
    const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.deepEqual(
      evs.map((e) => [e.op, e.property, JSON.stringify(e.data)]).sort(),
      [
        ["update_dict", "default", JSON.stringify({ allow_message_editing: false })],
        ["update_dict", "default", JSON.stringify({ message_content_edit_limit_seconds: 1200 })],
      ].sort(),
    );
    // Unchanged values: nothing echoed, no event.
    const again = await patchRealm({
      allow_message_editing: false,
      message_content_edit_limit_seconds: 1200,
    });
    assertSuccess(again);
    assert.equal(again.body.allow_message_editing, undefined);
    assert.equal(again.body.message_content_edit_limit_seconds, undefined);
    await new Promise((res) => setTimeout(res, 100));
    assert.equal((await eventsUntil(srv, q, () => true)).length, 0);
    const s = await realmState(srv);
    assert.equal(s.realm_allow_message_editing, false);
    assert.equal(s.realm_message_content_edit_limit_seconds, 1200);
  });

  test("FL 138: with editing turned off nobody edits content, and topics stay movable", async () => {
    const id = await send(srv, member, "off", "mine");
    assertError(
      await srv.api("PATCH", `/messages/${id}`, { content: "changed" }, member),
      "Your organization has turned off message editing",
    );
    assertError(
      await srv.api("PATCH", `/messages/${id}`, { content: "changed" }),
      "Your organization has turned off message editing",
    );
    // Nor says it is editing (POST /messages/{id}/typing checks the same rules).
    assertError(
      await srv.api("POST", `/messages/${id}/typing`, { op: "start" }, member),
      "Your organization has turned off message editing",
    );
    assertSuccess(await srv.api("PATCH", `/messages/${id}`, { topic: "off moved" }, member));
    assertSuccess(await patchRealm({ allow_message_editing: true }));
    assertSuccess(await srv.api("POST", `/messages/${id}/typing`, { op: "start" }, member));
    assertSuccess(await srv.api("PATCH", `/messages/${id}`, { content: "changed" }, member));
  });

  test("FL 138: bad values, members, and a wrong type are refused and change nothing", async () => {
    const before = await realmState(srv);
    for (const bad of [0, -5, 1.5, "soon", 2 ** 40]) {
      const r = await patchRealm({ message_content_edit_limit_seconds: JSON.stringify(bad) });
      assertError(
        r,
        `Bad value for 'message_content_edit_limit_seconds': ${bad}`,
        "REQUEST_VARIABLE_INVALID",
      );
    }
    assertError(
      await patchRealm({ allow_message_editing: "maybe" }),
      "allow_message_editing is not valid JSON",
    );
    assertError(
      await patchRealm({ message_content_edit_limit_seconds: 30 }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    // A bad value anywhere changes none of the others.
    assertError(
      await patchRealm({ allow_message_editing: false, message_content_delete_limit_seconds: 0 }),
      "Bad value for 'message_content_delete_limit_seconds': 0",
      "REQUEST_VARIABLE_INVALID",
    );
    const unknown = await patchRealm({ __proto__x: 1, ["__proto__"]: 5 });
    assertSuccess(unknown);
    const after = await realmState(srv);
    for (const k of [
      "realm_allow_message_editing",
      "realm_message_content_edit_limit_seconds",
      "realm_message_content_delete_limit_seconds",
    ])
      assert.deepEqual(after[k], before[k], k);
  });
});

describe("FL 100, 162: deletion and move limits are settable", () => {
  test("FL 100: message_content_delete_limit_seconds is set, evented and reported (null: none)", async () => {
    assert.equal((await realmState(srv)).realm_message_content_delete_limit_seconds, null);
    const q = await openQueue(srv, member, ["realm"]);
    const r = await patchRealm({ message_content_delete_limit_seconds: 1 });
    assertSuccess(r);
    assert.equal(r.body.message_content_delete_limit_seconds, 1);
    const evs = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.deepEqual(
      evs.map((e) => [e.type, e.op, e.property, e.value]),
      [["realm", "update", "message_content_delete_limit_seconds", 1]],
    );
    assert.equal((await realmState(srv, member)).realm_message_content_delete_limit_seconds, 1);
  });

  test("FL 162: PATCH /realm sets both move limits", async () => {
    const q = await openQueue(srv, member, ["realm"]);
    const r = await patchRealm({
      move_messages_within_stream_limit_seconds: 1,
      move_messages_between_streams_limit_seconds: JSON.stringify("unlimited"),
    });
    assertSuccess(r);
    // Unlimited was not the old value (a week), so both changed.
    assert.equal(r.body.move_messages_within_stream_limit_seconds, 1);
    assert.equal(r.body.move_messages_between_streams_limit_seconds, null);
    const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.deepEqual(evs.map((e) => [e.op, e.property, e.value]).sort(), [
      ["update", "move_messages_between_streams_limit_seconds", null],
      ["update", "move_messages_within_stream_limit_seconds", 1],
    ]);
    const s = await realmState(srv);
    assert.equal(s.realm_move_messages_within_stream_limit_seconds, 1);
    assert.equal(s.realm_move_messages_between_streams_limit_seconds, null);
    assertSuccess(await patchRealm({ move_messages_between_streams_limit_seconds: 1 }));
  });
});

describe("FL 316, 367: topic moves and resolves follow the realm's groups", () => {
  test("FL 316: can_move_messages_between_topics_group decides who renames topics", async () => {
    const admins = await systemGroupId("role:administrators");
    const everyone = await systemGroupId("role:everyone");
    assertSuccess(
      await patchRealm({ can_move_messages_between_topics_group: JSON.stringify({ new: admins }) }),
    );
    const id = await send(srv, member, "group topic", "x");
    assertError(
      await srv.api("PATCH", `/messages/${id}`, { topic: "renamed" }, member),
      "You don't have permission to edit this message",
    );
    // Resolving is another permission (can_resolve_topics_group, everyone by default).
    assertSuccess(await srv.api("PATCH", `/messages/${id}`, { topic: "✔ group topic" }, member));
    assertSuccess(await srv.api("PATCH", `/messages/${id}`, { topic: "renamed" }, admin));
    const got = await srv.api("GET", `/messages/${id}`);
    assert.equal(got.body.message.subject, "renamed");
    assertSuccess(
      await patchRealm({ can_move_messages_between_topics_group: JSON.stringify({ new: everyone }) }),
    );
    assertSuccess(await srv.api("PATCH", `/messages/${id}`, { topic: "renamed again" }, member));
  });

  test("FL 367: can_resolve_topics_group decides who resolves and unresolves", async () => {
    const admins = await systemGroupId("role:administrators");
    const everyone = await systemGroupId("role:everyone");
    const id = await send(srv, member, "to resolve", "x");
    assertSuccess(await patchRealm({ can_resolve_topics_group: JSON.stringify({ new: admins }) }));
    assertError(
      await srv.api("PATCH", `/messages/${id}`, { topic: "✔ to resolve" }, member),
      "You don't have permission to resolve topics in this channel.",
    );
    // An ordinary rename is still the other permission's.
    assertSuccess(await srv.api("PATCH", `/messages/${id}`, { topic: "to resolve 2" }, member));
    assertSuccess(await srv.api("PATCH", `/messages/${id}`, { topic: "✔ to resolve 2" }, admin));
    assertError(
      await srv.api("PATCH", `/messages/${id}`, { topic: "to resolve 2" }, member),
      "You don't have permission to resolve topics in this channel.",
    );
    assertSuccess(await patchRealm({ can_resolve_topics_group: JSON.stringify({ new: everyone }) }));
    assertSuccess(await srv.api("PATCH", `/messages/${id}`, { topic: "to resolve 2" }, member));
  });
});

describe("FL 100, 138, 162, 172: the limits are enforced", () => {
  test("FL 172: a late change_all move by a member fails with MOVE_MESSAGES_TIME_LIMIT_EXCEEDED", async () => {
    await ageOldMessages(22_000);
    // Limits of 1 s (within and between channels) were set above.
    const fresh = await send(srv, member, "old topic", "new one");
    const r = await srv.api(
      "PATCH",
      `/messages/${fresh}`,
      { topic: "new topic", propagate_mode: "change_all" },
      member,
    );
    assertError(
      r,
      "You only have permission to move the 1/2 most recent messages in this topic.",
      "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
    );
    assert.equal(r.body.first_message_id_allowed_to_move, fresh);
    assert.equal(r.body.total_messages_in_topic, 2);
    assert.equal(r.body.total_messages_allowed_to_move, 1);
    // Across channels too, and nothing moved.
    const across = await srv.api(
      "PATCH",
      `/messages/${fresh}`,
      { stream_id: await channelId(CH2), propagate_mode: "change_all" },
      member,
    );
    assertError(
      across,
      "You only have permission to move the 1/2 most recent messages in this topic.",
      "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
    );
    const still = await srv.api("GET", `/messages/${oldTopicMsg}`);
    assert.equal(still.body.message.subject, "old topic");
    // change_later from the new message takes only what is allowed.
    assertSuccess(
      await srv.api(
        "PATCH",
        `/messages/${fresh}`,
        { topic: "new topic", propagate_mode: "change_later" },
        member,
      ),
    );
    assert.equal((await srv.api("GET", `/messages/${oldTopicMsg}`)).body.message.subject, "old topic");
    // Moderators are not limited.
    assertSuccess(
      await srv.api(
        "PATCH",
        `/messages/${oldTopicMsg}`,
        { topic: "new topic", propagate_mode: "change_all" },
        moderator,
      ),
    );
  });

  test("FL 162: a member may not move an old message's topic or channel past the limits", async () => {
    await ageOldMessages(22_000);
    assertError(
      await srv.api("PATCH", `/messages/${oldMoveMsg}`, { topic: "moved late" }, member),
      "The time limit for editing this message's topic has passed.",
    );
    assertError(
      await srv.api("PATCH", `/messages/${oldMoveMsg}`, { stream_id: await channelId(CH2) }, member),
      "The time limit for editing this message's channel has passed",
    );
    // Resolving is not a move for the time limit.
    assertSuccess(await srv.api("PATCH", `/messages/${oldMoveMsg}`, { topic: "✔ to move" }, member));
    // Unlimited lifts the limits.
    assertSuccess(
      await patchRealm({
        move_messages_within_stream_limit_seconds: "unlimited",
        move_messages_between_streams_limit_seconds: "unlimited",
      }),
    );
    assertSuccess(await srv.api("PATCH", `/messages/${oldMoveMsg}`, { topic: "moved late" }, member));
    assertSuccess(
      await srv.api("PATCH", `/messages/${oldMoveMsg}`, { stream_id: await channelId(CH2) }, member),
    );
  });

  test("FL 138: the content edit limit is the realm's", async () => {
    await ageOldMessages(22_000);
    assertSuccess(await patchRealm({ message_content_edit_limit_seconds: 1 }));
    assertError(
      await srv.api("PATCH", `/messages/${oldEdit}`, { content: "too late" }, member),
      "The time limit for editing this message has passed",
    );
    assertError(
      await srv.api("POST", `/messages/${oldEdit}/typing`, { op: "start" }, member),
      "The time limit for editing this message has passed",
    );
    assertSuccess(await patchRealm({ message_content_edit_limit_seconds: "unlimited" }));
    assertSuccess(await srv.api("POST", `/messages/${oldEdit}/typing`, { op: "start" }, member));
    assertSuccess(await srv.api("PATCH", `/messages/${oldEdit}`, { content: "never too late" }, member));
  });

  test("FL 100: deleting one's own message only within the delete limit; can_delete_any_message_group is not limited", async () => {
    await ageOldMessages(2_000);
    assertError(
      await srv.api("DELETE", `/messages/${oldDelete}`, {}, member),
      "The time limit for deleting this message has passed",
    );
    // Someone else's message: the permission error comes first.
    assertError(
      await srv.api("DELETE", `/messages/${oldDelete}`, {}, other),
      "You don't have permission to delete this message",
    );
    const fresh = await send(srv, member, "deletes", "fresh");
    await new Promise((r) => setTimeout(r, 2100));
    assertError(
      await srv.api("DELETE", `/messages/${fresh}`, {}, member),
      "The time limit for deleting this message has passed",
    );
    assertSuccess(await srv.api("DELETE", `/messages/${oldDelete}`, {}, admin));
    assertSuccess(await patchRealm({ message_content_delete_limit_seconds: "unlimited" }));
    assertSuccess(await srv.api("DELETE", `/messages/${fresh}`, {}, member));
  });
});

async function channelId(name: string): Promise<number> {
  const r = await srv.api("GET", "/get_stream_id", { stream: name });
  assertSuccess(r);
  return r.body.stream_id as number;
}

const skip = requireBinaries("nats-server", "redis-server");

describe("FL 138, 150, 464: cluster", { skip }, () => {
  let c: TestCluster;
  before(async () => {
    if (!skip) c = await startCluster();
  });
  after(async () => {
    await c?.stop();
  });

  test("FL 138: PATCH /realm turns editing off through the gateway and the nodes enforce it", async () => {
    const u = await newUser(c, 400);
    assertSuccess(
      await c.api("POST", "/users/me/subscriptions", {
        subscriptions: JSON.stringify([{ name: "rlim cluster" }]),
        principals: JSON.stringify([u.userId]),
      }),
    );
    const id = await send(c, u, "t", "hello", "rlim cluster");
    const q = await openQueue(c, u, ["realm"]);
    const r = await c.api("PATCH", "/realm", {
      allow_message_editing: false,
      message_content_edit_limit_seconds: "unlimited",
      description: "Cluster *org*",
    });
    assertSuccess(r);
    assert.equal(r.body.allow_message_editing, false);
    assert.equal(r.body.message_content_edit_limit_seconds, null);
    const evs = await eventsUntil(c, q, (e) => e.length >= 3);
    assert.deepEqual(evs.map((e) => Object.keys(e.data ?? {}).join(",")).sort(), [
      "allow_message_editing",
      "description,rendered_description",
      "message_content_edit_limit_seconds",
    ]);
    assert.equal((await realmState(c, u)).realm_message_content_edit_limit_seconds, null);
    assertError(
      await c.api("PATCH", `/messages/${id}`, { content: "no" }, u),
      "Your organization has turned off message editing",
    );
    // FL 91: the retention setting through the gateway (the sweep itself is the embedded case's).
    assertError(
      await c.api("PATCH", "/realm", { message_retention_days: 3 }, u),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertSuccess(await c.api("PATCH", "/realm", { message_retention_days: 3 }));
    assert.equal((await realmState(c, u)).realm_message_retention_days, 3);
    // Nothing is three days old: the message stays.
    assert.equal((await c.api("GET", `/messages/${id}`, {}, u)).status, 200);
  });
});

describe("FL 91: the realm's message retention", () => {
  let chat: Chat;
  before(async () => {
    chat = await startChat();
  });
  after(async () => {
    await chat?.stop();
  });

  test("FL 91: owners set message_retention_days; the sweep deletes expired channel messages with delete_message", async () => {
    const { api } = chat;
    const admin = await chat.newUser(200);
    const member = await chat.newUser(400);
    assertError(
      await api("PATCH", "/realm", { message_retention_days: 1 }, admin),
      "Must be an organization owner",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertError(
      await api("PATCH", "/realm", { message_retention_days: 0 }),
      "Bad value for 'message_retention_days': 0",
      "REQUEST_VARIABLE_INVALID",
    );
    // Unlimited is the default (-1): nothing changes.
    const same = await api("PATCH", "/realm", { message_retention_days: JSON.stringify("unlimited") });
    assertSuccess(same);
    assert.equal(same.body.message_retention_days, undefined);
    const q = await openQueue(chat, member, ["realm", "delete_message"]);
    const set = await api("PATCH", "/realm", { message_retention_days: 1 });
    assertSuccess(set);
    assert.equal(set.body.message_retention_days, 1);
    assert.equal((await realmState(chat, member)).realm_message_retention_days, 1);

    const create = async (name: string, extra: Record<string, unknown>) => {
      const r = await api("POST", "/channels/create", { name, subscribers: [member.userId], ...extra });
      assertSuccess(r);
      return r.body.id as number;
    };
    await create("ret realm", {});
    await create("ret forever", { message_retention_days: JSON.stringify("unlimited") });
    await create("ret five", { message_retention_days: 5 });
    const a1 = await send(chat, member, "t1", "a", "ret realm");
    const a2 = await send(chat, member, "t2", "b", "ret realm");
    const forever = await send(chat, member, "t", "c", "ret forever");
    const five = await send(chat, member, "t", "d", "ret five");
    const readable = async (id: number) => (await api("GET", `/messages/${id}`, {}, member)).status === 200;

    const { sweepRealmRetention } = await import("../actors/channel/retention.ts");
    const call = typedCall((ref, m, a) => chat.srv.node.call(ref, m, a));
    const realmId = chat.srv.bootstrapped!.realmId!;
    // Two days on: the realm's one day has passed, the channel's five have not.
    await sweepRealmRetention(call, realmId, Date.now() + 2 * 86400_000);
    assert.deepEqual(
      [await readable(a1), await readable(a2), await readable(forever), await readable(five)],
      [false, false, true, true],
    );
    const evs = await eventsUntil(chat, q, (e) => e.filter((x) => x.type === "delete_message").length >= 2);
    const deletes = evs.filter((x) => x.type === "delete_message");
    // Without bulk_message_deletion a queue gets one message_id per event.
    assert.deepEqual(deletes.map((e) => [e.message_ids ?? [e.message_id], e.topic]).sort(), [
      [[a1], "t1"],
      [[a2], "t2"],
    ]);
    assert.ok(
      evs.some((e) => e.type === "realm" && e.property === "message_retention_days" && e.value === 1),
    );
    // Six days on: the five-day channel's message goes too; forever stays. Again: nothing left.
    await sweepRealmRetention(call, realmId, Date.now() + 6 * 86400_000);
    await sweepRealmRetention(call, realmId, Date.now() + 6 * 86400_000);
    assert.deepEqual([await readable(forever), await readable(five)], [true, false]);
    // Unlimited again keeps everything.
    assertSuccess(await api("PATCH", "/realm", { message_retention_days: "unlimited" }));
    const kept = await send(chat, member, "t3", "e", "ret realm");
    await sweepRealmRetention(call, realmId, Date.now() + 30 * 86400_000);
    assert.equal(await readable(kept), true);
  });
});
