// Typed actor protocols (actors/protocol.ts): a request from outside the
// cluster has its args checked against the method's declared schema at the
// node, before the actor is activated. These tests forge requests the way a
// gateway sends them (the embedded gateway's in-process client, a node's
// gRPC port): wrong-typed args are refused with a Zulip-style 400 and
// change nothing; the same call with good args works.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  channelConvRef,
  channelDirectoryRef,
  emojiBlobRef,
  emojiDirectoryRef,
  groupDirectoryRef,
  queueRef,
  realmDirectoryRef,
  realmRef,
  uploadsDirectoryRef,
  userRef,
  webhookIndexRef,
  webhookRef,
} from "../actors/index.ts";
import type { ActorRef, Caller, Obj } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import type { ActorClient, ActorResponse } from "../cluster/transport/contract.ts";
import { GrpcNodeClient } from "../cluster/transport/grpc-client.ts";
import {
  assertSuccess,
  requireBinaries,
  startCluster,
  type Api,
  type TestCluster,
  useEmbeddedNode,
} from "./support/index.ts";

const REALM = 1;

function forger(client: ActorClient, shards: number) {
  return (ref: ActorRef, method: string, args: Obj, caller: Caller | null) =>
    client.request({ ref, shard: shardOf(ref, shards), method, args, caller, deadline: Date.now() + 5000 });
}

function refusedAsInvalid(res: ActorResponse, method: string, kind = "group"): void {
  assert.equal(res.ok, false, `expected a refusal, got ${JSON.stringify(res)}`);
  if (!res.ok)
    assert.deepEqual(
      { kind: res.kind, code: res.code, msg: res.msg, status: res.status },
      { kind: "zulip", code: "BAD_REQUEST", msg: `Invalid arguments for ${kind}.${method}`, status: 400 },
    );
}

/** A refusal of an internal method to a gateway, whatever its args. */
function refusedAsInternal(res: ActorResponse): void {
  assert.equal(res.ok, false, `expected a refusal, got ${JSON.stringify(res)}`);
  if (!res.ok) assert.deepEqual({ msg: res.msg, status: res.status }, { msg: "Access denied", status: 403 });
}

/** The caller's attachments, through the API. */
async function attachments(api: Api): Promise<Obj[]> {
  const res = await api("GET", "/attachments");
  assertSuccess(res);
  return res.body.attachments as Obj[];
}

/** The realm's group names, through the API. */
async function groupNames(api: Api): Promise<string[]> {
  const res = await api("GET", "/user_groups");
  assertSuccess(res);
  return (res.body.user_groups as Obj[]).map((g) => g.name as string).sort();
}

/** Wrong-typed and good args against the group directory, as `caller`. */
async function checkGroupArgs(
  forge: ReturnType<typeof forger>,
  api: Api,
  caller: Caller,
  realmId: number,
): Promise<void> {
  const dir = groupDirectoryRef(realmId);
  const before = await groupNames(api);
  // Wrong types: a string id, an id past 2^53, a list of strings, a missing
  // required argument. Each is refused before the actor runs.
  refusedAsInvalid(await forge(dir, "members", { groupId: "1" }, caller), "members");
  refusedAsInvalid(await forge(dir, "members", { groupId: 2 ** 60 }, caller), "members");
  refusedAsInvalid(await forge(dir, "members", { groupId: 1.5 }, caller), "members");
  refusedAsInvalid(await forge(dir, "members", {}, caller), "members");
  const bad = { name: "forged", description: "", members: ["x"], settings: {} };
  refusedAsInvalid(await forge(dir, "createGroup", bad, caller), "createGroup");
  refusedAsInvalid(
    await forge(dir, "createGroup", { name: 7, description: "", members: [], settings: {} }, caller),
    "createGroup",
  );
  refusedAsInvalid(await forge(dir, "updateMembers", { groupId: 1, add: "5" }, caller), "updateMembers");
  // Nothing changed.
  assert.deepEqual(await groupNames(api), before);

  // The same calls with good args work.
  const members = await forge(dir, "members", { groupId: 1 }, caller);
  assert.equal(members.ok, true, JSON.stringify(members));
  const good = { name: "forged", description: "", members: [caller.userId], settings: {} };
  const created = await forge(dir, "createGroup", good, caller);
  assert.equal(created.ok, true, JSON.stringify(created));
  assert.deepEqual(await groupNames(api), [...before, "forged"].sort());
}

/** The realm's channel names, through the API. */
async function channelNames(api: Api): Promise<string[]> {
  const res = await api("GET", "/streams", { include_all: true });
  assertSuccess(res);
  return (res.body.streams as Obj[]).map((c) => c.name as string).sort();
}

/** The caller's newest messages of a channel, through the API. */
async function channelMessages(api: Api, streamId: number): Promise<number[]> {
  const res = await api("GET", "/messages", {
    anchor: "newest",
    num_before: 100,
    num_after: 0,
    narrow: [{ operator: "channel", operand: streamId }],
  });
  assertSuccess(res);
  return (res.body.messages as Obj[]).map((m) => m.id as number);
}

/**
 * Wrong-typed and good args against the channel directory and a channel's
 * conversation, as `caller`: the two kinds split out of the channel kind.
 */
async function checkChannelArgs(
  forge: ReturnType<typeof forger>,
  api: Api,
  caller: Caller,
  realmId: number,
): Promise<void> {
  const dir = channelDirectoryRef(realmId);
  const made = await api("POST", "/channels/create", {
    name: "protocol checks",
    subscribers: [caller.userId],
  });
  assertSuccess(made);
  const streamId = made.body.id as number;
  const conv = channelConvRef(realmId, streamId);
  const channelsBefore = await channelNames(api);
  const messagesBefore = await channelMessages(api, streamId);

  // The directory: a string id, a missing name, a wrong item in a list, a wrong flag.
  refusedAsInvalid(
    await forge(dir, "getChannel", { stream_id: String(streamId) }, caller),
    "getChannel",
    "channelDirectory",
  );
  refusedAsInvalid(
    await forge(dir, "createChannel", { subscribers: [] }, caller),
    "createChannel",
    "channelDirectory",
  );
  refusedAsInvalid(
    await forge(dir, "createChannel", { name: "forged", subscribers: ["x"] }, caller),
    "createChannel",
    "channelDirectory",
  );
  refusedAsInvalid(
    await forge(dir, "updateChannel", { stream_id: streamId, new_name: "forged", is_private: "yes" }, caller),
    "updateChannel",
    "channelDirectory",
  );
  refusedAsInvalid(
    await forge(
      dir,
      "setSubProperties",
      { data: [{ stream_id: streamId, property: "color", value: 5 }] },
      caller,
    ),
    "setSubProperties",
    "channelDirectory",
  );
  // The conversation: a non-string content, a bad anchor, an unknown reaction op, a move to a string id.
  refusedAsInvalid(await forge(conv, "send", { content: 5, topic: "t" }, caller), "send", "channel");
  refusedAsInvalid(await forge(conv, "fetch", { anchor: "oldest" }, caller), "fetch", "channel");
  refusedAsInvalid(
    await forge(conv, "react", { message_id: 1, op: "toggle", emoji_name: "smile" }, caller),
    "react",
    "channel",
  );
  refusedAsInvalid(
    await forge(
      conv,
      "move",
      { message_id: 1, stream_id: "x", link_origin: { scheme: "http", host: "h" } },
      caller,
    ),
    "move",
    "channel",
  );
  // A move's own steps run only in its hand-off, never for a gateway.
  refusedAsInternal(await forge(conv, "moveIn", { msgs: [], move_id: "forged" }, caller));
  refusedAsInternal(
    await forge(
      conv,
      "completeMove",
      {
        ids: [],
        message_id: 1,
        stream_id: 1,
        topic: "t",
        orig_topic: "t",
        topic_changed: false,
        propagate_mode: "change_one",
        timestamp: 0,
        move_id: "forged",
      },
      caller,
    ),
  );
  // Nothing changed.
  assert.deepEqual(await channelNames(api), channelsBefore);
  assert.deepEqual(await channelMessages(api, streamId), messagesBefore);

  // The same calls with good args work.
  const channel = await forge(dir, "getChannel", { stream_id: streamId }, caller);
  assert.equal(channel.ok, true, JSON.stringify(channel));
  const created = await forge(dir, "createChannel", { name: "forged", subscribers: [] }, caller);
  assert.equal(created.ok, true, JSON.stringify(created));
  const sent = await forge(conv, "send", { content: "checked", topic: "t" }, caller);
  assert.equal(sent.ok, true, JSON.stringify(sent));
  assert.deepEqual(await channelNames(api), [...channelsBefore, "forged"].sort());
  assert.equal((await channelMessages(api, streamId)).length, messagesBefore.length + 1);
}

/** The caller's saved snippet titles, through the API. */
async function snippetTitles(api: Api): Promise<string[]> {
  const res = await api("GET", "/saved_snippets");
  assertSuccess(res);
  return (res.body.saved_snippets as Obj[]).map((s) => s.title as string).sort();
}

/** Wrong-typed and good args against the caller's own user actor. */
async function checkUserArgs(forge: ReturnType<typeof forger>, api: Api, caller: Caller): Promise<void> {
  const me = userRef(caller.realmId, caller.userId);
  const before = await snippetTitles(api);
  const refused = async (method: string, args: Obj, who: Caller | null = caller) =>
    refusedAsInvalid(await forge(me, method, args, who), method, "user");
  // A number for a string, a missing required argument, a list of strings
  // for ids, a string for a list, a kind outside its literals, an id past
  // 2^53, an empty fragment; and the anonymous password check.
  await refused("createSavedSnippet", { title: 5, content: "c" });
  await refused("createSavedSnippet", { title: "forged" });
  await refused("updateFlags", { messages: ["1"], op: "add", flag: "read" });
  await refused("typing", { op: "start", type: "direct", to: "5" });
  await refused("addPushToken", { kind: "gcm", token: "x" });
  await refused("markChannelAsRead", { stream_id: 2 ** 60 });
  await refused("addNavigationView", { fragment: "", is_pinned: true });
  await refused("createDrafts", { drafts: [{ type: "stream", to: [1], topic: "t" }] });
  await refused("login", { password: 5 }, null);
  // Nothing changed.
  assert.deepEqual(await snippetTitles(api), before);

  // The same calls with good args work.
  const created = await forge(me, "createSavedSnippet", { title: "forged", content: "c" }, caller);
  assert.equal(created.ok, true, JSON.stringify(created));
  assert.deepEqual(await snippetTitles(api), [...before, "forged"].sort());
  const flags = await forge(me, "updateFlags", { messages: [], op: "add", flag: "read" }, caller);
  assert.deepEqual(flags, { ok: true, value: { messages: [] } });
}

/** The caller's own full name, through the API. */
async function ownName(api: Api): Promise<string> {
  const res = await api("GET", "/users/me");
  assertSuccess(res);
  return res.body.full_name as string;
}

/** The realm's linkifier patterns, through the API. */
async function linkifierPatterns(api: Api): Promise<string[]> {
  const res = await api("GET", "/realm/linkifiers");
  assertSuccess(res);
  return (res.body.linkifiers as Obj[]).map((l) => l.pattern as string);
}

/** Wrong-typed and good args against the realm actor and the realm directory, as `caller`. */
async function checkRealmArgs(
  forge: ReturnType<typeof forger>,
  api: Api,
  caller: Caller,
  realmId: number,
): Promise<void> {
  const realm = realmRef(realmId);
  const name = await ownName(api);
  const patterns = await linkifierPatterns(api);
  const refused = (res: ActorResponse, method: string) => refusedAsInvalid(res, method, "realm");
  // Wrong types with a caller: a string id, a number for a string, a list of strings.
  refused(
    await forge(realm, "updateMember", { userId: String(caller.userId), fullName: "Forged" }, caller),
    "updateMember",
  );
  refused(await forge(realm, "updateMember", { userId: caller.userId, fullName: 7 }, caller), "updateMember");
  refused(await forge(realm, "updateMember", { userId: caller.userId, role: 1.5 }, caller), "updateMember");
  refused(await forge(realm, "addLinkifier", { pattern: "forged", url_template: 5 }, caller), "addLinkifier");
  refused(
    await forge(realm, "addLinkifier", { url_template: "https://x.example/{id}" }, caller),
    "addLinkifier",
  );
  refused(await forge(realm, "reorderLinkifiers", { ids: "1,2" }, caller), "reorderLinkifiers");
  refused(await forge(realm, "updatePresence", { status: 1 }, caller), "updatePresence");
  refused(await forge(realm, "createBot", { fullName: "Forged Bot", shortName: ["x"] }, caller), "createBot");
  refused(
    await forge(realm, "updateRealmProperties", { updates: "name=Forged" }, caller),
    "updateRealmProperties",
  );
  refused(
    await forge(realm, "getMembers", { userIds: [caller.userId], access: { channelPeers: "all" } }, caller),
    "getMembers",
  );
  // Without a caller too, before the realm's own checks.
  refused(await forge(realm, "authVerify", { email: 1, apiKey: "x" }, null), "authVerify");
  refused(await forge(realm, "getMembers", { userIds: ["1"] }, null), "getMembers");
  refused(
    await forge(realm, "acceptInvite", { key: 5, fullName: "X Y", password: "pw" }, null),
    "acceptInvite",
  );
  // The realm directory's one external method.
  const dir = realmDirectoryRef();
  refusedAsInvalid(await forge(dir, "resolveHost", { host: 5 }, null), "resolveHost", "realmDirectory");
  refusedAsInvalid(
    await forge(dir, "resolveHost", { host: "localhost", single: "yes" }, null),
    "resolveHost",
    "realmDirectory",
  );
  // Nothing changed.
  assert.equal(await ownName(api), name);
  assert.deepEqual(await linkifierPatterns(api), patterns);

  // The same calls with good args work; PATCH /realm's settings stay loose
  // (the handler answers Zulip's own error for a wrong-typed value).
  const renamed = await forge(
    realm,
    "updateMember",
    { userId: caller.userId, fullName: `${name} II` },
    caller,
  );
  assert.equal(renamed.ok, true, JSON.stringify(renamed));
  assert.equal(await ownName(api), `${name} II`);
  const bad = await forge(realm, "updateRealmProperties", { updates: { name: 5 } }, caller);
  assert.deepEqual(bad.ok ? bad : { code: bad.code, msg: bad.msg }, {
    code: "BAD_REQUEST",
    msg: "Invalid name",
  });
  const restored = await forge(realm, "updateMember", { userId: caller.userId, fullName: name }, caller);
  assert.equal(restored.ok, true, JSON.stringify(restored));
  const found = await forge(dir, "resolveHost", { host: "localhost" }, null);
  assert.deepEqual(found, { ok: true, value: { realmId } });
}

describe("actor protocols - args checked at the node (embedded gateway's client)", () => {
  const node = useEmbeddedNode("zulip-protocols-");

  test("wrong-typed args are refused and change nothing; good args work", async () => {
    await checkGroupArgs(forger(node.srv.gatewayClient, 16), node.api, node.owner, node.owner.realmId);
  });

  test("an anonymous method is checked too", async () => {
    const dir = groupDirectoryRef(node.owner.realmId);
    const forge = forger(node.srv.gatewayClient, 16);
    refusedAsInvalid(await forge(dir, "registerState", { includeDeactivated: "yes" }, null), "registerState");
    const ok = await forge(dir, "registerState", { includeDeactivated: true }, null);
    assert.equal(ok.ok, true, JSON.stringify(ok));
  });

  test("the emoji and queue kinds check their args too", async () => {
    const forge = forger(node.srv.gatewayClient, 16);
    const emoji = emojiDirectoryRef(node.owner.realmId);
    refusedAsInvalid(await forge(emoji, "add", { name: "x", fileCount: "1" }, node.owner), "add", "emoji");
    refusedAsInvalid(await forge(emoji, "remove", {}, node.owner), "remove", "emoji");
    const queue = queueRef(node.owner.realmId, node.owner.userId);
    refusedAsInvalid(await forge(queue, "poll", { queueId: 5 }, node.owner), "poll", "queue");
    refusedAsInvalid(
      await forge(queue, "register", { eventTypes: "message" }, node.owner),
      "register",
      "queue",
    );
    const reg = await forge(queue, "register", { eventTypes: ["message"] }, node.owner);
    assert.equal(reg.ok, true, JSON.stringify(reg));
    const list = await forge(emoji, "list", {}, node.owner);
    assert.equal(list.ok, true, JSON.stringify(list));
  });

  test("the channel directory and conversation kinds check their args too", async () => {
    await checkChannelArgs(forger(node.srv.gatewayClient, 16), node.api, node.owner, node.owner.realmId);
  });

  test("the uploads and blob kinds check their args too", async () => {
    const forge = forger(node.srv.gatewayClient, 16);
    const uploads = uploadsDirectoryRef(node.owner.realmId);
    const before = await attachments(node.api);
    const pathId = `${node.owner.realmId}/ab/${"x".repeat(24)}/forged.txt`;
    const record = { pathId, name: "forged.txt", size: 3, contentType: "text/plain" };
    refusedAsInvalid(
      await forge(uploads, "recordUpload", { ...record, size: "3" }, node.owner),
      "recordUpload",
      "uploads",
    );
    refusedAsInvalid(
      await forge(
        uploads,
        "recordUpload",
        { ...record, image: { width: "1", height: 1, animated: false } },
        node.owner,
      ),
      "recordUpload",
      "uploads",
    );
    refusedAsInvalid(
      await forge(uploads, "recordUpload", { name: "x" }, node.owner),
      "recordUpload",
      "uploads",
    );
    refusedAsInvalid(
      await forge(uploads, "removeAttachment", { id: "1" }, node.owner),
      "removeAttachment",
      "uploads",
    );
    refusedAsInvalid(
      await forge(uploads, "removeAttachment", { id: 1.5 }, node.owner),
      "removeAttachment",
      "uploads",
    );
    refusedAsInvalid(
      await forge(uploads, "lookupUpload", { pathId: 7 }, node.owner),
      "lookupUpload",
      "uploads",
    );
    // The conversations' methods are not a gateway's, whatever the args.
    refusedAsInternal(await forge(uploads, "claimUploads", { pathIds: [pathId] }, node.owner));
    refusedAsInternal(
      await forge(emojiBlobRef(node.owner.realmId, "1"), "put", { data: "AA==" }, node.owner),
    );
    assert.deepEqual(await attachments(node.api), before);

    // Good args work.
    const lookup = await forge(uploads, "lookupUpload", { pathId }, node.owner);
    assert.deepEqual(lookup, { ok: true, value: null });
    const recorded = await forge(uploads, "recordUpload", record, node.owner);
    assert.equal(recorded.ok, true, JSON.stringify(recorded));
    assert.deepEqual(
      (await attachments(node.api)).map((a) => a.path_id),
      [...before.map((a) => a.path_id), pathId],
    );
    const file = await forge(emojiBlobRef(node.owner.realmId, "1"), "get", {}, null);
    assert.deepEqual(file, { ok: true, value: null });
    // The two kinds share storage ids: neither serves the other's key.
    refusedAsInternal(await forge({ ...uploads, kind: "blob" }, "get", {}, null));
    refusedAsInternal(
      await forge(
        { ...emojiBlobRef(node.owner.realmId, "1"), kind: "uploads" },
        "lookupUpload",
        { pathId },
        node.owner,
      ),
    );
    assert.deepEqual(
      (await attachments(node.api)).map((a) => a.path_id),
      [...before.map((a) => a.path_id), pathId],
    );
  });

  test("the webhook and webhook index kinds are internal only: refused to a gateway, typed inside the node", async () => {
    const forge = forger(node.srv.gatewayClient, 16);
    const index = webhookIndexRef(node.owner.realmId);
    refusedAsInternal(await forge(index, "mark", { botId: "9", gen: 1 }, node.owner));
    refusedAsInternal(await forge(index, "mark", { botId: 9, gen: 1 }, node.owner));
    refusedAsInternal(
      await forge(webhookRef(node.owner.realmId, 9), "enqueue", { messageId: 1 }, node.owner),
    );
    assert.deepEqual(await node.srv.node.call(index, "pendingBots", {}), { bots: [] });
    assert.deepEqual(await node.srv.node.call(webhookRef(node.owner.realmId, 9), "outbox", {}), {
      pending: [],
      recent: [],
    });
  });

  test("the user kind checks its args too", async () => {
    await checkUserArgs(forger(node.srv.gatewayClient, 16), node.api, node.owner);
  });

  test("the realm and realm directory kinds check their args too", async () => {
    await checkRealmArgs(forger(node.srv.gatewayClient, 16), node.api, node.owner, node.owner.realmId);
  });

  test("a spectator read without spectator access is still refused", async () => {
    const forge = forger(node.srv.gatewayClient, 16);
    const realm = realmRef(node.owner.realmId);
    for (const method of [
      "registerRealmState",
      "crossRealmBots",
      "profileFieldsState",
      "listLinkifiers",
      "listPlaygrounds",
    ]) {
      const res = await forge(realm, method, {}, null);
      assert.deepEqual(res.ok ? res : { code: res.code, status: res.status }, {
        code: "UNAUTHORIZED",
        status: 401,
      });
      // With a caller, the same read answers.
      const mine = await forge(realm, method, {}, node.owner);
      assert.equal(mine.ok, true, JSON.stringify(mine));
    }
    // Bad args of a spectator read are refused before that check.
    refusedAsInvalid(await forge(realm, "getMember", { userId: "1" }, null), "getMember", "realm");
  });

  test("the realm and realm directory kinds own no key of each other's (they share storage ids)", async () => {
    const forge = forger(node.srv.gatewayClient, 16);
    // Same storage id as the realm directory (realm.0.directory): refused before any activation.
    const stray: ActorRef = { kind: "realm", realm: 0, key: "directory" };
    for (const method of ["publicInfo", "registerRealmState", "listLinkifiers"])
      refusedAsInternal(await forge(stray, method, {}, null));
    refusedAsInternal(
      await forge(
        { kind: "realmDirectory", realm: 0, key: "realm" },
        "resolveHost",
        { host: "localhost" },
        null,
      ),
    );
    // The directory itself still answers.
    const found = await forge(realmDirectoryRef(), "resolveHost", { host: "localhost" }, null);
    assert.deepEqual(found, { ok: true, value: { realmId: node.owner.realmId } });
  });

  test("inside the node, internal methods answer (typed at compile time)", async () => {
    const r = await node.srv.node.call(groupDirectoryRef(node.owner.realmId), "expandGroups", {
      groupIds: [],
    });
    assert.deepEqual(r, { userIds: [] });
    const keys = await node.srv.node.call(
      userRef(node.owner.realmId, node.owner.userId),
      "dmConversationKeys",
      {},
    );
    assert.ok(Array.isArray(keys.keys), JSON.stringify(keys));
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("actor protocols - args checked at the node (gRPC)", { skip }, () => {
  let c: TestCluster;
  let grpc: GrpcNodeClient;

  before(async () => {
    c = await startCluster({ nodes: ["n1"] });
    grpc = new GrpcNodeClient(`127.0.0.1:${c.nodes.get("n1")!.grpcPort}`);
  });

  after(async () => {
    grpc?.close();
    await c?.stop();
  });

  test("wrong-typed args are refused and change nothing; good args work", async () => {
    const me = await c.api("GET", "/users/me");
    assertSuccess(me);
    const owner: Caller = { realmId: REALM, userId: me.body.user_id as number, role: 100, isBot: false };
    await checkGroupArgs(forger(grpc, c.shards), c.api, owner, REALM);
    await checkUserArgs(forger(grpc, c.shards), c.api, owner);
    await checkRealmArgs(forger(grpc, c.shards), c.api, owner, REALM);
  });
});
