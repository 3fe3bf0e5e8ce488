// Property-based fuzzing of every route's parameters (issue 10), against an
// embedded server. The route list comes from gateway/routes/index.ts, so a
// new route is fuzzed without touching this file.
//
// Per route, fast-check (seeded: FUZZ_SEED, default 20240610) generates
// "forced" requests, each carrying one fault that must make it a 4xx
// (anonymous, bad API key, missing required parameter, both names of an
// alias pair, a value the route's own parser rejects, a path id naming
// nothing), plus noise (other parameters with random values: wrong types,
// huge numbers, 100 kB strings, unicode with NUL/RTL/lone surrogates, deeply
// nested and invalid JSON; repeated keys; unknown keys; query, urlencoded,
// multipart or split transports), and "free" requests with random values
// that may succeed. Callers: owner, member, guest, anonymous.
//
// Checked: no 5xx ever; every non-2xx body is Zulip's error envelope; every
// forced request is rejected; the observable state (test/support/fuzz.ts
// fingerprint) is unchanged across every batch of rejected requests (and of
// successful GETs). A batch that changed state is replayed request by
// request to name the culprit. Counts are printed at the end.
//
// Run: node --import tsx --test test/fuzz.test.ts

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import fc from "fast-check";
import { routes } from "../gateway/routes/index.ts";
import { assertSuccess, newUser, startEmbedded, type Creds, type EmbeddedHandle } from "./support/index.ts";
import {
  describeRequest,
  diffKeys,
  envelopeProblem,
  fingerprint,
  forcedRequest,
  freeRequest,
  modelRoutes,
  send,
  type Callers,
  type Fixtures,
  type FuzzRequest,
  type Sent,
} from "./support/fuzz.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20240610);
const FORCED_PER_ROUTE = Number(process.env.FUZZ_FORCED ?? 20);
const FREE_PER_ROUTE = Number(process.env.FUZZ_FREE ?? 6);
const BATCH = 60;

/**
 * Routes whose successful answers are not state changes: their accepted
 * requests stay in the batch whose state must not change. (Queues and
 * presence are outside the fingerprint.)
 */
const SAFE_WHEN_ACCEPTED = new Set([
  "POST /api/v1/register",
  "POST /api/v1/fetch_api_key",
  "DELETE /api/v1/events",
  "POST /api/v1/users/me/presence",
]);

let srv: EmbeddedHandle;
let callers: Callers;
let fixtures: Fixtures;

before(async () => {
  srv = await startEmbedded();
  const member = await newUser(srv, 400, "Fuzz Member");
  const guest = await newUser(srv, 600, "Fuzz Guest");
  callers = { owner: srv.owner, member, guest };

  const ok = async (method: string, path: string, params: Record<string, unknown>) => {
    const r = await srv.api(method, path, params);
    assertSuccess(r);
    return r.body;
  };
  await ok("POST", "/users/me/subscriptions", {
    subscriptions: [{ name: "fuzz channel" }],
    principals: [srv.owner.userId, member.userId, guest.userId],
  });
  const streamId = (await ok("GET", "/get_stream_id", { stream: "fuzz channel" })).stream_id;
  const messageId = (
    await ok("POST", "/messages", { type: "stream", to: streamId, topic: "fuzz", content: "hello fuzz" })
  ).id;
  await ok("POST", `/messages/${messageId}/reactions`, { emoji_name: "smile" });
  const groupId = (
    await ok("POST", "/user_groups/create", { name: "fuzzers", description: "", members: [member.userId] })
  ).group_id;
  const filterId = (
    await ok("POST", "/realm/filters", {
      pattern: "#(?P<id>[0-9]+)",
      url_template: "https://example.com/{id}",
    })
  ).id;
  const botId = (await ok("POST", "/bots", { full_name: "Fuzz Bot", short_name: "fuzzbot" })).user_id;
  const fieldId = (await ok("POST", "/realm/profile_fields", { name: "Fuzz field", field_type: 1 })).id;
  const snippetId = (await ok("POST", "/saved_snippets", { title: "t", content: "c" })).saved_snippet_id;
  const draftId = (await ok("POST", "/drafts", { drafts: [{ type: "", to: [], topic: "", content: "c" }] }))
    .ids[0];
  fixtures = {
    user_id: String(member.userId),
    stream_id: String(streamId),
    message_id: String(messageId),
    user_group_id: String(groupId),
    filter_id: String(filterId),
    bot_id: String(botId),
    field_id: String(fieldId),
    saved_snippet_id: String(snippetId),
    draft_id: String(draftId),
    realm_id: "1",
    file: "fuzz.png",
    "*": "fuzz_emoji",
  };
});

after(async () => {
  await srv?.stop();
});

interface Stats {
  sent: number;
  accepted: number;
  rejected: number;
  s5xx: number;
}

test("the state fingerprint sees changes to the owner, a member, a guest and messages", async () => {
  const base = await fingerprint(srv.baseUrl, callers);
  const changes: [string, Record<string, unknown>, Creds][] = [
    ["PATCH", { full_name: "Olivia Renamed" }, callers.owner],
    ["PATCH", { enter_sends: true }, callers.member],
    ["PATCH", { twenty_four_hour_time: true }, callers.guest],
  ];
  let prev = base;
  for (const [method, params, who] of changes) {
    assertSuccess(await srv.api(method, "/settings", params, who));
    const now = await fingerprint(srv.baseUrl, callers);
    assert.notDeepEqual(diffKeys(prev, now), [], JSON.stringify(params));
    prev = now;
  }
  assertSuccess(await srv.api("POST", `/messages/${fixtures.message_id}/reactions`, { emoji_name: "tada" }));
  const now = await fingerprint(srv.baseUrl, callers);
  assert.ok(diffKeys(prev, now).includes("owner.messages"));
  assert.deepEqual(diffKeys(now, await fingerprint(srv.baseUrl, callers)), [], "two reads agree");
});

test("fuzzing every route: no 5xx, Zulip error envelopes, rejected requests change nothing", async (t) => {
  const started = Date.now();
  const models = modelRoutes(routes);
  const stats = new Map<string, Stats>();
  const serverErrors: string[] = [];
  const badEnvelopes: string[] = [];
  const unexpectedAccepts: string[] = [];
  const stateChanges: string[] = [];
  let fingerprints = 0;

  let fpMs = 0;
  const slowest: { ms: number; what: string }[] = [];
  const fp = async () => {
    fingerprints++;
    const t0 = Date.now();
    const out = await fingerprint(srv.baseUrl, callers);
    fpMs += Date.now() - t0;
    return out;
  };

  let baseline = await fp();
  /** Sent since `baseline`, none of which may have changed the state. */
  let pending: FuzzRequest[] = [];

  const exec = async (r: FuzzRequest): Promise<Sent> => {
    const t0 = Date.now();
    const s = await send(srv.baseUrl, callers, r);
    const ms = Date.now() - t0;
    if (slowest.length < 5 || ms > slowest.at(-1)!.ms) {
      slowest.push({ ms, what: `${describeRequest(r)} -> ${s.status}` });
      slowest.sort((a, b) => b.ms - a.ms);
      slowest.length = Math.min(slowest.length, 5);
    }
    const st = stats.get(r.route)!;
    st.sent++;
    if (s.status >= 500) {
      st.s5xx++;
      serverErrors.push(`${describeRequest(r)} -> ${s.status} ${s.text.slice(0, 300)}`);
    } else if (s.status >= 200 && s.status < 300) {
      st.accepted++;
    } else {
      st.rejected++;
    }
    if (s.status >= 300) {
      const problem = envelopeProblem(s);
      if (problem) badEnvelopes.push(`${describeRequest(r)} -> ${s.status}: ${problem}`);
    }
    return s;
  };

  /** The state moved during `batch`: replay it one request at a time to name the culprit. */
  const attribute = async (batch: FuzzRequest[], keys: string[]) => {
    let before = await fp();
    let found = false;
    for (const r of batch) {
      const s = await exec(r);
      const now = await fp();
      const changed = diffKeys(before, now);
      if (changed.length > 0) {
        found = true;
        stateChanges.push(
          `${describeRequest(r)} -> ${s.status} ${s.text.slice(0, 200)}; changed: ${changed.join(", ")}`,
        );
      }
      before = now;
    }
    if (!found) stateChanges.push(`unattributed change of ${keys.join(", ")} in a batch of ${batch.length}`);
    baseline = before;
  };

  const check = async () => {
    if (pending.length === 0) return;
    const now = await fp();
    const changed = diffKeys(baseline, now);
    const batch = pending;
    pending = [];
    baseline = now;
    if (changed.length > 0) await attribute(batch, changed);
  };

  const run = async (r: FuzzRequest) => {
    const mayChange = r.method !== "GET" && !SAFE_WHEN_ACCEPTED.has(r.route);
    const s = await exec(r);
    const accepted = s.status >= 200 && s.status < 300;
    if (accepted && r.fault !== "none") {
      unexpectedAccepts.push(`${describeRequest(r)} -> ${s.status} ${s.text.slice(0, 200)}`);
    }
    if (accepted && mayChange) {
      // A legitimate change (or an unexpected accept): new baseline; the
      // rejected requests sent before it in this batch are replayed on it.
      const unverified = pending;
      pending = [];
      baseline = await fp();
      for (const u of unverified) {
        const us = await exec(u);
        if (us.status < 300) {
          // Accepted this time: it cannot be checked for "no change".
          baseline = await fp();
          pending = [];
        } else {
          pending.push(u);
        }
      }
      await check();
      return;
    }
    pending.push(r);
    if (pending.length >= BATCH) await check();
  };

  let seed = SEED;
  for (const rm of models) {
    stats.set(rm.key, { sent: 0, accepted: 0, rejected: 0, s5xx: 0 });
    const forced = forcedRequest(rm, fixtures);
    if (forced) for (const r of fc.sample(forced, { seed: seed++, numRuns: FORCED_PER_ROUTE })) await run(r);
    if (rm.noFree) continue;
    // Free requests may succeed: they start from a checked state, so a
    // success only re-sends the few rejected free requests before it.
    await check();
    for (const r of fc.sample(freeRequest(rm, fixtures), { seed: seed++, numRuns: FREE_PER_ROUTE }))
      await run(r);
  }
  await check();

  let total: Stats = { sent: 0, accepted: 0, rejected: 0, s5xx: 0 };
  const lines = ["route | sent | rejected | accepted | 5xx"];
  for (const [k, s] of stats) {
    lines.push(`${k} | ${s.sent} | ${s.rejected} | ${s.accepted} | ${s.s5xx}`);
    total = {
      sent: total.sent + s.sent,
      accepted: total.accepted + s.accepted,
      rejected: total.rejected + s.rejected,
      s5xx: total.s5xx + s.s5xx,
    };
  }
  lines.push(
    `TOTAL ${stats.size} routes | sent ${total.sent} | rejected ${total.rejected} | accepted ${total.accepted} | 5xx ${total.s5xx}` +
      ` | state checks ${fingerprints} (${(fpMs / 1000).toFixed(1)} s) | unexpected accepts ${unexpectedAccepts.length}` +
      ` | state changes by rejected requests ${stateChanges.length} | bad envelopes ${badEnvelopes.length}` +
      ` | seed ${SEED} | ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  const report = lines.join("\n");
  if (process.env.FUZZ_VERBOSE) {
    console.log(report);
    console.log(
      `slowest requests:\n  ${slowest.map((x) => `${x.ms} ms ${x.what.slice(0, 300)}`).join("\n  ")}`,
    );
  } else t.diagnostic(lines.at(-1)!);
  for (const [title, list] of [
    ["5xx responses", serverErrors],
    ["non-envelope error bodies", badEnvelopes],
    ["forced faults accepted", unexpectedAccepts],
    ["state changed by rejected requests", stateChanges],
  ] as const) {
    if (list.length > 0) console.log(`${title} (${list.length}):\n  ${list.slice(0, 30).join("\n  ")}`);
  }

  assert.deepEqual(serverErrors, [], "no request may answer 5xx");
  assert.deepEqual(badEnvelopes, [], "every error is Zulip's envelope");
  assert.deepEqual(stateChanges, [], "rejected requests change nothing");
  assert.deepEqual(unexpectedAccepts, [], "every forced fault is rejected");
});
