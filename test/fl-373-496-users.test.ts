// Black-box tests of later Zulip API changes about bots, user groups and
// profile fields (docs/feature-levels/373-496.md): members of deactivated
// groups (391), bots as targets of membership queries (458), paragraph
// fields in the profile summary (476), bots calling the user group
// endpoints (496).

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  newUser,
  useEmbedded,
  type Creds,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();
let member: Member;
let bot: Creds & { userId: number };
let seq = 0;

before(async () => {
  member = await newUser(srv);
  const b = await srv.api("POST", "/bots", { full_name: "FL Bot", short_name: "flbot" });
  assertSuccess(b);
  const email = (await srv.api("GET", `/users/${b.body.user_id}`)).body.user.email as string;
  bot = { email, apiKey: b.body.api_key as string, userId: b.body.user_id as number };
});

async function group(members: number[], auth?: Creds): Promise<number> {
  const r = await srv.api(
    "POST",
    "/user_groups/create",
    { name: `fl-group-${++seq}`, description: "d", members: JSON.stringify(members) },
    auth,
  );
  assertSuccess(r);
  return r.body.group_id as number;
}

describe("FL 391: deactivated groups", () => {
  test("members and subgroups of a deactivated group can still be changed", async () => {
    const g = await group([member.userId]);
    const sub = await group([]);
    assertSuccess(await srv.api("POST", `/user_groups/${g}/deactivate`, {}));
    assertSuccess(
      await srv.api("POST", `/user_groups/${g}/members`, { add: JSON.stringify([srv.owner.userId]) }),
    );
    assertSuccess(await srv.api("POST", `/user_groups/${g}/subgroups`, { add: JSON.stringify([sub]) }));
    const got = await srv.api("GET", "/user_groups", { include_deactivated_groups: true });
    const row = (
      got.body.user_groups as { id: number; members: number[]; direct_subgroup_ids: number[] }[]
    ).find((x) => x.id === g)!;
    assert.deepEqual(
      [...row.members].sort((a, b) => a - b),
      [srv.owner.userId, member.userId].sort((a, b) => a - b),
    );
    assert.deepEqual(row.direct_subgroup_ids, [sub]);
  });
});

describe("FL 458: bots as targets", () => {
  test("group membership and subscription status answer for bot users", async () => {
    const g = await group([bot.userId]);
    const r = await srv.api("GET", `/user_groups/${g}/members/${bot.userId}`);
    assertSuccess(r);
    assert.equal(r.body.is_user_group_member, true);
    const ch = await srv.api("POST", "/channels/create", {
      name: `fl-users-${++seq}`,
      subscribers: JSON.stringify([srv.owner.userId, bot.userId]),
    });
    assertSuccess(ch);
    const s = await srv.api("GET", `/users/${bot.userId}/subscriptions/${ch.body.id}`);
    assertSuccess(s);
    assert.equal(s.body.is_subscribed, true);
    assertError(await srv.api("GET", `/users/999999/subscriptions/${ch.body.id}`), "No such user");
  });
});

describe("FL 476: paragraph fields in the profile summary", () => {
  test("a paragraph field may be displayed in the summary; a users field still may not", async () => {
    const r = await srv.api("POST", "/realm/profile_fields", {
      name: `Para ${++seq}`,
      field_type: 2,
      display_in_profile_summary: true,
    });
    assertSuccess(r);
    const fields = (await srv.api("GET", "/realm/profile_fields")).body.custom_fields as Record<
      string,
      unknown
    >[];
    assert.equal(fields.find((f) => f.id === r.body.id)!.display_in_profile_summary, true);
    assertError(
      await srv.api("POST", "/realm/profile_fields", {
        name: `Users ${++seq}`,
        field_type: 6,
        display_in_profile_summary: true,
      }),
      "Field type not supported for display in profile summary.",
    );
  });
});

describe("FL 496: bots may use the user group endpoints", () => {
  test("list, create, members and subgroups as a bot; guests stay refused", async () => {
    assertSuccess(await srv.api("GET", "/user_groups", {}, bot));
    const g = await group([bot.userId], bot);
    assertSuccess(await srv.api("GET", `/user_groups/${g}/members`, {}, bot));
    assertSuccess(await srv.api("GET", `/user_groups/${g}/members/${bot.userId}`, {}, bot));
    assertSuccess(await srv.api("GET", `/user_groups/${g}/subgroups`, {}, bot));
    assertSuccess(
      await srv.api("POST", `/user_groups/${g}/members`, { add: JSON.stringify([member.userId]) }, bot),
    );
    const sub = await group([], bot);
    assertSuccess(await srv.api("POST", `/user_groups/${g}/subgroups`, { add: JSON.stringify([sub]) }, bot));
    assertSuccess(await srv.api("PATCH", `/user_groups/${g}`, { description: "by a bot" }, bot));
    const guest = await newUser(srv, 600);
    assertError(await srv.api("GET", "/user_groups", {}, guest), "Not allowed for guest users");
  });
});
