// Durable reads (cluster/node/durable-reads.ts): a send on a node that
// does not serve the realm reuses the realm's last roster reply while the
// realm's journal has not moved. What a user changes is seen by the next
// send all the same: a mute, a rename, a deactivation.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { channelConvRef, channelDirectoryRef, realmRef } from "../actors/index.ts";
import type { ActorRef, Obj } from "../actors/types.ts";
import {
  assertError,
  assertSuccess,
  createChannel,
  newUser,
  nodeOf,
  requireBinaries,
  useCluster,
  type Member,
} from "./support/index.ts";
import { bearer, metric, raw } from "./support/ops.ts";

const REALM = 1;
const TOKEN = `durable-reads-${process.pid}`;
const skip = requireBinaries("nats-server", "redis-server");

describe("durable reads: the roster of a send on another node than the realm's", { skip }, () => {
  const c = useCluster({ nodes: ["n1", "n2"], adminPorts: true, env: { ADMIN_TOKEN: TOKEN } });

  /** Durable reads of `kind.method` that node `id` answered from its last reply, or asked. */
  async function reads(id: string, kind: string, method: string): Promise<{ hit: number; miss: number }> {
    const r = await raw(`http://127.0.0.1:${c.nodes.get(id)!.adminPort}/metrics`, bearer(TOKEN));
    assert.equal(r.status, 200, r.text);
    const count = (outcome: string) =>
      metric(r.text, "zulip_actors_durable_reads_total", { kind, method, outcome }) || 0;
    return { hit: count("hit"), miss: count("miss") };
  }
  const rosterReads = (id: string) => reads(id, "realm", "roster");

  /** A channel of these users whose conversation lives on another node than `away`'s actor. */
  async function channelAwayFrom(away: ActorRef, members: number[]): Promise<{ id: number; name: string }> {
    const far = nodeOf(c, away);
    for (let i = 0; i < 40; i++) {
      const ch = await createChannel(c, members);
      if (nodeOf(c, channelConvRef(REALM, ch.id)) !== far) return ch;
    }
    throw new Error("no channel on the other node");
  }

  test("reused while the realm's journal stays; a mute, a rename and a deactivation show at once", async () => {
    const ownerId = assertSuccess(await c.api("GET", "/users/me")).user_id as number;
    const sender = await newUser(c);
    // A channel whose conversation lives on the node that does not serve the realm.
    const channel = await channelAwayFrom(realmRef(REALM), [ownerId, sender.userId]);
    const convNode = nodeOf(c, channelConvRef(REALM, channel.id));
    const send = async (as: Member, content: string) =>
      assertSuccess(
        await c.api("POST", "/messages", { type: "stream", to: String(channel.id), topic: "t", content }, as),
      ).id as number;
    const asOwner = async (id: number) => assertSuccess(await c.api("GET", `/messages/${id}`)).message as Obj;

    for (let i = 0; i < 3; i++) await send(sender, `warm ${i}`);
    const before = await rosterReads(convNode);
    for (let i = 0; i < 5; i++) await send(sender, `same ${i}`);
    const after = await rosterReads(convNode);
    assert.ok(after.hit - before.hit >= 4, `reused: ${JSON.stringify({ before, after })}`);

    // The owner mutes the sender: the very next message reaches them read.
    assertSuccess(await c.api("POST", `/users/me/muted_users/${sender.userId}`));
    const whileMuted = await asOwner(await send(sender, "while muted"));
    assert.ok((whileMuted.flags as string[]).includes("read"), JSON.stringify(whileMuted.flags));
    assertSuccess(await c.api("DELETE", `/users/me/muted_users/${sender.userId}`));
    const unmuted = await asOwner(await send(sender, "unmuted"));
    assert.ok(!(unmuted.flags as string[]).includes("read"), JSON.stringify(unmuted.flags));

    // A rename: the next message carries the new name.
    assertSuccess(await c.api("PATCH", `/users/${sender.userId}`, { full_name: "Renamed Sender" }));
    assert.equal((await asOwner(await send(sender, "renamed"))).sender_full_name, "Renamed Sender");

    // The owner, as sender, mentions the sender; once deactivated they are no recipient.
    assertSuccess(await c.api("DELETE", `/users/${sender.userId}`));
    const res = await c.api("POST", "/messages", {
      type: "stream",
      to: String(channel.id),
      topic: "t",
      content: "@**Renamed Sender** are you there?",
    });
    assertSuccess(res);
    const mention = await asOwner(res.body.id as number);
    assert.doesNotMatch(mention.content as string, /user-mention/, "a deactivated user is not mentioned");
  });

  test("a channel's send context is reused while the directory's journal stays; a subscription shows at once", async () => {
    const ownerId = assertSuccess(await c.api("GET", "/users/me")).user_id as number;
    const channel = await channelAwayFrom(channelDirectoryRef(REALM), [ownerId]);
    const convNode = nodeOf(c, channelConvRef(REALM, channel.id));
    const send = async (content: string) =>
      assertSuccess(
        await c.api("POST", "/messages", { type: "stream", to: String(channel.id), topic: "t", content }),
      ).id as number;
    for (let i = 0; i < 3; i++) await send(`warm ${i}`);
    const before = await reads(convNode, "channelDirectory", "sendContext");
    for (let i = 0; i < 5; i++) await send(`same ${i}`);
    const after = await reads(convNode, "channelDirectory", "sendContext");
    assert.ok(after.hit - before.hit >= 4, `reused: ${JSON.stringify({ before, after })}`);

    // A new subscriber is a recipient of the very next message: mentioned, not historical.
    const joiner = await newUser(c, "member", "Late Joiner");
    assertSuccess(
      await c.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: channel.name }],
        principals: [joiner.userId],
      }),
    );
    const id = await send("@**Late Joiner** hello");
    const seen = assertSuccess(await c.api("GET", `/messages/${id}`, {}, joiner)).message as Obj;
    assert.deepEqual(seen.flags, ["mentioned"]);
  });

  test("a send context that asked the group directory is not reused: leaving the group stops the next send", async () => {
    const ownerId = assertSuccess(await c.api("GET", "/users/me")).user_id as number;
    const member = await newUser(c);
    const g = assertSuccess(
      await c.api("POST", "/user_groups/create", {
        name: `durable-${process.pid}`,
        description: "",
        members: [member.userId],
      }),
    );
    const groupId = g.group_id as number;
    // Private, and `member` unsubscribed: may send only through the group.
    const far = nodeOf(c, channelDirectoryRef(REALM));
    let channel: { id: number; name: string } | undefined;
    for (let i = 0; i < 40 && !channel; i++) {
      const ch = await createChannel(c, [ownerId], { invite_only: true, can_subscribe_group: groupId });
      if (nodeOf(c, channelConvRef(REALM, ch.id)) !== far) channel = ch;
    }
    assert.ok(channel, "a channel on the other node");
    const send = (content: string) =>
      c.api("POST", "/messages", { type: "stream", to: String(channel.id), topic: "t", content }, member);
    for (let i = 0; i < 3; i++) assertSuccess(await send(`via the group ${i}`));
    assertSuccess(
      await c.api("POST", `/user_groups/${groupId}/members`, { delete: JSON.stringify([member.userId]) }),
    );
    assertError(await send("no longer"), `Not authorized to send to channel '${channel.name}'`);
  });
});
