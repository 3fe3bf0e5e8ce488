// User groups, group-setting values and PATCH /realm's group settings:
// black-box HTTP tests against a real embedded server, plus actor-level
// checks of the events (no events endpoint exists yet) and a fuzz of
// group-setting values that must never give a 500 or change anything when
// rejected.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { groupBehavior } from "../actors/group/index.ts";
import type { ActorContext, ActorRef, Caller, Decision, Obj } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import { ownerOf } from "../cluster/placement/rendezvous.ts";
import {
  err,
  newUser,
  ok,
  requireBinaries,
  startCluster,
  useEmbedded,
  type ApiResult,
  type Creds,
} from "./support/index.ts";

const srv = useEmbedded();
let seq = 0;

// System group ids are fixed in every realm.
const NOBODY = 1;
const OWNERS = 2;
const ADMINS = 3;
const MODERATORS = 4;
const FULL = 5;
const MEMBERS = 6;
const EVERYONE = 7;
const INTERNET = 8;

async function groups(includeDeactivated = true): Promise<Obj[]> {
  const r = await srv.api("GET", "/user_groups", { include_deactivated_groups: includeDeactivated });
  ok(r);
  return r.body.user_groups;
}

async function group(id: number): Promise<Obj> {
  const g = (await groups()).find((x) => x.id === id);
  assert.ok(g, `group ${id} exists`);
  return g;
}

async function create(params: Record<string, unknown>, auth: Creds = srv.owner): Promise<number> {
  const r = await srv.api(
    "POST",
    "/user_groups/create",
    { name: `group ${++seq}`, description: "about", members: [], ...params },
    auth,
  );
  ok(r);
  assert.equal(typeof r.body.group_id, "number");
  return r.body.group_id;
}

async function members(id: number, direct = false): Promise<number[]> {
  const r = await srv.api("GET", `/user_groups/${id}/members`, { direct_member_only: direct });
  ok(r);
  return r.body.members;
}

describe("user groups - system groups", () => {
  test("eight system groups, nested, with role-based members", async () => {
    const m = await newUser(srv);
    const list = await groups();
    const sys = list.filter((g) => g.is_system_group);
    assert.deepEqual(
      sys.map((g) => [g.id, g.name]),
      [
        [NOBODY, "role:nobody"],
        [OWNERS, "role:owners"],
        [ADMINS, "role:administrators"],
        [MODERATORS, "role:moderators"],
        [FULL, "role:fullmembers"],
        [MEMBERS, "role:members"],
        [EVERYONE, "role:everyone"],
        [INTERNET, "role:internet"],
      ],
    );
    const byId = Object.fromEntries(sys.map((g) => [g.id, g]));
    assert.deepEqual(byId[NOBODY].direct_subgroup_ids, []);
    assert.deepEqual(byId[OWNERS].direct_subgroup_ids, []);
    assert.deepEqual(byId[ADMINS].direct_subgroup_ids, [OWNERS]);
    assert.deepEqual(byId[INTERNET].direct_subgroup_ids, [EVERYONE]);
    for (const g of sys) {
      for (const s of ["can_add_members_group", "can_join_group", "can_leave_group", "can_manage_group"])
        assert.equal(g[s], NOBODY);
      assert.equal(g.date_created, null);
      assert.equal(g.creator_id, null);
      assert.equal(g.deactivated, false);
    }
    assert.ok(byId[OWNERS].members.includes(srv.owner.userId));
    assert.ok(byId[MEMBERS].members.includes(m.userId));
    assert.ok(byId[FULL].members.includes(m.userId));
    assert.ok(!byId[OWNERS].members.includes(m.userId));
    // Transitive: the owner is in role:everyone through the chain of subgroups.
    const everyone = await members(EVERYONE);
    assert.ok(everyone.includes(srv.owner.userId) && everyone.includes(m.userId));
    assert.deepEqual(await members(EVERYONE, true), byId[EVERYONE].members);
    assert.deepEqual(await members(NOBODY), []);
    const sub = await srv.api("GET", `/user_groups/${INTERNET}/subgroups`);
    ok(sub);
    assert.deepEqual(sub.body.subgroups, [OWNERS, ADMINS, MODERATORS, FULL, MEMBERS, EVERYONE]);
    const direct = await srv.api("GET", `/user_groups/${INTERNET}/subgroups`, { direct_subgroup_only: true });
    assert.deepEqual(direct.body.subgroups, [EVERYONE]);
  });

  test("role changes and deactivation move system-group membership", async () => {
    const m = await newUser(srv);
    ok(await srv.api("PATCH", `/users/${m.userId}`, { role: 300 }));
    assert.ok((await members(MODERATORS, true)).includes(m.userId));
    assert.ok(!(await members(MEMBERS, true)).includes(m.userId));
    assert.ok((await members(MEMBERS)).includes(m.userId), "moderators are members transitively");
    ok(await srv.api("PATCH", `/users/${m.userId}`, { role: 600 }));
    assert.ok((await members(EVERYONE, true)).includes(m.userId));
    assert.ok(!(await members(MEMBERS)).includes(m.userId));
    ok(await srv.api("DELETE", `/users/${m.userId}`));
    assert.ok(!(await members(EVERYONE)).includes(m.userId));
    ok(await srv.api("POST", `/users/${m.userId}/reactivate`));
    assert.ok((await members(EVERYONE)).includes(m.userId));
  });

  test("system groups cannot be edited or deactivated", async () => {
    err(await srv.api("PATCH", `/user_groups/${MEMBERS}`, { name: "x" }), "Insufficient permission");
    err(await srv.api("POST", `/user_groups/${MEMBERS}/deactivate`), "Insufficient permission");
    err(
      await srv.api("POST", `/user_groups/${MEMBERS}/members`, { add: [srv.owner.userId] }),
      "Insufficient permission",
    );
  });
});

describe("user groups - POST /user_groups/create", () => {
  test("creates with defaults and reports the group", async () => {
    const m = await newUser(srv);
    const before = Math.floor(Date.now() / 1000);
    const id = await create({ name: "Support team", description: "We help", members: [m.userId] });
    const g = await group(id);
    assert.equal(g.name, "Support team");
    assert.equal(g.description, "We help");
    assert.deepEqual(g.members, [m.userId]);
    assert.deepEqual(g.direct_subgroup_ids, []);
    assert.equal(g.is_system_group, false);
    assert.equal(g.creator_id, srv.owner.userId);
    assert.ok((g.date_created as number) >= before - 1);
    assert.equal(g.deactivated, false);
    const creator = { direct_members: [srv.owner.userId], direct_subgroups: [] };
    assert.deepEqual(g.can_add_members_group, creator);
    assert.deepEqual(g.can_manage_group, creator);
    assert.equal(g.can_join_group, NOBODY);
    assert.equal(g.can_leave_group, EVERYONE);
    assert.equal(g.can_mention_group, EVERYONE);
    assert.equal(g.can_remove_members_group, NOBODY);
  });

  test("subgroups and settings at creation, canonicalised", async () => {
    const a = await create({});
    const id = await create({
      subgroups: [a, MODERATORS],
      can_mention_group: { direct_members: [], direct_subgroups: [ADMINS] },
      can_join_group: { direct_members: [], direct_subgroups: [] },
      can_leave_group: ADMINS,
    });
    const g = await group(id);
    assert.deepEqual(
      g.direct_subgroup_ids,
      [MODERATORS, a].sort((x, y) => x - y),
    );
    assert.equal(g.can_mention_group, ADMINS);
    assert.equal(g.can_join_group, NOBODY);
    assert.equal(g.can_leave_group, ADMINS);
  });

  test("errors, exact texts, nothing created", async () => {
    const count = (await groups()).length;
    const post = (params: Record<string, unknown>) =>
      srv.api("POST", "/user_groups/create", { name: "n1", description: "d", members: [], ...params });
    err(
      await srv.api("POST", "/user_groups/create", { description: "d", members: [] }),
      "Missing 'name' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(
      await srv.api("POST", "/user_groups/create", { name: "n", members: [] }),
      "Missing 'description' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(
      await srv.api("POST", "/user_groups/create", { name: "n", description: "d" }),
      "Missing 'members' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(await post({ members: [99999] }), "Invalid user ID: 99999");
    err(await post({ members: "nope" }), "members is not valid JSON");
    err(await post({ members: ["a"] }), "members[0] is not an integer");
    err(await post({ name: "   " }), "User group name can't be empty!");
    err(await post({ name: "x".repeat(101) }), "User group name cannot exceed 100 characters.");
    for (const prefix of ["@", "role:", "user:", "stream:", "channel:"])
      err(await post({ name: `${prefix}abc` }), `User group name cannot start with '${prefix}'.`);
    err(await post({ name: "role:members" }), "User group name cannot start with 'role:'.");
    err(await post({ subgroups: [4242] }), "Invalid user group ID: 4242");
    err(await post({ can_manage_group: 4242 }), "Invalid user group");
    err(
      await post({ can_manage_group: EVERYONE }),
      "'can_manage_group' setting cannot be set to 'role:everyone' group.",
    );
    err(
      await post({ can_manage_group: INTERNET }),
      "'can_manage_group' setting cannot be set to 'role:internet' group.",
    );
    err(
      await post({ can_mention_group: INTERNET }),
      "'can_mention_group' setting cannot be set to 'role:internet' group.",
    );
    err(
      await post({ can_mention_group: OWNERS }),
      "'can_mention_group' setting cannot be set to 'role:owners' group.",
    );
    err(
      await post({ can_join_group: EVERYONE }),
      "'can_join_group' setting cannot be set to 'role:everyone' group.",
    );
    err(
      await post({ can_manage_group: { direct_members: [99999], direct_subgroups: [] } }),
      "Invalid user ID: 99999",
    );
    err(
      await post({ can_manage_group: { direct_members: [srv.owner.userId], direct_subgroups: [4242] } }),
      "Invalid user group ID: 4242",
    );
    err(await post({ can_manage_group: "x" }), "can_manage_group is not valid JSON");
    err(await post({ can_manage_group: true }), "can_manage_group is not an integer");
    err(
      await post({ can_manage_group: { direct_members: [] } }),
      "can_manage_group field is missing: direct_subgroups",
    );
    err(
      await post({ can_manage_group: { direct_members: "x", direct_subgroups: [] } }),
      'can_manage_group["direct_members"] is not a list',
    );
    const dup = await create({});
    const name = (await group(dup)).name as string;
    err(await post({ name }), `User group '${name}' already exists.`);
    assert.equal((await groups()).length, count + 1);
  });

  test("can_create_groups decides who may create; guests and bots never", async () => {
    const m = await newUser(srv);
    const guest = await newUser(srv, 600);
    err(await srv.api("GET", "/user_groups", {}, guest), "Not allowed for guest users");
    err(
      await srv.api("POST", "/user_groups/create", { name: "g", description: "", members: [] }, guest),
      "Not allowed for guest users",
    );
    await create({}, m);
    ok(await srv.api("PATCH", "/realm", { can_create_groups: { new: ADMINS } }));
    try {
      err(
        await srv.api("POST", "/user_groups/create", { name: "nope", description: "", members: [] }, m),
        "Insufficient permission",
      );
      // An anonymous value that names the member directly grants it at once.
      ok(
        await srv.api("PATCH", "/realm", {
          can_create_groups: { new: { direct_members: [m.userId], direct_subgroups: [ADMINS] } },
        }),
      );
      await create({}, m);
    } finally {
      ok(await srv.api("PATCH", "/realm", { can_create_groups: { new: MEMBERS } }));
    }
  });
});

describe("user groups - PATCH /user_groups/{id}", () => {
  test("name, description, settings; events-free errors leave the group unchanged", async () => {
    const id = await create({ name: `renamable ${seq}` });
    ok(await srv.api("PATCH", `/user_groups/${id}`, { name: `renamed ${id}`, description: "new text" }));
    let g = await group(id);
    assert.equal(g.name, `renamed ${id}`);
    assert.equal(g.description, "new text");
    ok(await srv.api("PATCH", `/user_groups/${id}`, { can_mention_group: { new: ADMINS, old: EVERYONE } }));
    assert.equal((await group(id)).can_mention_group, ADMINS);
    err(
      await srv.api("PATCH", `/user_groups/${id}`, { can_mention_group: { new: MEMBERS, old: EVERYONE } }),
      "'old' value does not match the expected value.",
      "EXPECTATION_MISMATCH",
    );
    // Object forms compare as sets.
    const creator = { direct_members: [srv.owner.userId], direct_subgroups: [] };
    ok(
      await srv.api("PATCH", `/user_groups/${id}`, {
        can_add_members_group: {
          new: { direct_members: [srv.owner.userId], direct_subgroups: [MODERATORS] },
          old: creator,
        },
      }),
    );
    g = await group(id);
    assert.deepEqual(g.can_add_members_group, {
      direct_members: [srv.owner.userId],
      direct_subgroups: [MODERATORS],
    });
    const before = JSON.stringify(await group(id));
    const patch = (params: Record<string, unknown>) => srv.api("PATCH", `/user_groups/${id}`, params);
    err(await patch({}), "No new data supplied");
    err(
      await patch({ can_manage_group: { new: EVERYONE } }),
      "'can_manage_group' setting cannot be set to 'role:everyone' group.",
    );
    err(
      await patch({ can_manage_group: { new: INTERNET } }),
      "'can_manage_group' setting cannot be set to 'role:internet' group.",
    );
    err(
      await patch({ can_mention_group: { new: OWNERS } }),
      "'can_mention_group' setting cannot be set to 'role:owners' group.",
    );
    err(
      await patch({ can_mention_group: { new: INTERNET } }),
      "'can_mention_group' setting cannot be set to 'role:internet' group.",
    );
    err(await patch({ can_mention_group: { old: EVERYONE } }), "can_mention_group field is missing: new");
    err(await patch({ can_mention_group: 5 }), "can_mention_group is not a dict");
    err(await patch({ can_mention_group: { new: 4242 } }), "Invalid user group");
    err(await patch({ name: "" }), "User group name can't be empty!");
    err(await patch({ name: "role:x" }), "User group name cannot start with 'role:'.");
    err(await patch({ name: "role:members" }), "User group name cannot start with 'role:'.");
    // A valid name change before an invalid setting: all or nothing.
    err(
      await patch({ name: "fresh name", can_mention_group: { new: OWNERS } }),
      "'can_mention_group' setting cannot be set to 'role:owners' group.",
    );
    err(await patch({ deactivated: "maybe" }), "deactivated is not valid JSON");
    assert.equal(JSON.stringify(await group(id)), before);
    err(await srv.api("PATCH", "/user_groups/4242", { name: "x" }), "Invalid user group");
    const other = await create({});
    err(
      await patch({ name: (await group(other)).name }),
      `User group '${(await group(other)).name}' already exists.`,
    );
  });

  test("permission comes from can_manage_group, and a change is seen at once", async () => {
    const m = await newUser(srv);
    const id = await create({});
    err(await srv.api("PATCH", `/user_groups/${id}`, { description: "x" }, m), "Insufficient permission");
    ok(
      await srv.api("PATCH", `/user_groups/${id}`, {
        can_manage_group: { new: { direct_members: [srv.owner.userId, m.userId], direct_subgroups: [] } },
      }),
    );
    ok(await srv.api("PATCH", `/user_groups/${id}`, { description: "by member" }, m));
    // Through a subgroup: grant via a group the member is in, then take the member out.
    const holders = await create({ members: [m.userId] });
    ok(await srv.api("PATCH", `/user_groups/${id}`, { can_manage_group: { new: holders } }));
    ok(await srv.api("PATCH", `/user_groups/${id}`, { description: "via subgroup" }, m));
    ok(await srv.api("POST", `/user_groups/${holders}/members`, { delete: [m.userId] }));
    err(
      await srv.api("PATCH", `/user_groups/${id}`, { description: "no longer" }, m),
      "Insufficient permission",
    );
    assert.equal((await group(id)).description, "via subgroup");
  });

  test("can_manage_all_groups (default role:owners) manages every group; guests never", async () => {
    const m = await newUser(srv);
    const id = await create({}, m);
    ok(await srv.api("PATCH", `/user_groups/${id}`, { description: "owner edit" }));
    const guest = await newUser(srv, 600);
    err(
      await srv.api("PATCH", `/user_groups/${id}`, { description: "g" }, guest),
      "Not allowed for guest users",
    );
  });

  test("deactivated=false reactivates; true has no effect", async () => {
    const id = await create({});
    ok(await srv.api("PATCH", `/user_groups/${id}`, { deactivated: true }));
    assert.equal((await group(id)).deactivated, false);
    ok(await srv.api("POST", `/user_groups/${id}/deactivate`));
    assert.equal((await group(id)).deactivated, true);
    ok(await srv.api("PATCH", `/user_groups/${id}`, { deactivated: false }));
    assert.equal((await group(id)).deactivated, false);
  });
});

describe("user groups - membership", () => {
  test("add, remove, join, leave, with exact errors", async () => {
    const a = await newUser(srv);
    const b = await newUser(srv);
    const id = await create({ members: [a.userId] });
    const post = (params: Record<string, unknown>, auth: Creds = srv.owner) =>
      srv.api("POST", `/user_groups/${id}/members`, params, auth);
    err(
      await post({}),
      'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".',
    );
    err(await post({ add: [a.userId] }), `User ${a.userId} is already a member of this group`);
    err(await post({ add: [99999] }), "Invalid user ID: 99999");
    err(await post({ delete: [b.userId] }), `There is no member '${b.userId}' in this user group`);
    err(await post({ delete: [99999] }), "Invalid user ID: 99999");
    err(await post({ add: "x" }), "add is not valid JSON");
    // All or nothing: a good add followed by a bad delete.
    err(await post({ add: [b.userId], delete: [99999] }), "Invalid user ID: 99999");
    assert.deepEqual(await members(id), [a.userId]);
    ok(await post({ add: [b.userId], delete: [a.userId] }));
    assert.deepEqual(await members(id), [b.userId]);
    // Self-service follows can_join_group / can_leave_group.
    err(await post({ add: [a.userId] }, a), "Insufficient permission");
    ok(await srv.api("PATCH", `/user_groups/${id}`, { can_join_group: { new: MEMBERS } }));
    ok(await post({ add: [a.userId] }, a));
    err(await post({ add: [srv.owner.userId] }, a), "Insufficient permission");
    ok(await post({ delete: [a.userId] }, a)); // can_leave_group defaults to role:everyone
    ok(await srv.api("PATCH", `/user_groups/${id}`, { can_leave_group: { new: NOBODY } }));
    err(await post({ delete: [b.userId] }, b), "Insufficient permission");
    ok(await srv.api("PATCH", `/user_groups/${id}`, { can_remove_members_group: { new: MEMBERS } }));
    ok(await post({ delete: [b.userId] }, b));
    assert.deepEqual(await members(id), []);
    err(await srv.api("POST", "/user_groups/4242/members", { add: [a.userId] }), "Invalid user group");
  });

  test("GET membership of one user", async () => {
    const a = await newUser(srv);
    const inner = await create({ members: [a.userId] });
    const outer = await create({ subgroups: [inner] });
    let r = await srv.api("GET", `/user_groups/${outer}/members/${a.userId}`);
    ok(r);
    assert.equal(r.body.is_user_group_member, true);
    r = await srv.api("GET", `/user_groups/${outer}/members/${a.userId}`, { direct_member_only: true });
    assert.equal(r.body.is_user_group_member, false);
    r = await srv.api("GET", `/user_groups/${outer}/members/${srv.owner.userId}`);
    assert.equal(r.body.is_user_group_member, false);
    err(await srv.api("GET", `/user_groups/${outer}/members/99999`), "No such user");
    err(await srv.api("GET", `/user_groups/4242/members/${a.userId}`), "Invalid user group");
    err(await srv.api("GET", `/user_groups/${outer}/members/abc`), "Not Found", "NOT_FOUND", 404);
  });

  test("deactivated users drop out of members and of anonymous values", async () => {
    const a = await newUser(srv);
    const id = await create({ members: [a.userId] });
    ok(
      await srv.api("PATCH", `/user_groups/${id}`, {
        can_manage_group: { new: { direct_members: [srv.owner.userId, a.userId], direct_subgroups: [] } },
      }),
    );
    ok(await srv.api("DELETE", `/users/${a.userId}`));
    const g = await group(id);
    assert.deepEqual(g.members, []);
    assert.deepEqual(g.can_manage_group, { direct_members: [srv.owner.userId], direct_subgroups: [] });
    assert.deepEqual(await members(id), []);
  });
});

describe("user groups - subgroups", () => {
  test("add and remove, cycles refused, exact errors", async () => {
    const a = await create({});
    const b = await create({});
    const c = await create({});
    const sub = (id: number, params: Record<string, unknown>) =>
      srv.api("POST", `/user_groups/${id}/subgroups`, params);
    err(await sub(a, {}), 'Nothing to do. Specify at least one of "add" or "delete".');
    ok(await sub(a, { add: [b] }));
    ok(await sub(b, { add: [c] }));
    err(await sub(c, { add: [a] }), `User group ${c} is already a subgroup of one of the passed subgroups.`);
    err(await sub(a, { add: [a] }), `User group ${a} is already a subgroup of one of the passed subgroups.`);
    err(await sub(a, { add: [b] }), `User group ${b} is already a subgroup of this group.`);
    err(await sub(a, { add: [4242] }), "Invalid user group ID: 4242");
    err(await sub(a, { delete: [c] }), `User group ${c} is not a subgroup of this group.`);
    err(await sub(a, { delete: [4242] }), "Invalid user group ID: 4242");
    let r = await srv.api("GET", `/user_groups/${a}/subgroups`);
    assert.deepEqual(r.body.subgroups, [b, c]);
    r = await srv.api("GET", `/user_groups/${a}/subgroups`, { direct_subgroup_only: true });
    assert.deepEqual(r.body.subgroups, [b]);
    // The members endpoint takes subgroups too, all or nothing with members.
    err(
      await srv.api("POST", `/user_groups/${c}/members`, {
        add_subgroups: [MODERATORS],
        delete_subgroups: [a],
      }),
      `User group ${a} is not a subgroup of this group.`,
    );
    assert.deepEqual((await group(c)).direct_subgroup_ids, []);
    ok(await srv.api("POST", `/user_groups/${c}/members`, { add_subgroups: [MODERATORS] }));
    assert.ok((await members(a)).includes(srv.owner.userId), "owner reaches a through c and moderators");
    ok(await sub(b, { delete: [c] }));
    assert.deepEqual((await group(b)).direct_subgroup_ids, []);
  });
});

describe("user groups - deactivation", () => {
  test("refused while in use, with objections; then deactivated", async () => {
    const used = await create({});
    const parent = await create({ subgroups: [used] });
    const setter = await create({ can_mention_group: used });
    const res = await srv.api("POST", `/user_groups/${used}/deactivate`);
    err(res, "Cannot deactivate user group in use.", "CANNOT_DEACTIVATE_GROUP_IN_USE");
    assert.deepEqual(res.body.objections, [
      { type: "subgroup", supergroup_ids: [parent] },
      { type: "user_group", group_id: setter, settings: ["can_mention_group"] },
    ]);
    ok(await srv.api("POST", `/user_groups/${parent}/subgroups`, { delete: [used] }));
    ok(await srv.api("PATCH", `/user_groups/${setter}`, { can_mention_group: { new: EVERYONE } }));
    ok(
      await srv.api("PATCH", "/realm", {
        can_create_groups: { new: { direct_members: [], direct_subgroups: [used, MEMBERS] } },
      }),
    );
    const res2 = await srv.api("POST", `/user_groups/${used}/deactivate`);
    err(res2, "Cannot deactivate user group in use.", "CANNOT_DEACTIVATE_GROUP_IN_USE");
    assert.deepEqual(res2.body.objections, [{ type: "realm", settings: ["can_create_groups"] }]);
    ok(await srv.api("PATCH", "/realm", { can_create_groups: { new: MEMBERS } }));
    ok(await srv.api("POST", `/user_groups/${used}/deactivate`));
    err(await srv.api("POST", `/user_groups/${used}/deactivate`), "User group is deactivated.");
    assert.ok(!(await groups(false)).some((g) => g.id === used));
    assert.equal((await group(used)).deactivated, true);
    err(await srv.api("GET", `/user_groups/${used}/members`), "User group is deactivated.");
    err(
      await srv.api("POST", "/user_groups/create", {
        name: "z",
        description: "",
        members: [],
        subgroups: [used],
      }),
      "User group is deactivated.",
    );
    err(
      await srv.api("PATCH", `/user_groups/${setter}`, { can_mention_group: { new: used } }),
      "User group is deactivated.",
    );
    err(await srv.api("POST", "/user_groups/4242/deactivate"), "Invalid user group");
    const m = await newUser(srv);
    const mine = await create({});
    err(await srv.api("POST", `/user_groups/${mine}/deactivate`, {}, m), "Insufficient permission");
  });
});

describe("user groups - PATCH /realm group settings", () => {
  test("roles, values, response data", async () => {
    const m = await newUser(srv);
    const admin = await newUser(srv, 200);
    err(
      await srv.api("PATCH", "/realm", { can_add_custom_emoji_group: { new: ADMINS } }, m),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    err(
      await srv.api("PATCH", "/realm", { can_manage_all_groups: { new: ADMINS } }, admin),
      "Must be an organization owner",
      "UNAUTHORIZED_PRINCIPAL",
    );
    let r = await srv.api("PATCH", "/realm", { can_add_custom_emoji_group: { new: ADMINS } }, admin);
    ok(r);
    assert.equal(r.body.can_add_custom_emoji_group, ADMINS);
    r = await srv.api("PATCH", "/realm", { can_add_custom_emoji_group: { new: ADMINS, old: ADMINS } }, admin);
    ok(r);
    assert.equal(r.body.can_add_custom_emoji_group, undefined, "unchanged settings are not reported");
    err(
      await srv.api(
        "PATCH",
        "/realm",
        { can_add_custom_emoji_group: { new: MEMBERS, old: EVERYONE } },
        admin,
      ),
      "'old' value does not match the expected value.",
      "EXPECTATION_MISMATCH",
    );
    const obj = { direct_members: [m.userId], direct_subgroups: [] };
    err(
      await srv.api("PATCH", "/realm", { can_create_web_public_channel_group: { new: obj } }),
      "'can_create_web_public_channel_group' must be a system user group.",
      "SYSTEM_GROUP_REQUIRED",
    );
    const g = await create({});
    err(
      await srv.api("PATCH", "/realm", { can_create_web_public_channel_group: { new: g } }),
      "'can_create_web_public_channel_group' must be a system user group.",
      "SYSTEM_GROUP_REQUIRED",
    );
    err(
      await srv.api("PATCH", "/realm", { can_create_web_public_channel_group: { new: MEMBERS } }),
      "'can_create_web_public_channel_group' setting cannot be set to 'role:members' group.",
    );
    err(
      await srv.api("PATCH", "/realm", { can_manage_all_groups: { new: NOBODY } }),
      "'can_manage_all_groups' setting cannot be set to 'role:nobody' group.",
    );
    err(
      await srv.api("PATCH", "/realm", { can_create_public_channel_group: { new: EVERYONE } }),
      "'can_create_public_channel_group' setting cannot be set to 'role:everyone' group.",
    );
    err(
      await srv.api("PATCH", "/realm", { can_create_public_channel_group: { new: INTERNET } }),
      "'can_create_public_channel_group' setting cannot be set to 'role:internet' group.",
    );
    r = await srv.api("PATCH", "/realm", {
      can_create_web_public_channel_group: { new: MODERATORS },
      can_create_private_channel_group: { new: obj },
    });
    ok(r);
    assert.equal(r.body.can_create_web_public_channel_group, MODERATORS);
    assert.deepEqual(r.body.can_create_private_channel_group, obj);
    // Restore so other tests see defaults.
    ok(
      await srv.api("PATCH", "/realm", {
        can_create_web_public_channel_group: { new: OWNERS },
        can_create_private_channel_group: { new: MEMBERS },
        can_add_custom_emoji_group: { new: MEMBERS },
      }),
    );
  });
});

// ---- events (actor level: no events endpoint exists yet) ---------------------------

function fakeCtx(ref: ActorRef): ActorContext {
  let n = 0;
  return {
    self: ref,
    now: () => 1_700_000_000_000,
    call: async () => {
      throw new Error("the group directory calls nobody");
    },
    nextId: async () => ++n,
    schedule: () => {},
    parked: () => [],
  };
}

async function run(state: unknown, method: string, args: Obj, caller: Caller | null, ctx: ActorContext) {
  const d = (await groupBehavior.handlers[method]!(state as never, args, ctx, caller)) as Decision;
  for (const f of d.facts ?? []) groupBehavior.apply(state as never, f, ctx.self);
  return d;
}

describe("user groups - events", () => {
  test("every change yields Zulip's user_group and realm events to all active users", async () => {
    const ref: ActorRef = { kind: "group", realm: 1, key: "directory" };
    const ctx = fakeCtx(ref);
    const state = groupBehavior.initial(ref);
    let d = await run(state, "syncUser", { userId: 10, role: 100 }, null, ctx);
    assert.deepEqual(
      d.events!.map((e) => e.event),
      [{ type: "user_group", op: "add_members", group_id: OWNERS, user_ids: [10] }],
    );
    d = await run(state, "syncUser", { userId: 11, role: 400 }, null, ctx);
    assert.deepEqual(
      d.events!.map((e) => e.event.group_id),
      [FULL, MEMBERS],
    );
    // Every active user with a queue (the router resolves `everyone`), the new one included.
    assert.deepEqual([d.events![0]!.userIds, d.events![0]!.everyone], [[11], true]);
    const owner: Caller = { realmId: 1, userId: 10, role: 100, isBot: false };
    d = await run(
      state,
      "createGroup",
      { name: "g", description: "d", members: [11], subgroups: [MODERATORS] },
      owner,
      ctx,
    );
    const id = (d.reply as Obj).group_id as number;
    assert.equal(d.events![0]!.event.op, "add");
    assert.equal((d.events![0]!.event.group as Obj).name, "g");
    assert.deepEqual(d.events![1]!.event, {
      type: "user_group",
      op: "add_subgroups",
      group_id: id,
      direct_subgroup_ids: [MODERATORS],
    });
    d = await run(
      state,
      "updateGroup",
      { groupId: id, name: "h", settings: { can_join_group: { new: MEMBERS } } },
      owner,
      ctx,
    );
    assert.deepEqual(
      d.events!.map((e) => e.event),
      [
        { type: "user_group", op: "update", group_id: id, data: { name: "h" } },
        { type: "user_group", op: "update", group_id: id, data: { can_join_group: MEMBERS } },
      ],
    );
    d = await run(state, "updateMembers", { groupId: id, add: [10], delete: [11] }, owner, ctx);
    assert.deepEqual(
      d.events!.map((e) => e.event),
      [
        { type: "user_group", op: "add_members", group_id: id, user_ids: [10] },
        { type: "user_group", op: "remove_members", group_id: id, user_ids: [11] },
      ],
    );
    d = await run(state, "updateSubgroups", { groupId: id, delete: [MODERATORS] }, owner, ctx);
    assert.deepEqual(d.events![0]!.event, {
      type: "user_group",
      op: "remove_subgroups",
      group_id: id,
      direct_subgroup_ids: [MODERATORS],
    });
    d = await run(state, "deactivateGroup", { groupId: id }, owner, ctx);
    assert.deepEqual(d.events![0]!.event, {
      type: "user_group",
      op: "update",
      group_id: id,
      data: { deactivated: true },
    });
    // Deactivation keeps direct memberships (Zulip sends no group event).
    d = await run(state, "syncUser", { userId: 11, role: 400, isActive: false }, null, ctx);
    assert.deepEqual(d.events, []);
    d = await run(
      state,
      "updateRealmSettings",
      { updates: { can_create_groups: { new: ADMINS } } },
      null,
      ctx,
    );
    assert.deepEqual(d.events![0]!.event, {
      type: "realm",
      op: "update_dict",
      property: "default",
      data: { can_create_groups: ADMINS },
    });
    assert.deepEqual([d.events![0]!.userIds, d.events![0]!.everyone], [[], true]);
  });
});

// ---- fuzz ---------------------------------------------------------------------------

describe("user groups - fuzz", () => {
  test("random group-setting values and subgroup graphs: never a 500, rejections change nothing", async () => {
    const a = await newUser(srv);
    const pool = [await create({}), await create({}), await create({})];
    const ids = [...pool, NOBODY, OWNERS, EVERYONE, INTERNET, 0, -1, 4242, 2 ** 53];
    const userIds = [a.userId, srv.owner.userId, 0, 99999];
    const anyId = fc.constantFrom(...ids);
    const value = fc.oneof(
      anyId,
      fc.record({
        direct_members: fc.array(fc.constantFrom<unknown>(...userIds, "x", 1.5), { maxLength: 3 }),
        direct_subgroups: fc.array(fc.constantFrom<unknown>(...ids, null), { maxLength: 3 }),
      }),
      fc.record({ direct_members: fc.anything() }, { requiredKeys: [] }),
      fc.anything(),
    );
    const setting = fc.constantFrom(
      "can_add_members_group",
      "can_join_group",
      "can_leave_group",
      "can_manage_group",
      "can_mention_group",
      "can_remove_members_group",
    );
    const action = fc.oneof(
      fc.record({
        kind: fc.constant("patch"),
        group: fc.constantFrom(...pool),
        setting,
        nw: value,
        old: fc.option(value),
      }),
      fc.record({
        kind: fc.constant("sub"),
        group: fc.constantFrom(...pool),
        add: fc.array(anyId, { maxLength: 3 }),
      }),
      fc.record({ kind: fc.constant("create"), setting, nw: value }),
      fc.record({ kind: fc.constant("raw"), group: fc.constantFrom(...pool), setting, text: fc.string() }),
    );
    await fc.assert(
      fc.asyncProperty(action, async (act) => {
        const before = JSON.stringify(await groups());
        let res: ApiResult;
        if (act.kind === "patch") {
          const update: Record<string, unknown> = { new: act.nw };
          if (act.old !== null) update.old = act.old;
          res = await srv.api("PATCH", `/user_groups/${act.group}`, { [act.setting]: update });
        } else if (act.kind === "sub") {
          res = await srv.api("POST", `/user_groups/${act.group}/subgroups`, { add: act.add });
        } else if (act.kind === "create") {
          res = await srv.api("POST", "/user_groups/create", {
            name: `fz ${++seq}`,
            description: "",
            members: [],
            [act.setting]: act.nw,
          });
        } else {
          res = await srv.api("PATCH", `/user_groups/${act.group}`, { [act.setting]: act.text });
        }
        assert.notEqual(res.status, 500, JSON.stringify(res.body));
        assert.ok(res.status === 200 || res.status === 400, JSON.stringify(res.body));
        if (res.status !== 200) assert.equal(JSON.stringify(await groups()), before);
        // The subgroup graph stays acyclic whatever happened.
        const all = await groups();
        const edges = new Map(all.map((g) => [g.id as number, g.direct_subgroup_ids as number[]]));
        const visiting = new Set<number>();
        const done = new Set<number>();
        const walk = (id: number): void => {
          if (done.has(id)) return;
          assert.ok(!visiting.has(id), `cycle through ${id}`);
          visiting.add(id);
          for (const s of edges.get(id) ?? []) walk(s);
          visiting.delete(id);
          done.add(id);
        };
        for (const id of edges.keys()) walk(id);
      }),
      { numRuns: 150 },
    );
  });
});

// ---- cluster: a group change is seen at once by an actor on another node ------------

describe("user groups - cluster", { skip: requireBinaries("nats-server", "redis-server") }, () => {
  test("a membership change is used at once by the realm actor on another node", async () => {
    const nodes = ["n1", "n2"];
    // A shard count that puts the realm actor and the group directory on different nodes.
    let shards = 32;
    const ownerNode = (ref: ActorRef, s: number) => ownerOf(shardOf(ref, s), nodes);
    while (
      ownerNode({ kind: "realm", realm: 1, key: "realm" }, shards) ===
      ownerNode({ kind: "group", realm: 1, key: "directory" }, shards)
    )
      shards++;
    const c = await startCluster({ nodes, shards });
    try {
      const a = await newUser(c);
      const b = await newUser(c);
      const made = await c.api("POST", "/user_groups/create", {
        name: "cl",
        description: "",
        members: [a.userId],
      });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const id = made.body.group_id as number;
      const scheme = async (u: Creds) => {
        const r = await c.api("POST", "/register", { fetch_event_types: ["user_settings"] }, u);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body.user_settings.color_scheme as number;
      };
      const target = { group_ids: [id], skip_if_already_edited: false };
      let r = await c.api("PATCH", "/settings", { target_users: target, color_scheme: 2 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(await scheme(a), 2);
      assert.notEqual(await scheme(b), 2);
      // Change the group (group directory's node), then act through the realm (the other node).
      r = await c.api("POST", `/user_groups/${id}/members`, { add: [b.userId], delete: [a.userId] });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      r = await c.api("PATCH", "/settings", { target_users: target, color_scheme: 3 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(await scheme(b), 3);
      assert.equal(await scheme(a), 2);
      // And a permission: can_create_groups narrowed, refused at once.
      r = await c.api("PATCH", "/realm", { can_create_groups: { new: id } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      r = await c.api("POST", "/user_groups/create", { name: "by a", description: "", members: [] }, a);
      assert.equal(r.body.msg, "Insufficient permission");
      r = await c.api("POST", "/user_groups/create", { name: "by b", description: "", members: [] }, b);
      assert.equal(r.status, 200, JSON.stringify(r.body));
    } finally {
      await c.stop();
    }
  });
});

describe("user groups - events over HTTP", () => {
  async function queue(auth: Creds, caps: Record<string, boolean>): Promise<{ id: string; last: number }> {
    const r = await srv.api(
      "POST",
      "/register",
      {
        event_types: ["user_group", "realm"],
        client_capabilities: caps,
        fetch_event_types: ["realm_user_groups"],
      },
      auth,
    );
    ok(r);
    assert.ok(Array.isArray(r.body.realm_user_groups));
    return { id: r.body.queue_id, last: r.body.last_event_id };
  }
  async function drain(auth: Creds, q: { id: string; last: number }): Promise<Obj[]> {
    const r = await srv.api(
      "GET",
      "/events",
      { queue_id: q.id, last_event_id: q.last, dont_block: true },
      auth,
    );
    ok(r);
    return (r.body.events as Obj[]).map(({ id: _id, ...e }) => e);
  }

  test("queues get user_group and realm events; deactivation per capability", async () => {
    const m = await newUser(srv);
    const modern = await queue(m, { include_deactivated_groups: true });
    const legacy = await queue(m, {});
    const id = await create({ members: [m.userId] });
    ok(await srv.api("POST", `/user_groups/${id}/deactivate`));
    ok(await srv.api("PATCH", `/user_groups/${id}`, { deactivated: false }));
    ok(await srv.api("PATCH", "/realm", { can_add_custom_emoji_group: { new: ADMINS } }));
    ok(await srv.api("PATCH", "/realm", { can_add_custom_emoji_group: { new: MEMBERS } }));
    const a = await drain(m, modern);
    const b = await drain(m, legacy);
    assert.deepEqual(
      a.map((e) => [e.type, e.op]),
      [
        ["user_group", "add"],
        ["user_group", "update"],
        ["user_group", "update"],
        ["realm", "update_dict"],
        ["realm", "update_dict"],
      ],
    );
    assert.deepEqual(a[1], { type: "user_group", op: "update", group_id: id, data: { deactivated: true } });
    assert.deepEqual(a[2], { type: "user_group", op: "update", group_id: id, data: { deactivated: false } });
    assert.deepEqual(a[3], {
      type: "realm",
      op: "update_dict",
      property: "default",
      data: { can_add_custom_emoji_group: ADMINS },
    });
    assert.deepEqual(b[1], { type: "user_group", op: "remove", group_id: id });
    assert.equal(b[2]!.op, "add");
    assert.equal((b[2]!.group as Obj).id, id);
    assert.equal((b[2]!.group as Obj).deactivated, false);
    assert.deepEqual(b[2]!.group, a[0]!.group);
  });

  test("register: realm_user_groups per capability and realm_can_* settings", async () => {
    const id = await create({});
    ok(await srv.api("POST", `/user_groups/${id}/deactivate`));
    const reg = async (caps: Record<string, boolean>) => {
      const r = await srv.api("POST", "/register", {
        fetch_event_types: ["realm_user_groups", "realm"],
        client_capabilities: caps,
      });
      ok(r);
      return r.body;
    };
    const withCap = await reg({ include_deactivated_groups: true });
    const without = await reg({});
    assert.ok(withCap.realm_user_groups.some((g: Obj) => g.id === id));
    assert.ok(!without.realm_user_groups.some((g: Obj) => g.id === id));
    assert.equal(without.realm_can_create_groups, MEMBERS);
    assert.equal(without.realm_can_manage_all_groups, OWNERS);
    assert.equal(without.realm_can_create_web_public_channel_group, OWNERS);
  });
});
