// Cluster mode with real nats-server and redis-server: two nodes and a
// gateway. kill -9 of the node that owns a user while writes are in flight
// loses no acknowledged write and the shard is served again within 5 s; a
// SIGSTOPped node's late write is refused.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { shardOf } from "../cluster/addressing.ts";
import { ownerOf } from "../cluster/placement/rendezvous.ts";
import { makeApi, requireBinaries, useCluster, type Creds, type TestCluster } from "./support/index.ts";

const skip = requireBinaries("nats-server", "redis-server");
const REALM = 1;

interface TestUser extends Creds {
  userId: number;
  node: string;
}

async function makeUsers(c: TestCluster, n: number, prefix: string): Promise<TestUser[]> {
  const users: TestUser[] = [];
  for (let i = 0; i < n; i++) {
    const email = `${prefix}${i}@example.com`;
    const created = await c.api("POST", "/users", {
      email,
      password: "pw-" + email,
      full_name: `${prefix} ${i}`,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const key = await c.api("POST", "/fetch_api_key", { username: email, password: "pw-" + email }, null);
    assert.equal(key.status, 200, JSON.stringify(key.body));
    const userId = created.body.user_id as number;
    const shard = shardOf({ kind: "user", realm: REALM, key: String(userId) }, c.shards);
    users.push({ email, apiKey: key.body.api_key, userId, node: ownerOf(shard, [...c.nodes.keys()])! });
  }
  return users;
}

describe("cluster - failover", { skip }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("kill -9 of a user's node loses no acknowledged write; its shards move within 5 s", async () => {
    const users = await makeUsers(c, 12, "writer");
    const victim = users[0]!.node;
    const onVictim = users.filter((u) => u.node === victim);
    assert.ok(onVictim.length >= 1 && onVictim.length < users.length, "users on both nodes");

    const acked = new Map<number, number>();
    let stop = false;
    let killedAt = 0;
    let recoveredAt = 0;
    let failures = 0;
    const writer = async (u: TestUser) => {
      const api = makeApi(c.baseUrl, u);
      for (let i = 1; !stop; i++) {
        const startedAt = Date.now();
        const res = await api("PATCH", "/settings", { full_name: `${u.userId} w${i}` }).catch(() => null);
        if (res && res.status === 200) {
          acked.set(u.userId, i);
          if (killedAt && startedAt > killedAt && u.node === victim && !recoveredAt) recoveredAt = Date.now();
        } else {
          failures++;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    const writers = users.map(writer);
    await new Promise((r) => setTimeout(r, 1500));
    killedAt = Date.now();
    await c.nodes.get(victim)!.stop("SIGKILL");
    // The writes go on until a victim-owned user was written again, and a
    // second more on the new owner; at most 7 s (the assertion below wants 5).
    for (let t = 0; t < 7000 && !recoveredAt; t += 50) await new Promise((r) => setTimeout(r, 50));
    if (recoveredAt) await new Promise((r) => setTimeout(r, 1000));
    stop = true;
    await Promise.all(writers);

    assert.ok(recoveredAt > 0, "a victim-owned user was written again after the kill");
    const failover = recoveredAt - killedAt;
    console.log(
      `# failover: shard served again ${failover} ms after kill -9; ${failures} failed writes (not acknowledged)`,
    );
    assert.ok(failover < 5000, `failover took ${failover} ms`);

    for (const u of users) {
      const me = await makeApi(c.baseUrl, u)("GET", "/users/me");
      assert.equal(me.status, 200);
      const m = /^\d+ w(\d+)$/.exec(me.body.full_name as string);
      assert.ok(m, `unexpected name ${me.body.full_name}`);
      const seen = Number(m[1]);
      const last = acked.get(u.userId) ?? 0;
      // The newest acknowledged write is there; at most the one write in
      // flight at the end (never acknowledged) may have landed after it.
      assert.ok(seen === last || seen === last + 1, `user ${u.userId}: acked w${last}, found w${seen}`);
    }
  });
});

describe("cluster - fencing", { skip }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("a SIGSTOPped node's late write is refused; the new owner serves the shard", async () => {
    const users = await makeUsers(c, 8, "paused");
    const u = users[0]!;
    const victim = c.nodes.get(u.node)!;
    const shard = shardOf({ kind: "user", realm: REALM, key: String(u.userId) }, c.shards);
    const redis = createClient({ url: c.redis.url });
    await redis.connect();
    try {
      const api = makeApi(c.baseUrl, u);
      assert.equal((await api("PATCH", "/settings", { full_name: "before pause" })).status, 200);

      victim.child.kill("SIGSTOP");
      // Sent while the victim still looks alive: it reaches the paused process.
      const late = api("PATCH", "/settings", { full_name: "late write" });
      await new Promise((r) => setTimeout(r, 4500));
      // The other node has taken the shard: writes go on there.
      const during = await api("PATCH", "/settings", { full_name: "during pause" });
      assert.equal(during.status, 200, JSON.stringify(during.body));
      const holder = await redis.get(`{s${shard}}:lease`);
      assert.ok(
        holder && !holder.startsWith(`${u.node}:`),
        `during the pause shard ${shard} is held by ${holder}`,
      );

      victim.child.kill("SIGCONT");
      const lateRes = await late;
      // The paused node refused to write with its stale lease; the gateway
      // retried at the new owner, so the client still got an answer.
      assert.equal(lateRes.status, 200, JSON.stringify(lateRes.body));
      const fenced = new RegExp(`(lost lease of|write fenced \\(stale epoch\\) on) shard ${shard}\\b`);
      // The resumed node logs it within moments; waited for up to 5 s.
      for (let i = 0; i < 100 && !fenced.test(victim.output()); i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.match(victim.output(), fenced);

      const me = await api("GET", "/users/me");
      assert.ok(["late write", "during pause"].includes(me.body.full_name), me.body.full_name);
    } finally {
      await redis.quit();
    }
  });
});
