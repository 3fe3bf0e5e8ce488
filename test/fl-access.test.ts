// Restricted user access for guests (docs/feature-levels/201-372.md, levels
// 225, 232 and 314): with can_access_all_users_group set to role:members, a
// guest sees only the users it shares a channel or a DM conversation with,
// and bots; everyone else sees everyone.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  openQueue,
  startEmbedded,
  useCluster,
  type ApiHolder,
  type ApiResult,
  type Creds,
  type EmbeddedHandle,
  type Ev,
  type Member,
} from "./support/index.ts";

const MEMBERS = 6;
const EVERYONE = 7;

let srv: EmbeddedHandle;
let guest: Member;
let peer: Member;
let stranger: Member;
let dmPeer: Member;
let botId: number;
let seq = 0;

async function channel(api: ApiHolder, subscribers: number[]): Promise<number> {
  const r = await api.api("POST", "/channels/create", {
    name: `access-${process.pid}-${++seq}`,
    subscribers: JSON.stringify(subscribers),
  });
  assertSuccess(r);
  return r.body.id as number;
}

async function restrict(api: ApiHolder, group: number): Promise<void> {
  const r = await api.api("PATCH", "/realm", { can_access_all_users_group: JSON.stringify({ new: group }) });
  assertSuccess(r);
}

function ids(r: ApiResult): number[] {
  assertSuccess(r);
  return (r.body.members as { user_id: number }[]).map((m) => m.user_id);
}

before(async () => {
  srv = await startEmbedded();
  guest = await newUser(srv, 600, "Guest One");
  peer = await newUser(srv, 400, "Peer One");
  stranger = await newUser(srv, 400, "Stranger One");
  dmPeer = await newUser(srv, 400, "DM Peer");
  const b = await srv.api("POST", "/bots", { full_name: "Access Bot", short_name: "accessbot" });
  assertSuccess(b);
  botId = b.body.user_id as number;
  await channel(srv, [guest.userId, peer.userId]);
  // A DM from a member who shares no channel with the guest.
  assertSuccess(
    await srv.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify([guest.userId]), content: "hello guest" },
      dmPeer,
    ),
  );
  await restrict(srv, MEMBERS);
});

after(async () => {
  await srv?.stop();
});

describe("FL 225: a restricted guest sees only accessible users", () => {
  test("GET /users lists the guest, channel peers, DM peers and bots only", async () => {
    const seen = ids(await srv.api("GET", "/users", {}, guest));
    assert.ok(seen.includes(guest.userId));
    assert.ok(seen.includes(peer.userId));
    assert.ok(seen.includes(dmPeer.userId));
    assert.ok(seen.includes(botId));
    assert.ok(!seen.includes(stranger.userId));
    assert.ok(!seen.includes(srv.owner.userId));
    // user_ids naming an inaccessible user: left out, as Zulip's get_user_dicts_in_realm.
    const some = ids(
      await srv.api("GET", "/users", { user_ids: JSON.stringify([peer.userId, stranger.userId]) }, guest),
    );
    assert.deepEqual(some, [peer.userId]);
  });

  test("members still see everyone", async () => {
    const seen = ids(await srv.api("GET", "/users", {}, peer));
    for (const u of [guest, stranger, dmPeer, srv.owner]) assert.ok(seen.includes(u.userId));
  });

  test("GET /users/{id} and /users/{email} refuse an inaccessible user", async () => {
    assertError(await srv.api("GET", `/users/${stranger.userId}`, {}, guest), "Insufficient permission");
    assertError(await srv.api("GET", `/users/${stranger.email}`, {}, guest), "Insufficient permission");
    const ok = await srv.api("GET", `/users/${peer.userId}`, {}, guest);
    assertSuccess(ok);
    assert.equal(ok.body.user.full_name, "Peer One");
    assertSuccess(await srv.api("GET", `/users/${botId}`, {}, guest));
    assertSuccess(await srv.api("GET", `/users/${dmPeer.userId}`, {}, guest));
    // Unknown ids keep their own error.
    assertError(await srv.api("GET", "/users/999999", {}, guest), "No such user");
  });
});

describe("FL 232: user_list_incomplete", () => {
  test("register without it gets 'Unknown user' placeholders, with it none", async () => {
    const full = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: JSON.stringify(["realm_user"]) },
      guest,
    );
    assertSuccess(full);
    const users = full.body.realm_users as Record<string, unknown>[];
    const unknown = users.find((u) => u.user_id === stranger.userId);
    assert.ok(unknown, "the stranger appears as a placeholder");
    assert.equal(unknown.full_name, "Unknown user");
    assert.equal(unknown.role, 400);
    assert.equal(unknown.is_guest, false);
    assert.equal(unknown.delivery_email, null);
    assert.match(String(unknown.email), new RegExp(`^user${stranger.userId}@`));
    assert.equal(unknown.date_joined, "1970-01-01T00:00:00+00:00");
    assert.equal(users.find((u) => u.user_id === peer.userId)?.full_name, "Peer One");
    assert.ok(!JSON.stringify(full.body).includes("Stranger One"), "the stranger's name does not leak");

    const incomplete = await srv.api(
      "POST",
      "/register",
      {
        fetch_event_types: JSON.stringify(["realm_user"]),
        client_capabilities: JSON.stringify({ user_list_incomplete: true }),
      },
      guest,
    );
    assertSuccess(incomplete);
    const listed = (incomplete.body.realm_users as { user_id: number }[]).map((u) => u.user_id);
    assert.ok(!listed.includes(stranger.userId));
    assert.ok(listed.includes(peer.userId));
  });
});

describe("FL 314: the setting takes role:everyone back", () => {
  test("with role:everyone the guest sees everyone again", async () => {
    await restrict(srv, EVERYONE);
    try {
      const seen = ids(await srv.api("GET", "/users", {}, guest));
      assert.ok(seen.includes(stranger.userId));
      assertSuccess(await srv.api("GET", `/users/${stranger.userId}`, {}, guest));
    } finally {
      await restrict(srv, MEMBERS);
    }
  });
});

describe("FL 228: realm_user add/remove when a guest gains or loses access", () => {
  test("subscribing to a shared channel adds the new peers, unsubscribing removes them", async () => {
    const other = await newUser(srv, 400, "Later Peer");
    const name = `access-${process.pid}-${++seq}`;
    assertSuccess(
      await srv.api("POST", "/channels/create", { name, subscribers: JSON.stringify([other.userId]) }),
    );
    const q = await openQueue(srv, guest, ["realm_user"]);
    const qm = await openQueue(srv, peer, ["realm_user"]);
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: JSON.stringify([{ name }]),
        principals: JSON.stringify([guest.userId]),
      }),
    );
    const added = await eventsUntil(srv, q, (evs) => evs.some((e) => e.op === "add"));
    const add = added.find((e) => e.op === "add" && e.person.user_id === other.userId);
    assert.ok(add, "the guest hears of the new peer");
    assert.equal(add.person.full_name, "Later Peer");
    assert.equal(
      added.filter((e) => e.op === "add" && e.person.user_id === srv.owner.userId).length,
      0,
      "no add for a user the guest cannot access",
    );
    assertSuccess(await srv.api("GET", `/users/${other.userId}`, {}, guest));

    assertSuccess(
      await srv.api("DELETE", "/users/me/subscriptions", { subscriptions: JSON.stringify([name]) }, guest),
    );
    const removed = await eventsUntil(srv, q, (evs) => evs.some((e) => e.op === "remove"));
    const rm = removed.find((e) => e.op === "remove");
    assert.deepEqual(rm.person, { user_id: other.userId, full_name: "Unknown user" });
    assertError(await srv.api("GET", `/users/${other.userId}`, {}, guest), "Insufficient permission");
    // Members, who see everyone, get neither.
    assert.equal((await drain(srv, qm)).filter((e) => e.op === "add" || e.op === "remove").length, 0);
  });
});

describe("FL 228/303: events about a user reach only those who may access them", () => {
  test("a rename reaches a guest sharing a channel, not a guest sharing none", async () => {
    const lonely = await newUser(srv, 600, "Lonely Guest");
    const qShared = await openQueue(srv, guest, ["realm_user"]);
    const qLonely = await openQueue(srv, lonely, ["realm_user"]);
    const qMember = await openQueue(srv, stranger, ["realm_user"]);
    assertSuccess(await srv.api("PATCH", `/users/${peer.userId}`, { full_name: "Peer Renamed" }));
    const shared = await eventsUntil(srv, qShared, (evs) => evs.some((e) => e.op === "update"));
    assert.ok(shared.some((e) => e.op === "update" && e.person.full_name === "Peer Renamed"));
    const member = await eventsUntil(srv, qMember, (evs) => evs.some((e) => e.op === "update"));
    assert.ok(member.some((e) => e.op === "update" && e.person.user_id === peer.userId));
    assert.equal((await drain(srv, qLonely)).filter((e) => e.op === "update").length, 0);
  });

  test("a user_status change reaches a guest sharing a channel, not a guest sharing none", async () => {
    const lonely = await newUser(srv, 600, "Lonely Status Guest");
    const qShared = await openQueue(srv, guest, ["user_status"]);
    const qLonely = await openQueue(srv, lonely, ["user_status"]);
    assertSuccess(await srv.api("POST", "/users/me/status", { status_text: "on leave" }, peer));
    const shared = await eventsUntil(srv, qShared, (evs) => evs.some((e) => e.type === "user_status"));
    assert.ok(shared.some((e) => e.type === "user_status" && e.user_id === peer.userId));
    assert.equal((await drain(srv, qLonely)).filter((e) => e.type === "user_status").length, 0);
  });

  test("a user's own name change (PATCH /settings) skips a guest sharing nothing", async () => {
    const lonely = await newUser(srv, 600, "Lonely Settings Guest");
    const qShared = await openQueue(srv, guest, ["realm_user"]);
    const qLonely = await openQueue(srv, lonely, ["realm_user"]);
    assertSuccess(await srv.api("PATCH", "/settings", { full_name: "Peer Self Renamed" }, peer));
    const shared = await eventsUntil(srv, qShared, (evs) => evs.some((e) => e.op === "update"));
    assert.ok(shared.some((e) => e.op === "update" && e.person.full_name === "Peer Self Renamed"));
    assert.equal((await drain(srv, qLonely)).filter((e) => e.op === "update").length, 0);
  });

  test("a DM partner's rename reaches the guest; leaving a shared channel removes no DM partner", async () => {
    const q = await openQueue(srv, guest, ["realm_user"]);
    // dmPeer shares no channel with the guest, only a DM (before()).
    assertSuccess(await srv.api("PATCH", `/users/${dmPeer.userId}`, { full_name: "DM Peer Renamed" }));
    const renamed = (e: Ev) => e.op === "update" && e.person.full_name === "DM Peer Renamed";
    assert.ok((await eventsUntil(srv, q, (evs) => evs.some(renamed))).some(renamed));
    // Now share a channel with dmPeer and leave it: dmPeer stays accessible (DM), a
    // channel-only peer is removed.
    const only = await newUser(srv, 400, "Channel Only Peer");
    const ch = await channel(srv, [guest.userId, dmPeer.userId, only.userId]);
    const name = (await srv.api("GET", `/streams/${ch}`)).body.stream.name as string;
    await eventsUntil(srv, q, (evs) => evs.some((e) => e.op === "add" && e.person.user_id === only.userId));
    assertSuccess(
      await srv.api("DELETE", "/users/me/subscriptions", { subscriptions: JSON.stringify([name]) }, guest),
    );
    const gone = (e: Ev) => e.op === "remove" && e.person.user_id === only.userId;
    const evs = await eventsUntil(srv, q, (all) => all.some(gone));
    assert.ok(evs.some(gone));
    assert.ok(!evs.some((e) => e.op === "remove" && e.person.user_id === dmPeer.userId));
    assert.ok(!evs.some((e) => e.op === "add" && e.person.user_id === dmPeer.userId));
  });

  test("an email change and an email visibility change skip a guest sharing nothing", async () => {
    const lonely = await newUser(srv, 600, "Lonely Email Guest");
    const qShared = await openQueue(srv, guest, ["realm_user"]);
    const qLonely = await openQueue(srv, lonely, ["realm_user"]);
    const newEmail = `peer-moved-${++seq}@example.com`;
    assertSuccess(await srv.api("PATCH", `/users/${peer.userId}`, { new_email: newEmail }));
    peer.email = newEmail;
    const moved = (e: Ev) => e.op === "update" && e.person.delivery_email === newEmail;
    assert.ok((await eventsUntil(srv, qShared, (evs) => evs.some(moved))).some(moved));
    // 4 = nobody: the guest sharing a channel loses the real address.
    assertSuccess(await srv.api("PATCH", "/settings", { email_address_visibility: 4 }, peer));
    const hidden = (e: Ev) =>
      e.op === "update" && e.person.user_id === peer.userId && e.person.delivery_email === null;
    assert.ok((await eventsUntil(srv, qShared, (evs) => evs.some(hidden))).some(hidden));
    const leaked = (await drain(srv, qLonely)).filter(
      (e) => e.op === "update" && e.person.user_id === peer.userId,
    );
    assert.deepEqual(leaked, []);
  });

  test("removing a custom profile value skips a guest sharing nothing", async () => {
    const f = await srv.api("POST", "/realm/profile_fields", { name: `Room ${++seq}`, field_type: 1 });
    assertSuccess(f);
    const id = f.body.id as number;
    assertSuccess(
      await srv.api("PATCH", "/users/me/profile_data", { data: JSON.stringify([{ id, value: "R1" }]) }, peer),
    );
    const lonely = await newUser(srv, 600, "Lonely Removal Guest");
    const qShared = await openQueue(srv, guest, ["realm_user"]);
    const qLonely = await openQueue(srv, lonely, ["realm_user"]);
    assertSuccess(await srv.api("DELETE", "/users/me/profile_data", { data: JSON.stringify([id]) }, peer));
    const cleared = (e: Ev) => e.op === "update" && e.person.custom_profile_field?.id === id;
    assert.ok((await eventsUntil(srv, qShared, (evs) => evs.some(cleared))).some(cleared));
    assert.equal((await drain(srv, qLonely)).filter(cleared).length, 0);
  });

  test("a custom profile field change skips a guest sharing nothing", async () => {
    const f = await srv.api("POST", "/realm/profile_fields", { name: `Desk ${++seq}`, field_type: 1 });
    assertSuccess(f);
    const lonely = await newUser(srv, 600, "Lonely Profile Guest");
    const qShared = await openQueue(srv, guest, ["realm_user"]);
    const qLonely = await openQueue(srv, lonely, ["realm_user"]);
    assertSuccess(
      await srv.api(
        "PATCH",
        "/users/me/profile_data",
        { data: JSON.stringify([{ id: f.body.id, value: "B12" }]) },
        peer,
      ),
    );
    const shared = await eventsUntil(srv, qShared, (evs) => evs.some((e) => e.op === "update"));
    assert.ok(shared.some((e) => e.op === "update" && e.person.custom_profile_field?.value === "B12"));
    assert.equal((await drain(srv, qLonely)).filter((e) => e.op === "update").length, 0);
  });

  test("deactivation and reactivation skip a guest who cannot access the user", async () => {
    const target = await newUser(srv, 400, "Coming And Going");
    const qGuest = await openQueue(srv, guest, ["realm_user"]);
    const qMember = await openQueue(srv, peer, ["realm_user"]);
    assertSuccess(await srv.api("DELETE", `/users/${target.userId}`));
    assertSuccess(await srv.api("POST", `/users/${target.userId}/reactivate`));
    const seen = await eventsUntil(srv, qMember, (evs) => evs.filter((e) => e.op === "update").length >= 2);
    assert.deepEqual(
      seen
        .filter((e) => e.op === "update" && e.person.user_id === target.userId)
        .map((e) => e.person.is_active),
      [false, true],
    );
    assert.equal((await drain(srv, qGuest)).filter((e) => e.person?.user_id === target.userId).length, 0);
  });
});

describe("FL 228: a channel created with a guest and others", () => {
  test("the guest hears of the subscribers it now shares a channel with", async () => {
    const other = await newUser(srv, 400, "Channel Mate");
    const q = await openQueue(srv, guest, ["realm_user"]);
    await channel(srv, [guest.userId, other.userId]);
    const evs = await eventsUntil(srv, q, (all) => all.some((e) => e.op === "add"));
    assert.equal(
      evs.find((e) => e.op === "add" && e.person.user_id === other.userId)?.person.full_name,
      "Channel Mate",
    );
  });
});

describe("FL 232: a new user's realm_user add for a restricted guest", () => {
  test("a placeholder without user_list_incomplete, nothing with it, the user for members", async () => {
    const plain = await openQueue(srv, guest, ["realm_user"]);
    const r = await srv.api(
      "POST",
      "/register",
      {
        event_types: JSON.stringify(["realm_user"]),
        client_capabilities: JSON.stringify({ user_list_incomplete: true }),
      },
      guest,
    );
    assertSuccess(r);
    const incomplete = { id: r.body.queue_id as string, last: r.body.last_event_id as number, auth: guest };
    const qm = await openQueue(srv, peer, ["realm_user"]);
    const fresh = await newUser(srv, 400, "Fresh Face");
    const seen = await eventsUntil(srv, qm, (evs) => evs.some((e) => e.op === "add"));
    assert.equal(
      seen.find((e) => e.op === "add" && e.person.user_id === fresh.userId)?.person.full_name,
      "Fresh Face",
    );
    const got = await eventsUntil(srv, plain, (evs) => evs.some((e) => e.op === "add"));
    const add = got.find((e) => e.op === "add" && e.person.user_id === fresh.userId);
    assert.ok(add, "the placeholder add arrives");
    assert.equal(add.person.full_name, "Unknown user");
    assert.ok(!JSON.stringify(got).includes("Fresh Face"));
    assert.equal(
      (await drain(srv, incomplete)).filter((e) => e.op === "add" && e.person.user_id === fresh.userId)
        .length,
      0,
    );
  });
});

describe("FL 303: user_group add_members on reactivation", () => {
  test("a reactivated user rejoins, in events, every group they are a direct member of", async () => {
    const u = await newUser(srv, 400, "Group Returner");
    const g = await srv.api("POST", "/user_groups/create", {
      name: `access-group-${process.pid}-${++seq}`,
      description: "d",
      members: JSON.stringify([u.userId]),
    });
    assertSuccess(g);
    const groupId = g.body.group_id as number;
    assertSuccess(await srv.api("DELETE", `/users/${u.userId}`));
    const q = await openQueue(srv, srv.owner, ["user_group"]);
    assertSuccess(await srv.api("POST", `/users/${u.userId}/reactivate`));
    const evs = await eventsUntil(srv, q, (all) =>
      all.some((e) => e.op === "add_members" && e.group_id === groupId),
    );
    const added = evs
      .filter((e) => e.op === "add_members" && e.user_ids.includes(u.userId))
      .map((e) => e.group_id as number);
    assert.ok(added.includes(groupId), "the user-defined group");
    assert.ok(added.includes(MEMBERS), "the role's system group");
    assert.equal(new Set(added).size, added.length, "one event per group");
  });
});

describe("FL 225: cluster mode", () => {
  const cluster = useCluster({ nodes: ["a", "b"] });

  test("a restricted guest's user list and lookups", async () => {
    const g = await newUser(cluster, 600);
    const p = await newUser(cluster, 400);
    const s = await newUser(cluster, 400);
    await channel(cluster, [g.userId, p.userId]);
    await restrict(cluster, MEMBERS);
    const seen = ids(await cluster.api("GET", "/users", {}, g as Creds));
    assert.ok(seen.includes(p.userId));
    assert.ok(!seen.includes(s.userId));
    assertError(await cluster.api("GET", `/users/${s.userId}`, {}, g), "Insufficient permission");
    const all = ids(await cluster.api("GET", "/users", {}, p));
    assert.ok(all.includes(s.userId));
  });

  test("events about a user reach a guest sharing a channel through the relay, not one sharing none", async () => {
    const g = await newUser(cluster, 600);
    const lonely = await newUser(cluster, 600);
    const p = await newUser(cluster, 400);
    await restrict(cluster, MEMBERS);
    const q = await openQueue(cluster, g, ["realm_user"]);
    await channel(cluster, [g.userId, p.userId]);
    const added = await eventsUntil(cluster, q, (evs) => evs.some((e) => e.op === "add"));
    assert.ok(added.some((e) => e.op === "add" && e.person.user_id === p.userId));
    const qLonely = await openQueue(cluster, lonely, ["realm_user"]);
    assertSuccess(await cluster.api("PATCH", `/users/${p.userId}`, { full_name: "Cluster Renamed" }));
    const seen = await eventsUntil(cluster, q, (evs) => evs.some((e) => e.op === "update"));
    assert.ok(seen.some((e) => e.op === "update" && e.person.full_name === "Cluster Renamed"));
    assert.equal((await drain(cluster, qLonely)).filter((e) => e.op === "update").length, 0);
  });
});
