// Black-box regressions for the API changes of Zulip feature levels
// 201-372 that the audit (docs/feature-levels/201-372.md) found missing or
// wrong and fixed. Each describe names its feature level.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startEmbedded, type EmbeddedHandle } from "./support/embedded.ts";
import { assertError, assertSuccess, newUser } from "./support/zulip-asserts.ts";

let srv: EmbeddedHandle;

before(async () => {
  srv = await startEmbedded();
});

after(async () => {
  await srv?.stop();
});

let seq = 0;
async function channel(params: Record<string, unknown> = {}): Promise<{ id: number; name: string }> {
  const name = `fl-${++seq}-${process.pid}`;
  const r = await srv.api("POST", "/channels/create", { name, subscribers: [srv.owner.userId], ...params });
  assertSuccess(r);
  return { id: r.body.id as number, name };
}

async function subscriberIds(streamId: number): Promise<number[]> {
  const r = await srv.api("GET", `/streams/${streamId}/members`);
  assertSuccess(r);
  return r.body.subscribers as number[];
}

describe("FL 208: principals that are unknown or deactivated", () => {
  test("subscribe and unsubscribe answer 400 No such user / User is deactivated, and change nothing", async () => {
    const ch = await channel();
    const gone = await newUser(srv);
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    const live = await newUser(srv);
    const before = await subscriberIds(ch.id);

    for (const principals of [[987654], ["nobody-here@example.com"], [live.userId, 987654]]) {
      assertError(
        await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: ch.name }], principals }),
        "No such user",
      );
      assertError(
        await srv.api("DELETE", "/users/me/subscriptions", { subscriptions: [ch.name], principals }),
        "No such user",
      );
    }
    for (const principals of [[gone.userId], [gone.email], [live.userId, gone.userId]]) {
      assertError(
        await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: ch.name }], principals }),
        "User is deactivated",
      );
      assertError(
        await srv.api("DELETE", "/users/me/subscriptions", { subscriptions: [ch.name], principals }),
        "User is deactivated",
      );
    }
    assert.deepEqual(await subscriberIds(ch.id), before);

    // A known, active principal still works.
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: ch.name }],
        principals: [live.userId],
      }),
    );
    assert.ok((await subscriberIds(ch.id)).includes(live.userId));
  });
});
