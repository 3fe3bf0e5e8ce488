// Cluster mode with every internal link secured (docs/operations.md
// "Securing the cluster"): nats-server started from docs/nats-server.conf.example (TLS,
// users with subject permissions), redis-server with TLS only, client
// certificates and an ACL user, nodes serving gRPC over mutual TLS. The
// cluster works end to end, and each link refuses who lacks the credentials.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createClient } from "redis";
import { realmDirectoryRef } from "../actors/index.ts";
import { shardOf } from "../cluster/addressing.ts";
import { createRedisClusterStore, type Store } from "../cluster/storage/index.ts";
import type { GrpcTls } from "../cluster/config.ts";
import { GrpcNodeClient } from "../cluster/transport/grpc-client.ts";
import { CONNECTION_LOST } from "../cluster/transport/retry.ts";
import type { ActorRequest } from "../cluster/transport/contract.ts";
import { entryArgs, ROOT } from "../bench/procs.ts";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { makeApi } from "./support/embedded.ts";
import { until } from "./support/ops.ts";
import {
  requireBinaries,
  startNatsWithConfig,
  startRedisCluster,
  startSecureRedis,
  type RedisClusterService,
} from "./support/services.ts";

const skip = requireBinaries("nats-server", "redis-server", "openssl");
const NATS_CONFIG = join(ROOT, "docs", "nats-server.conf.example");
const ADMIN_TOKEN = "admin-token-for-cluster-security";
const PASSWORDS = {
  node: "node-secret-1",
  gateway: "gateway-secret-2",
  cli: "cli-secret-3",
  redis: "redis-secret-4",
};

/**
 * A CA, a second unrelated CA, and certificates: `server` (SAN 127.0.0.1 and
 * localhost; nats-server, redis-server and the nodes' gRPC), client
 * certificates `node` and `gateway` of the CA, and `rogue` of the other CA.
 */
interface Pair {
  cert: string;
  key: string;
}

function makeCerts(dir: string): { ca: string; server: Pair; node: Pair; gateway: Pair; rogue: Pair } {
  const ossl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const key = (name: string) =>
    ossl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}-key.pem`);
  for (const ca of ["ca", "other-ca"]) {
    key(ca);
    ossl(
      "req",
      "-x509",
      "-new",
      "-key",
      `${ca}-key.pem`,
      "-out",
      `${ca}.pem`,
      "-days",
      "2",
      "-subj",
      `/CN=${ca}`,
    );
  }
  const issue = (name: string, ca: string, ext: string) => {
    key(name);
    ossl("req", "-new", "-key", `${name}-key.pem`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
    writeFileSync(join(dir, `${name}.ext`), ext);
    ossl(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      `${ca}.pem`,
      "-CAkey",
      `${ca}-key.pem`,
      "-CAcreateserial",
      "-out",
      `${name}.pem`,
      "-days",
      "2",
      "-extfile",
      `${name}.ext`,
    );
  };
  issue(
    "server",
    "ca",
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
  );
  issue("node", "ca", "extendedKeyUsage=clientAuth\n");
  issue("gateway", "ca", "extendedKeyUsage=clientAuth\n");
  issue("rogue", "other-ca", "extendedKeyUsage=clientAuth\n");
  const pair = (n: string) => ({ cert: join(dir, `${n}.pem`), key: join(dir, `${n}-key.pem`) });
  return {
    ca: join(dir, "ca.pem"),
    server: pair("server"),
    node: pair("node"),
    gateway: pair("gateway"),
    rogue: pair("rogue"),
  };
}

describe("cluster security - authenticated, encrypted internal links", { skip }, () => {
  let dir: string;
  let certs: ReturnType<typeof makeCerts>;
  let c: TestCluster;
  let natsPort: number;
  let redisPort: number;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "cluster-tls-"));
    certs = makeCerts(dir);
    const nats = await startNatsWithConfig(NATS_CONFIG, {
      NATS_SERVER_CERT: certs.server.cert,
      NATS_SERVER_KEY: certs.server.key,
      NATS_CA: certs.ca,
      NATS_NODE_PASSWORD: PASSWORDS.node,
      NATS_GATEWAY_PASSWORD: PASSWORDS.gateway,
      NATS_CLI_PASSWORD: PASSWORDS.cli,
    });
    natsPort = nats.port;
    const redis = await startSecureRedis({
      ...certs.server,
      ca: certs.ca,
      authClients: true,
      user: "zulip",
      password: PASSWORDS.redis,
    });
    redisPort = redis.port;
    c = await startCluster({
      nodes: ["n1", "n2"],
      shards: 8,
      nats,
      redis,
      env: { NATS_TLS_CA: certs.ca, GRPC_TLS_CA: certs.ca, ADMIN_TOKEN },
      nodesEnv: {
        NATS_USER: "node",
        NATS_PASSWORD: PASSWORDS.node,
        GRPC_TLS_CERT: certs.server.cert,
        GRPC_TLS_KEY: certs.server.key,
        REDIS_TLS_CA: certs.ca,
        REDIS_TLS_CERT: certs.node.cert,
        REDIS_TLS_KEY: certs.node.key,
      },
      gatewayEnv: {
        // On, so the gateway publishes and hears ratelimit.counts under its permissions.
        RATE_LIMIT_PER_MINUTE: "100000",
        NATS_USER: "gateway",
        NATS_PASSWORD: PASSWORDS.gateway,
        GRPC_TLS_CERT: certs.gateway.cert,
        GRPC_TLS_KEY: certs.gateway.key,
      },
    });
  });
  after(async () => {
    await c?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("a user fetches its API key, sends a channel message, reads it back and its event queue gets it", async () => {
    const email = "secure-user@example.com";
    const password = "secure-user-password";
    const created = await c.api("POST", "/users", { email, password, full_name: "Sec Ure" });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const key = await c.api("POST", "/fetch_api_key", { username: email, password }, null);
    assert.equal(key.status, 200, JSON.stringify(key.body));
    const api = makeApi(c.baseUrl, { email, apiKey: key.body.api_key as string });
    const userId = created.body.user_id as number;
    const ch = await c.api("POST", "/channels/create", {
      name: "secure talk",
      subscribers: [userId],
    });
    assert.equal(ch.status, 200, JSON.stringify(ch.body));
    const q = await api("POST", "/register", { event_types: ["message"] });
    assert.equal(q.status, 200, JSON.stringify(q.body));
    const sent = await api("POST", "/messages", {
      type: "stream",
      to: ch.body.id as number,
      topic: "tls",
      content: "over TLS all the way",
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const id = sent.body.id as number;

    const read = await api("GET", "/messages", {
      anchor: id,
      num_before: 0,
      num_after: 0,
      narrow: JSON.stringify([{ operator: "channel", operand: ch.body.id }]),
    });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    const msgs = read.body.messages as { id: number; content: string }[];
    assert.deepEqual(
      msgs.map((m) => m.id),
      [id],
    );
    assert.match(msgs[0]!.content, /over TLS all the way/);

    const ev = await until("the message event", async () => {
      const r = await api("GET", "/events", {
        queue_id: q.body.queue_id as string,
        last_event_id: q.body.last_event_id as number,
        dont_block: true,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return (r.body.events as { type: string; message?: { id: number } }[]).find(
        (e) => e.type === "message" && e.message?.id === id,
      );
    });
    assert.ok(ev);
  });

  test("nodes and the gateway use NATS within their users' permissions (admin views and rate-limit counts included)", async () => {
    // The admin API's node view asks every node over the bus (admin.req, answers on admin.rep.*).
    const nodes = await until("both nodes answering the admin view", async () => {
      const r = await fetch(`${c.baseUrl}/api/v1/admin/nodes`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      const body = (await r.json()) as { nodes?: { id: string; reachable: boolean }[] };
      return body.nodes?.filter((n) => n.reachable).length === 2 ? body.nodes : null;
    });
    assert.deepEqual(nodes.map((n) => n.id).sort(), ["n1", "n2"]);
    // Authenticated requests are counted and the counts published every 250 ms.
    for (let i = 0; i < 3; i++) assert.equal((await c.api("GET", "/users/me")).status, 200);
    await new Promise((r) => setTimeout(r, 600));
    const log = readFileSync(join(c.nats.dir, "nats.log"), "utf8");
    assert.deepEqual(
      log.split("\n").filter((l) => /Violation/.test(l)),
      [],
    );
  });

  test("NATS refuses a client without credentials, and the gateway's user may not publish to actor subjects", async () => {
    const ca = readFileSync(certs.ca, "utf8");
    await assert.rejects(
      connect({ servers: `127.0.0.1:${natsPort}`, tls: { ca }, reconnect: false }),
      /Authorization Violation/,
    );
    await assert.rejects(
      connect({
        servers: `127.0.0.1:${natsPort}`,
        user: "gateway",
        pass: "wrong",
        tls: { ca },
        reconnect: false,
      }),
      /Authorization Violation/,
    );

    let nc: NatsConnection | null = null;
    try {
      nc = await connect({
        servers: `127.0.0.1:${natsPort}`,
        user: "gateway",
        pass: PASSWORDS.gateway,
        tls: { ca },
        reconnect: false,
      });
      const violations: { operation: string; subject: string }[] = [];
      void (async () => {
        for await (const s of nc.status()) {
          if (s.type === "error" && s.error.name === "PermissionViolationError") {
            const e = s.error as unknown as { operation: string; subject: string };
            violations.push({ operation: e.operation, subject: e.subject });
          }
        }
      })();
      // Allowed for a gateway: no violation.
      nc.publish("cluster.hello", new Uint8Array(0));
      // An actor request as a node would send it, and a forged heartbeat.
      nc.publish("act.0.user.1.x", new Uint8Array([1]), { reply: "_INBOX.forged.1" });
      nc.publish("cluster.hb", new Uint8Array([1]));
      await nc.flush();
      await until("both violations", async () => violations.length >= 2);
      assert.deepEqual(violations.map((v) => `${v.operation} ${v.subject}`).sort(), [
        "publish act.0.user.1.x",
        "publish cluster.hb",
      ]);
      // Nor may it listen in on actor requests.
      const sub = nc.subscribe("act.>");
      const subErr = await (async () => {
        try {
          for await (const _ of sub) return null;
        } catch (e) {
          return e as Error;
        }
        return null;
      })();
      assert.match(String(subErr), /Permissions Violation for Subscription to "act\.>"/);
    } finally {
      await nc?.close();
    }
  });

  test("a node refuses gRPC in plaintext, without a client certificate, and with one of another CA", async () => {
    const n1 = c.nodes.get("n1")!;
    const address = `127.0.0.1:${n1.grpcPort}`;
    const pem = (p: string) => readFileSync(p);
    const ref = realmDirectoryRef();
    const req = (): ActorRequest => ({
      ref,
      shard: shardOf(ref, c.shards),
      method: "listRealms",
      args: {},
      caller: null,
      deadline: Date.now() + 3000,
    });
    const attempt = async (tls: GrpcTls | null) => {
      const client = new GrpcNodeClient(address, { tls });
      try {
        return await client.request(req());
      } finally {
        client.close();
      }
    };
    const gateway = { ca: pem(certs.ca), cert: pem(certs.gateway.cert), key: pem(certs.gateway.key) };
    // The gateway's certificate gets through (whatever the node answers).
    assert.notEqual(await attempt(gateway), CONNECTION_LOST);
    // Plaintext.
    assert.equal(await attempt(null), CONNECTION_LOST);
    // TLS that verifies the node but presents no certificate.
    const grpc = await import("@grpc/grpc-js");
    const noCert = new grpc.Client(address, grpc.credentials.createSsl(pem(certs.ca)));
    try {
      const code = await new Promise<number>((resolve) => {
        noCert.makeUnaryRequest(
          "/zulipactors.Actors/Stream",
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          new grpc.Metadata(),
          { deadline: Date.now() + 3000 },
          (err) => resolve(err?.code ?? grpc.status.OK),
        );
      });
      assert.equal(code, grpc.status.UNAVAILABLE);
    } finally {
      noCert.close();
    }
    // A certificate of another CA.
    const rogue = { ca: pem(certs.ca), cert: pem(certs.rogue.cert), key: pem(certs.rogue.key) };
    assert.equal(await attempt(rogue), CONNECTION_LOST);
  });

  test("nodes listen for gRPC on GRPC_BIND (127.0.0.1 by default), not on every interface", async (t) => {
    const other = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === "IPv4" && !a.internal);
    if (!other) return t.skip("no non-loopback IPv4 interface on this machine");
    const { connect: tcp } = await import("node:net");
    const port = c.nodes.get("n1")!.grpcPort;
    const reached = await new Promise<boolean>((resolve) => {
      const s = tcp(port, other.address);
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    assert.equal(reached, false, `gRPC port ${port} answered on ${other.address}`);
  });

  test("Redis refuses a client without the password", async () => {
    const client = createClient({
      url: `rediss://127.0.0.1:${redisPort}`,
      socket: {
        tls: true,
        ca: readFileSync(certs.ca, "utf8"),
        cert: readFileSync(certs.node.cert, "utf8"),
        key: readFileSync(certs.node.key, "utf8"),
        reconnectStrategy: false,
      },
    });
    client.on("error", () => {});
    await client.connect();
    try {
      await assert.rejects(client.ping(), /NOAUTH|NOPERM/);
      await assert.rejects(client.get("anything"), /NOAUTH|NOPERM/);
    } finally {
      await client.disconnect();
    }
  });

  test("npm run manage connects as the cli user; the gateway's user may not make its actor calls", () => {
    const manage = (user: string, password: string) =>
      spawnSync(process.execPath, [...entryArgs("manage.ts"), "realms"], {
        cwd: ROOT,
        env: {
          ...process.env,
          NATS_URL: c.nats.url,
          NATS_USER: user,
          NATS_PASSWORD: password,
          NATS_TLS_CA: certs.ca,
          SHARDS: String(c.shards),
        },
        encoding: "utf8",
        timeout: 60_000,
      });
    const cli = manage("cli", PASSWORDS.cli);
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /"realmId": 1/);
    // Its publish to act.> is dropped by the server: no answer, the call times out.
    const asGateway = manage("gateway", PASSWORDS.gateway);
    assert.notEqual(asGateway.status, 0);
  });

  test("a node with part of a TLS setting exits with the reason instead of running in the clear", () => {
    const run = (env: Record<string, string>) =>
      spawnSync(process.execPath, entryArgs("cluster/node-main.ts"), {
        cwd: ROOT,
        env: { ...process.env, NATS_URL: "nats://127.0.0.1:1", ...env },
        encoding: "utf8",
        timeout: 30_000,
      });
    const grpcPartial = run({ GRPC_TLS_CA: certs.ca, GRPC_TLS_CERT: certs.server.cert });
    assert.notEqual(grpcPartial.status, 0);
    assert.match(grpcPartial.stderr, /GRPC_TLS_KEY not set/);
    const natsPartial = run({ NATS_TLS_CERT: certs.node.cert });
    assert.notEqual(natsPartial.status, 0);
    assert.match(natsPartial.stderr, /NATS_TLS_KEY must be set together with NATS_TLS_CERT/);
  });
});

describe(
  "cluster security - a store on a Redis Cluster with TLS and an ACL user",
  {
    skip: requireBinaries("redis-server", "redis-cli", "openssl"),
  },
  () => {
    let dir: string;
    let rc: RedisClusterService;
    let store: Store;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), "cluster-tls-"));
      const certs = makeCerts(dir);
      rc = await startRedisCluster(3, {
        ...certs.server,
        ca: certs.ca,
        authClients: true,
        user: "zulip",
        password: PASSWORDS.redis,
      });
      // As a node reads REDIS_CLUSTER_URLS and REDIS_TLS_*: credentials in the URLs.
      store = await createRedisClusterStore(rc.urls, {
        tls: {
          ca: readFileSync(certs.ca, "utf8"),
          cert: readFileSync(certs.node.cert, "utf8"),
          key: readFileSync(certs.node.key, "utf8"),
        },
      });
    });
    after(async () => {
      await store?.close();
      await rc?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("writes and reads reach every master (nodes found through CLUSTER SLOTS get the credentials and TLS too)", async () => {
      assert.ok(rc.urls.every((u) => u.startsWith("rediss://zulip:")));
      // 32 shards' hash tags spread over the three masters' slot ranges.
      for (let shard = 0; shard < 32; shard++) {
        const epoch = await store.acquireLease(shard, "n1", 10_000);
        assert.ok(epoch !== null, `lease of shard ${shard}`);
        await store.append(shard, epoch, `user.1.${shard}`, 1, [new Uint8Array([shard])]);
        const got = await store.readJournal(shard, `user.1.${shard}`, 0);
        assert.equal(got.length, 1);
      }
      assert.ok((await store.nextId("cluster-security")) >= 1);
    });
  },
);
