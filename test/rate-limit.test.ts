// Zulip's per-user API rate limit (the api_by_user rule): headers on every
// authenticated response, the 429 body and Retry-After, per-user counting,
// RATE_LIMIT_PER_MINUTE=0, and counting across gateways over the bus.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createInProcessTransport } from "../cluster/transport/in-process.ts";
import { ClusterRateLimiter, RATE_LIMIT_SUBJECT } from "../gateway/rate-limit.ts";
import { assertError, assertSuccess, newUser, startEmbedded, useEmbedded, waitFor } from "./support/index.ts";

const LIMIT = 5;
/** How long two gateways may take to learn of each other's requests. */
const EXCHANGE = { timeoutMs: 2000, stepMs: 20, what: "the gateways' counts to agree" };
const srv = useEmbedded({ env: { RATE_LIMIT_PER_MINUTE: String(LIMIT) } });

describe("rate limit - HTTP", () => {
  test("headers count down, then 429 RATE_LIMIT_HIT with retry-after; other users unaffected", async () => {
    // Fresh users, so the counts start at zero (the owner's budget pays for creating them).
    const u = await fresh();
    const other = await fresh();
    const start = Math.floor(Date.now() / 1000);
    for (let i = 1; i <= LIMIT; i++) {
      const r = await srv.api("GET", "/users/me", {}, u);
      assertSuccess(r);
      assert.equal(r.headers.get("x-ratelimit-limit"), String(LIMIT));
      assert.equal(r.headers.get("x-ratelimit-remaining"), String(LIMIT - i));
      const reset = Number(r.headers.get("x-ratelimit-reset"));
      assert.ok(Number.isInteger(reset) && reset >= start + 59 && reset <= start + 62, String(reset));
    }
    const r = await srv.api("GET", "/users/me", {}, u);
    assertError(r, "API usage exceeded rate limit", "RATE_LIMIT_HIT", 429);
    const retry = r.body["retry-after"];
    assert.equal(typeof retry, "number");
    assert.ok(retry > 0 && retry <= 60, String(retry));
    assert.equal(r.headers.get("retry-after"), String(retry));
    assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
    // A refused request changes nothing (and is not counted).
    const refused = await srv.api("POST", "/saved_snippets", { title: "T", content: "C" }, u);
    assertError(refused, "API usage exceeded rate limit", "RATE_LIMIT_HIT", 429);
    // Another user has their own budget.
    const ok = await srv.api("GET", "/saved_snippets", {}, other);
    assertSuccess(ok);
    assert.deepEqual(ok.body.saved_snippets, []);
    assert.equal(ok.headers.get("x-ratelimit-remaining"), String(LIMIT - 1));
  });

  test("unauthenticated requests carry no rate-limit headers", async () => {
    const r = await srv.api("GET", "/server_settings", {}, null);
    assertSuccess(r);
    assert.equal(r.headers.get("x-ratelimit-limit"), null);
  });
});

describe("rate limit - disabled", () => {
  test("RATE_LIMIT_PER_MINUTE=0 sends no headers and never refuses", async () => {
    const open = await startEmbedded({ env: { RATE_LIMIT_PER_MINUTE: "0" } });
    try {
      for (let i = 0; i < LIMIT * 3; i++) {
        const r = await open.api("GET", "/users/me");
        assertSuccess(r);
        assert.equal(r.headers.get("x-ratelimit-limit"), null);
      }
    } finally {
      await open.stop();
    }
  });
});

describe("rate limit - across gateways", () => {
  test("two gateways on one bus enforce one cluster-wide count", async () => {
    const t = createInProcessTransport();
    const a = new ClusterRateLimiter(t.bus, 10);
    const b = new ClusterRateLimiter(t.bus, 10);
    const caller = { realmId: 1, userId: 7, role: 400, isBot: false };
    const now = Date.now();
    try {
      for (let i = 0; i < 6; i++) assert.equal(a.check(caller, now).error, undefined);
      assert.equal(a.usage(caller, now), 6);
      // Within one exchange period b learns of a's six requests.
      await waitFor(() => b.usage(caller, now) === 6, EXCHANGE);
      for (let i = 0; i < 4; i++) {
        const r = b.check(caller, now);
        assert.equal(r.error, undefined);
        assert.equal(r.headers["X-RateLimit-Remaining"], String(3 - i));
      }
      const refused = b.check(caller, now);
      assert.equal(refused.error?.code, "RATE_LIMIT_HIT");
      assert.equal(refused.error?.status, 429);
      // And a learns of b's four.
      await waitFor(() => a.usage(caller, now) === 10, EXCHANGE);
      assert.equal(a.check(caller, now).error?.code, "RATE_LIMIT_HIT");
      // Another user is counted separately, and the window moves on.
      assert.equal(a.check({ ...caller, userId: 9 }, now).error, undefined);
      assert.equal(a.check(caller, now + 61_000).error, undefined);
    } finally {
      a.close();
      b.close();
    }
  });

  test("malformed bus messages are ignored", () => {
    const t = createInProcessTransport();
    const a = new ClusterRateLimiter(t.bus, 3);
    try {
      const enc = new TextEncoder();
      t.bus.publish(RATE_LIMIT_SUBJECT, enc.encode("not json"));
      t.bus.publish(RATE_LIMIT_SUBJECT, enc.encode(JSON.stringify({ from: "x", counts: [[1, "a", null]] })));
      const caller = { realmId: 1, userId: 1, role: 400, isBot: false };
      assert.equal(a.check(caller, Date.now()).headers["X-RateLimit-Remaining"], "2");
    } finally {
      a.close();
    }
  });
});

let seq = 0;
/** A fresh user: the owner spends one request of its own budget on each. */
async function fresh() {
  return newUser(srv, 400, `Rate User ${++seq}`);
}
