// Black-box HTTP tests of DELETE /users/{user_id} with `actions`
// (delete_profile, delete_public_channel_messages,
// delete_private_channel_messages, delete_direct_messages): each flag alone
// deletes exactly its scope of the user's (and their bots') messages, the
// profile is renamed, bad input and refused callers change nothing.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { behaviors } from "../actors/index.ts";
import { ZulipError } from "../actors/errors.ts";
import type { ActorContext, ActorRef, Caller, Obj } from "../actors/types.ts";
import { startEmbedded, type Creds, type EmbeddedHandle } from "./support/embedded.ts";
import { storedMessage } from "./support/fixtures.ts";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  type Member,
} from "./support/zulip-asserts.ts";

let srv: EmbeddedHandle;
let seq = 0;

before(async () => {
  srv = await startEmbedded();
});

after(async () => {
  await srv?.stop();
});

async function send(auth: Creds, params: Record<string, unknown>): Promise<number> {
  const r = await srv.api("POST", "/messages", params, auth);
  assertSuccess(r);
  return r.body.id as number;
}

/** Does `viewer` still see message `id`? */
async function exists(viewer: Creds, id: number): Promise<boolean> {
  const r = await srv.api("GET", `/messages/${id}`, {}, viewer);
  if (r.status === 200) return true;
  assertError(r, "Invalid message(s)");
  return false;
}

async function member(id: number): Promise<Record<string, unknown>> {
  const r = await srv.api("GET", `/users/${id}`);
  assertSuccess(r);
  return r.body.user;
}

interface Scene {
  target: Member;
  observer: Member;
  bot: Creds & { userId: number };
  pubId: number;
  /** Messages by who sent them and where. */
  ids: {
    targetPublic: number;
    targetPublic2: number;
    targetPrivate: number;
    targetProtected: number;
    targetDm: number;
    targetGroupDm: number;
    targetSelfDm: number;
    botPublic: number;
    botPrivate: number;
    botDm: number;
    observerPublic: number;
    observerPrivate: number;
    observerDm: number;
  };
}

/**
 * A target member who owns a bot, an observer who shares every
 * conversation with them, a public channel, a private channel with shared
 * history and one with protected history, and messages of all three in
 * each place.
 */
async function scene(): Promise<Scene> {
  const n = ++seq;
  const target = await newUser(srv, 400, `Target ${n}`);
  const observer = await newUser(srv, 400, `Observer ${n}`);
  const b = await srv.api("POST", "/bots", { full_name: `Helper ${n}`, short_name: `helper${n}` }, target);
  assertSuccess(b);
  const botEmail = (await member(b.body.user_id)).email as string;
  const bot = { email: botEmail, apiKey: b.body.api_key as string, userId: b.body.user_id as number };
  const everyone = [target.userId, observer.userId, bot.userId];
  const pub = `pub ${n}`;
  const priv = `priv ${n}`;
  const prot = `prot ${n}`;
  assertSuccess(
    await srv.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name: pub }],
      principals: everyone,
    }),
  );
  assertSuccess(
    await srv.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name: priv }],
      principals: everyone,
      invite_only: true,
      history_public_to_subscribers: true,
    }),
  );
  assertSuccess(
    await srv.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name: prot }],
      principals: everyone,
      invite_only: true,
      history_public_to_subscribers: false,
    }),
  );
  const pubId = (await srv.api("GET", "/get_stream_id", { stream: pub })).body.stream_id as number;
  const toChannel = (to: string, topic = "t") => ({ type: "stream", to, topic, content: "hi" });
  const dm = (to: number[]) => ({ type: "direct", to, content: "psst" });
  const ids = {
    targetPublic: await send(target, toChannel(pub)),
    targetPublic2: await send(target, toChannel(pub, "other topic")),
    targetPrivate: await send(target, toChannel(priv)),
    targetProtected: await send(target, toChannel(prot)),
    targetDm: await send(target, dm([observer.userId])),
    targetGroupDm: await send(target, dm([observer.userId, srv.owner.userId])),
    targetSelfDm: await send(target, dm([target.userId])),
    botPublic: await send(bot, toChannel(pub)),
    botPrivate: await send(bot, toChannel(priv)),
    botDm: await send(bot, dm([observer.userId])),
    observerPublic: await send(observer, toChannel(pub)),
    observerPrivate: await send(observer, toChannel(priv)),
    observerDm: await send(observer, dm([target.userId])),
  };
  return { target, observer, bot, pubId, ids };
}

/** Which of the scene's messages survive, checked as the one who can see each. */
async function surviving(s: Scene): Promise<string[]> {
  const out: string[] = [];
  for (const [name, id] of Object.entries(s.ids)) {
    // Only the target sees their self-DM; its own test checks it.
    if (name === "targetSelfDm") continue;
    if (await exists(s.observer, id)) out.push(name);
  }
  return out.sort();
}

const ALL = [
  "botDm",
  "botPrivate",
  "botPublic",
  "observerDm",
  "observerPrivate",
  "observerPublic",
  "targetDm",
  "targetGroupDm",
  "targetPrivate",
  "targetProtected",
  "targetPublic",
  "targetPublic2",
];

/** Message ids named in the delete_message events (one per message without bulk_message_deletion). */
function deletedIds(evs: { type: string; message_id?: number; message_ids?: number[] }[]): number[] {
  const out: number[] = [];
  for (const e of evs) {
    if (e.type !== "delete_message") continue;
    if (e.message_id !== undefined) out.push(e.message_id);
    for (const id of e.message_ids ?? []) out.push(id);
  }
  return out.sort((a, b) => a - b);
}

describe("users - DELETE /users/{id} actions: message scopes", () => {
  const cases: [string, string[]][] = [
    ["delete_public_channel_messages", ["botPublic", "targetPublic", "targetPublic2"]],
    ["delete_private_channel_messages", ["botPrivate", "targetPrivate", "targetProtected"]],
    ["delete_direct_messages", ["botDm", "targetDm", "targetGroupDm"]],
  ];
  for (const [flag, gone] of cases) {
    test(`${flag} alone deletes exactly the user's and their bots' messages of that scope`, async () => {
      const s = await scene();
      const q = await openQueue(srv, s.observer, ["delete_message"]);
      const res = await srv.api("DELETE", `/users/${s.target.userId}`, { actions: { [flag]: true } });
      assertSuccess(res);
      assert.equal(res.body.ignored_parameters_unsupported, undefined);
      assert.deepEqual(
        await surviving(s),
        ALL.filter((x) => !gone.includes(x)),
      );
      const want = gone.map((k) => s.ids[k as keyof Scene["ids"]]).sort((a, b) => a - b);
      const evs = await eventsUntil(srv, q, (e) => deletedIds(e).length >= want.length);
      assert.deepEqual(deletedIds(evs), want);
      // The bot first, then the user: both deactivated.
      assert.equal((await member(s.target.userId)).is_active, false);
      assert.equal((await member(s.bot.userId)).is_active, false);
      // Names stay without delete_profile.
      assert.match(String((await member(s.target.userId)).full_name), /^Target /);
    });
  }

  test("delete_direct_messages covers the user's DM with themselves", async () => {
    const s = await scene();
    // Before: the target sees their self-DM.
    assert.equal(await exists(s.target, s.ids.targetSelfDm), true);
    assertSuccess(
      await srv.api("DELETE", `/users/${s.target.userId}`, { actions: { delete_direct_messages: true } }),
    );
    // After reactivation the target can look: the message is gone.
    assertSuccess(await srv.api("POST", `/users/${s.target.userId}/reactivate`));
    assert.equal(await exists(s.target, s.ids.targetSelfDm), false);
  });

  test("stream delete_message events name the channel and each topic, one event per topic (bulk clients)", async () => {
    const s = await scene();
    const r = await srv.api(
      "POST",
      "/register",
      { event_types: ["delete_message"], client_capabilities: { bulk_message_deletion: true } },
      s.observer,
    );
    assertSuccess(r);
    const q = { id: r.body.queue_id as string, last: r.body.last_event_id as number, auth: s.observer };
    assertSuccess(
      await srv.api("DELETE", `/users/${s.target.userId}`, {
        actions: { delete_public_channel_messages: true },
      }),
    );
    const evs = await eventsUntil(srv, q, (e) => deletedIds(e).length >= 3);
    const shapes = evs
      .map((e) => ({
        type: e.type,
        message_type: e.message_type,
        stream_id: e.stream_id,
        topic: e.topic,
        ids: e.message_ids,
      }))
      .sort((a, b) => String(a.topic).localeCompare(String(b.topic)) || a.ids[0] - b.ids[0]);
    assert.deepEqual(shapes, [
      {
        type: "delete_message",
        message_type: "stream",
        stream_id: s.pubId,
        topic: "other topic",
        ids: [s.ids.targetPublic2],
      },
      {
        type: "delete_message",
        message_type: "stream",
        stream_id: s.pubId,
        topic: "t",
        ids: [s.ids.targetPublic],
      },
      {
        type: "delete_message",
        message_type: "stream",
        stream_id: s.pubId,
        topic: "t",
        ids: [s.ids.botPublic],
      },
    ]);
  });

  test("all scopes together delete everything the user and their bots sent, nothing of others", async () => {
    const s = await scene();
    assertSuccess(
      await srv.api("DELETE", `/users/${s.target.userId}`, {
        actions: {
          delete_public_channel_messages: true,
          delete_private_channel_messages: true,
          delete_direct_messages: true,
          delete_profile: false,
        },
      }),
    );
    assert.deepEqual(await surviving(s), ["observerDm", "observerPrivate", "observerPublic"]);
  });

  test("all flags false, or an empty object, only deactivate", async () => {
    for (const actions of [{}, { delete_profile: false, delete_direct_messages: false }]) {
      const s = await scene();
      assertSuccess(await srv.api("DELETE", `/users/${s.target.userId}`, { actions }));
      assert.deepEqual(await surviving(s), ALL);
      assert.equal((await member(s.target.userId)).is_active, false);
      assert.equal((await member(s.bot.userId)).is_active, false);
    }
  });
});

describe("users - DELETE /users/{id} actions: delete_profile", () => {
  test('renames the user and their bots to "Deleted user", with realm_user events', async () => {
    const s = await scene();
    const q = await openQueue(srv, srv.owner, ["realm_user", "realm_bot"]);
    assertSuccess(
      await srv.api("DELETE", `/users/${s.target.userId}`, { actions: { delete_profile: true } }),
    );
    assert.equal((await member(s.target.userId)).full_name, "Deleted user");
    assert.equal((await member(s.bot.userId)).full_name, "Deleted user");
    assert.equal((await member(s.target.userId)).is_active, false);
    // Messages stay.
    assert.deepEqual(await surviving(s), ALL);
    const evs = await eventsUntil(
      srv,
      q,
      (e) => e.filter((x) => x.op === "update" && x.person?.full_name === "Deleted user").length >= 2,
    );
    const renamed = evs
      .filter((x) => x.type === "realm_user" && x.person?.full_name === "Deleted user")
      .map((x) => x.person.user_id)
      .sort((a: number, b: number) => a - b);
    assert.deepEqual(
      renamed,
      [s.target.userId, s.bot.userId].sort((a, b) => a - b),
    );
    // A bot's name is no realm_bot news since feature level 474.
    assert.ok(!evs.some((x) => x.type === "realm_bot" && x.op === "update"));
  });
});

describe("users - DELETE /users/{id} actions: bad input and permissions change nothing", () => {
  test("bad actions values: Zulip's errors, and no message, name or activation changes", async () => {
    const s = await scene();
    const bad: [unknown, string][] = [
      ["not json", "actions is not valid JSON"],
      ["True", "actions is not valid JSON"],
      [[], "actions is not a dict"],
      [null, "actions is not a dict"],
      ['"delete_profile"', "actions is not a dict"],
      [7, "actions is not a dict"],
      [{ delete_profile: 1 }, 'actions["delete_profile"] is not a boolean'],
      [
        { delete_public_channel_messages: "true" },
        'actions["delete_public_channel_messages"] is not a boolean',
      ],
      [
        { delete_direct_messages: true, delete_private_channel_messages: null },
        'actions["delete_private_channel_messages"] is not a boolean',
      ],
    ];
    for (const [actions, msg] of bad) {
      const raw = typeof actions === "string" ? actions : JSON.stringify(actions);
      assertError(await srv.api("DELETE", `/users/${s.target.userId}`, { actions: raw }), msg);
    }
    assert.deepEqual(await surviving(s), ALL);
    assert.equal((await member(s.target.userId)).is_active, true);
    assert.equal((await member(s.bot.userId)).is_active, true);
    assert.match(String((await member(s.target.userId)).full_name), /^Target /);
  });

  test("unknown keys are dropped unreported, like Zulip's pydantic model", async () => {
    const s = await scene();
    const res = await srv.api("DELETE", `/users/${s.target.userId}`, {
      actions: { delete_everything: true, delete_direct_messages: true },
    });
    assertSuccess(res);
    assert.equal(res.body.ignored_parameters_unsupported, undefined);
    assert.deepEqual(
      await surviving(s),
      ALL.filter((x) => !["botDm", "targetDm", "targetGroupDm"].includes(x)),
    );
  });

  test("actions in the query string are read too (zulip-js sends DELETE parameters there)", async () => {
    const s = await scene();
    const qs = new URLSearchParams({ actions: JSON.stringify({ delete_direct_messages: true }) });
    const res = await fetch(`${srv.baseUrl}/api/v1/users/${s.target.userId}?${qs}`, {
      method: "DELETE",
      headers: {
        authorization: "Basic " + Buffer.from(`${srv.owner.email}:${srv.owner.apiKey}`).toString("base64"),
      },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(
      await surviving(s),
      ALL.filter((x) => !["botDm", "targetDm", "targetGroupDm"].includes(x)),
    );
  });

  test("only administrators; refused callers delete nothing", async () => {
    const s = await scene();
    const all = {
      delete_profile: true,
      delete_public_channel_messages: true,
      delete_private_channel_messages: true,
      delete_direct_messages: true,
    };
    const moderator = await newUser(srv, 300);
    const guest = await newUser(srv, 600);
    const callers: [string, Creds][] = [
      ["moderator", moderator],
      ["member", s.observer],
      ["guest", guest],
      ["the target's own bot", s.bot],
      ["the target", s.target],
    ];
    for (const [, auth] of callers) {
      assertError(
        await srv.api("DELETE", `/users/${s.target.userId}`, { actions: all }, auth),
        "Insufficient permission",
      );
    }
    // An administrator may not deactivate an owner.
    const admin = await newUser(srv, 200);
    const owner2 = await newUser(srv, 100, "Second Owner");
    const ownerMsg = await send(owner2, { type: "direct", to: [s.observer.userId], content: "owner says" });
    assertError(
      await srv.api("DELETE", `/users/${owner2.userId}`, { actions: all }, admin),
      "Must be an organization owner",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assert.equal(await exists(s.observer, ownerMsg), true);
    assert.equal((await member(owner2.userId)).full_name, "Second Owner");
    // The only owner cannot be deactivated, even by themselves through this route.
    const ownerDm = await send(srv.owner, { type: "direct", to: [s.observer.userId], content: "boss" });
    assertSuccess(await srv.api("PATCH", `/users/${owner2.userId}`, { role: 400 }));
    assertError(
      await srv.api("DELETE", `/users/${srv.owner.userId}`, { actions: all }),
      "Cannot deactivate the only organization owner",
    );
    assert.equal(await exists(s.observer, ownerDm), true);
    // Unknown and deactivated targets, and bots (DELETE /bots is their route).
    assertError(await srv.api("DELETE", "/users/987654", { actions: all }), "No such user");
    assertError(await srv.api("DELETE", `/users/${s.bot.userId}`, { actions: all }), "No such user");
    assert.deepEqual(await surviving(s), ALL);
    assert.equal((await member(s.target.userId)).is_active, true);
    assert.match(String((await member(s.target.userId)).full_name), /^Target /);
    // An administrator succeeds.
    assertSuccess(await srv.api("DELETE", `/users/${s.target.userId}`, { actions: all }, admin));
    assert.deepEqual(await surviving(s), ["observerDm", "observerPrivate", "observerPublic"]);
    assert.equal((await member(s.target.userId)).full_name, "Deleted user");
    // Retrying on the now deactivated user is Zulip's "User is deactivated".
    assertError(
      await srv.api("DELETE", `/users/${s.target.userId}`, { actions: all }, admin),
      "User is deactivated",
    );
  });
});

describe("users - DELETE /users/{id} actions: actor handlers", () => {
  const realm = 1;
  const dmRef: ActorRef = { kind: "channel", realm, key: "dm:5,9" };
  const calls: [string, string, Obj][] = [];
  const ctx: ActorContext = {
    self: dmRef,
    now: () => 0,
    async call(ref: ActorRef, method: string, args: Obj) {
      calls.push([`${ref.kind}/${ref.key}`, method, args]);
      return {};
    },
    nextId: () => Promise.reject(new Error("unused")),
    schedule: () => undefined,
    parked: () => [],
  };
  const member: Caller = { realmId: realm, userId: 9, role: 400, isBot: false };
  const admin: Caller = { realmId: realm, userId: 2, role: 200, isBot: false };
  const channel = behaviors.channel!;

  function convWith(ids: number[]): unknown {
    let state = channel.initial(dmRef);
    for (const id of ids) {
      const msg = storedMessage(id);
      state = channel.apply(state, { type: "msgAdded", msg, stored: true } as unknown as Obj, dmRef);
    }
    return state;
  }

  test("removeMany: internal or admin callers only; unknown ids skipped; a retry changes nothing", async () => {
    const state = convWith([11, 12, 13]);
    await assert.rejects(
      async () => channel.handlers.removeMany!(state, { ids: [11] }, ctx, member),
      (e: unknown) => e instanceof ZulipError,
    );
    calls.length = 0;
    const d = await channel.handlers.removeMany!(state, { ids: [12, 11, 99, 11] }, ctx, null);
    assert.deepEqual(d.reply, { deleted: [11, 12] });
    assert.deepEqual(d.facts, [
      // With what the conversation's topic summaries need (its messages live in the store).
      { type: "msgRemoved", id: 11, topic: "", senderId: 5 },
      { type: "msgRemoved", id: 12, topic: "", senderId: 5 },
    ]);
    assert.deepEqual(d.events, [
      { event: { type: "delete_message", message_type: "private", message_ids: [11, 12] }, userIds: [5, 9] },
    ]);
    // A DM conversation also lists itself once per activation for retention (actors/channel/retention.ts).
    const effects = calls.filter((c) => c[1] !== "listDmConversation");
    assert.deepEqual(effects.map((c) => [c[0], c[1], c[2]]).sort(), [
      // The attachments the deleted messages linked drop them.
      ["uploads/uploads", "messagesRemoved", { ids: [11, 12] }],
      ["user/5", "messagesDeleted", { ids: [11, 12] }],
      ["user/9", "messagesDeleted", { ids: [11, 12] }],
    ]);
    let after = state;
    for (const f of d.facts!) after = channel.apply(after, f, dmRef);
    const again = await channel.handlers.removeMany!(after, { ids: [11, 12] }, ctx, admin);
    assert.deepEqual(again, { reply: { deleted: [] } });
  });

  test("sentMessages and publicChannelIds refuse non-administrator callers", async () => {
    const user = behaviors.user!;
    const uRef: ActorRef = { kind: "user", realm, key: "5" };
    const uState = { ...user.initial(uRef), created: true };
    await assert.rejects(
      async () => user.handlers.sentMessages!(uState, {}, { ...ctx, self: uRef }, member),
      (e: unknown) => e instanceof ZulipError,
    );
    assert.deepEqual((await user.handlers.sentMessages!(uState, {}, { ...ctx, self: uRef }, admin)).reply, {
      items: [],
    });
    const directory = behaviors.channelDirectory!;
    const dRef: ActorRef = { kind: "channelDirectory", realm, key: "directory" };
    const dState = directory.initial(dRef);
    await assert.rejects(
      async () => directory.handlers.publicChannelIds!(dState, {}, { ...ctx, self: dRef }, member),
      (e: unknown) => e instanceof ZulipError,
    );
    assert.deepEqual(
      (await directory.handlers.publicChannelIds!(dState, {}, { ...ctx, self: dRef }, null)).reply,
      {
        public: [],
      },
    );
  });
});
