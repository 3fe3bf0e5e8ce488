// A channel's send context and its subscriber lists' stamp
// (actors/channel/channel-info.ts): the directory leaves the lists out for
// a caller that holds them under the current stamp, and every change of
// them gives a new stamp, so a send never works from an old list.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { channelDirectoryRef } from "../actors/index.ts";
import type { Obj } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import type { ActorResponse } from "../cluster/transport/contract.ts";
import { assertSuccess, createChannel, makeApi, useEmbeddedNode, type Creds } from "./support/index.ts";

describe("channel send context: subscriber lists by stamp", () => {
  const node = useEmbeddedNode("zulip-channel-info-");

  /** `sendContext` as a gateway would ask it, for the node.owner. */
  function ask(args: Obj): Promise<ActorResponse> {
    const ref = channelDirectoryRef(node.owner.realmId);
    return node.srv.gatewayClient.request({
      ref,
      shard: shardOf(ref, node.srv.shards),
      method: "sendContext",
      args,
      caller: node.owner,
      deadline: Date.now() + 5000,
    });
  }

  async function context(args: Obj): Promise<Obj> {
    const res = await ask(args);
    assert.equal(res.ok, true, JSON.stringify(res));
    return (res as { value: Obj }).value;
  }

  async function bot(name: string): Promise<Creds & { userId: number }> {
    const r = assertSuccess(
      await node.api("POST", "/bots", { full_name: name, short_name: name.toLowerCase() }),
    );
    const user = assertSuccess(await node.api("GET", `/users/${r.user_id as number}`)).user as Obj;
    return { email: user.email as string, apiKey: r.api_key as string, userId: r.user_id as number };
  }

  test("the lists are left out under their stamp and come back, new, once they change", async () => {
    const { id, name } = await createChannel(node, [node.owner.userId]);
    const first = await context({ stream_id: id });
    assert.deepEqual(first.subscribers, [node.owner.userId]);
    assert.deepEqual(first.muted_by, []);
    assert.deepEqual(first.push_on, []);
    const stamp = first.lists as string;
    assert.equal(typeof stamp, "string");

    // The same stamp: the settings without the lists.
    const again = await context({ stream_id: id, lists: stamp });
    assert.equal(again.lists, stamp);
    assert.equal(again.name, name);
    for (const key of ["subscribers", "muted_by", "push_on"]) assert.equal(key in again, false, key);

    // A stamp the directory never gave: the lists.
    const other = await context({ stream_id: id, lists: "not-a-stamp" });
    assert.deepEqual(other.subscribers, [node.owner.userId]);

    // A new subscriber: a new stamp, and the lists with them.
    const b = await bot("Stamped");
    assertSuccess(
      await node.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: [b.userId],
      }),
    );
    const grown = await context({ stream_id: id, lists: stamp });
    assert.notEqual(grown.lists, stamp);
    assert.deepEqual(
      grown.subscribers,
      [node.owner.userId, b.userId].sort((x, y) => x - y),
    );

    // A mute changes a list too.
    assertSuccess(
      await node.api("POST", "/users/me/subscriptions/properties", {
        subscription_data: [{ stream_id: id, property: "is_muted", value: true }],
      }),
    );
    const muted = await context({ stream_id: id, lists: grown.lists });
    assert.notEqual(muted.lists, grown.lists);
    assert.deepEqual(muted.muted_by, [node.owner.userId]);
  });

  test("a stamp of the wrong type or length is refused", async () => {
    const { id } = await createChannel(node, [node.owner.userId]);
    for (const lists of [5, "x".repeat(65), null]) {
      const res = await ask({ stream_id: id, lists });
      assert.equal(res.ok, false, JSON.stringify(res));
      if (!res.ok)
        assert.deepEqual(
          { code: res.code, msg: res.msg, status: res.status },
          { code: "BAD_REQUEST", msg: "Invalid arguments for channelDirectory.sendContext", status: 400 },
        );
    }
  });

  test("a send reads the subscribers as they are now: a mention flags a new subscriber only", async () => {
    const { id, name } = await createChannel(node, [node.owner.userId]);
    const send = async (content: string) =>
      assertSuccess(
        await node.api("POST", "/messages", { type: "stream", to: String(id), topic: "t", content }),
      ).id as number;
    const b = await bot("Newcomer");
    await send("before anyone else");
    assertSuccess(
      await node.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: [b.userId],
      }),
    );
    const mentioned = await send("@**Newcomer** welcome");
    assertSuccess(
      await node.api("DELETE", "/users/me/subscriptions", { subscriptions: [name], principals: [b.userId] }),
    );
    const after = await send("@**Newcomer** gone");
    const flags = async (messageId: number) =>
      assertSuccess(await makeApi(node.srv.url, b)("GET", `/messages/${messageId}`)).message as Obj;
    const got = (await flags(mentioned)).flags as string[];
    assert.ok(got.includes("mentioned"), JSON.stringify(got));
    const res = await makeApi(node.srv.url, b)("GET", `/messages/${after}`);
    // Not a recipient any more: the message reads as historical, unmentioned.
    const later = (assertSuccess(res).message as Obj).flags as string[];
    assert.ok(!later.includes("mentioned"), JSON.stringify(later));
    assert.ok(later.includes("historical"), JSON.stringify(later));
  });
});
