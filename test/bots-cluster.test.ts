// Bots in cluster mode (real nats-server and redis-server, two nodes, one
// gateway): deactivating a user deactivates their bots when the user's and
// the bot's actors live on different nodes, and a regenerated or
// deactivated bot key stops working at the gateway at once (the realm's
// auth.invalidate notice crosses NATS).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { shardOf } from "../cluster/addressing.ts";
import { ownerOf } from "../cluster/placement/rendezvous.ts";
import {
  requireBinaries,
  startCluster,
  type ApiResult,
  type Creds,
  type TestCluster,
} from "./support/index.ts";

const skip = requireBinaries("nats-server", "redis-server");
const REALM = 1;
let c: TestCluster;

before(async () => {
  if (skip) return;
  c = await startCluster();
});

after(async () => {
  await c?.stop();
});

function nodeOf(userId: number): string {
  const shard = shardOf({ kind: "user", realm: REALM, key: String(userId) }, c.shards);
  return ownerOf(shard, [...c.nodes.keys()])!;
}

async function ok(p: Promise<ApiResult>): Promise<ApiResult> {
  const r = await p;
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r;
}

describe("bots - cluster", { skip }, () => {
  test("deactivating a user deactivates their bot on another node; keys stop at once", async () => {
    const email = "bot-owner@example.com";
    const created = await ok(
      c.api("POST", "/users", { email, password: "owner-pw-123", full_name: "Bot Owner" }),
    );
    const userId = created.body.user_id;
    const key = await ok(
      c.api("POST", "/fetch_api_key", { username: email, password: "owner-pw-123" }, null),
    );
    const member: Creds = { email, apiKey: key.body.api_key };

    // Bots until one lives on the other node.
    let bot: { id: number; creds: Creds } | null = null;
    for (let i = 0; i < 20 && !bot; i++) {
      const r = await ok(
        c.api("POST", "/bots", { full_name: `Cluster Bot ${i}`, short_name: `cbot${i}` }, member),
      );
      const b = r.body;
      if (nodeOf(b.user_id) !== nodeOf(userId)) {
        bot = { id: b.user_id, creds: { email: `cbot${i}-bot@localhost`, apiKey: b.api_key } };
      }
    }
    assert.ok(bot, "no bot landed on the other node");
    const me = await ok(c.api("GET", "/users/me", {}, bot.creds));
    assert.equal(me.body.user_id, bot.id);

    // Regenerating the key: the cached old key fails on the next request.
    const regen = await ok(c.api("POST", `/bots/${bot.id}/api_key/regenerate`, {}, member));
    const newKey = regen.body.api_key;
    assert.equal((await c.api("GET", "/users/me", {}, bot.creds)).status, 401);
    const fresh = { ...bot.creds, apiKey: newKey };
    await ok(c.api("GET", "/users/me", {}, fresh));

    await ok(c.api("DELETE", `/users/${userId}`));
    const users = await ok(c.api("GET", "/users", { user_ids: JSON.stringify([userId, bot.id]) }));
    const members: { user_id: number; is_active: boolean }[] = users.body.members;
    assert.deepEqual(
      members.map((m) => [m.user_id, m.is_active]),
      [
        [userId, false],
        [bot.id, false],
      ],
    );
    const refused = await c.api("GET", "/users/me", {}, fresh);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.msg, "Account is deactivated");
    assert.equal((await c.api("GET", "/users/me", {}, member)).status, 401);
  });

  test("new_email: the cached old address stops at the gateway at once; the user actor follows", async () => {
    const email = "mover-cluster@example.com";
    const password = "mover-pw-123";
    const created = await ok(c.api("POST", "/users", { email, password, full_name: "Cluster Mover" }));
    const userId = created.body.user_id;
    const key = await ok(c.api("POST", "/fetch_api_key", { username: email, password }, null));
    const old: Creds = { email, apiKey: key.body.api_key };
    // Warm the gateway's credential cache under the old address.
    await ok(c.api("GET", "/users/me", {}, old));
    const newEmail = "moved-cluster@example.org";
    await ok(c.api("PATCH", `/users/${userId}`, { new_email: newEmail }));
    assert.equal((await c.api("GET", "/users/me", {}, old)).status, 401);
    const me = await ok(c.api("GET", "/users/me", {}, { email: newEmail, apiKey: old.apiKey }));
    assert.equal(me.body.delivery_email, newEmail);
    const login = await ok(c.api("POST", "/fetch_api_key", { username: newEmail, password }, null));
    assert.equal(login.body.email, newEmail);
  });
});
