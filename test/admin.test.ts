// The admin API (/api/v1/admin/*), the CLI (`npm run admin`) and the
// placement page (/admin/placement) — docs/operations.md "Admin API and placement page".
// Embedded: shapes, credentials, bad input. Cluster: the answers agree with
// the real placement that each node reports on its own ADMIN_PORT, the CLI
// prints the tables, and headless Chromium renders the live shard map.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { entryArgs } from "../bench/procs.ts";
import { shardOf } from "../cluster/addressing.ts";
import { nodeReport, type AdminNode } from "../cluster/admin.ts";
import type { ActivationView } from "../cluster/metrics.ts";
import {
  assertSuccess,
  hasBinary,
  newUser,
  requireBinaries,
  startCluster,
  startEmbedded,
  type EmbeddedHandle,
  type TestCluster,
} from "./support/index.ts";
import { basic, bearer, raw, until, type RawResult } from "./support/ops.ts";

const run = promisify(execFile);
const TOKEN = `admin-token-${process.pid}`;

function assertErr(res: RawResult, status: number, code: string | null, msg: string): void {
  assert.equal(res.status, status, res.text);
  assert.deepEqual(
    { result: res.body?.result, code: res.body?.code ?? null, msg: res.body?.msg },
    { result: "error", code, msg },
  );
}

function ok(res: RawResult) {
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.result, "success");
  assert.equal(res.body.msg, "");
  return res.body;
}

/** The CLI as a user runs it; resolves with stdout, stderr and the exit code. */
async function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ out: string; err: string; code: number }> {
  const clean = { ...process.env };
  delete clean.ADMIN_TOKEN;
  delete clean.ADMIN_EMAIL;
  delete clean.ADMIN_API_KEY;
  try {
    const r = await run(process.execPath, [...entryArgs("admin.ts"), ...args], {
      env: { ...clean, ...env },
      timeout: 60_000,
    });
    return { out: r.stdout, err: r.stderr, code: 0 };
  } catch (e) {
    const x = e as { stdout: string; stderr: string; code: number };
    return { out: x.stdout, err: x.stderr, code: x.code };
  }
}

describe("admin API, embedded server", () => {
  let srv: EmbeddedHandle;
  const saved = process.env.ADMIN_TOKEN;
  const A = (path: string) => `${srv.baseUrl}/api/v1/admin${path}`;

  before(async () => {
    process.env.ADMIN_TOKEN = TOKEN;
    srv = await startEmbedded();
  });

  after(async () => {
    await srv?.stop();
    if (saved === undefined) delete process.env.ADMIN_TOKEN;
    else process.env.ADMIN_TOKEN = saved;
  });

  test("never public: 401 without or with bad credentials, 403 for a non-owner, 405 for writes", async () => {
    const member = await newUser(srv);
    const admin = await newUser(srv, 200);
    for (const path of ["/nodes", "/shards", "/where?kind=user&key=1", "/top"]) {
      const anon = await raw(A(path));
      assertErr(anon, 401, "UNAUTHORIZED", "Not logged in: API authentication or user session required");
      assert.equal(anon.headers.get("www-authenticate"), 'Basic realm="zulip"');
      assertErr(await raw(A(path), bearer("wrong-token")), 401, "UNAUTHORIZED", "Invalid admin token");
      assertErr(
        await raw(A(path), "Bearer"),
        401,
        "UNAUTHORIZED",
        "Invalid authorization header for basic auth",
      );
      assertErr(
        await raw(A(path), basic(member)),
        403,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization owner",
      );
      assertErr(
        await raw(A(path), basic(admin)),
        403,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization owner",
      );
      assertErr(
        await raw(A(path), basic({ email: member.email, apiKey: "a".repeat(32) })),
        401,
        "UNAUTHORIZED",
        "Invalid API key",
      );
      for (const m of ["POST", "PATCH", "DELETE", "PUT"]) {
        const r = await raw(A(path), bearer(TOKEN), m);
        assertErr(r, 405, null, "Method Not Allowed");
        assert.equal(r.headers.get("allow"), "GET, HEAD");
      }
    }
  });

  test("nodes: the embedded node with its counts", async () => {
    for (const auth of [bearer(TOKEN), basic(srv.owner)]) {
      const body = ok(await raw(A("/nodes"), auth));
      assert.equal(body.nodes.length, 1);
      const n = body.nodes[0];
      assert.equal(n.id, "embedded");
      assert.equal(n.reachable, true);
      assert.equal(n.draining, false);
      assert.equal(n.shard_count, 16);
      assert.ok(n.actors >= 2);
      assert.ok(n.actors_by_kind.realm >= 1 && n.actors_by_kind.user >= 1);
      for (const k of [
        "queue_actors",
        "event_queues",
        "parked_polls",
        "mailbox_queued",
        "mailbox_max",
        "journal_lag",
        "journal_lag_max",
        "heap_used_bytes",
        "rss_bytes",
        "memory_budget_bytes",
        "uptime_s",
        "pid",
      ])
        assert.equal(typeof n[k], "number", k);
      assert.equal(n.overloaded, false);
    }
    const extra = ok(await raw(A("/nodes?foo=1&bar=2"), bearer(TOKEN)));
    assert.deepEqual(extra.ignored_parameters_unsupported, ["bar", "foo"]);
  });

  test("shards: every shard on the embedded node", async () => {
    const body = ok(await raw(A("/shards"), bearer(TOKEN)));
    assert.equal(body.shard_count, 16);
    assert.equal(body.shards.length, 16);
    body.shards.forEach(
      (s: { shard: number; node: string; epoch: number; expected_node: string }, i: number) => {
        assert.equal(s.shard, i);
        assert.equal(s.node, "embedded");
        assert.equal(s.expected_node, "embedded");
        assert.ok(s.epoch >= 1);
      },
    );
    assert.deepEqual(body.by_node, { embedded: [...Array(16).keys()] });
  });

  test("where: shard, node, and whether the actor is active", async () => {
    const body = ok(await raw(A(`/where?kind=user&key=${srv.owner.userId}`), bearer(TOKEN)));
    const expected = shardOf({ kind: "user", realm: body.realm, key: String(srv.owner.userId) }, 16);
    assert.deepEqual(
      { ...body, epoch: typeof body.epoch },
      {
        result: "success",
        msg: "",
        kind: "user",
        realm: body.realm,
        key: String(srv.owner.userId),
        shard: expected,
        node: "embedded",
        epoch: "number",
        expected_node: "embedded",
        active: true,
        mailbox_depth: 0,
      },
    );
    // An actor nobody messaged is not active, and asking does not activate it.
    const cold = ok(await raw(A(`/where?kind=channel&key=987654&realm=${body.realm}`), bearer(TOKEN)));
    assert.equal(cold.active, false);
    assert.equal(cold.node, "embedded");
    assert.equal(ok(await raw(A(`/where?kind=channel&key=987654`), bearer(TOKEN))).active, false);
    // The owner may ask about their own realm, not another one.
    assert.equal(ok(await raw(A(`/where?kind=user&key=${srv.owner.userId}`), basic(srv.owner))).active, true);
    assertErr(
      await raw(A(`/where?kind=user&key=1&realm=${body.realm + 1000}`), basic(srv.owner)),
      403,
      "BAD_REQUEST",
      "Access denied",
    );
  });

  test("where and top: bad input is a Zulip error", async () => {
    const t = bearer(TOKEN);
    const cases: [string, string, string][] = [
      ["/where?key=1", "Missing 'kind' argument", "REQUEST_VARIABLE_MISSING"],
      ["/where?kind=user", "Missing 'key' argument", "REQUEST_VARIABLE_MISSING"],
      ["/where?kind=bogus&key=1", "Invalid kind", "BAD_REQUEST"],
      ["/where?kind=user&key=", "key cannot be blank", "BAD_REQUEST"],
      [`/where?kind=user&key=${"k".repeat(201)}`, "key is too long (limit: 200 characters)", "BAD_REQUEST"],
      ["/where?kind=user&key=1&realm=-1", "realm is too small", "BAD_REQUEST"],
      ["/where?kind=user&key=1&realm=x", "realm is not valid JSON", "BAD_REQUEST"],
      ["/where?kind=user&key=1&realm=1.5", "realm is not an integer", "BAD_REQUEST"],
      ["/top?limit=0", "limit is too small", "BAD_REQUEST"],
      ["/top?limit=101", "limit is too large", "BAD_REQUEST"],
      ["/top?limit=ten", "limit is not valid JSON", "BAD_REQUEST"],
    ];
    for (const [path, msg, code] of cases) assertErr(await raw(A(path), t), 400, code, msg);
  });

  test("top: shape, and nothing waiting on an idle server", async () => {
    const body = ok(await raw(A("/top?limit=5"), bearer(TOKEN)));
    assert.deepEqual(body.mailboxes, []);
  });

  test("top: the deepest mailboxes first, a realm owner's realm only (node report)", () => {
    const act = (kind: string, realm: number, key: string, depth: number): ActivationView => ({
      ref: { kind, realm, key },
      shard: 3,
      state: kind === "queue" ? { queues: { a: {}, b: {} } } : {},
      seq: 5,
      snapshotSeq: 2,
      mailbox: { length: depth },
      parked: { size: kind === "queue" ? 1 : 0 },
    });
    const acts = [
      act("user", 1, "7", 4),
      act("channel", 2, "9", 9),
      act("queue", 1, "7", 0),
      act("realm", 1, "1", 1),
    ];
    const node: AdminNode = {
      nodeId: "x",
      shards: 8,
      catalog: { activations: () => acts.values(), has: () => true },
      servingShards: () => [5, 3],
      shardEpoch: (s) => s * 10,
    };
    const r = nodeReport(node, null, 2);
    assert.deepEqual(
      r.deepest.map((d) => [d.kind, d.realm, d.key, d.depth, d.node]),
      [
        ["channel", 2, "9", 9, "x"],
        ["user", 1, "7", 4, "x"],
      ],
    );
    assert.deepEqual(r.shards, [
      { shard: 3, epoch: 30 },
      { shard: 5, epoch: 50 },
    ]);
    assert.equal(r.actors, 4);
    assert.equal(r.event_queues, 2);
    assert.equal(r.parked_polls, 1);
    assert.equal(r.mailbox_queued, 14);
    assert.equal(r.mailbox_max, 9);
    assert.equal(r.journal_lag, 12);
    assert.equal(r.journal_lag_max, 3);
    assert.deepEqual(
      nodeReport(node, null, 10, 1).deepest.map((d) => d.key),
      ["7", "1"],
    );
  });

  test("the placement page is served (its data needs credentials)", async () => {
    const r = await raw(`${srv.baseUrl}/admin/placement`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /^text\/html/);
    assert.match(r.text, /<title>Shard placement<\/title>/);
  });

  test("the CLI against the embedded server (owner credentials)", async () => {
    const env = { ADMIN_URL: srv.baseUrl, ADMIN_EMAIL: srv.owner.email, ADMIN_API_KEY: srv.owner.apiKey };
    const nodes = await cli(["nodes"], env);
    assert.equal(nodes.code, 0, nodes.err);
    assert.match(nodes.out, /^NODE +STATE +SHARDS +ACTORS/m);
    assert.match(nodes.out, /^embedded +live +16 /m);
    const none = await cli(["nodes"], { ADMIN_URL: srv.baseUrl });
    assert.equal(none.code, 1);
    assert.match(none.err, /set ADMIN_TOKEN, or ADMIN_EMAIL and ADMIN_API_KEY/);
    const bad = await cli(["nodes"], { ADMIN_URL: srv.baseUrl, ADMIN_TOKEN: "wrong" });
    assert.equal(bad.code, 1);
    assert.match(bad.err, /401: Invalid admin token/);
    const unknown = await cli(["frobnicate"], env);
    assert.equal(unknown.code, 2);
    assert.match(unknown.err, /unknown command: frobnicate/);
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("admin API, cluster", { skip }, () => {
  let c: TestCluster;
  let ownerId = 0;
  const A = (path: string) => `${c.baseUrl}/api/v1/admin${path}`;

  /** What each node says it serves, on its own admin port: shard -> {node, epoch}. */
  async function realPlacement(): Promise<Map<number, { node: string; epoch: number }>> {
    const m = new Map<number, { node: string; epoch: number }>();
    for (const [id, n] of c.nodes) {
      const r = ok(await raw(`http://127.0.0.1:${n.adminPort}/api/v1/admin/node`, bearer(TOKEN)));
      assert.equal(r.node.node, id);
      for (const s of r.node.shards) {
        assert.ok(!m.has(s.shard), `shard ${s.shard} served twice`);
        m.set(s.shard, { node: id, epoch: s.epoch });
      }
    }
    return m;
  }

  before(async () => {
    c = await startCluster({ nodes: ["n1", "n2"], adminPorts: true, env: { ADMIN_TOKEN: TOKEN } });
    const me = await c.api("GET", "/users/me");
    assertSuccess(me);
    ownerId = me.body.user_id;
    // Placement settles once both nodes hold their rendezvous share.
    await until("both nodes serving", async () => {
      const p = await realPlacement();
      return p.size === c.shards && new Set([...p.values()].map((v) => v.node)).size === 2;
    });
  });

  after(async () => {
    await c?.stop();
  });

  test("nodes: both live nodes, their shard counts as they report them", async () => {
    const body = ok(await raw(A("/nodes"), bearer(TOKEN)));
    assert.deepEqual(
      body.nodes.map((n: { id: string }) => n.id),
      ["n1", "n2"],
    );
    const real = await realPlacement();
    for (const n of body.nodes) {
      assert.equal(n.reachable, true);
      assert.equal(n.draining, false);
      assert.match(n.grpc, /^127\.0\.0\.1:\d+$/);
      assert.ok(n.last_seen_ms_ago >= 0 && n.last_seen_ms_ago < 5000);
      assert.equal(n.shard_count, [...real.values()].filter((v) => v.node === n.id).length);
    }
  });

  test("shards: the table agrees with what the nodes serve and with rendezvous placement", async () => {
    const body = ok(await raw(A("/shards"), bearer(TOKEN)));
    const real = await realPlacement();
    assert.equal(body.shards.length, c.shards);
    for (const s of body.shards) {
      assert.deepEqual({ node: s.node, epoch: s.epoch }, real.get(s.shard), `shard ${s.shard}`);
      assert.equal(s.expected_node, s.node, `shard ${s.shard} where placement wants it`);
    }
    for (const id of ["n1", "n2"])
      assert.deepEqual(
        body.by_node[id],
        [...real.entries()]
          .filter(([, v]) => v.node === id)
          .map(([k]) => k)
          .sort((a, b) => a - b),
      );
  });

  test("where: the owning node, active on it and on no other", async () => {
    const body = ok(await raw(A(`/where?kind=user&key=${ownerId}`), bearer(TOKEN)));
    const shard = shardOf({ kind: "user", realm: body.realm, key: String(ownerId) }, c.shards);
    const real = await realPlacement();
    assert.equal(body.shard, shard);
    assert.equal(body.node, real.get(shard)!.node);
    assert.equal(body.epoch, real.get(shard)!.epoch);
    assert.equal(body.active, true);
    for (const [id, n] of c.nodes) {
      const w = ok(
        await raw(
          `http://127.0.0.1:${n.adminPort}/api/v1/admin/where?kind=user&key=${ownerId}`,
          bearer(TOKEN),
        ),
      ).where;
      assert.equal(w.serving, id === body.node, id);
      assert.equal(w.active, id === body.node, id);
      assert.equal(w.shard, shard);
    }
    // Owner credentials work through the gateway too; a member is refused.
    assert.equal(ok(await raw(A(`/where?kind=user&key=${ownerId}`), basic(c.owner))).node, body.node);
    const email = `m${process.pid}@example.com`;
    assertSuccess(await c.api("POST", "/users", { email, password: "member-pw-123", full_name: "Mem" }));
    const key = await c.api("POST", "/fetch_api_key", { username: email, password: "member-pw-123" }, null);
    assertSuccess(key);
    assertErr(
      await raw(A("/shards"), basic({ email, apiKey: key.body.api_key })),
      403,
      "UNAUTHORIZED_PRINCIPAL",
      "Must be an organization owner",
    );
    assertErr(
      await raw(A("/shards")),
      401,
      "UNAUTHORIZED",
      "Not logged in: API authentication or user session required",
    );
    // The node's own admin port is not public either.
    const n1 = c.nodes.get("n1")!;
    assertErr(
      await raw(`http://127.0.0.1:${n1.adminPort}/api/v1/admin/node`),
      401,
      "UNAUTHORIZED",
      "Not logged in: API authentication or user session required",
    );
    assertErr(
      await raw(
        `http://127.0.0.1:${n1.adminPort}/api/v1/admin/node`,
        basic({ email, apiKey: key.body.api_key }),
      ),
      403,
      "UNAUTHORIZED_PRINCIPAL",
      "Must be an organization owner",
    );
  });

  test("top: merged across nodes", async () => {
    const body = ok(await raw(A("/top?limit=3"), bearer(TOKEN)));
    assert.ok(Array.isArray(body.mailboxes) && body.mailboxes.length <= 3);
  });

  test("the CLI prints the tables", async () => {
    const env = { ADMIN_URL: c.baseUrl, ADMIN_TOKEN: TOKEN };
    const real = await realPlacement();
    const nodes = await cli(["nodes"], env);
    assert.equal(nodes.code, 0, nodes.err);
    const lines = nodes.out.trim().split("\n");
    assert.match(
      lines[0]!,
      /^NODE +STATE +SHARDS +ACTORS +QUEUES +POLLS +MAILBOX +MAILBOX MAX +HEAP MB +RSS MB$/,
    );
    for (const id of ["n1", "n2"]) {
      const count = [...real.values()].filter((v) => v.node === id).length;
      assert.match(nodes.out, new RegExp(`^${id} +live +${count} `, "m"));
    }

    const shards = await cli(["shards"], env);
    assert.equal(shards.code, 0, shards.err);
    for (const [shard, v] of real) {
      assert.match(shards.out, new RegExp(`^${shard} +${v.node} +${v.epoch} +${v.node}$`, "m"));
    }
    assert.match(shards.out, /^NODE +COUNT +SHARDS$/m);

    const where = await cli(["where", "user", String(ownerId)], env);
    assert.equal(where.code, 0, where.err);
    const w = ok(await raw(A(`/where?kind=user&key=${ownerId}`), bearer(TOKEN)));
    assert.match(
      where.out,
      new RegExp(`^user +${w.realm} +${ownerId} +${w.shard} +${w.node} +${w.epoch} +yes +0 +${w.node}$`, "m"),
    );
    const whereRealm = await cli(["where", "user", String(ownerId), "--realm", String(w.realm)], env);
    assert.equal(whereRealm.out, where.out);

    const top = await cli(["top", "--limit", "5"], env);
    assert.equal(top.code, 0, top.err);
    assert.ok(/no waiting turns/.test(top.out) || /^NODE +KIND +REALM +KEY +SHARD +DEPTH$/m.test(top.out));

    const json = await cli(["shards", "--json"], env);
    assert.equal(JSON.parse(json.out).shards.length, c.shards);

    const badWhere = await cli(["where", "bogus", "1"], env);
    assert.equal(badWhere.code, 1);
    assert.match(badWhere.err, /400: Invalid kind/);
  });

  test(
    "the placement page renders the live shard map in headless Chromium",
    { skip: hasBinary("chromium") ? false : requireBinaries("chromium") },
    async () => {
      const profile = mkdtempSync(join(tmpdir(), "chromium-"));
      try {
        const r = await run(
          "chromium",
          [
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--no-first-run",
            `--user-data-dir=${profile}`,
            "--virtual-time-budget=8000",
            "--dump-dom",
            `${c.baseUrl}/admin/placement#token=${encodeURIComponent(TOKEN)}`,
          ],
          { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
        );
        const dom = r.stdout;
        const rows = [...dom.matchAll(/<tr data-shard="(\d+)" data-node="([^"]*)"/g)].map(
          (m) => [Number(m[1]), m[2]] as const,
        );
        const real = await realPlacement();
        assert.equal(rows.length, c.shards, dom.slice(0, 2000));
        for (const [shard, node] of rows) assert.equal(node, real.get(shard)!.node, `shard ${shard}`);
        // One card per node with its shard chips.
        for (const id of ["n1", "n2"]) {
          const card = new RegExp(`<section class="node" data-node="${id}">(.*?)</section>`, "s").exec(dom);
          assert.ok(card, `card of ${id}`);
          const chips = [...card[1]!.matchAll(/data-shard="(\d+)"/g)].map((m) => Number(m[1]));
          assert.deepEqual(
            chips,
            [...real.entries()]
              .filter(([, v]) => v.node === id)
              .map(([k]) => k)
              .sort((a, b) => a - b),
          );
        }
        assert.match(dom, /2 nodes, 32 shards — updated/);
        // The token left the address bar; a page without credentials asks for them.
        const anon = await run(
          "chromium",
          [
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--no-first-run",
            `--user-data-dir=${profile}-2`,
            "--virtual-time-budget=3000",
            "--dump-dom",
            `${c.baseUrl}/admin/placement`,
          ],
          { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
        );
        assert.match(anon.stdout, /Sign in to see the placement\./);
        assert.doesNotMatch(anon.stdout, /<tr data-shard=/);
      } finally {
        rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
        rmSync(`${profile}-2`, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
      }
    },
  );
});
