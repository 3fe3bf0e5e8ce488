// Black-box tests of the channel rows of the feature-level audit
// (docs/feature-levels/201-372.md, 373-496.md) closed on the `chan` branch.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE,
  subscriberFields,
} from "../actors/channel-directory/format.ts";
import { initialDir, type Channel, type DirState } from "../actors/channel-directory/state.ts";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { startEmbedded, type EmbeddedHandle } from "./support/embedded.ts";
import { requireBinaries } from "./support/services.ts";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  type ApiHolder,
  type Queue,
  type Ev,
} from "./support/zulip-asserts.ts";

let srv: EmbeddedHandle;

before(async () => {
  srv = await startEmbedded();
});

after(async () => {
  await srv?.stop();
});

let seq = 0;
async function channel(
  on: ApiHolder,
  subscribers: number[],
  extra: Record<string, unknown> = {},
  auth?: { email: string; apiKey: string },
): Promise<number> {
  const r = await on.api(
    "POST",
    "/channels/create",
    { name: `fl-chan-${process.pid}-${++seq}`, subscribers, ...extra },
    auth,
  );
  assertSuccess(r);
  return r.body.id as number;
}

async function send(on: ApiHolder, to: number, topic: string, auth?: { email: string; apiKey: string }) {
  const r = await on.api("POST", "/messages", { type: "stream", to, topic, content: "hello" }, auth);
  assertSuccess(r);
  return r.body.id as number;
}

/** A queue of delete_message events in the bulk form (message_ids). */
async function deleteQueue(auth: { email: string; apiKey: string }): Promise<Queue> {
  const r = await srv.api(
    "POST",
    "/register",
    { event_types: ["delete_message"], client_capabilities: { bulk_message_deletion: true } },
    auth,
  );
  assertSuccess(r);
  return { id: r.body.queue_id, last: r.body.last_event_id, auth };
}

const deletes = (evs: Ev[]) => evs.filter((e) => e.type === "delete_message");

describe("FL 440: GET /users/{user_id}/channels", () => {
  test("FL 440: lists the channels a user or bot is subscribed to, as the caller may see them", async () => {
    const target = await newUser(srv);
    const viewer = await newUser(srv);
    const open = await channel(srv, [target.userId]);
    const secret = await channel(srv, [target.userId], { invite_only: true });
    const shared = await channel(srv, [target.userId, viewer.userId], { invite_only: true });
    await channel(srv, [viewer.userId]);

    const asAdmin = await srv.api("GET", `/users/${target.userId}/channels`);
    assertSuccess(asAdmin);
    assert.deepEqual(asAdmin.body.subscribed_channel_ids, [open, secret, shared]);

    // A member sees public channels and private ones they are subscribed to.
    const asViewer = await srv.api("GET", `/users/${target.userId}/channels`, {}, viewer);
    assertSuccess(asViewer);
    assert.deepEqual(asViewer.body.subscribed_channel_ids, [open, shared]);

    // Bots too (FL 458).
    const bot = await srv.api("POST", "/bots", {
      full_name: "Chan Bot",
      short_name: `chanbot${process.pid}`,
    });
    assertSuccess(bot);
    const botId = bot.body.user_id as number;
    const botChan = await channel(srv, [botId]);
    const r = await srv.api("GET", `/users/${botId}/channels`, {}, viewer);
    assertSuccess(r);
    assert.deepEqual(r.body.subscribed_channel_ids, [botChan]);
  });

  test("FL 440: unknown users and bad ids are refused", async () => {
    assertError(await srv.api("GET", "/users/987654/channels"), "No such user");
    const bad = await srv.api("GET", "/users/abc/channels");
    assert.equal(bad.status, 404);
    const anon = await srv.api("GET", `/users/1/channels`, {}, null);
    assert.equal(anon.status, 401);
  });
});

describe("FL 362: archived channels", () => {
  test("FL 362: subscriptions in archived channels can be added, edited and removed", async () => {
    const member = await newUser(srv);
    const other = await newUser(srv);
    const id = await channel(srv, [member.userId]);
    const name = (await srv.api("GET", `/streams/${id}`)).body.stream.name as string;
    assertSuccess(await srv.api("DELETE", `/streams/${id}`));

    const props = await srv.api(
      "POST",
      "/users/me/subscriptions/properties",
      { subscription_data: [{ stream_id: id, property: "color", value: "#123456" }] },
      member,
    );
    assertSuccess(props);
    const reg = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: ["subscription"], client_capabilities: { archived_channels: true } },
      member,
    );
    assertSuccess(reg);
    const mine = (reg.body.subscriptions as { stream_id: number; color: string }[]).find(
      (x) => x.stream_id === id,
    );
    assert.equal(mine?.color, "#123456");

    const add = await srv.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [other.userId],
    });
    assertSuccess(add);
    assert.deepEqual(add.body.subscribed, { [String(other.userId)]: [name] });
    const listed = await srv.api("GET", `/users/${other.userId}/channels`);
    assert.ok((listed.body.subscribed_channel_ids as number[]).includes(id));

    const del = await srv.api("DELETE", "/users/me/subscriptions", { subscriptions: [name] }, member);
    assertSuccess(del);
    assert.deepEqual(del.body.removed, [name]);
  });

  test("FL 362: an archived channel's privacy can change, its other settings cannot", async () => {
    const id = await channel(srv, [srv.owner.userId]);
    assertSuccess(await srv.api("DELETE", `/streams/${id}`));
    assertSuccess(await srv.api("PATCH", `/streams/${id}`, { is_private: true }));
    const got = await srv.api("GET", `/streams/${id}`);
    assertSuccess(got);
    assert.equal(got.body.stream.invite_only, true);
    assert.equal(got.body.stream.is_archived, true);
    assertError(
      await srv.api("PATCH", `/streams/${id}`, { new_name: `renamed-${id}` }),
      "Invalid channel ID",
    );
    assertError(
      await srv.api("PATCH", `/streams/${id}`, { is_private: false, description: "x" }),
      "Invalid channel ID",
    );
    assert.equal((await srv.api("GET", `/streams/${id}`)).body.stream.invite_only, true);
  });
});

describe("FL 457: delete_message lists only accessible ids", () => {
  test("FL 457: a topic deletion in a protected-history channel tells each user of the messages they received", async () => {
    const early = await newUser(srv);
    const late = await newUser(srv);
    const outsider = await newUser(srv);
    const id = await channel(srv, [srv.owner.userId, early.userId], { invite_only: true });
    const name = (await srv.api("GET", `/streams/${id}`)).body.stream.name as string;
    const m1 = await send(srv, id, "doomed", early);
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: [late.userId],
      }),
    );
    const m2 = await send(srv, id, "doomed", early);
    const qEarly = await deleteQueue(early);
    const qLate = await deleteQueue(late);
    const qOut = await deleteQueue(outsider);
    const r = await srv.api("POST", `/streams/${id}/delete_topic`, { topic_name: "doomed" });
    assertSuccess(r);
    const evEarly = deletes(await eventsUntil(srv, qEarly, (e) => deletes(e).length > 0));
    const evLate = deletes(await eventsUntil(srv, qLate, (e) => deletes(e).length > 0));
    assert.deepEqual(evEarly.flatMap((e) => e.message_ids).sort(), [m1, m2].sort());
    assert.deepEqual(
      evLate.flatMap((e) => e.message_ids),
      [m2],
    );
    assert.deepEqual(deletes(await eventsUntil(srv, qOut, () => false)), []);
  });
});

describe("FL 489: narrow channels:archived", () => {
  test("FL 489: channels:archived matches messages of archived channels, negated the others", async () => {
    const u = await newUser(srv);
    const gone = await channel(srv, [u.userId]);
    const live = await channel(srv, [u.userId]);
    const inGone = await send(srv, gone, "t", u);
    const inLive = await send(srv, live, "t", u);
    assertSuccess(await srv.api("DELETE", `/streams/${gone}`));
    const get = async (negated: boolean) => {
      const r = await srv.api(
        "GET",
        "/messages",
        {
          anchor: "newest",
          num_before: 100,
          num_after: 0,
          narrow: JSON.stringify([{ operator: "channels", operand: "archived", negated }]),
        },
        u,
      );
      assertSuccess(r);
      return (r.body.messages as { id: number }[]).map((m) => m.id);
    };
    const archived = await get(false);
    assert.ok(archived.includes(inGone));
    assert.ok(!archived.includes(inLive));
    const others = await get(true);
    assert.ok(others.includes(inLive));
    assert.ok(!others.includes(inGone));
    const bad = await srv.api(
      "GET",
      "/messages",
      {
        anchor: "newest",
        num_before: 1,
        num_after: 0,
        narrow: JSON.stringify([{ operator: "channels", operand: "archive" }]),
      },
      u,
    );
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, "BAD_NARROW");
  });
});

describe("FL 412: include_subscribers=partial", () => {
  test("FL 412: GET /users/me/subscriptions and register take partial; small channels list every subscriber", async () => {
    const u = await newUser(srv);
    const other = await newUser(srv);
    const id = await channel(srv, [u.userId, other.userId]);
    const r = await srv.api("GET", "/users/me/subscriptions", { include_subscribers: "partial" }, u);
    assertSuccess(r);
    const sub = (r.body.subscriptions as Record<string, unknown>[]).find((x) => x.stream_id === id)!;
    assert.deepEqual(
      sub.subscribers,
      [u.userId, other.userId].sort((a, b) => a - b),
    );
    assert.equal(sub.partial_subscribers, undefined);
    const reg = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: ["subscription"], include_subscribers: "partial" },
      u,
    );
    assertSuccess(reg);
    const regSub = (reg.body.subscriptions as Record<string, unknown>[]).find((x) => x.stream_id === id)!;
    assert.deepEqual(
      regSub.subscribers,
      [u.userId, other.userId].sort((a, b) => a - b),
    );
    assertError(
      await srv.api("GET", "/users/me/subscriptions", { include_subscribers: "some" }, u),
      "include_subscribers is not valid JSON",
    );
  });

  test("FL 412: channels from MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE on answer partial_subscribers", () => {
    const state: DirState = initialDir({ kind: "channel", realm: 1, key: "directory" });
    const ch = { id: 7 } as Channel;
    state.subs["7"] = {};
    for (let i = 1; i <= MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE; i++)
      state.subs["7"][String(i)] = { active: true } as DirState["subs"][string][string];
    const partial = subscriberFields(state, ch, "partial");
    assert.equal((partial.partial_subscribers as number[]).length, MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE);
    assert.equal(partial.subscribers, undefined);
    assert.equal((subscriberFields(state, ch, true).subscribers as number[]).length, 1000);
    assert.deepEqual(subscriberFields(state, ch, false), {});
  });
});

describe("FL 349: metadata access through group settings", () => {
  test("FL 349: members of a private channel's group settings see it, its updates and never_subscribed", async () => {
    const admin = await newUser(srv);
    const subscriber = await newUser(srv);
    const outsider = await newUser(srv);
    const g = await srv.api("POST", "/user_groups/create", {
      name: `fl-chan-g-${process.pid}`,
      description: "",
      members: [subscriber.userId],
    });
    assertSuccess(g);
    const groupId = g.body.group_id as number;
    const id = await channel(srv, [srv.owner.userId], {
      invite_only: true,
      can_administer_channel_group: JSON.stringify({ direct_members: [admin.userId], direct_subgroups: [] }),
      can_subscribe_group: groupId,
    });
    for (const who of [admin, subscriber]) {
      const r = await srv.api("GET", `/streams/${id}`, {}, who);
      assertSuccess(r);
      assert.equal(r.body.stream.stream_id, id);
      const reg = await srv.api("POST", "/register", { fetch_event_types: ["subscription"] }, who);
      assertSuccess(reg);
      assert.ok((reg.body.never_subscribed as { stream_id: number }[]).some((x) => x.stream_id === id));
    }
    assertError(await srv.api("GET", `/streams/${id}`, {}, outsider), "Invalid channel ID");

    const qAdmin = await openQueue(srv, admin, ["stream"]);
    const qOut = await openQueue(srv, outsider, ["stream"]);
    // The channel administrator may now administer it unsubscribed.
    assertSuccess(await srv.api("PATCH", `/streams/${id}`, { description: "via group" }, admin));
    const evs = await eventsUntil(srv, qAdmin, (e) =>
      e.some((x) => x.type === "stream" && x.op === "update"),
    );
    assert.ok(evs.some((e) => e.type === "stream" && e.op === "update" && e.stream_id === id));
    assert.deepEqual(
      (await eventsUntil(srv, qOut, () => false)).filter((e) => e.stream_id === id),
      [],
    );
  });
});

describe("FL 354: content access through group settings", () => {
  test("FL 354: members of can_subscribe_group / can_add_subscribers_group read, send, react and type unsubscribed", async () => {
    const viaSubscribe = await newUser(srv);
    const viaAdd = await newUser(srv);
    const outsider = await newUser(srv);
    const g = await srv.api("POST", "/user_groups/create", {
      name: `fl-chan-c-${process.pid}`,
      description: "",
      members: [viaSubscribe.userId],
    });
    assertSuccess(g);
    const id = await channel(srv, [srv.owner.userId], {
      invite_only: true,
      history_public_to_subscribers: true,
      can_subscribe_group: g.body.group_id as number,
      can_add_subscribers_group: JSON.stringify({ direct_members: [viaAdd.userId], direct_subgroups: [] }),
    });
    const m = await send(srv, id, "t");
    const read = (who: { email: string; apiKey: string }) =>
      srv.api(
        "GET",
        "/messages",
        {
          anchor: "newest",
          num_before: 10,
          num_after: 0,
          narrow: JSON.stringify([{ operator: "channel", operand: id }]),
        },
        who,
      );
    for (const who of [viaSubscribe, viaAdd]) {
      const r = await read(who);
      assertSuccess(r);
      assert.ok((r.body.messages as { id: number }[]).some((x) => x.id === m));
      await send(srv, id, "t", who);
      assertSuccess(await srv.api("POST", `/messages/${m}/reactions`, { emoji_name: "smile" }, who));
      assertSuccess(
        await srv.api("POST", "/typing", { type: "stream", stream_id: id, topic: "t", op: "start" }, who),
      );
    }
    assertError(
      await srv.api("POST", "/typing", { type: "stream", stream_id: id, topic: "t", op: "start" }, outsider),
      "Invalid channel ID",
    );
    const denied = await read(outsider);
    assert.equal(denied.status, 400);
    assertError(
      await srv.api("POST", "/messages", { type: "stream", to: id, topic: "t", content: "no" }, outsider),
      `Not authorized to send to channel '${(await srv.api("GET", `/streams/${id}`)).body.stream.name as string}'`,
    );
    assertError(
      await srv.api("POST", `/messages/${m}/reactions`, { emoji_name: "smile" }, outsider),
      "Invalid message(s)",
    );
  });
});

const skipCluster = requireBinaries("nats-server", "redis-server");

describe("FL chan - cluster", { skip: skipCluster }, () => {
  let c: TestCluster;
  before(async () => {
    if (!skipCluster) c = await startCluster();
  });
  after(async () => {
    await c?.stop();
  });

  test("FL 440: GET /users/{id}/channels through the gateway", async () => {
    const u = await newUser(c);
    const id = await channel(c, [u.userId]);
    const r = await c.api("GET", `/users/${u.userId}/channels`, {}, u);
    assertSuccess(r);
    assert.deepEqual(r.body.subscribed_channel_ids, [id]);
  });

  test("FL 349/354/412/489: group access, partial subscribers and channels:archived through the gateway", async () => {
    const viaGroup = await newUser(c);
    const ownerId = (await c.api("GET", "/users/me")).body.user_id as number;
    const made = await c.api("POST", "/channels/create", {
      name: `fl-chan-cluster-${process.pid}`,
      subscribers: [ownerId],
      invite_only: true,
      history_public_to_subscribers: true,
      can_subscribe_group: JSON.stringify({ direct_members: [viaGroup.userId], direct_subgroups: [] }),
    });
    assertSuccess(made);
    const id = made.body.id as number;
    const m = await send(c, id, "t");
    assertSuccess(await c.api("GET", `/streams/${id}`, {}, viaGroup));
    const read = await c.api(
      "GET",
      "/messages",
      {
        anchor: "newest",
        num_before: 5,
        num_after: 0,
        narrow: JSON.stringify([{ operator: "channel", operand: id }]),
      },
      viaGroup,
    );
    assertSuccess(read);
    assert.ok((read.body.messages as { id: number }[]).some((x) => x.id === m));
    const subs = await c.api("GET", "/users/me/subscriptions", { include_subscribers: "partial" });
    assertSuccess(subs);
    assert.deepEqual(
      (subs.body.subscriptions as { stream_id: number; subscribers: number[] }[]).find(
        (x) => x.stream_id === id,
      )?.subscribers,
      [ownerId],
    );
    assertSuccess(await c.api("DELETE", `/streams/${id}`));
    const archived = await c.api("GET", "/messages", {
      anchor: "newest",
      num_before: 5,
      num_after: 0,
      narrow: JSON.stringify([{ operator: "channels", operand: "archived" }]),
    });
    assertSuccess(archived);
    assert.ok((archived.body.messages as { id: number }[]).some((x) => x.id === m));
  });
});
