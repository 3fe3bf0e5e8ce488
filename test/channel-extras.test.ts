// Black-box HTTP tests of the channel extras: POST / DELETE
// /default_streams (the default_streams event, realm_default_streams, new
// users joining the default channels), GET
// /users/{user_id}/subscriptions/{stream_id}, the combined PATCH
// /users/me/subscriptions and POST /streams/{id}/delete_topic (batches,
// history protection, delete_message audience); the main flow again in
// cluster mode.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  drain,
  eventsUntil,
  makeApi,
  newUser,
  openQueue,
  requireBinaries,
  startCluster,
  useEmbedded,
  type Creds,
  type Ev,
  type Member,
  type TestCluster,
} from "./support/index.ts";

const srv = useEmbedded();
let admin: Member;
let member: Member;
let guest: Member;

before(async () => {
  admin = await newUser(srv, 200);
  member = await newUser(srv, 400);
  guest = await newUser(srv, 600);
});

let seq = 0;
async function channel(subscribers: number[], params: Record<string, unknown> = {}): Promise<number> {
  const r = await srv.api("POST", "/channels/create", { name: `extras-${++seq}`, subscribers, ...params });
  assertSuccess(r);
  return r.body.id as number;
}

async function defaults(auth?: Creds): Promise<number[]> {
  const r = await srv.api("POST", "/register", { fetch_event_types: ["default_streams"] }, auth);
  assertSuccess(r);
  return r.body.realm_default_streams as number[];
}

async function send(streamId: number, topic: string, auth?: Creds): Promise<number> {
  const r = await srv.api("POST", "/messages", { type: "stream", to: streamId, topic, content: "hi" }, auth);
  assertSuccess(r);
  return r.body.id as number;
}

async function status(userId: number, streamId: number, auth?: Creds) {
  return srv.api("GET", `/users/${userId}/subscriptions/${streamId}`, {}, auth);
}

describe("default channels", () => {
  test("add and remove: event, register state, errors", async () => {
    const id = await channel([srv.owner.userId]);
    const q = await openQueue(srv, member, ["default_streams"]);
    const qg = await openQueue(srv, guest, ["default_streams"]);
    assertSuccess(await srv.api("POST", "/default_streams", { stream_id: id }));
    assert.ok((await defaults()).includes(id));
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.type === "default_streams"));
    const ev = evs.find((x: Ev) => x.type === "default_streams");
    assert.ok(ev.default_streams.includes(id));
    // Guests are never told the default channels.
    assert.deepEqual(await defaults(guest), []);
    assert.equal((await drain(srv, qg)).length, 0);
    // Adding again changes nothing and says nothing.
    assertSuccess(await srv.api("POST", "/default_streams", { stream_id: id }));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await drain(srv, q)).length, 0);

    assertSuccess(await srv.api("DELETE", "/default_streams", { stream_id: id }));
    assert.ok(!(await defaults()).includes(id));
    const gone = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.type === "default_streams"));
    assert.ok(!gone.find((x: Ev) => x.type === "default_streams").default_streams.includes(id));
    // Removing a channel that is not default succeeds (Zulip deletes no row).
    assertSuccess(await srv.api("DELETE", "/default_streams", { stream_id: id }));
  });

  test("PATCH /streams is_default_stream sends the same event, with ids", async () => {
    const id = await channel([srv.owner.userId]);
    const q = await openQueue(srv, member, ["default_streams"]);
    assertSuccess(await srv.api("PATCH", `/streams/${id}`, { is_default_stream: true }));
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.type === "default_streams"));
    assert.ok(evs.find((x: Ev) => x.type === "default_streams").default_streams.includes(id));
    assertSuccess(await srv.api("DELETE", "/default_streams", { stream_id: id }));
  });

  test("errors: role, unknown, private, archived, bad input", async () => {
    const id = await channel([srv.owner.userId]);
    assertError(
      await srv.api("POST", "/default_streams", { stream_id: id }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertError(
      await srv.api("DELETE", "/default_streams", { stream_id: id }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertError(await srv.api("POST", "/default_streams", { stream_id: 999999 }), "Invalid channel ID");
    assertError(await srv.api("DELETE", "/default_streams", { stream_id: 999999 }), "Invalid channel ID");
    const priv = await channel([srv.owner.userId], { invite_only: true });
    assertError(
      await srv.api("POST", "/default_streams", { stream_id: priv }),
      "Private channels cannot be made default.",
    );
    // A private channel the admin is not subscribed to is an invalid id to them.
    assertError(await srv.api("POST", "/default_streams", { stream_id: priv }, admin), "Invalid channel ID");
    const archived = await channel([srv.owner.userId]);
    assertSuccess(await srv.api("DELETE", `/streams/${archived}`));
    assertError(await srv.api("POST", "/default_streams", { stream_id: archived }), "Invalid channel ID");
    assertError(
      await srv.api("POST", "/default_streams", { stream_id: "abc" }),
      "stream_id is not valid JSON",
    );
    assertError(
      await srv.api("POST", "/default_streams", {}),
      "Missing 'stream_id' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("POST", "/default_streams", { stream_id: '"7"' }),
      "stream_id is not an integer",
    );
    assert.ok(!(await defaults()).includes(id));
    assert.ok(!(await defaults()).includes(priv));
  });

  test("a new user joins the default channels; subscribers hear of it", async () => {
    const id = await channel([srv.owner.userId]);
    const other = await channel([srv.owner.userId]);
    assertSuccess(await srv.api("POST", "/default_streams", { stream_id: id }));
    const q = await openQueue(srv, srv.owner, ["subscription"]);
    const u = await newUser(srv, 400);
    assert.equal((await status(u.userId, id)).body.is_subscribed, true);
    assert.equal((await status(u.userId, other)).body.is_subscribed, false);
    const subs = await srv.api("GET", "/users/me/subscriptions", {}, u);
    assert.deepEqual(
      (subs.body.subscriptions as Ev[]).map((s) => s.stream_id),
      [id],
    );
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.op === "peer_add"));
    assert.ok(
      evs.some((x: Ev) => x.op === "peer_add" && x.user_ids.includes(u.userId) && x.stream_ids.includes(id)),
    );
    // Bots join none.
    const bot = await srv.api("POST", "/bots", { full_name: "Default Bot", short_name: `defbot${seq}` });
    assertSuccess(bot);
    // (Bots are answered for since feature level 458.)
    assert.equal((await status(bot.body.user_id, id)).body.is_subscribed, false);
    assertSuccess(await srv.api("DELETE", "/default_streams", { stream_id: id }));
  });
});

describe("subscription status", () => {
  test("answers is_subscribed with Zulip's access rules", async () => {
    const pub = await channel([member.userId]);
    assertSuccess(await status(member.userId, pub, member));
    assert.equal((await status(member.userId, pub, member)).body.is_subscribed, true);
    assert.equal((await status(admin.userId, pub, member)).body.is_subscribed, false);
    const priv = await channel([srv.owner.userId], { invite_only: true });
    // Administrators see private channels; others get an invalid id.
    assert.equal((await status(srv.owner.userId, priv, admin)).body.is_subscribed, true);
    assertError(await status(srv.owner.userId, priv, member), "Invalid channel ID");
    // Guests see only their own channels.
    assertError(await status(member.userId, pub, guest), "Invalid channel ID");
    assertError(await status(member.userId, 999999, member), "Invalid channel ID");
    assertError(await status(999999, pub, member), "No such user");
    // Not digits: no such route.
    const bad = await srv.api("GET", `/users/abc/subscriptions/${pub}`);
    assert.equal(bad.status, 404);
  });
});

describe("PATCH /users/me/subscriptions", () => {
  test("adds and removes in one request", async () => {
    const a = await channel([srv.owner.userId]);
    const b = await channel([member.userId]);
    const nameA = (await srv.api("GET", `/streams/${a}`)).body.stream.name as string;
    const nameB = (await srv.api("GET", `/streams/${b}`)).body.stream.name as string;
    const q = await openQueue(srv, member, ["subscription"]);
    const r = await srv.api(
      "PATCH",
      "/users/me/subscriptions",
      { add: JSON.stringify([{ name: nameA }]), delete: JSON.stringify([nameB]) },
      member,
    );
    assertSuccess(r);
    assert.deepEqual(r.body.subscribed, { [String(member.userId)]: [nameA] });
    assert.deepEqual(r.body.already_subscribed, {});
    assert.deepEqual(r.body.removed, [nameB]);
    assert.deepEqual(r.body.not_removed, []);
    assert.equal(r.body.created, undefined);
    assert.equal((await status(member.userId, a, member)).body.is_subscribed, true);
    assert.equal((await status(member.userId, b, member)).body.is_subscribed, false);
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.op === "remove"));
    assert.ok(evs.some((x: Ev) => x.op === "add" && x.subscriptions[0].stream_id === a));
    assert.ok(evs.some((x: Ev) => x.op === "remove" && x.subscriptions[0].stream_id === b));
    // Only one side.
    const again = await srv.api(
      "PATCH",
      "/users/me/subscriptions",
      { add: JSON.stringify([{ name: nameA }]) },
      member,
    );
    assertSuccess(again);
    assert.deepEqual(again.body.already_subscribed, { [String(member.userId)]: [nameA] });
    assert.deepEqual(again.body.removed, []);
  });

  test("errors change nothing", async () => {
    const a = await channel([srv.owner.userId]);
    const nameA = (await srv.api("GET", `/streams/${a}`)).body.stream.name as string;
    assertError(
      await srv.api("PATCH", "/users/me/subscriptions", {}, member),
      'Nothing to do. Specify at least one of "add" or "delete".',
    );
    assertError(
      await srv.api("PATCH", "/users/me/subscriptions", { add: "[]", delete: "[]" }, member),
      'Nothing to do. Specify at least one of "add" or "delete".',
    );
    // The delete half fails: the add half is not kept.
    assertError(
      await srv.api(
        "PATCH",
        "/users/me/subscriptions",
        { add: JSON.stringify([{ name: nameA }]), delete: JSON.stringify(["no such channel here"]) },
        member,
      ),
      "Channel 'no such channel here' does not exist",
      "STREAM_DOES_NOT_EXIST",
    );
    assert.equal((await status(member.userId, a, member)).body.is_subscribed, false);
    assertError(
      await srv.api("PATCH", "/users/me/subscriptions", { add: "not json" }, member),
      "add is not valid JSON",
    );
    const weird = await srv.api(
      "PATCH",
      "/users/me/subscriptions",
      { add: JSON.stringify([{ __proto__: 1 }]) },
      member,
    );
    assert.equal(weird.body.result, "error");
    assert.ok(weird.status < 500);
  });
});

describe("delete_topic", () => {
  test("deletes the topic's messages and tells their holders", async () => {
    const id = await channel([srv.owner.userId, member.userId]);
    const ids = [await send(id, "Doomed"), await send(id, "doomed", member), await send(id, "kept")];
    const q = await openQueue(srv, member, ["delete_message"]);
    const r = await srv.api("POST", `/streams/${id}/delete_topic`, { topic_name: "DOOMED" });
    assertSuccess(r);
    assert.equal(r.body.complete, true);
    const evs = await eventsUntil(
      srv,
      q,
      (e) => e.flatMap((x: Ev) => x.message_ids ?? [x.message_id]).length >= 2,
    );
    assert.deepEqual(evs.flatMap((x: Ev) => x.message_ids ?? [x.message_id]).sort(), [ids[0], ids[1]].sort());
    const left = await srv.api("GET", "/messages", {
      anchor: "newest",
      num_before: 10,
      num_after: 0,
      narrow: JSON.stringify([{ operator: "channel", operand: id }]),
    });
    assert.deepEqual(
      (left.body.messages as Ev[]).map((m) => m.id),
      [ids[2]],
    );
    // An unknown topic: nothing to do, complete.
    assert.equal(
      (await srv.api("POST", `/streams/${id}/delete_topic`, { topic_name: "none" })).body.complete,
      true,
    );
  });

  test("more than one batch", async () => {
    const id = await channel([srv.owner.userId]);
    for (let i = 0; i < 105; i++) await send(id, "big");
    const r = await srv.api("POST", `/streams/${id}/delete_topic`, { topic_name: "big" });
    assertSuccess(r);
    assert.equal(r.body.complete, true);
    const topics = await srv.api("GET", `/users/me/${id}/topics`);
    assert.deepEqual(topics.body.topics, []);
  });

  test("protected history: only what the admin received, events to holders only", async () => {
    const id = await channel([member.userId], { invite_only: true, history_public_to_subscribers: false });
    const early = await send(id, "secret", member);
    // The admin joins after the first message: they never received it.
    const name = (await srv.api("GET", `/streams/${id}`)).body.stream.name as string;
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: JSON.stringify([{ name }]),
        principals: JSON.stringify([admin.userId]),
      }),
    );
    const late = await send(id, "secret", member);
    const q = await openQueue(srv, member, ["delete_message"]);
    const r = await srv.api("POST", `/streams/${id}/delete_topic`, { topic_name: "secret" }, admin);
    assertSuccess(r);
    assert.equal(r.body.complete, true);
    const evs = await eventsUntil(srv, q, (e) => e.length > 0);
    assert.deepEqual(
      evs.flatMap((x: Ev) => x.message_ids ?? [x.message_id]),
      [late],
    );
    const left = await srv.api(
      "GET",
      "/messages",
      {
        anchor: "newest",
        num_before: 10,
        num_after: 0,
        narrow: JSON.stringify([{ operator: "channel", operand: id }]),
      },
      member,
    );
    assert.deepEqual(
      (left.body.messages as Ev[]).map((m) => m.id),
      [early],
    );
  });

  test("errors", async () => {
    const id = await channel([srv.owner.userId, member.userId]);
    const m = await send(id, "stay");
    assertError(
      await srv.api("POST", `/streams/${id}/delete_topic`, { topic_name: "stay" }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertError(
      await srv.api("POST", "/streams/999999/delete_topic", { topic_name: "stay" }),
      "Invalid channel ID",
    );
    assertError(
      await srv.api("POST", `/streams/${id}/delete_topic`, {}),
      "Missing 'topic_name' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    const priv = await channel([member.userId], { invite_only: true });
    await send(priv, "x", member);
    assertError(
      await srv.api("POST", `/streams/${priv}/delete_topic`, { topic_name: "x" }, admin),
      "Invalid channel ID",
    );
    const archived = await channel([srv.owner.userId]);
    await send(archived, "old");
    assertSuccess(await srv.api("DELETE", `/streams/${archived}`));
    assertError(
      await srv.api("POST", `/streams/${archived}/delete_topic`, { topic_name: "old" }),
      "Invalid channel ID",
    );
    const got = await srv.api("GET", `/messages/${m}`);
    assertSuccess(got);
  });
});

describe("cluster", () => {
  let c: TestCluster;
  before(async () => {
    requireBinaries();
    c = await startCluster({ nodes: ["n1", "n2"] });
  });
  after(async () => {
    await c?.stop();
  });

  test("default channels, status, bulk update and topic deletion", async () => {
    const ch = await c.api("POST", "/channels/create", { name: "extras-cluster", subscribers: [] });
    assertSuccess(ch);
    const id = ch.body.id as number;
    assertSuccess(await c.api("POST", "/default_streams", { stream_id: id }));
    const email = "extras-new@example.com";
    const password = "pw-extras-new-x";
    const created = await c.api("POST", "/users", { email, password, full_name: "Extra New" });
    assertSuccess(created);
    const userId = created.body.user_id as number;
    const key = await c.api("POST", "/fetch_api_key", { username: email, password }, null);
    const u = makeApi(c.baseUrl, { email, apiKey: key.body.api_key as string });
    const st = await u("GET", `/users/${userId}/subscriptions/${id}`);
    assertSuccess(st);
    assert.equal(st.body.is_subscribed, true);
    const patch = await u("PATCH", "/users/me/subscriptions", { delete: JSON.stringify(["extras-cluster"]) });
    assertSuccess(patch);
    assert.deepEqual(patch.body.removed, ["extras-cluster"]);
    assertSuccess(await c.api("POST", "/messages", { type: "stream", to: id, topic: "t", content: "x" }));
    const del = await c.api("POST", `/streams/${id}/delete_topic`, { topic_name: "t" });
    assertSuccess(del);
    assert.equal(del.body.complete, true);
    const topics = await c.api("GET", `/users/me/${id}/topics`);
    assert.deepEqual(topics.body.topics, []);
    assertSuccess(await c.api("DELETE", "/default_streams", { stream_id: id }));
  });
});
