// Black-box tests of Zulip 11 API changes (feature levels 377-380) that
// the feature-level audit found missing (docs/feature-levels/373-496.md):
// peer_remove on deactivation (377, 428), archive/unarchive events and
// register `streams` under the archived_channels capability (378),
// PATCH /messages/{id} prev_content_sha256 (379), and register's
// is_moderator for administrators and owners (380).

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  requireBinaries,
  useCluster,
  useEmbedded,
  type Creds,
  type Ev,
  type Member,
  type Queue,
} from "./support/index.ts";

const srv = useEmbedded();

let seq = 0;
async function channel(subscribers: number[]): Promise<number> {
  const r = await srv.api("POST", "/channels/create", { name: `fl-c-${++seq}`, subscribers });
  assertSuccess(r);
  return r.body.id as number;
}

async function queue(auth: Creds, capabilities: Record<string, boolean> = {}): Promise<Queue> {
  const r = await srv.api(
    "POST",
    "/register",
    { event_types: ["stream", "subscription"], client_capabilities: capabilities },
    auth,
  );
  assertSuccess(r);
  return { id: r.body.queue_id, last: r.body.last_event_id, auth };
}

async function registerStreams(auth: Creds, capabilities: Record<string, boolean>): Promise<number[]> {
  const r = await srv.api(
    "POST",
    "/register",
    { fetch_event_types: ["stream"], client_capabilities: capabilities },
    auth,
  );
  assertSuccess(r);
  return (r.body.streams as { stream_id: number }[]).map((s) => s.stream_id);
}

const peerRemoves = (evs: Ev[]) => evs.filter((e) => e.type === "subscription" && e.op === "peer_remove");

describe("FL 377/428: deactivation sends peer_remove", () => {
  test("DELETE /users/{id}: subscribers hear the user left each channel, archived ones too", async () => {
    const watcher = await newUser(srv);
    const leaver = await newUser(srv);
    const open = await channel([watcher.userId, leaver.userId]);
    const archived = await channel([watcher.userId, leaver.userId]);
    const without = await channel([watcher.userId]);
    assertSuccess(await srv.api("DELETE", `/streams/${archived}`));
    const q = await queue(watcher);
    const r = await srv.api("DELETE", `/users/${leaver.userId}`);
    assertSuccess(r);
    // The realm's internal list of deactivated ids stays out of the reply.
    assert.deepEqual(Object.keys(r.body).sort(), ["msg", "result"]);
    const evs = await eventsUntil(srv, q, (e) => peerRemoves(e).length >= 2);
    const got = peerRemoves(evs)
      .map((e) => [e.stream_ids, e.user_ids])
      .sort((a, b) => a[0][0] - b[0][0]);
    assert.deepEqual(got, [
      [[open], [leaver.userId]],
      [[archived], [leaver.userId]],
    ]);
    assert.ok(!peerRemoves(evs).some((e) => e.stream_ids.includes(without)));
  });

  test("DELETE /users/me and DELETE /bots/{id} announce too", async () => {
    const watcher = await newUser(srv);
    const self = await newUser(srv);
    const ch = await channel([watcher.userId, self.userId]);
    const bot = await srv.api("POST", "/bots", {
      full_name: `Peer bot ${++seq}`,
      short_name: `peerbot${seq}`,
    });
    assertSuccess(bot);
    const botId = bot.body.user_id as number;
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: JSON.stringify([{ name: `fl-c-${seq}-b` }]),
        principals: JSON.stringify([watcher.userId, botId]),
      }),
    );
    const q = await queue(watcher);
    assertSuccess(await srv.api("DELETE", "/users/me", {}, self));
    assertSuccess(await srv.api("DELETE", `/bots/${botId}`));
    const evs = await eventsUntil(srv, q, (e) => peerRemoves(e).length >= 2);
    const users = peerRemoves(evs)
      .map((e) => e.user_ids[0])
      .sort((a: number, b: number) => a - b);
    assert.deepEqual(
      users,
      [self.userId, botId].sort((a, b) => a - b),
    );
    assert.ok(peerRemoves(evs).some((e) => e.stream_ids[0] === ch && e.user_ids[0] === self.userId));
  });

  test("peer_remove reaches only those who may see the subscriber list", async () => {
    const watcher = await newUser(srv);
    const leaver = await newUser(srv);
    const stranger = await newUser(srv);
    const priv = await srv.api("POST", "/channels/create", {
      name: `fl-c-priv-${++seq}`,
      subscribers: [watcher.userId, leaver.userId],
      invite_only: true,
    });
    assertSuccess(priv);
    const qs = await queue(stranger);
    const qw = await queue(watcher);
    assertSuccess(await srv.api("DELETE", `/users/${leaver.userId}`));
    const seen = await eventsUntil(srv, qw, (e) => peerRemoves(e).length >= 1);
    assert.equal(peerRemoves(seen)[0].stream_ids[0], priv.body.id);
    assert.deepEqual(peerRemoves(await drain(srv, qs)), []);
  });
});

describe("FL 378: archived_channels capability", () => {
  test("archive/unarchive: update events with the capability, delete/create without", async () => {
    const viewer: Member = await newUser(srv);
    const id = await channel([viewer.userId]);
    const modern = await queue(viewer, { archived_channels: true });
    const legacy = await queue(viewer);
    assertSuccess(await srv.api("DELETE", `/streams/${id}`));
    const m1 = await eventsUntil(srv, modern, (e) => e.some((x) => x.type === "stream"));
    const l1 = await eventsUntil(srv, legacy, (e) => e.some((x) => x.type === "stream"));
    const upd = m1.filter((e) => e.type === "stream");
    assert.equal(upd.length, 1);
    assert.equal(upd[0].op, "update");
    assert.equal(upd[0].stream_id, id);
    assert.equal(upd[0].property, "is_archived");
    assert.equal(upd[0].value, true);
    assert.ok(!("as_update" in upd[0]));
    const del = l1.filter((e) => e.type === "stream");
    assert.equal(del.length, 1);
    assert.equal(del[0].op, "delete");
    assert.deepEqual(del[0].stream_ids, [id]);
    assert.ok(!("as_update" in del[0]));

    // Register: archived channels in `streams` only for capable clients.
    assert.ok((await registerStreams(viewer, { archived_channels: true })).includes(id));
    assert.ok(!(await registerStreams(viewer, {})).includes(id));

    assertSuccess(await srv.api("PATCH", `/streams/${id}`, { is_archived: false }));
    const m2 = (await eventsUntil(srv, modern, (e) => e.some((x) => x.type === "stream"))).filter(
      (e) => e.type === "stream",
    );
    const l2 = (await eventsUntil(srv, legacy, (e) => e.some((x) => x.type === "stream"))).filter(
      (e) => e.type === "stream",
    );
    assert.deepEqual(
      m2.map((e) => [e.op, e.property, e.value, e.stream_id]),
      [["update", "is_archived", false, id]],
    );
    assert.equal(l2.length, 1);
    assert.equal(l2[0].op, "create");
    assert.equal(l2[0].streams[0].stream_id, id);
    assert.equal(l2[0].streams[0].is_archived, false);
    assert.ok(!("as_update" in l2[0]));
  });
});

describe("FL 379: PATCH /messages/{id} prev_content_sha256", () => {
  const sha = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");

  test("a stale hash is refused and changes nothing; the current one is accepted", async () => {
    const id = await channel([srv.owner.userId]);
    const sent = await srv.api("POST", "/messages", {
      type: "stream",
      to: id,
      topic: "t",
      content: "first ü",
    });
    assertSuccess(sent);
    const mid = sent.body.id as number;
    const stale = await srv.api("PATCH", `/messages/${mid}`, {
      content: "second",
      prev_content_sha256: sha("something else"),
    });
    assertError(
      stale,
      "'prev_content_sha256' value does not match the expected value.",
      "EXPECTATION_MISMATCH",
    );
    assert.equal(stale.body.field_name, "prev_content_sha256");
    // Topic-only edits are checked too.
    assertError(
      await srv.api("PATCH", `/messages/${mid}`, { topic: "moved", prev_content_sha256: "00" }),
      "'prev_content_sha256' value does not match the expected value.",
      "EXPECTATION_MISMATCH",
    );
    const still = await srv.api("GET", `/messages/${mid}`, { apply_markdown: false });
    assert.equal(still.body.message.content, "first ü");
    assert.equal(still.body.message.subject, "t");
    assertSuccess(
      await srv.api("PATCH", `/messages/${mid}`, { content: "second", prev_content_sha256: sha("first ü") }),
    );
    const now = await srv.api("GET", `/messages/${mid}`, { apply_markdown: false });
    assert.equal(now.body.message.content, "second");
  });

  test("moving to another channel checks the hash as well", async () => {
    const a = await channel([srv.owner.userId]);
    const b = await channel([srv.owner.userId]);
    const sent = await srv.api("POST", "/messages", {
      type: "stream",
      to: a,
      topic: "t",
      content: "move me",
    });
    assertSuccess(sent);
    assertError(
      await srv.api("PATCH", `/messages/${sent.body.id}`, { stream_id: b, prev_content_sha256: sha("nope") }),
      "'prev_content_sha256' value does not match the expected value.",
      "EXPECTATION_MISMATCH",
    );
    const m = await srv.api("GET", `/messages/${sent.body.id}`);
    assert.equal(m.body.message.stream_id, a);
  });
});

describe("FL 380: register is_moderator", () => {
  test("true for moderators, administrators and owners; false for members and guests", async () => {
    const cases: [number | "owner", boolean][] = [
      ["owner", true],
      [200, true],
      [300, true],
      [400, false],
      [600, false],
    ];
    for (const [role, expected] of cases) {
      const auth = role === "owner" ? srv.owner : await newUser(srv, role);
      const r = await srv.api("POST", "/register", { fetch_event_types: ["realm_user"] }, auth);
      assertSuccess(r);
      assert.equal(r.body.is_moderator, expected, `role ${role}`);
    }
  });
});

describe("FL 480: archived channels stay readable", () => {
  test("GET /streams/{id}, its members and its topics answer for an archived channel", async () => {
    const id = await channel([srv.owner.userId]);
    assertSuccess(
      await srv.api("POST", "/messages", { type: "stream", to: id, topic: "kept", content: "x" }),
    );
    assertSuccess(await srv.api("DELETE", `/streams/${id}`));
    const s = await srv.api("GET", `/streams/${id}`);
    assertSuccess(s);
    assert.equal(s.body.stream.is_archived, true);
    const m = await srv.api("GET", `/streams/${id}/members`);
    assertSuccess(m);
    assert.deepEqual(m.body.subscribers, [srv.owner.userId]);
    const t = await srv.api("GET", `/users/me/${id}/topics`);
    assertSuccess(t);
    assert.deepEqual(
      (t.body.topics as { name: string }[]).map((x) => x.name),
      ["kept"],
    );
  });
});

const skipCluster = requireBinaries("nats-server", "redis-server");

describe("FL 377/378 - cluster", { skip: skipCluster }, () => {
  const c = useCluster();

  test("deactivation peer_remove and the archived_channels update cross the gateway", async () => {
    const watcher = await newUser(c);
    const leaver = await newUser(c);
    const made = await c.api("POST", "/channels/create", {
      name: "fl-cluster",
      subscribers: [watcher.userId, leaver.userId],
    });
    assertSuccess(made);
    const id = made.body.id as number;
    const reg = await c.api(
      "POST",
      "/register",
      { event_types: ["stream", "subscription"], client_capabilities: { archived_channels: true } },
      watcher,
    );
    assertSuccess(reg);
    const q: Queue = { id: reg.body.queue_id, last: reg.body.last_event_id, auth: watcher };
    assertSuccess(await c.api("DELETE", `/users/${leaver.userId}`));
    assertSuccess(await c.api("DELETE", `/streams/${id}`));
    const evs = await eventsUntil(
      c,
      q,
      (e) => peerRemoves(e).length >= 1 && e.some((x) => x.type === "stream"),
    );
    assert.deepEqual(
      peerRemoves(evs).map((e) => [e.stream_ids, e.user_ids]),
      [[[id], [leaver.userId]]],
    );
    const upd = evs.filter((e) => e.type === "stream");
    assert.deepEqual(
      upd.map((e) => [e.op, e.property, e.value]),
      [["update", "is_archived", true]],
    );
  });
});
