// Black-box tests of the feature levels closed on the "remind" branch
// (docs/feature-levels/201-372.md and 373-496.md): the moderation request
// channel (331), message reports (382, 435), message reminders (381, 399,
// 415) and the welcome message's custom text (416).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startEmbedded, type EmbeddedHandle } from "./support/embedded.ts";
import {
  assertError,
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  openQueue,
  type Member,
} from "./support/zulip-asserts.ts";

let srv: EmbeddedHandle;
let member: Member;
let seq = 0;

before(async () => {
  srv = await startEmbedded();
  member = await newUser(srv);
});

after(async () => {
  await srv?.stop();
});

async function registerRealm(auth: Member | null = null): Promise<Record<string, unknown>> {
  const r = await srv.api("POST", "/register", { fetch_event_types: ["realm"] }, auth ?? undefined);
  assertSuccess(r);
  return r.body;
}

/** A new channel (the owner subscribed, and `subscribers`); its id. */
async function channel(opts: { inviteOnly?: boolean; subscribers?: number[] } = {}): Promise<number> {
  const r = await srv.api("POST", "/channels/create", {
    name: `fl-remind-${++seq}`,
    subscribers: [srv.owner.userId, ...(opts.subscribers ?? [])],
    invite_only: opts.inviteOnly ?? false,
  });
  assertSuccess(r);
  return r.body.id as number;
}

describe("FL 331: realm moderation_request_channel_id", () => {
  test("an administrator sets it; members hear realm/update; register follows; -1 disables", async () => {
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, -1);
    const ch = await channel({ inviteOnly: true });
    const q = await openQueue(srv, member, ["realm"]);
    const r = await srv.api("PATCH", "/realm", { moderation_request_channel_id: ch });
    assertSuccess(r);
    assert.equal(r.body.moderation_request_channel_id, ch);
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "realm"));
    assert.deepEqual(
      evs.filter((e) => e.type === "realm").map((e) => [e.op, e.property, e.value]),
      [["update", "moderation_request_channel_id", ch]],
    );
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, ch);
    assertSuccess(await srv.api("PATCH", "/realm", { moderation_request_channel_id: -1 }));
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, -1);
  });

  test("members, unknown channels and bad values are refused and change nothing", async () => {
    const ch = await channel();
    assertError(
      await srv.api("PATCH", "/realm", { moderation_request_channel_id: ch }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertError(
      await srv.api("PATCH", "/realm", { moderation_request_channel_id: 999999 }),
      "Invalid channel ID",
    );
    assertError(
      await srv.api("PATCH", "/realm", { moderation_request_channel_id: "x" }),
      "moderation_request_channel_id is not valid JSON",
    );
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, -1);
  });
});
