// Black-box regressions for the API changes of Zulip feature levels
// 201-372 that the audit (docs/feature-levels/201-372.md) found missing or
// wrong and fixed. Each describe names its feature level.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  openQueue,
  useEmbedded,
  WELCOME_BOT,
  type Creds,
  type Ev,
} from "./support/index.ts";

const srv = useEmbedded();

let seq = 0;
async function channel(params: Record<string, unknown> = {}): Promise<{ id: number; name: string }> {
  const name = `fl-${++seq}-${process.pid}`;
  const r = await srv.api("POST", "/channels/create", { name, subscribers: [srv.owner.userId], ...params });
  assertSuccess(r);
  return { id: r.body.id as number, name };
}

async function subscriberIds(streamId: number): Promise<number[]> {
  const r = await srv.api("GET", `/streams/${streamId}/members`);
  assertSuccess(r);
  return r.body.subscribers as number[];
}

describe("FL 208: principals that are unknown or deactivated", () => {
  test("subscribe and unsubscribe answer 400 No such user / User is deactivated, and change nothing", async () => {
    const ch = await channel();
    const gone = await newUser(srv);
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    const live = await newUser(srv);
    const before = await subscriberIds(ch.id);

    for (const principals of [[987654], ["nobody-here@example.com"], [live.userId, 987654]]) {
      assertError(
        await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: ch.name }], principals }),
        "No such user",
      );
      assertError(
        await srv.api("DELETE", "/users/me/subscriptions", { subscriptions: [ch.name], principals }),
        "No such user",
      );
    }
    for (const principals of [[gone.userId], [gone.email], [live.userId, gone.userId]]) {
      assertError(
        await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: ch.name }], principals }),
        "User is deactivated",
      );
      assertError(
        await srv.api("DELETE", "/users/me/subscriptions", { subscriptions: [ch.name], principals }),
        "User is deactivated",
      );
    }
    assert.deepEqual(await subscriberIds(ch.id), before);

    // A known, active principal still works.
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: ch.name }],
        principals: [live.userId],
      }),
    );
    assert.ok((await subscriberIds(ch.id)).includes(live.userId));
  });
});

describe("FL 205: a role change tells the user which channels came into or went out of view", () => {
  test("guest -> member gets stream create + peer_add for public channels; back to guest gets stream delete", async () => {
    const pub = await channel();
    const priv = await channel({ invite_only: true });
    const pub2 = await channel();
    const user = await newUser(srv, 600);
    const q = await openQueue(srv, user, ["stream", "subscription"]);

    assertSuccess(await srv.api("PATCH", `/users/${user.userId}`, { role: 400 }));
    let evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "stream" && x.op === "create"));
    const created = evs.find((x) => x.type === "stream" && x.op === "create");
    const ids = (created.streams as { stream_id: number }[]).map((s) => s.stream_id);
    assert.ok(ids.includes(pub.id) && ids.includes(pub2.id), JSON.stringify(ids));
    assert.ok(!ids.includes(priv.id), "a member does not see an unsubscribed private channel");
    const peer = evs.find(
      (x) => x.type === "subscription" && x.op === "peer_add" && x.stream_ids[0] === pub.id,
    );
    assert.ok(peer, JSON.stringify(evs));
    assert.deepEqual(peer.user_ids, [srv.owner.userId]);

    // Member -> administrator: the private channel comes into view.
    assertSuccess(await srv.api("PATCH", `/users/${user.userId}`, { role: 200 }));
    evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "stream" && x.op === "create"));
    const adminIds = evs
      .filter((x) => x.type === "stream" && x.op === "create")
      .flatMap((x) => (x.streams as { stream_id: number }[]).map((s) => s.stream_id));
    assert.deepEqual(adminIds, [priv.id]);

    // Administrator -> guest: every channel the guest is not subscribed to goes.
    assertSuccess(await srv.api("PATCH", `/users/${user.userId}`, { role: 600 }));
    evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "stream" && x.op === "delete"));
    const deleted = evs.find((x) => x.type === "stream" && x.op === "delete");
    for (const id of [pub.id, priv.id, pub2.id]) assert.ok(deleted.stream_ids.includes(id));
    assert.deepEqual(
      deleted.streams,
      (deleted.stream_ids as number[]).map((id) => ({ stream_id: id })),
    );

    // A change that changes nothing visible sends nothing.
    const member = await newUser(srv, 400);
    const q2 = await openQueue(srv, member, ["stream", "subscription"]);
    assertSuccess(await srv.api("PATCH", `/users/${member.userId}`, { role: 300 }));
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(await drain(srv, q2), []);
  });

  test("a channel the user is subscribed to stays in view", async () => {
    const ch = await channel();
    const user = await newUser(srv, 400);
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: ch.name }] }, user),
    );
    const q = await openQueue(srv, user, ["stream"]);
    assertSuccess(await srv.api("PATCH", `/users/${user.userId}`, { role: 600 }));
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.op === "delete"));
    const deleted = evs.find((x) => x.op === "delete");
    assert.ok(deleted, "other public channels leave the guest's view");
    assert.ok(!deleted.stream_ids.includes(ch.id), "a subscribed channel stays in view");
  });
});

describe("FL 213: unread_msgs count and mentions leave out muted conversations", () => {
  test("muted channel (unless the topic is unmuted or followed) and muted topic", async () => {
    const user = await newUser(srv, 400, `Unread Reader ${process.pid}`);
    // A mention would follow the topic (FL 235) and so unmute it: not here.
    assertSuccess(
      await srv.api("PATCH", "/settings", { automatically_follow_topics_where_mentioned: false }, user),
    );
    const mutedCh = await channel({ subscribers: [srv.owner.userId, user.userId] });
    const plainCh = await channel({ subscribers: [srv.owner.userId, user.userId] });
    assertSuccess(
      await srv.api(
        "POST",
        "/users/me/subscriptions/properties",
        { subscription_data: [{ stream_id: mutedCh.id, property: "is_muted", value: true }] },
        user,
      ),
    );
    const policy = async (streamId: number, topic: string, visibility_policy: number) =>
      assertSuccess(
        await srv.api("POST", "/user_topics", { stream_id: streamId, topic, visibility_policy }, user),
      );
    await policy(mutedCh.id, "Followed Here", 3);
    await policy(mutedCh.id, "unmuted here", 2);
    await policy(plainCh.id, "muted here", 1);

    const send = async (streamId: number, topic: string, content: string): Promise<number> => {
      const r = await srv.api("POST", "/messages", { type: "stream", to: streamId, topic, content });
      assertSuccess(r);
      return r.body.id as number;
    };
    const quiet = await send(mutedCh.id, "plain", "in a muted channel");
    const quietWildcard = await send(mutedCh.id, "plain", "@**all** wildcard in a muted channel");
    const quietDirect = await send(mutedCh.id, "plain", `@**Unread Reader ${process.pid}** direct`);
    const followed = await send(mutedCh.id, "followed here", "topic followed (other case)");
    const unmuted = await send(mutedCh.id, "unmuted here", "topic unmuted");
    const mutedTopic = await send(plainCh.id, "muted here", "@**all** in a muted topic");
    const loud = await send(plainCh.id, "normal", "@**all** wildcard where it counts");
    const dm = await srv.api("POST", "/messages", { type: "direct", to: [user.userId], content: "hi" });
    assertSuccess(dm);

    const r = await srv.api("POST", "/register", { fetch_event_types: ["message"] }, user);
    assertSuccess(r);
    const unread = r.body.unread_msgs;
    // Every unread message is listed, muted or not.
    const listed = (unread.streams as { unread_message_ids: number[] }[]).flatMap(
      (s) => s.unread_message_ids,
    );
    for (const id of [quiet, quietWildcard, quietDirect, followed, unmuted, mutedTopic, loud])
      assert.ok(listed.includes(id), `message ${id} listed`);
    // count: followed, unmuted, loud and the DM (and Welcome Bot's greeting, when it has arrived).
    const greeting = (
      unread.pms as { other_user_id?: number; sender_id?: number; unread_message_ids: number[] }[]
    )
      .filter((p) => (p.other_user_id ?? p.sender_id) === WELCOME_BOT.id)
      .flatMap((p) => p.unread_message_ids).length;
    assert.equal(unread.count - greeting, 4);
    // mentions: the direct mention always, a wildcard only where not muted.
    assert.deepEqual(
      [...unread.mentions].sort((a: number, b: number) => a - b),
      [quietDirect, loud],
    );
  });
});

describe("FL 216 / 348: PATCH /realm sets the guest indicator and guest DM warning", () => {
  test("register shows the value, PATCH changes it with a realm update event; bad values and non-admins refused", async () => {
    const member = await newUser(srv, 400);
    const q = await openQueue(srv, member, ["realm"]);
    for (const name of ["enable_guest_user_indicator", "enable_guest_user_dm_warning"]) {
      const reg = await srv.api("POST", "/register", { fetch_event_types: ["realm"] });
      assertSuccess(reg);
      assert.equal(reg.body[`realm_${name}`], true);

      assertError(await srv.api("PATCH", "/realm", { [name]: 5 }), `${name} is not a boolean`);
      assertError(
        await srv.api("PATCH", "/realm", { [name]: false }, member),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      );
      const r = await srv.api("PATCH", "/realm", { [name]: false });
      assertSuccess(r);
      const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.property === name));
      const ev = evs.find((x) => x.property === name);
      assert.deepEqual(
        { type: ev.type, op: ev.op, value: ev.value },
        { type: "realm", op: "update", value: false },
      );
      const after = await srv.api("POST", "/register", { fetch_event_types: ["realm"] });
      assert.equal(after.body[`realm_${name}`], false);
    }
  });
});

describe("FL 214 / 218 / 235: automatic topic visibility on send and mention", () => {
  async function send(auth: Creds | undefined, to: number, topic: string, content = "hello"): Promise<Ev> {
    const r = await srv.api("POST", "/messages", { type: "stream", to, topic, content }, auth);
    assertSuccess(r);
    return r.body;
  }
  async function policyOf(auth: Creds, streamId: number, topic: string): Promise<number | undefined> {
    const r = await srv.api("POST", "/register", { fetch_event_types: ["user_topic"] }, auth);
    assertSuccess(r);
    const t = (r.body.user_topics as Ev[]).find(
      (x) => x.stream_id === streamId && String(x.topic_name).toLowerCase() === topic.toLowerCase(),
    );
    return t?.visibility_policy as number | undefined;
  }

  test("defaults: starting a topic follows it (reply and user_topic event); later sends change nothing", async () => {
    const user = await newUser(srv, 400);
    const ch = await channel({ subscribers: [srv.owner.userId, user.userId] });
    const q = await openQueue(srv, user, ["user_topic"]);
    const first = await send(user, ch.id, "fresh topic");
    assert.equal(first.automatic_new_visibility_policy, 3);
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "user_topic"));
    const ev = evs.find((x) => x.type === "user_topic");
    assert.deepEqual(
      { stream_id: ev.stream_id, topic_name: ev.topic_name, visibility_policy: ev.visibility_policy },
      { stream_id: ch.id, topic_name: "fresh topic", visibility_policy: 3 },
    );
    assert.equal((await send(user, ch.id, "fresh topic")).automatic_new_visibility_policy, undefined);
    // Another user replying to an existing topic (ON_INITIATION) is not made to follow it.
    const other = await newUser(srv, 400);
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: ch.name }] }, other),
    );
    assert.equal((await send(other, ch.id, "Fresh Topic")).automatic_new_visibility_policy, undefined);
    assert.equal(await policyOf(other, ch.id, "fresh topic"), undefined);
    // A direct message has no topic to follow.
    const dm = await srv.api("POST", "/messages", { type: "direct", to: [other.userId], content: "x" }, user);
    assertSuccess(dm);
    assert.equal(dm.body.automatic_new_visibility_policy, undefined);
  });

  test("a muted channel's topic is unmuted on send; ON_SEND follows; NEVER does nothing", async () => {
    const user = await newUser(srv, 400);
    const ch = await channel({ subscribers: [srv.owner.userId, user.userId] });
    await send(undefined, ch.id, "existing");
    assertSuccess(
      await srv.api(
        "POST",
        "/users/me/subscriptions/properties",
        { subscription_data: [{ stream_id: ch.id, property: "is_muted", value: true }] },
        user,
      ),
    );
    assert.equal((await send(user, ch.id, "existing")).automatic_new_visibility_policy, 2);
    assert.equal(await policyOf(user, ch.id, "existing"), 2);

    assertSuccess(await srv.api("PATCH", "/settings", { automatically_follow_topics_policy: 2 }, user));
    assert.equal((await send(user, ch.id, "existing")).automatic_new_visibility_policy, 3);

    assertSuccess(
      await srv.api(
        "PATCH",
        "/settings",
        { automatically_follow_topics_policy: 4, automatically_unmute_topics_in_muted_streams_policy: 4 },
        user,
      ),
    );
    assert.equal((await send(user, ch.id, "brand new")).automatic_new_visibility_policy, undefined);
    assert.equal(await policyOf(user, ch.id, "brand new"), undefined);
  });

  test("ON_PARTICIPATION: reacting follows the topic (or unmutes it in a muted channel)", async () => {
    const fan = await newUser(srv, 400);
    const quiet = await newUser(srv, 400);
    const ch = await channel({ subscribers: [srv.owner.userId, fan.userId, quiet.userId] });
    const id = (await send(undefined, ch.id, "react here")).id as number;
    const react = (auth: Creds) =>
      srv.api("POST", `/messages/${id}/reactions`, { emoji_name: "octopus" }, auth);
    // The default (ON_INITIATION) does not follow on a reaction.
    assertSuccess(await react(quiet));
    assert.equal(await policyOf(quiet, ch.id, "react here"), undefined);

    assertSuccess(await srv.api("PATCH", "/settings", { automatically_follow_topics_policy: 1 }, fan));
    assertSuccess(await react(fan));
    assert.equal(await policyOf(fan, ch.id, "react here"), 3);

    // Unmute on participation in a muted channel.
    assertSuccess(
      await srv.api(
        "PATCH",
        "/settings",
        { automatically_follow_topics_policy: 4, automatically_unmute_topics_in_muted_streams_policy: 1 },
        quiet,
      ),
    );
    assertSuccess(
      await srv.api(
        "POST",
        "/users/me/subscriptions/properties",
        { subscription_data: [{ stream_id: ch.id, property: "is_muted", value: true }] },
        quiet,
      ),
    );
    assertSuccess(await srv.api("DELETE", `/messages/${id}/reactions`, { emoji_name: "octopus" }, quiet));
    assert.equal(
      await policyOf(quiet, ch.id, "react here"),
      undefined,
      "removing a reaction is no participation",
    );
    assertSuccess(await react(quiet));
    assert.equal(await policyOf(quiet, ch.id, "react here"), 2);
  });

  test("a personal mention follows the topic, unless the setting is off or the topic is muted", async () => {
    const name = `Mentioned Person ${process.pid}`;
    const keen = await newUser(srv, 400, name);
    const off = await newUser(srv, 400, `${name} Off`);
    const muter = await newUser(srv, 400, `${name} Muter`);
    const ch = await channel({ subscribers: [srv.owner.userId, keen.userId, off.userId, muter.userId] });
    await send(undefined, ch.id, "talk");
    assertSuccess(
      await srv.api("PATCH", "/settings", { automatically_follow_topics_where_mentioned: false }, off),
    );
    assertSuccess(
      await srv.api("POST", "/user_topics", { stream_id: ch.id, topic: "talk", visibility_policy: 1 }, muter),
    );
    const q = await openQueue(srv, keen, ["user_topic"]);
    await send(undefined, ch.id, "talk", `@**${name}** @**${name} Off** @**${name} Muter** see this`);
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "user_topic"));
    assert.ok(evs.some((x) => x.type === "user_topic" && x.visibility_policy === 3));
    assert.equal(await policyOf(keen, ch.id, "talk"), 3);
    assert.equal(await policyOf(off, ch.id, "talk"), undefined);
    assert.equal(await policyOf(muter, ch.id, "talk"), 1);
    // A silent mention does not count.
    const quiet = await newUser(srv, 400, `${name} Quiet`);
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: ch.name }],
        principals: [quiet.userId],
      }),
    );
    await send(undefined, ch.id, "talk", `@_**${name} Quiet** psst`);
    assert.equal(await policyOf(quiet, ch.id, "talk"), undefined);
  });
});

describe("FL 281 / 291: deleting messages follows can_delete_any_message_group and can_delete_own_message_group", () => {
  const NOBODY = 1;
  const OWNERS = 2;
  const ADMINISTRATORS = 3;
  const MODERATORS = 4;
  const EVERYONE = 7;

  test("the realm groups decide, not the role", async () => {
    const ch = await channel();
    const member = await newUser(srv, 400);
    const moderator = await newUser(srv, 300);
    const admin = await newUser(srv, 200);
    for (const u of [member, moderator, admin])
      assertSuccess(
        await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: ch.name }] }, u),
      );
    const post = async (auth?: Creds): Promise<number> => {
      const r = await srv.api(
        "POST",
        "/messages",
        { type: "stream", to: ch.id, topic: "t", content: "x" },
        auth,
      );
      assertSuccess(r);
      return r.body.id as number;
    };
    const del = (id: number, auth?: Creds) => srv.api("DELETE", `/messages/${id}`, {}, auth);
    const denied = "You don't have permission to delete this message";
    try {
      // Own messages: everyone by default; nobody once the group says so.
      assertSuccess(await del(await post(member), member));
      assertSuccess(await srv.api("PATCH", "/realm", { can_delete_own_message_group: { new: NOBODY } }));
      const mine = await post(member);
      assertError(await del(mine, member), denied);

      // Anyone's messages: a moderator once the group includes moderators.
      const others = await post(member);
      assertError(await del(others, moderator), denied);
      assertSuccess(await srv.api("PATCH", "/realm", { can_delete_any_message_group: { new: MODERATORS } }));
      assertSuccess(await del(others, moderator));
      // The group, not the role: with owners only, an administrator may not.
      assertSuccess(await srv.api("PATCH", "/realm", { can_delete_any_message_group: { new: OWNERS } }));
      assertError(await del(mine, admin), denied);
      assertSuccess(await del(mine));
    } finally {
      assertSuccess(
        await srv.api("PATCH", "/realm", {
          can_delete_own_message_group: { new: EVERYONE },
          can_delete_any_message_group: { new: ADMINISTRATORS },
        }),
      );
    }
  });
});

describe("FL 246: require_unique_names", () => {
  test("new and changed names may not repeat another user's (case and width folded); off by default", async () => {
    const base = `Unique Person ${process.pid}`;
    const first = await newUser(srv, 400, base);
    // Off: a duplicate is fine.
    const twin = await newUser(srv, 400, base);
    const other = await newUser(srv, 400, `Someone Else ${process.pid}`);
    const msg = "Unique names required in this organization.";
    assertSuccess(await srv.api("PATCH", "/realm", { require_unique_names: true }));
    try {
      const email = `dup-${process.pid}@example.com`;
      assertError(
        await srv.api("POST", "/users", {
          email,
          password: "pw-dup-secret-1",
          full_name: base.toUpperCase(),
        }),
        msg,
      );
      const wide = base.replace("Unique", "Ｕｎｉｑｕｅ");
      assertError(await srv.api("PATCH", "/settings", { full_name: wide }, other), msg);
      assertError(await srv.api("PATCH", `/users/${other.userId}`, { full_name: ` ${base} ` }), msg);
      assertError(
        await srv.api("POST", "/bots", { full_name: base, short_name: `dupbot${process.pid}` }),
        msg,
      );
      // Nothing changed.
      const got = await srv.api("GET", `/users/${other.userId}`);
      assert.equal(got.body.user.full_name, `Someone Else ${process.pid}`);
      assert.equal((await srv.api("GET", "/users/" + encodeURIComponent(email))).status, 400);
      // A fresh name is fine; once the twin moved away, the first may re-case its own name.
      assertSuccess(await srv.api("PATCH", "/settings", { full_name: `Fresh Name ${process.pid}` }, other));
      assertError(await srv.api("PATCH", `/users/${first.userId}`, { full_name: base.toLowerCase() }), msg);
      assertSuccess(await srv.api("PATCH", `/users/${twin.userId}`, { full_name: `Twin ${process.pid}` }));
      assertSuccess(await srv.api("PATCH", `/users/${first.userId}`, { full_name: base.toLowerCase() }));
    } finally {
      assertSuccess(await srv.api("PATCH", "/realm", { require_unique_names: false }));
    }
  });
});

describe("FL 229 / 352: wildcard mentions in large channels and topics need can_mention_many_users_group", () => {
  test("above 15 subscribers / participants a member is refused; administrators, small audiences and silent mentions pass", async () => {
    const member = await newUser(srv, 400);
    const crowd: Creds[] = [];
    for (let i = 0; i < 14; i++) crowd.push(await newUser(srv, 400));
    const ch = await channel({
      subscribers: [srv.owner.userId, member.userId, ...crowd.map((u) => (u as Ev).userId)],
    });
    const send = (content: string, auth?: Creds, topic = "all hands") =>
      srv.api("POST", "/messages", { type: "stream", to: ch.id, topic, content }, auth);
    // 16 subscribers: more than 15.
    assertSuccess(await send("@**all** from an administrator"));
    const stream = [
      "You do not have permission to use channel wildcard mentions in this channel.",
      "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
    ] as const;
    for (const w of ["all", "everyone", "channel", "stream"])
      assertError(await send(`@**${w}** hi`, member), ...stream);
    assertSuccess(await send("@_**all** silent is fine", member));
    const plain = await send("no wildcard", member);
    assertSuccess(plain);
    assertError(
      await srv.api("PATCH", `/messages/${plain.body.id}`, { content: "edited to @**all**" }, member),
      ...stream,
    );

    // Topic wildcard: counts the topic's participants.
    assertSuccess(await send("@**topic** few participants yet", member, "busy"));
    for (const u of crowd) assertSuccess(await send("me too", u, "busy"));
    assertSuccess(await send("and me", undefined, "busy"));
    assertError(
      await send("@**topic** now", member, "busy"),
      "You do not have permission to use topic wildcard mentions in this topic.",
      "TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
    );

    // The group decides.
    const MEMBERS = 6;
    const ADMINISTRATORS = 3;
    assertSuccess(await srv.api("PATCH", "/realm", { can_mention_many_users_group: { new: MEMBERS } }));
    try {
      assertSuccess(await send("@**all** allowed now", member));
      assertSuccess(await send("@**topic** allowed now", member, "busy"));
    } finally {
      assertSuccess(
        await srv.api("PATCH", "/realm", { can_mention_many_users_group: { new: ADMINISTRATORS } }),
      );
    }

    // 15 subscribers: anyone may.
    assertSuccess(await srv.api("DELETE", "/users/me/subscriptions", { subscriptions: [ch.name] }, crowd[0]));
    assertSuccess(await send("@**all** small enough", member));
  });
});

describe("FL 312: realm_export_consent", () => {
  test("administrators hear of a changed export consent; others and unchanged values send nothing", async () => {
    const admin = await newUser(srv, 200);
    const member = await newUser(srv, 400);
    const other = await newUser(srv, 400);
    const qa = await openQueue(srv, admin, ["realm_export_consent"]);
    const qo = await openQueue(srv, other, ["realm_export_consent"]);
    assertSuccess(await srv.api("PATCH", "/settings", { allow_private_data_export: true }, member));
    const evs = await eventsUntil(srv, qa, (e) => e.length > 0);
    assert.deepEqual(
      evs.map((e) => ({ type: e.type, user_id: e.user_id, consented: e.consented })),
      [{ type: "realm_export_consent", user_id: member.userId, consented: true }],
    );
    // The same value again changes nothing.
    assertSuccess(await srv.api("PATCH", "/settings", { allow_private_data_export: true }, member));
    assertSuccess(await srv.api("PATCH", "/settings", { allow_private_data_export: false }, member));
    const more = await eventsUntil(srv, qa, (e) => e.length > 0);
    assert.deepEqual(
      more.map((e) => e.consented),
      [false],
    );
    assert.deepEqual(await drain(srv, qo), []);
  });
});
