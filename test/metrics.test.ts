// Prometheus /metrics on every process: the embedded server, each gateway and
// each cluster node's ADMIN_PORT. Who may read it, the text format, and the
// figures the runtime feeds (docs/operations.md "Metrics").

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertSuccess,
  newUser,
  requireBinaries,
  startEmbedded,
  useCluster,
  type EmbeddedHandle,
} from "./support/index.ts";
import { basic, bearer, metric, raw, until, type RawResult } from "./support/ops.ts";

const TOKEN = `metrics-token-${process.pid}`;

/** A Zulip-style error; code null: none (405). */
function assertErr(res: RawResult, status: number, code: string | null, msg: string): void {
  assert.equal(res.status, status, res.text);
  assert.deepEqual(
    { result: res.body?.result, code: res.body?.code ?? null, msg: res.body?.msg },
    { result: "error", code, msg },
  );
}

describe("metrics, embedded server", () => {
  let srv: EmbeddedHandle;
  const saved = process.env.ADMIN_TOKEN;

  before(async () => {
    process.env.ADMIN_TOKEN = TOKEN;
    srv = await startEmbedded();
  });

  after(async () => {
    await srv?.stop();
    if (saved === undefined) delete process.env.ADMIN_TOKEN;
    else process.env.ADMIN_TOKEN = saved;
  });

  const scrape = async () => {
    const r = await raw(`${srv.baseUrl}/metrics`, bearer(TOKEN));
    assert.equal(r.status, 200, r.text);
    return r.text;
  };

  test("never public: no credentials 401, a member 403, a wrong token 401", async () => {
    const anon = await raw(`${srv.baseUrl}/metrics`);
    assertErr(anon, 401, "UNAUTHORIZED", "Not logged in: API authentication or user session required");
    assert.equal(anon.headers.get("www-authenticate"), 'Basic realm="zulip"');
    const member = await newUser(srv);
    assertErr(
      await raw(`${srv.baseUrl}/metrics`, basic(member)),
      403,
      "UNAUTHORIZED_PRINCIPAL",
      "Must be an organization owner",
    );
    const admin = await newUser(srv, 200);
    assertErr(
      await raw(`${srv.baseUrl}/metrics`, basic(admin)),
      403,
      "UNAUTHORIZED_PRINCIPAL",
      "Must be an organization owner",
    );
    assertErr(
      await raw(`${srv.baseUrl}/metrics`, bearer("nope")),
      401,
      "UNAUTHORIZED",
      "Invalid admin token",
    );
    assertErr(
      await raw(`${srv.baseUrl}/metrics`, basic({ email: srv.owner.email, apiKey: "x".repeat(32) })),
      401,
      "UNAUTHORIZED",
      "Invalid API key",
    );
    assertErr(await raw(`${srv.baseUrl}/metrics`, basic(srv.owner), "POST"), 405, null, "Method Not Allowed");
  });

  test("an owner (Basic) and the admin token (Bearer) read the Prometheus text", async () => {
    for (const auth of [basic(srv.owner), bearer(TOKEN)]) {
      const r = await raw(`${srv.baseUrl}/metrics`, auth);
      assert.equal(r.status, 200);
      assert.match(r.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
      const names = r.text
        .split("\n")
        .filter((l) => l && !l.startsWith("#"))
        .map((l) => l.split(/[{ ]/, 1)[0]!);
      assert.ok(names.length > 50);
      for (const n of names) assert.ok(n.startsWith("zulip_actors_"), n);
    }
  });

  test("HTTP requests by method, route template and status", async () => {
    const before = await scrape();
    const ok = { method: "GET", route: "/api/v1/users/me", status: "200" };
    const n0 = metric(before, "zulip_actors_http_request_duration_seconds_count", ok);
    for (let i = 0; i < 3; i++) assertSuccess(await srv.api("GET", "/users/me"));
    const bad = await srv.api("GET", "/users/me", {}, null);
    assert.equal(bad.status, 401);
    await raw(`${srv.baseUrl}/api/v1/no-such-endpoint`);
    const text = await scrape();
    assert.equal(metric(text, "zulip_actors_http_request_duration_seconds_count", ok), (n0 || 0) + 3);
    assert.ok(
      metric(text, "zulip_actors_http_request_duration_seconds_count", { ...ok, status: "401" }) >= 1,
    );
    assert.ok(
      metric(text, "zulip_actors_http_request_duration_seconds_count", {
        route: "unmatched",
        status: "404",
      }) >= 1,
    );
    // A histogram: buckets up to +Inf with the count.
    assert.equal(
      metric(text, "zulip_actors_http_request_duration_seconds_bucket", { ...ok, le: "+Inf" }),
      (n0 || 0) + 3,
    );
  });

  test("actor figures: activations, turns by kind, live actors, journal, shard moves", async () => {
    const u = await newUser(srv);
    assertSuccess(await srv.api("GET", "/users/me", {}, u));
    const text = await scrape();
    assert.ok(metric(text, "zulip_actors_actor_activations_total", { kind: "user" }) >= 2);
    assert.ok(metric(text, "zulip_actors_actor_activations_total", { kind: "realm" }) >= 1);
    assert.ok(metric(text, "zulip_actors_turn_duration_seconds_count", { kind: "user" }) >= 2);
    assert.ok(metric(text, "zulip_actors_turn_duration_seconds_count", { kind: "realm" }) >= 1);
    assert.ok(metric(text, "zulip_actors_live_actors", { node: "embedded", kind: "user" }) >= 2);
    assert.ok(metric(text, "zulip_actors_journal_append_duration_seconds_count") >= 1);
    assert.ok(metric(text, "zulip_actors_journal_facts_appended_total") >= 1);
    assert.ok(metric(text, "zulip_actors_journal_lag_facts", { node: "embedded" }) >= 1);
    assert.ok(metric(text, "zulip_actors_journal_lag_facts_max", { node: "embedded" }) >= 1);
    // The embedded node took all of its 16 shards.
    assert.ok(metric(text, "zulip_actors_shard_moves_total", { direction: "acquired" }) >= 16);
    assert.equal(metric(text, "zulip_actors_shards_served", { node: "embedded" }), 16);
    assert.equal(metric(text, "zulip_actors_mailbox_depth", { node: "embedded" }), 0);
    assert.equal(metric(text, "zulip_actors_mailbox_depth_max", { node: "embedded" }), 0);
    assert.equal(metric(text, "zulip_actors_overloaded", { node: "embedded" }), 0);
    assert.ok(metric(text, "zulip_actors_process_resident_memory_bytes") > 0);
  });

  test("event queues and parked long polls", async () => {
    const u = await newUser(srv);
    const before = await scrape();
    const q0 = metric(before, "zulip_actors_event_queues", { node: "embedded" });
    const reg = await srv.api("POST", "/register", { event_types: ["user_status"] }, u);
    assertSuccess(reg);
    const poll = srv.api("GET", "/events", { queue_id: reg.body.queue_id, last_event_id: -1 }, u);
    const text = await until("a parked poll", async () => {
      const t = await scrape();
      return metric(t, "zulip_actors_parked_polls", { node: "embedded" }) >= 1 ? t : null;
    });
    assert.equal(metric(text, "zulip_actors_event_queues", { node: "embedded" }), q0 + 1);
    assert.ok(metric(text, "zulip_actors_live_actors", { node: "embedded", kind: "queue" }) >= 1);
    // An event releases the poll.
    assertSuccess(await srv.api("POST", "/users/me/status", { status_text: "busy" }, u));
    const got = await poll;
    assertSuccess(got);
    assert.equal(got.body.events[0].type, "user_status");
    const after = await scrape();
    assert.equal(metric(after, "zulip_actors_parked_polls", { node: "embedded" }), 0);
  });

  test("lease renewals are counted", async () => {
    await until(
      "a lease renewal",
      async () => metric(await scrape(), "zulip_actors_lease_renewals_total", { result: "ok" }) > 0,
    );
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("metrics, cluster: the gateway and every node", { skip }, () => {
  const c = useCluster({ nodes: ["n1", "n2"], adminPorts: true, env: { ADMIN_TOKEN: TOKEN } });

  test("each node's ADMIN_PORT serves its own /metrics, never public", async () => {
    let shards = 0;
    for (const [id, n] of c.nodes) {
      const url = `http://127.0.0.1:${n.adminPort}/metrics`;
      assertErr(
        await raw(url),
        401,
        "UNAUTHORIZED",
        "Not logged in: API authentication or user session required",
      );
      assertErr(await raw(url, bearer("wrong")), 401, "UNAUTHORIZED", "Invalid admin token");
      const text = await until(`${id} renewing leases`, async () => {
        const r = await raw(url, bearer(TOKEN));
        assert.equal(r.status, 200, r.text);
        return metric(r.text, "zulip_actors_lease_renewals_total", { result: "ok" }) > 0 ? r.text : null;
      });
      const served = metric(text, "zulip_actors_shards_served", { node: id });
      assert.ok(served > 0, `${id} serves shards`);
      shards += served;
      assert.ok(metric(text, "zulip_actors_shard_moves_total", { direction: "acquired" }) >= served);
      // Only this node's runtime lives in the process.
      for (const other of c.nodes.keys()) {
        if (other !== id)
          assert.ok(Number.isNaN(metric(text, "zulip_actors_shards_served", { node: other })));
      }
      // The realm owner (Basic, through the node's own path to the realm actor) may read it too.
      const owner = await raw(url, basic(c.owner));
      assert.equal(owner.status, 200, owner.text);
    }
    assert.equal(shards, c.shards);
  });

  test("the gateway's /metrics counts requests by route; the nodes count the turns", async () => {
    for (let i = 0; i < 4; i++) assertSuccess(await c.api("GET", "/users/me"));
    const gw = await raw(`${c.baseUrl}/metrics`, bearer(TOKEN));
    assert.equal(gw.status, 200);
    assert.ok(
      metric(gw.text, "zulip_actors_http_request_duration_seconds_count", {
        method: "GET",
        route: "/api/v1/users/me",
        status: "200",
      }) >= 4,
    );
    // The gateway hosts no actors.
    assert.ok(Number.isNaN(metric(gw.text, "zulip_actors_live_actors")));
    let turns = 0;
    for (const n of c.nodes.values()) {
      const r = await raw(`http://127.0.0.1:${n.adminPort}/metrics`, bearer(TOKEN));
      const t = metric(r.text, "zulip_actors_turn_duration_seconds_count", { kind: "user" });
      if (!Number.isNaN(t)) turns += t;
    }
    assert.ok(turns >= 4);
  });
});
