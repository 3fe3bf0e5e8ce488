// Group-setting events around a user's deactivation (docs/feature-levels/
// 201-372.md, level 303): an anonymous group setting whose direct members
// include the user changes its API value when the user is deactivated
// (deactivated users are left out of direct_members), so everyone hears
// the new value through realm/update_dict or user_group/update. Zulip after
// 10.2 sends them to all users on deactivation and none on reactivation.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  openQueue,
  useCluster,
  useEmbedded,
  type ApiHolder,
  type Member,
} from "./support/index.ts";

const ADMINS = 3;
const MODERATORS = 4;
const FULL_MEMBERS = 5;
const MEMBERS = 6;

let seq = 0;

interface Setup {
  leaver: Member;
  other: Member;
  groupId: number;
}

/** A realm setting and a group setting, each an anonymous group naming `leaver`. */
async function setup(api: ApiHolder): Promise<Setup> {
  const leaver = await newUser(api, 400, "Setting Leaver");
  const other = await newUser(api, 400, "Setting Watcher");
  assertSuccess(
    await api.api("PATCH", "/realm", {
      can_create_public_channel_group: {
        new: { direct_members: [leaver.userId, other.userId], direct_subgroups: [ADMINS] },
      },
    }),
  );
  const g = await api.api("POST", "/user_groups/create", {
    name: `groupev-${process.pid}-${++seq}`,
    description: "d",
    members: JSON.stringify([other.userId]),
    can_mention_group: JSON.stringify({ direct_members: [leaver.userId], direct_subgroups: [MODERATORS] }),
  });
  assertSuccess(g);
  return { leaver, other, groupId: g.body.group_id as number };
}

async function checkDeactivation(api: ApiHolder, s: Setup): Promise<void> {
  const q = await openQueue(api, s.other, ["realm", "user_group"]);
  assertSuccess(await api.api("DELETE", `/users/${s.leaver.userId}`));
  const evs = await eventsUntil(
    api,
    q,
    (all) =>
      all.some((e) => e.type === "realm" && e.op === "update_dict") &&
      all.some((e) => e.type === "user_group" && e.op === "update" && e.group_id === s.groupId),
  );
  const realm = evs.find((e) => e.type === "realm" && e.op === "update_dict");
  assert.equal(realm.property, "default");
  assert.deepEqual(realm.data, {
    can_create_public_channel_group: { direct_members: [s.other.userId], direct_subgroups: [ADMINS] },
  });
  const group = evs.find((e) => e.type === "user_group" && e.op === "update" && e.group_id === s.groupId);
  assert.deepEqual(group.data, {
    can_mention_group: { direct_members: [], direct_subgroups: [MODERATORS] },
  });
  // The events agree with what a fresh POST /register reports.
  const reg = await api.api(
    "POST",
    "/register",
    { event_types: JSON.stringify(["realm", "user_group"]) },
    s.other,
  );
  assertSuccess(reg);
  assert.deepEqual(
    reg.body.realm_can_create_public_channel_group,
    realm.data.can_create_public_channel_group,
  );
  const listed = (reg.body.realm_user_groups as { id: number; can_mention_group: unknown }[]).find(
    (g) => g.id === s.groupId,
  );
  assert.deepEqual(listed?.can_mention_group, group.data.can_mention_group);
}

describe("FL 303: group-setting events on (de)activation", () => {
  const srv = useEmbedded();

  test("FL 303: deactivating a user sends realm/update_dict and user_group/update for anonymous settings naming them", async () => {
    await checkDeactivation(srv, await setup(srv));
  });

  test("FL 303: a setting not naming the user gets no event; reactivation sends none", async () => {
    const s = await setup(srv);
    const bystander = await newUser(srv, 400, "Bystander");
    const q = await openQueue(srv, s.other, ["realm", "user_group"]);
    assertSuccess(await srv.api("DELETE", `/users/${bystander.userId}`));
    assertSuccess(await srv.api("POST", `/users/${bystander.userId}/reactivate`));
    assertSuccess(await srv.api("DELETE", `/users/${s.leaver.userId}`));
    const seen = await eventsUntil(srv, q, (all) => all.some((e) => e.op === "update_dict"));
    const updates = seen.filter((e) => e.op === "update_dict" || e.op === "update");
    assert.equal(updates.filter((e) => e.op === "update_dict").length, 1, "only the leaver's deactivation");
    const q2 = await openQueue(srv, s.other, ["realm", "user_group"]);
    assertSuccess(await srv.api("POST", `/users/${s.leaver.userId}/reactivate`));
    const back = await eventsUntil(srv, q2, (all) => all.some((e) => e.op === "add_members"));
    assert.equal(back.filter((e) => e.op === "update_dict" || e.op === "update").length, 0);
    assert.equal((await drain(srv, q2)).filter((e) => e.op === "update_dict" || e.op === "update").length, 0);
    const reg = await srv.api("POST", "/register", { event_types: JSON.stringify(["realm"]) }, s.other);
    assertSuccess(reg);
    assert.deepEqual(reg.body.realm_can_create_public_channel_group, {
      direct_members: [s.leaver.userId, s.other.userId].sort((a, b) => a - b),
      direct_subgroups: [ADMINS],
    });
  });
});

describe("FL 303: remove_members on deactivation, to the users losing access", () => {
  const srv = useEmbedded();

  test("FL 303: a restricted guest sharing nothing with a deactivated user hears they left their groups", async () => {
    const u = await newUser(srv, 400, "Group Leaver");
    const sharer = await newUser(srv, 600, "Sharing Guest");
    const stranger = await newUser(srv, 600, "Stranger Guest");
    const member = await newUser(srv, 400, "Plain Member");
    const g = await srv.api("POST", "/user_groups/create", {
      name: `groupev-rm-${process.pid}-${++seq}`,
      description: "d",
      members: JSON.stringify([u.userId]),
    });
    assertSuccess(g);
    const groupId = g.body.group_id as number;
    assertSuccess(
      await srv.api("POST", "/channels/create", {
        name: `groupev-${process.pid}-${++seq}`,
        subscribers: JSON.stringify([u.userId, sharer.userId]),
      }),
    );
    assertSuccess(
      await srv.api("PATCH", "/realm", { can_access_all_users_group: JSON.stringify({ new: MEMBERS }) }),
    );
    const qStranger = await openQueue(srv, stranger, ["user_group", "realm_user"]);
    const qSharer = await openQueue(srv, sharer, ["user_group", "realm_user"]);
    const qMember = await openQueue(srv, member, ["user_group", "realm_user"]);
    assertSuccess(await srv.api("DELETE", `/users/${u.userId}`));
    const got = await eventsUntil(srv, qStranger, (all) =>
      all.some((e) => e.op === "remove_members" && e.group_id === groupId),
    );
    const removed = got
      .filter((e) => e.op === "remove_members" && e.user_ids.includes(u.userId))
      .map((e) => e.group_id as number);
    assert.deepEqual(removed, [FULL_MEMBERS, MEMBERS, groupId]);
    // Those who still see the user get the realm_user update instead.
    const shared = await eventsUntil(srv, qSharer, (all) => all.some((e) => e.op === "update"));
    assert.ok(shared.some((e) => e.op === "update" && e.person.is_active === false));
    assert.equal(shared.filter((e) => e.op === "remove_members").length, 0);
    const plain = await eventsUntil(srv, qMember, (all) => all.some((e) => e.op === "update"));
    assert.equal(
      [...plain, ...(await drain(srv, qMember))].filter((e) => e.op === "remove_members").length,
      0,
    );
    assert.equal((await drain(srv, qSharer)).filter((e) => e.op === "remove_members").length, 0);
  });
});

describe("FL 303: cluster mode", () => {
  const cluster = useCluster({ nodes: ["a", "b"] });

  test("FL 303: deactivation's setting events reach a queue through the gateway", async () => {
    await checkDeactivation(cluster, await setup(cluster));
  });
});
