// Overload (docs/operations.md "Overload"): bounded mailboxes (ACTOR_MAILBOX_MAX) and a
// node memory budget (NODE_MEMORY_BUDGET_MB). Past either bound the node
// refuses with 503 + Retry-After and Zulip's error envelope, never a 500, and
// keeps serving once the pressure is gone.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { ActorRef, Behavior } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import { NodeRuntime } from "../cluster/node.ts";
import { MemoryGuard } from "../cluster/overload.ts";
import { createLmdbStore, type Store } from "../cluster/storage/index.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { startEmbedded as startServer, type EmbeddedServer } from "../server.ts";
import {
  assertSuccess,
  makeApi,
  requireBinaries,
  startEmbedded,
  useCluster,
  type Api,
  type ApiResult,
  type EmbeddedHandle,
} from "./support/index.ts";
import { bearer, metric, raw } from "./support/ops.ts";

const TOKEN = `overload-token-${process.pid}`;

function assertUnavailable(res: ApiResult): void {
  assert.equal(res.status, 503, JSON.stringify(res.body));
  assert.equal(res.headers.get("retry-after"), "1");
  assert.deepEqual(res.body, {
    result: "error",
    msg: "Service temporarily unavailable, retry later.",
    code: "SERVICE_UNAVAILABLE",
  });
}

/** N concurrent status updates by one user: they all land in that user's actor. */
async function flood(api: Api, n: number): Promise<ApiResult[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) => api("POST", "/users/me/status", { status_text: `flood ${i}` })),
  );
}

function tally(results: ApiResult[]): Record<number, number> {
  const by: Record<number, number> = {};
  for (const r of results) by[r.status] = (by[r.status] ?? 0) + 1;
  return by;
}

function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved: Record<string, string | undefined> = {};
  for (const k of Object.keys(vars)) {
    saved[k] = process.env[k];
    process.env[k] = vars[k];
  }
  return fn().finally(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

describe("bounded mailboxes, runtime", () => {
  let dir: string;
  let store: Store;
  let node: NodeRuntime;
  let release: () => void = () => {};
  let gate = new Promise<void>((r) => (release = r));

  const slow: Behavior<{ n: number }> = {
    kind: "user",
    initial: () => ({ n: 0 }),
    apply: (s, f) => ({ n: s.n + (f.n as number) }),
    toSnapshot: (s) => JSON.stringify(s),
    fromSnapshot: (d) => JSON.parse(d) as { n: number },
    handlers: {
      wait: async (s) => {
        await gate;
        return { facts: [{ n: 1 }], reply: s.n + 1 };
      },
    },
  };
  const ref: ActorRef = { kind: "user", realm: 1, key: "7" };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "overload-"));
    store = await createLmdbStore(dir);
    const t = createInProcessTransport();
    node = new NodeRuntime({
      nodeId: "t",
      shards: 4,
      store,
      behaviors: { user: slow as Behavior<unknown> },
      outbound: t.client,
      bus: t.bus,
      mailboxLimit: 2,
    });
    t.serve((req) => node.handle(req));
    node.start();
    node.setDesired([0, 1, 2, 3]);
    assert.ok(await node.ready());
  });

  after(async () => {
    release();
    await node?.stop(true);
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a full mailbox refuses with UnavailableError (Retry-After 1); the actor recovers", async () => {
    const send = () =>
      node.handle({
        ref,
        shard: shardOf(ref, 4),
        method: "wait",
        args: {},
        caller: null,
        deadline: Date.now() + 10_000,
      });
    // One turn running (out of the mailbox), two waiting, the rest refused.
    const first = send();
    await new Promise((r) => setTimeout(r, 50));
    const rest = Array.from({ length: 6 }, send);
    const refused = await Promise.race([
      Promise.all(rest.slice(2)),
      new Promise<null>((r) => setTimeout(() => r(null), 2000)),
    ]);
    assert.ok(refused, "the overflow is answered at once");
    for (const r of refused) {
      assert.deepEqual(r, {
        ok: false,
        kind: "unavailable",
        code: "SERVICE_UNAVAILABLE",
        msg: "mailbox of user.1.7 is full",
        status: 503,
        headers: { "Retry-After": "1" },
      });
    }
    release();
    const done = await Promise.all([first, ...rest.slice(0, 2)]);
    assert.deepEqual(
      done.map((r) => (r.ok ? r.value : r.msg)),
      [1, 2, 3],
    );
    gate = Promise.resolve();
    const later = await send();
    assert.deepEqual(later, { ok: true, value: 4 });
  });
});

describe("bounded mailboxes, embedded server (ACTOR_MAILBOX_MAX=2)", () => {
  let srv: EmbeddedHandle;

  before(async () => {
    srv = await withEnv({ ACTOR_MAILBOX_MAX: "2", ADMIN_TOKEN: TOKEN }, () => startEmbedded());
  });

  after(async () => {
    await srv?.stop();
  });

  test("a flood at one actor: some 503 with Retry-After, no 500, then service as usual", async () => {
    const before = await raw(`${srv.baseUrl}/metrics`, bearer(TOKEN));
    const r0 = metric(before.text, "zulip_actors_overload_rejections_total", { reason: "mailbox" }) || 0;
    const results = await flood(srv.api, 80);
    const by = tally(results);
    assert.deepEqual(
      Object.keys(by)
        .map(Number)
        .filter((s) => s !== 200 && s !== 503),
      [],
      JSON.stringify(by),
    );
    assert.ok((by[503] ?? 0) > 0, `some requests refused: ${JSON.stringify(by)}`);
    assert.ok((by[200] ?? 0) > 0, `some requests served: ${JSON.stringify(by)}`);
    for (const r of results)
      if (r.status === 503) assertUnavailable(r);
      else assertSuccess(r);
    // The node stays healthy: later requests succeed, one after the other.
    for (let i = 0; i < 5; i++)
      assertSuccess(await srv.api("POST", "/users/me/status", { status_text: `calm ${i}` }));
    const me = await srv.api("GET", "/users/me");
    assertSuccess(me);
    const after = await raw(`${srv.baseUrl}/metrics`, bearer(TOKEN));
    assert.ok(
      metric(after.text, "zulip_actors_overload_rejections_total", { reason: "mailbox" }) - r0 >= by[503]!,
    );
    assert.equal(metric(after.text, "zulip_actors_mailbox_depth", { node: "embedded" }), 0);
  });
});

describe("memory budget, embedded server", () => {
  let srv: EmbeddedServer;
  let dir: string;
  let api: Api;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "overload-mem-"));
    srv = await withEnv(
      { NODE_MEMORY_BUDGET_MB: "100000", ADMIN_TOKEN: TOKEN, RATE_LIMIT_PER_MINUTE: "0" },
      () =>
        startServer({
          port: 0,
          host: "127.0.0.1",
          dataDir: dir,
          shards: 4,
          bootstrap: {
            ownerEmail: "owner@example.com",
            ownerPassword: "owner-password-1",
            ownerName: "Olivia Owner",
            realmName: "Mem Org",
            externalHost: "localhost",
          },
        }),
    );
    api = makeApi(srv.url, { email: "owner@example.com", apiKey: srv.bootstrapped!.apiKey! });
  });

  after(async () => {
    await srv?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("NODE_MEMORY_BUDGET_MB sets the budget", () => {
    assert.equal(srv.guard.budgetBytes, 100000 * 1024 * 1024);
    assert.equal(srv.guard.overloaded(), false);
  });

  test("past the budget every request is 503 + Retry-After; back under it, served again", async () => {
    assertSuccess(await api("GET", "/users/me"));
    srv.guard.budgetBytes = 1; // any heap is past one byte
    assert.equal(srv.guard.check(), true);
    for (const [m, path, params] of [
      ["GET", "/users/me", {}],
      ["POST", "/users/me/status", { status_text: "x" }],
      ["POST", "/register", {}],
    ] as const) {
      assertUnavailable(await api(m, path, params));
    }
    // Operators still see the node: metrics and the admin API are not behind the budget.
    const m = await raw(`${srv.url}/metrics`, bearer(TOKEN));
    assert.equal(m.status, 200);
    assert.equal(metric(m.text, "zulip_actors_overloaded", { node: "embedded" }), 1);
    assert.ok(metric(m.text, "zulip_actors_overload_rejections_total", { reason: "memory" }) >= 3);
    assert.equal(metric(m.text, "zulip_actors_memory_budget_bytes", { node: "embedded" }), 1);
    const nodes = await raw(`${srv.url}/api/v1/admin/nodes`, bearer(TOKEN));
    assert.equal(nodes.body.nodes[0].overloaded, true);
    // Nothing changed while refused.
    const me = await api("GET", "/users/me");
    assertUnavailable(me);
    srv.guard.budgetBytes = 0;
    assert.equal(srv.guard.check(), false);
    assertSuccess(await api("GET", "/users/me"));
    const reg = await api("POST", "/register", { fetch_event_types: ["user_status"] });
    assertSuccess(reg);
    assert.notEqual(reg.body.user_status[String(srv.bootstrapped!.userId)]?.status_text, "x");
  });

  test("the guard samples the heap on its own", async () => {
    let heap = 10;
    const g = new MemoryGuard("g", 1, () => heap);
    g.start();
    try {
      assert.equal(g.overloaded(), false);
      heap = 2 * 1024 * 1024;
      await new Promise((r) => setTimeout(r, 450));
      assert.equal(g.overloaded(), true);
      heap = 10;
      await new Promise((r) => setTimeout(r, 450));
      assert.equal(g.overloaded(), false);
    } finally {
      g.stop();
    }
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("bounded mailboxes, cluster (over gRPC)", { skip }, () => {
  const c = useCluster({ nodes: ["n1"], env: { ACTOR_MAILBOX_MAX: "2" } });

  test("the gateway answers 503 + Retry-After for a full mailbox, never 500", async () => {
    const results = await flood(c.api, 80);
    const by = tally(results);
    assert.ok((by[503] ?? 0) > 0 && (by[200] ?? 0) > 0, JSON.stringify(by));
    assert.equal((by[200] ?? 0) + (by[503] ?? 0), 80, JSON.stringify(by));
    for (const r of results) if (r.status === 503) assertUnavailable(r);
    for (let i = 0; i < 3; i++)
      assertSuccess(await c.api("POST", "/users/me/status", { status_text: `calm ${i}` }));
  });
});
