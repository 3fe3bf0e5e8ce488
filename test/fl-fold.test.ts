// Black-box tests of the feature levels closed on the "fold" branch
// (docs/feature-levels/373-496.md): realm topics_policy (392).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startEmbedded, type EmbeddedHandle } from "./support/embedded.ts";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  type Member,
} from "./support/zulip-asserts.ts";

let srv: EmbeddedHandle;
let member: Member;
let admin: Member;

before(async () => {
  srv = await startEmbedded();
  member = await newUser(srv);
  admin = await newUser(srv, 200);
});

after(async () => {
  await srv?.stop();
});

let seq = 0;
async function channel(extra: Record<string, unknown> = {}): Promise<number> {
  const r = await srv.api("POST", "/channels/create", {
    name: `fold-${++seq}`,
    subscribers: [srv.owner.userId, member.userId],
    ...extra,
  });
  assertSuccess(r);
  return r.body.id as number;
}

async function registerRealm(auth: Member | null = null): Promise<Record<string, unknown>> {
  const r = await srv.api("POST", "/register", { fetch_event_types: ["realm"] }, auth ?? srv.owner);
  assertSuccess(r);
  return r.body;
}

describe("FL 392: realm topics_policy and can_set_topics_policy_group", () => {
  test("FL 392: realm topics_policy is set by PATCH /realm, announced, registered, and rules inheriting channels", async () => {
    const before = await registerRealm(member);
    assert.equal(before.realm_topics_policy, "allow_empty_topic");
    assert.equal(before.realm_mandatory_topics, false);
    const inherits = await channel();
    const allows = await channel({ topics_policy: "allow_empty_topic" });
    const send = (stream: number, topic: string, auth: Member | null = null) =>
      srv.api("POST", "/messages", { type: "stream", to: stream, topic, content: "hi" }, auth ?? srv.owner);
    assertSuccess(await send(inherits, ""));

    const q = await openQueue(srv, member, ["realm"]);
    const r = await srv.api("PATCH", "/realm", { topics_policy: "disable_empty_topic" }, admin);
    assertSuccess(r);
    assert.equal(r.body.topics_policy, "disable_empty_topic");
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "realm"));
    assert.deepEqual(
      evs.filter((e) => e.type === "realm").map((e) => [e.op, e.property, e.value]),
      [["update", "topics_policy", "disable_empty_topic"]],
    );
    const reg = await registerRealm(member);
    assert.equal(reg.realm_topics_policy, "disable_empty_topic");
    assert.equal(reg.realm_mandatory_topics, true);

    assertError(
      await send(inherits, "", member),
      "Sending messages to the general chat is not allowed in this channel.",
    );
    assertError(
      await send(inherits, "general chat", member),
      "Sending messages to the general chat is not allowed in this channel.",
    );
    assertSuccess(await send(inherits, "named", member));
    // A channel's own policy wins over the realm's.
    assertSuccess(await send(allows, "", member));
    // Moving a message into the empty topic of an inheriting channel is refused too.
    const named = await send(inherits, "to-move");
    assertSuccess(named);
    assertError(
      await srv.api("PATCH", `/messages/${named.body.id}`, { topic: "" }),
      "Sending messages to the general chat is not allowed in this channel.",
    );

    assertSuccess(await srv.api("PATCH", "/realm", { topics_policy: "allow_empty_topic" }));
    assertSuccess(await send(inherits, "", member));
    assert.equal((await registerRealm()).realm_mandatory_topics, false);
  });

  test("FL 392: PATCH /realm topics_policy refuses members, unknown values and mandatory_topics, changing nothing", async () => {
    assertError(
      await srv.api("PATCH", "/realm", { topics_policy: "disable_empty_topic" }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    // "empty_topic_only" is a channel policy only.
    assertError(
      await srv.api("PATCH", "/realm", { topics_policy: "empty_topic_only" }),
      "Invalid topics_policy",
    );
    assertError(await srv.api("PATCH", "/realm", { topics_policy: "inherit" }), "Invalid topics_policy");
    assertError(await srv.api("PATCH", "/realm", { topics_policy: "__proto__" }), "Invalid topics_policy");
    // Removed from PATCH /realm at FL 392: ignored like any unknown parameter.
    const r = await srv.api("PATCH", "/realm", { mandatory_topics: true });
    assert.notEqual(r.status, 500);
    const reg = await registerRealm();
    assert.equal(reg.realm_topics_policy, "allow_empty_topic");
    assert.equal(reg.realm_mandatory_topics, false);
  });

  test("FL 392: a channel's topics_policy needs can_set_topics_policy_group unless it is inherit", async () => {
    const admins = (await srv.api("GET", "/user_groups")).body.user_groups.find(
      (g: { name: string }) => g.name === "role:administrators",
    ).id as number;
    assertSuccess(
      await srv.api("PATCH", "/realm", { can_set_topics_policy_group: JSON.stringify({ new: admins }) }),
    );
    try {
      // A member may create a channel, but not with a policy of their own.
      assertError(
        await srv.api(
          "POST",
          "/channels/create",
          { name: `fold-m-${++seq}`, subscribers: [member.userId], topics_policy: "disable_empty_topic" },
          member,
        ),
        "Insufficient permission",
      );
      const mine = await srv.api(
        "POST",
        "/channels/create",
        { name: `fold-m-${++seq}`, subscribers: [member.userId], topics_policy: "inherit" },
        member,
      );
      assertSuccess(mine);
      const id = mine.body.id as number;
      // The creator administers the channel, but the realm group says no.
      assertError(
        await srv.api("PATCH", `/streams/${id}`, { topics_policy: "empty_topic_only" }, member),
        "Insufficient permission",
      );
      const s = await srv.api("GET", `/streams/${id}`, {}, member);
      assert.equal(s.body.stream.topics_policy, "inherit");
      // Administrators always may.
      assertSuccess(
        await srv.api("PATCH", `/streams/${id}`, { topics_policy: "disable_empty_topic" }, admin),
      );
    } finally {
      const members = (await srv.api("GET", "/user_groups")).body.user_groups.find(
        (g: { name: string }) => g.name === "role:members",
      ).id as number;
      assertSuccess(
        await srv.api("PATCH", "/realm", { can_set_topics_policy_group: JSON.stringify({ new: members }) }),
      );
    }
    // Back to the default (members): the member may now.
    const mine = await srv.api(
      "POST",
      "/channels/create",
      { name: `fold-m-${++seq}`, subscribers: [member.userId], topics_policy: "disable_empty_topic" },
      member,
    );
    assertSuccess(mine);
  });
});
