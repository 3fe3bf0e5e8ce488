// Operational safety: the embedded node survives an event-loop stall longer
// than its lease TTL; POST /users/me/api_key/regenerate retires the old key
// at once on every gateway; an unknown Host is Zulip's "Invalid subdomain"
// unless the deployment says it is a single organization; X-Forwarded-*
// count only from TRUSTED_PROXIES.
//
//   node --import tsx --test --test-concurrency=1 test/security-ops.test.ts

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { startProc, type Proc } from "../bench/procs.ts";
import type { ActorResponse } from "../cluster/transport/contract.ts";
import { createInProcessTransport } from "../cluster/transport/index.ts";
import { buildApp, trustedProxiesFromEnv } from "../gateway/app.ts";
import type { RouteDef } from "../gateway/route-types.ts";
import { startEmbedded as startServer, type EmbeddedServer } from "../server.ts";
import {
  assertError,
  assertSuccess,
  freePort,
  makeApi,
  newUser,
  startCluster,
  startEmbedded,
  useEmbedded,
  type Api,
  type Creds,
  type EmbeddedHandle,
  type TestCluster,
} from "./support/index.ts";

interface Raw {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** One HTTP request with headers fetch() may not set (Host, X-Forwarded-*). */
function raw(baseUrl: string, path: string, headers: Record<string, string>, auth?: Creds): Promise<Raw> {
  const url = new URL(`/api/v1${path}`, baseUrl);
  const h: Record<string, string> = { ...headers };
  if (auth) h.authorization = "Basic " + Buffer.from(`${auth.email}:${auth.apiKey}`).toString("base64");
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method: "GET", headers: h },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

function assertRawError(res: Raw, status: number, msg: string, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.deepEqual(res.body, { result: "error", msg, code });
}

// ---- 1. Embedded mode: a stall past the lease TTL -------------------------------

describe("embedded mode - an event-loop stall longer than the lease TTL", () => {
  let dir: string;
  let srv: EmbeddedServer;
  let api: Api;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "security-ops-stall-"));
    srv = await startServer({
      port: 0,
      host: "127.0.0.1",
      dataDir: dir,
      shards: 8,
      bootstrap: {
        ownerEmail: "owner@example.com",
        ownerPassword: "owner-password-1",
        ownerName: "Olivia Owner",
        realmName: "Stall Org",
        externalHost: "localhost",
      },
      singleOrganization: true,
      // A short lease, so the stall below outlasts it by far.
      leaseTtlMs: 300,
      renewMs: 100,
    });
    api = makeApi(srv.url, { email: "owner@example.com", apiKey: srv.bootstrapped!.apiKey! });
  });
  after(async () => {
    await srv?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the next request succeeds, the data is intact and no shard was lost", async () => {
    const made = await api("POST", "/users", {
      email: "before@example.com",
      password: "before-pw-1",
      full_name: "Made Before",
    });
    assertSuccess(made);
    const reg = await api("POST", "/register", { event_types: ["realm_user"] });
    assertSuccess(reg);
    // A long-poll parked across the stall.
    const parked = api("GET", "/events", {
      queue_id: reg.body.queue_id,
      last_event_id: reg.body.last_event_id,
    });
    await new Promise((r) => setTimeout(r, 200));
    const losses = srv.node.stats.leaseLosses;
    assert.equal(srv.node.servingShards().length, 8);
    // A synchronous stall of the whole process (GC pause, swap, a CPU-bound
    // turn): five lease TTLs.
    const end = Date.now() + 1500;
    while (Date.now() < end) {
      // busy
    }
    const user = await api("GET", `/users/${made.body.user_id}`);
    assertSuccess(user);
    assert.equal(user.body.user.full_name, "Made Before");
    assertSuccess(
      await api("POST", "/users", {
        email: "after@example.com",
        password: "after-pw-1",
        full_name: "Made After",
      }),
    );
    const polled = await parked;
    assertSuccess(polled);
    assert.deepEqual(
      (polled.body.events as { type: string; op: string; person: { full_name: string } }[]).map((e) => [
        e.type,
        e.op,
        e.person.full_name,
      ]),
      [["realm_user", "add", "Made After"]],
    );
    // Let the overdue renewals run: none of them may drop a shard.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(srv.node.stats.leaseLosses, losses, "a shard lease was lost");
    assert.equal(srv.node.servingShards().length, 8);
    const key = await api(
      "POST",
      "/fetch_api_key",
      { username: "before@example.com", password: "before-pw-1" },
      null,
    );
    assertSuccess(key);
  });
});

// ---- 2. POST /users/me/api_key/regenerate ---------------------------------------

describe("POST /users/me/api_key/regenerate - embedded", () => {
  const srv = useEmbedded();

  test("returns a new key; the old one is refused at once", async () => {
    const u = await newUser(srv);
    assertSuccess(await srv.api("GET", "/users/me", {}, u));
    const res = await srv.api("POST", "/users/me/api_key/regenerate", {}, u);
    assertSuccess(res);
    assert.deepEqual(Object.keys(res.body).sort(), ["api_key", "msg", "result"]);
    const key = res.body.api_key as string;
    assert.match(key, /^[A-Za-z0-9]{32}$/);
    assert.notEqual(key, u.apiKey);
    assertError(await srv.api("GET", "/users/me", {}, u), "Invalid API key", "UNAUTHORIZED", 401);
    const fresh = await srv.api("GET", "/users/me", {}, { email: u.email, apiKey: key });
    assertSuccess(fresh);
    assert.equal(fresh.body.user_id, u.userId);
    assertError(
      await srv.api("POST", "/users/me/api_key/regenerate", {}, null),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );
  });

  test("a bot may regenerate its own key", async () => {
    const created = await srv.api("POST", "/bots", { full_name: "Key Bot", short_name: "keybot" });
    assertSuccess(created);
    const user = await srv.api("GET", `/users/${created.body.user_id}`);
    const bot = { email: user.body.user.email as string, apiKey: created.body.api_key as string };
    assertSuccess(await srv.api("GET", "/users/me", {}, bot));
    const res = await srv.api("POST", "/users/me/api_key/regenerate", {}, bot);
    assertSuccess(res);
    assertError(await srv.api("GET", "/users/me", {}, bot), "Invalid API key", "UNAUTHORIZED", 401);
    assertSuccess(await srv.api("GET", "/users/me", {}, { email: bot.email, apiKey: res.body.api_key }));
    // Its owner sees the new key in GET /bots.
    const bots = await srv.api("GET", "/bots");
    const listed = (bots.body.bots as { user_id: number; api_key: string }[]).find(
      (b) => b.user_id === created.body.user_id,
    );
    assert.equal(listed?.api_key, res.body.api_key);
  });
});

describe("POST /users/me/api_key/regenerate - cluster with two gateways", () => {
  let c: TestCluster;
  let gw2: Proc;
  let api2: Api;

  before(async () => {
    c = await startCluster({ nodes: ["n1"], shards: 8 });
    const port = await freePort();
    gw2 = await startProc(
      "gateway2",
      "gateway/gateway-main.ts",
      {
        NATS_URL: c.nats.url,
        SHARDS: String(c.shards),
        PORT: String(port),
        RATE_LIMIT_PER_MINUTE: "0",
        SINGLE_ORGANIZATION: "1",
      },
      /listening on port/,
    );
    api2 = makeApi(`http://127.0.0.1:${port}`, c.owner);
  });
  after(async () => {
    await gw2?.stop();
    await c?.stop();
  });

  test("the old key fails at once on the other gateway too", async () => {
    // Both gateways have the owner's credentials cached.
    for (let i = 0; i < 100; i++) {
      if ((await api2("GET", "/users/me")).status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assertSuccess(await api2("GET", "/users/me"));
    assertSuccess(await c.api("GET", "/users/me"));
    const res = await c.api("POST", "/users/me/api_key/regenerate");
    assertSuccess(res);
    const key = res.body.api_key as string;
    assertError(await api2("GET", "/users/me"), "Invalid API key", "UNAUTHORIZED", 401);
    assertError(await c.api("GET", "/users/me"), "Invalid API key", "UNAUTHORIZED", 401);
    const fresh = { email: c.owner.email, apiKey: key };
    assertSuccess(await api2("GET", "/users/me", {}, fresh));
    assertSuccess(await c.api("GET", "/users/me", {}, fresh));
  });
});

// ---- 3. Host -> organization ---------------------------------------------------

describe("Host - an unknown host is Invalid subdomain", () => {
  let strict: EmbeddedHandle;
  let single: EmbeddedHandle;
  before(async () => {
    strict = await startEmbedded({ env: { EXTERNAL_HOST: "chat.example.test", SINGLE_ORGANIZATION: "0" } });
    single = await startEmbedded({ env: { EXTERNAL_HOST: "chat.example.test", SINGLE_ORGANIZATION: "1" } });
  });
  after(async () => {
    await strict?.stop();
    await single?.stop();
  });

  test("unknown Host -> 404 NONEXISTENT_SUBDOMAIN, with or without credentials", async () => {
    assertRawError(
      await raw(strict.baseUrl, "/server_settings", { host: "nowhere.example.test" }),
      404,
      "Invalid subdomain",
      "NONEXISTENT_SUBDOMAIN",
    );
    assertRawError(
      await raw(strict.baseUrl, "/users/me", { host: "127.0.0.1" }, strict.owner),
      404,
      "Invalid subdomain",
      "NONEXISTENT_SUBDOMAIN",
    );
  });

  test("the organization's own host, with any port and case", async () => {
    for (const host of ["chat.example.test", "Chat.Example.TEST:9991"]) {
      const res = await raw(strict.baseUrl, "/users/me", { host }, strict.owner);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.email, strict.owner.email);
    }
  });

  test("SINGLE_ORGANIZATION=1: any Host reaches the only organization", async () => {
    const res = await raw(single.baseUrl, "/users/me", { host: "nowhere.example.test" }, single.owner);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.email, single.owner.email);
  });
});

describe("Host - loopback names of a localhost organization", () => {
  let srv: EmbeddedHandle;
  before(async () => {
    // npm start with no environment: EXTERNAL_HOST localhost, no SINGLE_ORGANIZATION.
    srv = await startEmbedded({ env: { SINGLE_ORGANIZATION: "0" } });
  });
  after(async () => {
    await srv?.stop();
  });

  test("localhost, 127.0.0.1 and [::1] reach it; another host does not", async () => {
    for (const host of ["localhost:9991", "127.0.0.1:9991", "[::1]:9991"]) {
      const res = await raw(srv.baseUrl, "/users/me", { host }, srv.owner);
      assert.equal(res.status, 200, `${host}: ${JSON.stringify(res.body)}`);
    }
    assertRawError(
      await raw(srv.baseUrl, "/users/me", { host: "chat.example.test" }, srv.owner),
      404,
      "Invalid subdomain",
      "NONEXISTENT_SUBDOMAIN",
    );
  });
});

// ---- 4. X-Forwarded-* only from TRUSTED_PROXIES ---------------------------------

describe("X-Forwarded-* - only from trusted proxies", () => {
  const SPOOF = {
    "x-forwarded-proto": "https",
    "x-forwarded-for": "203.0.113.9",
    "x-forwarded-host": "nowhere.example.test",
  };

  test("embedded: a spoofed X-Forwarded-Proto/-Host from an untrusted peer is ignored", async () => {
    const srv = await startEmbedded({ env: { SINGLE_ORGANIZATION: "0" } });
    try {
      const res = await raw(srv.baseUrl, "/server_settings", { host: "localhost", ...SPOOF });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.realm_url, "http://localhost");
    } finally {
      await srv.stop();
    }
  });

  test("embedded: with TRUSTED_PROXIES=127.0.0.1 they are honoured", async () => {
    const saved = process.env.TRUSTED_PROXIES;
    process.env.TRUSTED_PROXIES = "127.0.0.1";
    let srv: EmbeddedHandle;
    try {
      srv = await startEmbedded({ env: { SINGLE_ORGANIZATION: "0" } });
    } finally {
      if (saved === undefined) delete process.env.TRUSTED_PROXIES;
      else process.env.TRUSTED_PROXIES = saved;
    }
    try {
      const proto = await raw(srv.baseUrl, "/server_settings", {
        host: "10.1.2.3",
        "x-forwarded-proto": "https",
        "x-forwarded-host": "localhost",
      });
      assert.equal(proto.status, 200, JSON.stringify(proto.body));
      assert.equal(proto.body.realm_url, "https://localhost");
      // The organization comes from the proxy's X-Forwarded-Host.
      assertRawError(
        await raw(srv.baseUrl, "/server_settings", { host: "localhost", ...SPOOF }),
        404,
        "Invalid subdomain",
        "NONEXISTENT_SUBDOMAIN",
      );
    } finally {
      await srv.stop();
    }
  });

  // The client address (Fastify's req.ip, the request log's remoteAddress).
  async function seenBy(trustedProxies: string[]): Promise<{ ip: string; protocol: string; host: string }> {
    const t = createInProcessTransport();
    t.serve(async (): Promise<ActorResponse> => ({ ok: true, value: { realmId: 1 } }));
    const probe: RouteDef = {
      method: "GET",
      path: "/probe",
      auth: "none",
      params: {},
      handler: async () => ({}),
    };
    const app: FastifyInstance = await buildApp({
      client: t.client,
      bus: t.bus,
      shards: 4,
      routes: [probe],
      rateLimitPerMinute: 0,
      trustedProxies,
    });
    let seen: { ip: string; protocol: string; host: string } | null = null;
    app.addHook("onRequest", async (req: FastifyRequest) => {
      seen = { ip: req.ip, protocol: req.protocol, host: req.host };
    });
    await app.listen({ port: 0, host: "127.0.0.1" });
    try {
      const addr = app.server.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      const res = await raw(`http://127.0.0.1:${port}`, "/probe", { host: "localhost", ...SPOOF });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    } finally {
      await app.close();
    }
    return seen!;
  }

  test("gateway: X-Forwarded-For sets the client address only from a trusted peer", async () => {
    assert.deepEqual(await seenBy([]), { ip: "127.0.0.1", protocol: "http", host: "localhost" });
    assert.deepEqual(await seenBy(["10.0.0.0/8"]), { ip: "127.0.0.1", protocol: "http", host: "localhost" });
    assert.deepEqual(await seenBy(["127.0.0.1"]), {
      ip: "203.0.113.9",
      protocol: "https",
      host: "nowhere.example.test",
    });
  });

  test("TRUSTED_PROXIES: addresses, CIDRs and range names; anything else stops the start", () => {
    assert.deepEqual(trustedProxiesFromEnv(""), []);
    assert.deepEqual(trustedProxiesFromEnv(" 127.0.0.1, 10.0.0.0/8 ,::1,fd00::/8,loopback "), [
      "127.0.0.1",
      "10.0.0.0/8",
      "::1",
      "fd00::/8",
      "loopback",
    ]);
    for (const bad of ["localhost", "10.0.0.0/33", "10.0.0.0/", "1.2.3", "*"]) {
      assert.throws(() => trustedProxiesFromEnv(bad), /TRUSTED_PROXIES/, bad);
    }
  });
});
