// A request that arrives from outside the cluster never carries internal
// authority by itself (docs/operations.md "Securing the cluster"). These tests forge
// requests at a node's gRPC port with the project's own gateway client
// (cluster/transport/grpc-client.ts), exactly as a gateway sends them, and
// through the embedded gateway's in-process client: without a caller they
// reach only what the gateway itself asks anonymously, with a caller only
// what that caller may do, and no reply carries another user's API key.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { groupDirectoryRef, realmRef, userRef } from "../actors/index.ts";
import type { ActorRef, Caller, Obj } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import type { ActorClient, ActorResponse } from "../cluster/transport/contract.ts";
import { GrpcNodeClient } from "../cluster/transport/grpc-client.ts";
import { startEmbedded, type EmbeddedServer } from "../server.ts";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { makeApi, type Api, type Creds } from "./support/embedded.ts";
import { requireBinaries } from "./support/services.ts";
import { assertError, assertSuccess } from "./support/zulip-asserts.ts";

const skip = requireBinaries("nats-server", "redis-server");
const REALM = 1;

type Member = Creds & { userId: number };

async function newMember(api: Api, email: string, password: string): Promise<Member> {
  const created = await api("POST", "/users", { email, password, full_name: "Mia Member" });
  assertSuccess(created);
  const key = await api("POST", "/fetch_api_key", { username: email, password }, null);
  assertSuccess(key);
  return { email, apiKey: key.body.api_key as string, userId: created.body.user_id as number };
}

function forger(client: ActorClient, shards: number) {
  return (ref: ActorRef, method: string, args: Obj, caller: Caller | null, shard = shardOf(ref, shards)) =>
    client.request({ ref, shard, method, args, caller, deadline: Date.now() + 5000 });
}

/** A Zulip-style refusal, and none of `secrets` anywhere in the reply. */
function refused(res: ActorResponse, msg: string, status: number, secrets: string[] = []): void {
  const text = JSON.stringify(res);
  assert.equal(res.ok, false, `expected a refusal, got ${text}`);
  if (!res.ok)
    assert.deepEqual({ kind: res.kind, msg: res.msg, status: res.status }, { kind: "zulip", msg, status });
  for (const s of secrets) assert.ok(!text.includes(s), `the reply carries a secret: ${text}`);
}

const ACCESS_DENIED = ["Access denied", 403] as const;
const NOT_LOGGED_IN = ["Not logged in: API authentication or user session required", 401] as const;

describe("forged gateway requests at a node's gRPC port - cluster", { skip }, () => {
  let c: TestCluster;
  let grpc: GrpcNodeClient;
  let forge: ReturnType<typeof forger>;
  let member: Member;
  let ownerId: number;
  let memberCaller: Caller;

  before(async () => {
    // One node: it holds every shard, so each forged request is served where it lands.
    c = await startCluster({ nodes: ["n1"] });
    grpc = new GrpcNodeClient(`127.0.0.1:${c.nodes.get("n1")!.grpcPort}`);
    forge = forger(grpc, c.shards);
    member = await newMember(c.api, "mia@example.com", "mia-password-1");
    memberCaller = { realmId: REALM, userId: member.userId, role: 400, isBot: false };
    const me = await c.api("GET", "/users/me");
    assertSuccess(me);
    ownerId = me.body.user_id as number;
  });

  after(async () => {
    grpc?.close();
    await c?.stop();
  });

  test("without a caller: no credential method answers a key", async () => {
    const secrets = [c.owner.apiKey, member.apiKey];
    refused(
      await forge(realmRef(REALM), "apiKey", { email: c.owner.email }, null),
      ...ACCESS_DENIED,
      secrets,
    );
    refused(
      await forge(realmRef(REALM), "authLookup", { email: c.owner.email }, null),
      ...ACCESS_DENIED,
      secrets,
    );
    // The user actor's own creation answer carries its key.
    refused(
      await forge(userRef(REALM, ownerId), "create", { email: c.owner.email }, null),
      ...ACCESS_DENIED,
      secrets,
    );

    // The gateway's credential check compares a presented key at the node and answers no key.
    const verify = (apiKey: string) =>
      forge(realmRef(REALM), "authVerify", { email: c.owner.email, apiKey }, null);
    const wrong = await verify("x".repeat(32));
    assert.deepEqual(wrong, { ok: true, value: null });
    const right = await verify(c.owner.apiKey);
    assert.equal(right.ok, true, JSON.stringify(right));
    assert.equal((right as { value: Obj }).value.userId, ownerId);
    assert.ok(!JSON.stringify(right).includes(c.owner.apiKey), JSON.stringify(right));

    // Still anonymous as for the gateway: the password check of POST
    // /fetch_api_key, but only for an attempt the realm's `login` counted
    // against the rate limit: straight to the user actor, even the right
    // password answers no key.
    for (const password of ["not-the-password", c.owner.password]) {
      const login = await forge(userRef(REALM, ownerId), "login", { password }, null);
      refused(login, "Your username or password is incorrect", 401, secrets);
    }
  });

  test("without a caller: no administration", async () => {
    // createUser without a caller was the CLI's: any role, and the new key in the reply.
    const email = "forged-owner@example.com";
    const password = "forged-password-1";
    const created = await forge(
      realmRef(REALM),
      "createUser",
      { email, password, fullName: "Forged", role: 100 },
      null,
    );
    refused(created, ...NOT_LOGGED_IN);
    const login = await c.api("POST", "/fetch_api_key", { username: email, password }, null);
    assertError(login, "Your username or password is incorrect", "AUTHENTICATION_FAILED", 401);

    // The realm's group settings, as the realm actor changes them after its owner check.
    const before = await c.api("POST", "/register", { fetch_event_types: JSON.stringify(["realm"]) });
    assertSuccess(before);
    const updates = { can_create_groups: { new: { direct_members: [member.userId], direct_subgroups: [] } } };
    refused(
      await forge(groupDirectoryRef(REALM), "updateRealmSettings", { updates }, null),
      ...ACCESS_DENIED,
    );
    // The member's system groups follow its role: joining the owners' group is a promotion.
    const promote = { userId: member.userId, role: 100, isActive: true, isBot: false };
    refused(await forge(groupDirectoryRef(REALM), "syncUser", promote, null), ...ACCESS_DENIED);
    const after = await c.api("POST", "/register", { fetch_event_types: JSON.stringify(["realm"]) });
    assertSuccess(after);
    assert.deepEqual(after.body.realm_can_create_groups, before.body.realm_can_create_groups);

    refused(
      await forge(realmRef(REALM), "updateMember", { userId: member.userId, role: 100 }, null),
      ...NOT_LOGGED_IN,
    );
    const seen = await c.api("GET", `/users/${member.userId}`);
    assertSuccess(seen);
    assert.equal(seen.body.user.role, 400);

    // Events for users' queues travel between nodes only.
    const router: ActorRef = { kind: "queue", realm: REALM, key: "~router.0", shardKey: "0" };
    refused(await forge(router, "deliver", { events: [] }, null), ...ACCESS_DENIED);
  });

  test("without a caller: spectator reads only as a spectator would see them", async () => {
    // The realm does not allow spectators: its state is not for strangers.
    for (const method of ["registerRealmState", "crossRealmBots", "profileFieldsState", "listLinkifiers"])
      refused(await forge(realmRef(REALM), method, {}, null), ...NOT_LOGGED_IN);
    // Group settings are, but never who is in which group.
    const groups = await forge(groupDirectoryRef(REALM), "registerState", {}, null);
    assert.equal(groups.ok, true, JSON.stringify(groups));
    assert.deepEqual(Object.keys((groups as { value: Obj }).value), ["realm"]);
  });

  test("a member's identity reaches only what a member may do", async () => {
    const secrets = [c.owner.apiKey];
    // An owner-only change, with the role the gateway resolved and with a forged one.
    for (const role of [400, 100]) {
      const res = await forge(
        realmRef(REALM),
        "updateMember",
        { userId: member.userId, role: 100 },
        { ...memberCaller, role },
      );
      refused(res, "Insufficient permission", 400);
    }
    const seen = await c.api("GET", `/users/${member.userId}`);
    assert.equal(seen.body.user.role, 400);

    // Internal methods that trusted any caller: the directory's record of
    // everyone (with keys), and an administrator's change of another
    // user's settings that believed the caller's role.
    refused(
      await forge(realmRef(REALM), "authLookup", { email: c.owner.email }, memberCaller),
      ...ACCESS_DENIED,
      secrets,
    );
    refused(
      await forge(
        userRef(REALM, ownerId),
        "applySettings",
        { values: { default_language: "de" } },
        { ...memberCaller, role: 200 },
      ),
      ...ACCESS_DENIED,
    );
    const settings = await c.api("POST", "/register", {
      fetch_event_types: JSON.stringify(["user_settings"]),
    });
    assertSuccess(settings);
    assert.equal(settings.body.user_settings.default_language, "en");

    // Only actors of the caller's realm, and only at the actor's own shard.
    refused(await forge(realmRef(REALM + 1), "getMembers", {}, { ...memberCaller }), ...ACCESS_DENIED);
    const queue: ActorRef = {
      kind: "queue",
      realm: REALM,
      key: String(member.userId),
      shardKey: String(member.userId),
    };
    const elsewhere = (shardOf(queue, c.shards) + 1) % c.shards;
    refused(await forge(queue, "register", {}, memberCaller, elsewhere), ...ACCESS_DENIED);
  });

  test("the HTTP path still works: auth, fetch_api_key, a send", async () => {
    const auth = { email: member.email, apiKey: member.apiKey };
    const me = await c.api("GET", "/users/me", {}, auth);
    assertSuccess(me);
    assert.equal(me.body.user_id, member.userId);
    assertError(
      await c.api("GET", "/users/me", {}, { email: member.email, apiKey: "y".repeat(32) }),
      "Invalid API key",
      "UNAUTHORIZED",
      401,
    );
    const key = await c.api(
      "POST",
      "/fetch_api_key",
      { username: member.email, password: "mia-password-1" },
      null,
    );
    assertSuccess(key);
    assert.equal(key.body.api_key, member.apiKey);
    const sent = await c.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify([ownerId]), content: "hi" },
      auth,
    );
    assertSuccess(sent);
    assert.equal(typeof sent.body.id, "number");
    // Spectator reads the gateway makes without a caller still answer (here: refused by the realm's setting).
    assertError(
      await c.api("GET", "/users", {}, null),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );
  });
});

describe("forged requests through the embedded gateway's client", () => {
  let srv: EmbeddedServer;
  let dir: string;
  let api: Api;
  let forge: ReturnType<typeof forger>;
  const ownerEmail = "owner@example.com";

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zulip-authority-"));
    srv = await startEmbedded({
      port: 0,
      host: "127.0.0.1",
      dataDir: dir,
      shards: 16,
      bootstrap: {
        ownerEmail,
        ownerPassword: "owner-password-1",
        ownerName: "Olivia Owner",
        realmName: "Test Org",
        externalHost: "localhost",
      },
    });
    api = makeApi(srv.url, { email: ownerEmail, apiKey: srv.bootstrapped!.apiKey! });
    forge = forger(srv.gatewayClient, 16);
  });

  after(async () => {
    await srv?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("without a caller: no key and no user creation; the node's own calls still work", async () => {
    const ownerKey = srv.bootstrapped!.apiKey!;
    const realmId = srv.bootstrapped!.realmId!;
    refused(await forge(realmRef(realmId), "apiKey", { email: ownerEmail }, null), ...ACCESS_DENIED, [
      ownerKey,
    ]);
    const args = {
      email: "forged@example.com",
      password: "forged-password-1",
      fullName: "Forged",
      role: 100,
    };
    refused(await forge(realmRef(realmId), "createUser", args, null), ...NOT_LOGGED_IN);
    assertError(
      await api("POST", "/fetch_api_key", { username: args.email, password: args.password }, null),
      "Your username or password is incorrect",
      "AUTHENTICATION_FAILED",
      401,
    );
    // Inside the node (CLI, bootstrap) the same method answers.
    const own = (await srv.node.call(realmRef(realmId), "apiKey", { email: ownerEmail }))!;
    assert.equal(own.apiKey, ownerKey);
    // And the gateway's path is intact.
    const me = await api("GET", "/users/me");
    assertSuccess(me);
    assert.equal(me.body.email, ownerEmail);
  });
});
