// What a reaction's participation and a member's change (address, role,
// deactivation, creation, API key) start in other actors are hand-offs of
// the deciding turn (actors/channel/participation.ts,
// actors/realm/member-handoffs.ts): a node gives a hand-off again after a
// crash, or while it is not acknowledged, so a repeated hand-off must change
// nothing twice. Here the node's handlers run every such hand-off three
// times, and a recorded one again later, after the state moved on.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { REACTION_PARTICIPATION, runParticipations } from "../actors/channel/index.ts";
import {
  MEMBER_DEFAULTS,
  MEMBER_EMAIL,
  MEMBER_GONE,
  MEMBER_KEY,
  MEMBER_ROLE,
  realmRef,
  runMemberHandoffs,
} from "../actors/realm/index.ts";
import { typedCall, typedCallAs } from "../actors/protocol.ts";
import { userRef } from "../actors/user/index.ts";
import type { Obj, OutEvent } from "../actors/types.ts";
import { createChannel, ok, reaches, uniq, useChat, type User } from "./support/index.ts";

const chat = useChat();
const api = chat.api;

const MEMBER = 400;
const GUEST = 600;

describe("hand-offs given again change nothing twice", () => {
  const given = new Map<string, Obj[][]>();
  const refused: string[] = [];
  let call: ReturnType<typeof typedCall>;
  const thrice = (subject: string, run: (data: Obj[]) => Promise<boolean>) =>
    chat.srv.node.onHandoff(subject, async (data) => {
      (given.get(subject) ?? given.set(subject, []).get(subject)!).push(data);
      const oks = [await run(data), await run(data), await run(data)];
      return oks.every(Boolean);
    });
  const onRefused = (what: string) => () => refused.push(what);
  const participate = (data: Obj[]) => runParticipations(data, call, onRefused(REACTION_PARTICIPATION));
  const member = (subject: string) => (data: Obj[]) =>
    runMemberHandoffs(subject, data, call, onRefused(subject));
  const syncEmails = member(MEMBER_EMAIL);
  const roleAccess = member(MEMBER_ROLE);
  const gone = member(MEMBER_GONE);
  const defaults = member(MEMBER_DEFAULTS);
  const keyChanges = member(MEMBER_KEY);

  test("setup: every hand-off of these subjects runs three times", async () => {
    await api("GET", "/users/me");
    const node = chat.srv.node;
    call = typedCall((ref, m, a) => node.call(ref, m, a));
    thrice(REACTION_PARTICIPATION, participate);
    thrice(MEMBER_EMAIL, syncEmails);
    thrice(MEMBER_ROLE, roleAccess);
    thrice(MEMBER_GONE, gone);
    thrice(MEMBER_DEFAULTS, defaults);
    thrice(MEMBER_KEY, keyChanges);
  });

  /** The user's policy for a topic, from /register. */
  async function policyOf(who: User, streamId: number, topic: string): Promise<number | undefined> {
    const r = ok(await api("POST", "/register", { fetch_event_types: ["user_topic"] }, who));
    const t = (r.user_topics as Obj[]).find((x) => x.stream_id === streamId && x.topic_name === topic);
    return t?.visibility_policy as number | undefined;
  }

  /** The events emitted since `from` for `userId`, of `type`. */
  function eventsFor(from: number, userId: number, type: string): Obj[] {
    return chat.events
      .slice(from)
      .filter((e: OutEvent) => reaches(e, userId) && e.event.type === type)
      .map((e) => e.event);
  }

  test("a reaction's participation follows the topic once; a later repeat keeps the user's own choice", async () => {
    const fan = await chat.newUser();
    const ch = await createChannel(chat, [chat.owner.userId, fan.userId], { name: uniq("react") });
    const sent = ok(await api("POST", "/messages", { type: "stream", to: ch.id, topic: "t", content: "hi" }));
    ok(await api("PATCH", "/settings", { automatically_follow_topics_policy: 1 }, fan));
    const from = chat.events.length;
    ok(await api("POST", `/messages/${sent.id as number}/reactions`, { emoji_name: "octopus" }, fan));
    assert.equal(await policyOf(fan, ch.id, "t"), 3);
    assert.equal(eventsFor(from, fan.userId, "user_topic").length, 1, "one user_topic event");

    // The user unfollows; the reaction's hand-off given once more changes nothing.
    ok(await api("POST", "/user_topics", { stream_id: ch.id, topic: "t", visibility_policy: 0 }, fan));
    const order = given.get(REACTION_PARTICIPATION)!.at(-1)!;
    const before = chat.events.length;
    assert.equal(await participate(order), true);
    assert.equal(await policyOf(fan, ch.id, "t"), undefined);
    assert.equal(eventsFor(before, fan.userId, "user_topic").length, 0);
    assert.deepEqual(refused, []);
  });

  test("a role change tells the user's clients of its channel view once, also when repeated later", async () => {
    const m = await chat.newUser(MEMBER);
    // A public channel the member sees without being subscribed; a guest does not.
    const ch = await createChannel(chat, [chat.owner.userId], { name: uniq("public") });
    const streamEvents = (from: number) => eventsFor(from, m.userId, "stream");

    let from = chat.events.length;
    ok(await api("PATCH", `/users/${m.userId}`, { role: GUEST }));
    const lost = streamEvents(from);
    assert.equal(lost.length, 1, "one stream event on demotion");
    assert.equal(lost[0]!.op, "delete");
    assert.ok((lost[0]!.stream_ids as number[]).includes(ch.id));
    const demotion = given.get(MEMBER_ROLE)!.at(-1)!;

    from = chat.events.length;
    ok(await api("PATCH", `/users/${m.userId}`, { role: MEMBER }));
    const gained = streamEvents(from);
    assert.equal(gained.length, 1, "one stream event on promotion");
    assert.equal(gained[0]!.op, "create");
    assert.ok((gained[0]!.streams as Obj[]).some((s) => s.stream_id === ch.id));
    const peers = eventsFor(from, m.userId, "subscription").filter((e) => e.op === "peer_add");
    assert.equal(peers.filter((e) => (e.stream_ids as number[]).includes(ch.id)).length, 1);
    const promotion = given.get(MEMBER_ROLE)!.at(-1)!;

    // Both hand-offs given once more, the older one after the newer: nothing.
    from = chat.events.length;
    assert.equal(await roleAccess(demotion), true);
    assert.equal(await roleAccess(promotion), true);
    assert.deepEqual(streamEvents(from), []);
    assert.deepEqual(eventsFor(from, m.userId, "subscription"), []);
    assert.deepEqual(refused, []);
  });

  test("an address change reaches the user actor once", async () => {
    const email = `mover-${process.pid}@example.com`;
    const password = "mover-password-1";
    const created = (await chat.srv.node.call(realmRef(chat.srv.bootstrapped!.realmId), "createUser", {
      email,
      password,
      fullName: "Moving Person",
    })) as { userId: number };
    const newEmail = `moved-${process.pid}@example.org`;
    ok(await api("PATCH", `/users/${created.userId}`, { new_email: newEmail }));
    const order = given.get(MEMBER_EMAIL)!.at(-1)!;
    assert.deepEqual(order, [{ realm: chat.srv.bootstrapped!.realmId, userId: created.userId }]);
    // The user actor answers a password login with its copy of the address.
    const login = ok(await api("POST", "/fetch_api_key", { username: newEmail, password }, null));
    assert.equal(login.email, newEmail);
    assert.equal(await syncEmails(order), true);
    assert.equal(
      ok(await api("POST", "/fetch_api_key", { username: newEmail, password }, null)).email,
      newEmail,
    );
    assert.deepEqual(refused, []);
  });

  test("a deactivation's peer_remove goes out once", async () => {
    const u = await chat.newUser();
    const ch = await createChannel(chat, [chat.owner.userId, u.userId], { name: uniq("gone") });
    const from = chat.events.length;
    ok(await api("DELETE", `/users/${u.userId}`));
    const removes = () =>
      eventsFor(from, chat.owner.userId, "subscription").filter(
        (e) => e.op === "peer_remove" && (e.stream_ids as number[]).includes(ch.id),
      );
    assert.deepEqual(
      removes().map((e) => e.user_ids),
      [[u.userId]],
    );
    assert.equal(await gone(given.get(MEMBER_GONE)!.at(-1)!), true);
    assert.equal(removes().length, 1);
    assert.deepEqual(refused, []);
  });

  test("a new user joins the default channels once; a later repeat keeps them out of one they left", async () => {
    const ch = await createChannel(chat, [chat.owner.userId], { name: uniq("default") });
    ok(await api("POST", "/default_streams", { stream_id: ch.id }));
    const from = chat.events.length;
    const r = ok(
      await api("POST", "/users", {
        email: `joiner-${process.pid}@example.com`,
        password: "joiner-password-1",
        full_name: "Joining Person",
      }),
    );
    const userId = r.user_id as number;
    const adds = (since: number) =>
      eventsFor(since, userId, "subscription").filter(
        (e) => e.op === "add" && (e.subscriptions as Obj[]).some((x) => x.stream_id === ch.id),
      );
    assert.equal(adds(from).length, 1, "one subscription add");
    const members = async () => ok(await api("GET", `/streams/${ch.id}/members`)).subscribers as number[];
    assert.ok((await members()).includes(userId));

    // The new user leaves the default channel; the hand-off given once more changes nothing.
    ok(
      await api("DELETE", "/users/me/subscriptions", {
        subscriptions: [ch.name],
        principals: [userId],
      }),
    );
    assert.ok(!(await members()).includes(userId));
    const before = chat.events.length;
    assert.equal(await defaults(given.get(MEMBER_DEFAULTS)!.at(-1)!), true);
    assert.ok(!(await members()).includes(userId));
    assert.equal(adds(before).length, 0);
    ok(await api("DELETE", "/default_streams", { stream_id: ch.id }));
    assert.deepEqual(refused, []);
  });

  test("a new API key drops the push devices once; a device registered with the new key stays", async () => {
    const u = await chat.newUser();
    const realmId = chat.srv.bootstrapped!.realmId;
    const me = { realmId, userId: u.userId, role: MEMBER, isBot: false };
    const callAs = typedCallAs(chat.srv.node.callAs.bind(chat.srv.node));
    /** A device with an E2EE push key (its relay registration pending: the relay is not asked here). */
    const pushDevice = async (byte: number) => {
      const { device_id } = await callAs(userRef(realmId, u.userId), "registerClientDevice", {}, me);
      await callAs(
        userRef(realmId, u.userId),
        "registerPushDevice",
        {
          relayConfigured: true,
          deviceId: device_id,
          tokenKind: "fcm",
          pushKey: Buffer.concat([Buffer.from([0x31]), Buffer.alloc(32, byte)]).toString("base64"),
          pushKeyId: byte,
          bouncerPublicKey: "bouncer-public-key",
          encryptedPushRegistration: "encrypted",
          tokenId: Buffer.alloc(8, byte).toString("base64"),
        },
        me,
      );
      return device_id;
    };
    const devicesOf = async () =>
      Object.keys((await callAs(userRef(realmId, u.userId), "devices", {}, me)).devices).map(Number);
    const old = await pushDevice(3);
    const from = chat.events.length;
    const key = ok(await api("POST", "/users/me/api_key/regenerate", {}, u)).api_key as string;
    assert.ok(!(await devicesOf()).includes(old));
    const removed = eventsFor(from, u.userId, "device").filter((e) => e.op === "remove");
    assert.deepEqual(
      removed.map((e) => e.device_id),
      [old],
    );
    assert.equal(typeof key, "string");

    const fresh = await pushDevice(4);
    const before = chat.events.length;
    assert.equal(await keyChanges(given.get(MEMBER_KEY)!.at(-1)!), true);
    assert.ok((await devicesOf()).includes(fresh), "a device of the new key stays");
    assert.deepEqual(eventsFor(before, u.userId, "device"), []);
    assert.deepEqual(refused, []);
  });
});
