// Cluster mode on a real Redis Cluster (three redis-server masters joined with
// `redis-cli --cluster create`, no replicas): nodes started with
// REDIS_CLUSTER_URLS keep their shards' keys on every master (hash tags
// `{s<shard>}` decide the slot), serve the API through the gateway, and a
// node's restart hands its shards over through the cluster with nothing lost.
// The storage conformance suite runs against the same kind of cluster
// (test/storage-conformance.test.ts, "redis cluster").
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createClient } from "redis";
import { startProc, type Proc } from "../bench/procs.ts";
import type { Obj } from "../actors/types.ts";
import {
  freePort,
  makeApi,
  OWNER,
  requireBinaries,
  startNats,
  type ApiResult,
  type Service,
} from "./support/index.ts";
import { startRedisCluster, type RedisClusterService } from "./support/services.ts";

const skip = requireBinaries("nats-server", "redis-server", "redis-cli");
const SHARDS = 16;

function ok(res: ApiResult): Obj {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as Obj;
}

describe("cluster mode on Redis Cluster", { skip }, () => {
  let nats: Service;
  let rc: RedisClusterService;
  const nodes = new Map<string, Proc>();
  let gateway: Proc;
  let baseUrl = "";
  let common: Record<string, string> = {};
  const grpcPorts = new Map<string, number>();

  const startNode = async (id: string) => {
    const grpcPort = grpcPorts.get(id) ?? (await freePort());
    grpcPorts.set(id, grpcPort);
    nodes.set(
      id,
      await startProc(
        id,
        "cluster/node-main.ts",
        { ...common, NODE_ID: id, GRPC_PORT: String(grpcPort) },
        /node \S+ ready/,
      ),
    );
  };

  before(async () => {
    nats = await startNats();
    rc = await startRedisCluster(3);
    common = {
      NATS_URL: nats.url,
      REDIS_CLUSTER_URLS: rc.urls.join(","),
      // Must not be used: a single Redis that does not exist.
      REDIS_URL: "redis://127.0.0.1:1",
      SHARDS: String(SHARDS),
      OWNER_EMAIL: OWNER.email,
      OWNER_PASSWORD: OWNER.password,
      OWNER_NAME: "Olivia Owner",
      REALM_NAME: "Redis Cluster Org",
    };
    await startNode("n1");
    await startNode("n2");
    const port = await freePort();
    gateway = await startProc(
      "gateway",
      "gateway/gateway-main.ts",
      { ...common, PORT: String(port), RATE_LIMIT_PER_MINUTE: "0" },
      /listening on port/,
    );
    baseUrl = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    await gateway?.stop();
    for (const n of nodes.values()) await n.stop("SIGKILL");
    await rc?.stop();
    await nats?.stop();
  });

  test("the API works, shard keys spread over all masters, a restart loses nothing", async () => {
    let key: Obj | null = null;
    for (let i = 0; i < 100 && !key; i++) {
      const r = await makeApi(baseUrl, null)(
        "POST",
        "/fetch_api_key",
        { username: OWNER.email, password: OWNER.password },
        null,
      );
      if (r.status === 200) key = r.body as Obj;
      else await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(key, "the owner's API key");
    const api = makeApi(baseUrl, { email: OWNER.email, apiKey: key.api_key as string });

    const users: number[] = [];
    for (let i = 0; i < 6; i++) {
      const email = `rc${i}@example.com`;
      users.push(
        ok(await api("POST", "/users", { email, password: `pw-${email}-x`, full_name: `RC ${i}` }))
          .user_id as number,
      );
    }
    const ch = ok(await api("POST", "/channels/create", { name: "on redis cluster", subscribers: users }));
    const sent = ok(
      await api("POST", "/messages", {
        type: "stream",
        to: ch.id as number,
        topic: "t",
        content: "hello cluster",
      }),
    );
    ok(await api("PATCH", "/settings", { full_name: "Owner On Cluster" }));

    // Every master holds lease keys of some shards: the store really spans the cluster.
    for (const url of rc.urls) {
      const raw = createClient({ url });
      await raw.connect();
      try {
        const leases = await raw.keys("{s*}:lease");
        assert.ok(leases.length > 0, `${url} holds lease keys (${leases.length})`);
        const slots = new Set(await Promise.all(leases.map((k) => raw.clusterKeySlot(k))));
        assert.equal(slots.size, leases.length, "one slot per shard");
      } finally {
        await raw.quit();
      }
    }

    // Graceful restart of n1: its shards go to n2 and come back, through the cluster.
    await nodes.get("n1")!.stop("SIGTERM");
    ok(await api("PATCH", "/settings", { full_name: "Owner While N1 Away" }));
    await startNode("n1");
    const me = ok(await api("GET", "/users/me"));
    assert.equal(me.full_name, "Owner While N1 Away");
    const m = ok(await api("GET", `/messages/${sent.id as number}`));
    assert.equal((m.message as Obj).content, "<p>hello cluster</p>");
    const members = ok(await api("GET", "/users"));
    for (const id of users)
      assert.ok(
        (members.members as Obj[]).some((u) => u.user_id === id),
        `user ${id} survived`,
      );
  });
});
