// Messages in cluster mode (real nats-server, redis-server, two node
// processes, a gateway): subscribers whose user actors live on different
// nodes all receive one channel message (GET /messages and their event
// queues), and flags stay with each user.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { shardOf } from "../cluster/addressing.ts";
import { ownerOf } from "../cluster/placement/rendezvous.ts";
import { userRef } from "../actors/index.ts";
import type { Obj } from "../actors/types.ts";
import {
  basicAuth,
  makeApi,
  requireBinaries,
  useCluster,
  withoutGreeting,
  type Api,
} from "./support/index.ts";

const skip = requireBinaries("nats-server", "redis-server");
const REALM = 1;

interface Member {
  userId: number;
  node: string;
  api: Api;
}

function ok(res: { status: number; body: Obj }): Obj {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.result, "success");
  return res.body;
}

describe("messages cluster - delivery across nodes, per-user flags", { skip }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("one channel message reaches subscribers on both nodes; flags are per user", async () => {
    const nodes = [...c.nodes.keys()];
    // Users until two have their user actors on different nodes.
    const members: Member[] = [];
    for (let i = 0; i < 16 && new Set(members.map((m) => m.node)).size < 2; i++) {
      const email = `msgc${i}@example.com`;
      const password = `pw-${email}-x`;
      const created = ok(await c.api("POST", "/users", { email, password, full_name: `Member ${i}` }));
      const key = ok(await c.api("POST", "/fetch_api_key", { username: email, password }, null));
      const userId = created.user_id as number;
      const node = ownerOf(shardOf(userRef(REALM, userId), c.shards), nodes)!;
      members.push({ userId, node, api: makeApi(c.baseUrl, { email, apiKey: key.api_key as string }) });
    }
    const a = members[0]!;
    const b = members.find((m) => m.node !== a.node)!;
    assert.ok(b, "user actors on both nodes");

    const ch = ok(
      await c.api("POST", "/channels/create", { name: "cluster talk", subscribers: [a.userId, b.userId] }),
    );
    const qa = ok(await a.api("POST", "/register", { event_types: ["message", "update_message_flags"] }));
    const qb = ok(await b.api("POST", "/register", { event_types: ["message", "update_message_flags"] }));
    const sent = ok(
      await c.api("POST", "/messages", {
        type: "stream",
        to: ch.id as number,
        topic: "hello",
        content: "to all",
      }),
    );
    const id = sent.id as number;

    const eventsOf = async (m: Member, q: Obj, pred: (evs: Obj[]) => boolean): Promise<Obj[]> => {
      const all: Obj[] = [];
      let last = q.last_event_id as number;
      for (let i = 0; i < 60; i++) {
        const r = ok(
          await m.api("GET", "/events", {
            queue_id: q.queue_id as string,
            last_event_id: last,
            dont_block: true,
          }),
        );
        for (const e of r.events as Obj[]) {
          last = Math.max(last, e.id as number);
          if (e.type !== "heartbeat") all.push(e);
        }
        if (pred(all)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      q.last_event_id = last;
      return all;
    };
    for (const [m, q] of [
      [a, qa],
      [b, qb],
    ] as const) {
      const evs = await eventsOf(m, q, (e) => e.some((x) => x.type === "message"));
      const ev = evs.find((x) => x.type === "message")!;
      assert.ok(ev, `message event for user on ${m.node}`);
      assert.equal((ev.message as Obj).id, id);
      assert.deepEqual(ev.flags, []);
      const got = ok(
        await m.api("GET", "/messages", {
          anchor: "newest",
          num_before: 10,
          narrow: [["channel", ch.id as number]],
        }),
      );
      assert.deepEqual(
        (got.messages as Obj[]).map((x) => [x.id, x.flags]),
        [[id, []]],
      );
    }

    // a marks read and starred; b's flags stay as they were.
    ok(await a.api("POST", "/messages/flags", { messages: [id], op: "add", flag: "read" }));
    ok(await a.api("POST", "/messages/flags", { messages: [id], op: "add", flag: "starred" }));
    const flagEvs = await eventsOf(
      a,
      qa,
      (e) => e.filter((x) => x.type === "update_message_flags").length >= 2,
    );
    assert.deepEqual(
      flagEvs.filter((x) => x.type === "update_message_flags").map((x) => [x.op, x.flag, x.messages]),
      [
        ["add", "read", [id]],
        ["add", "starred", [id]],
      ],
    );
    const flagsOf = async (m: Member) =>
      ((ok(await m.api("GET", `/messages/${id}`, {})).message as Obj).flags as string[]).sort();
    assert.deepEqual(await flagsOf(a), ["read", "starred"]);
    assert.deepEqual(await flagsOf(b), []);
    const unreadB = ok(
      await b.api("GET", "/messages", { anchor: "newest", num_before: 10, narrow: [["is", "unread"]] }),
    );
    // Welcome Bot's greeting of each new user (FL 416) is unread too; it is not the subject.
    const own = (msgs: unknown) => withoutGreeting(msgs as Obj[]);
    assert.deepEqual(
      own(unreadB.messages).map((x) => x.id),
      [id],
    );
    const unreadA = ok(
      await a.api("GET", "/messages", { anchor: "newest", num_before: 10, narrow: [["is", "unread"]] }),
    );
    assert.deepEqual(own(unreadA.messages), []);
    assert.deepEqual(
      (await eventsOf(b, qb, () => true)).filter((x) => x.type === "update_message_flags"),
      [],
      "b hears nothing of a's flags",
    );
    assert.equal(ok(await b.api("GET", "/users/me", {})).max_message_id, id);
  });

  test("a channel's GET /messages is relayed as the node wrote it, in Zulip's envelope", async () => {
    const ch = ok(await c.api("POST", "/channels/create", { name: "relayed", subscribers: [] }));
    const sent = ok(
      await c.api("POST", "/messages", {
        type: "stream",
        to: ch.id as number,
        topic: "t",
        content: "é **b**",
      }),
    );
    const narrow = encodeURIComponent(JSON.stringify([["channel", ch.id]]));
    const get = async (extra = "") => {
      const res = await fetch(
        `${c.baseUrl}/api/v1/messages?anchor=newest&num_before=5&narrow=${narrow}${extra}`,
        {
          headers: { authorization: basicAuth(c.owner) },
        },
      );
      return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
    };
    const plain = await get();
    assert.equal(plain.status, 200);
    assert.equal(plain.type, "application/json; charset=utf-8");
    assert.ok(plain.text.startsWith(`{"result":"success","msg":"","anchor":`), plain.text.slice(0, 80));
    assert.ok(plain.text.endsWith("}\n"));
    const body = JSON.parse(plain.text) as Obj;
    // Byte for byte what the gateway would have written from the parsed reply.
    assert.equal(plain.text, JSON.stringify(body) + "\n");
    const [m] = body.messages as Obj[];
    assert.equal(m!.id, sent.id);
    assert.equal(m!.content, "<p>é <strong>b</strong></p>");
    assert.deepEqual(m!.flags, ["read"]);
    // An unknown parameter is still named (the reply is parsed for it).
    const ignored = JSON.parse((await get("&unknown_knob=1")).text) as Obj;
    assert.deepEqual(ignored.ignored_parameters_unsupported, ["unknown_knob"]);
    assert.deepEqual(ignored.messages, body.messages);
    // The node's error passes as the error: a private channel, read by a member who is not in it.
    const secret = ok(
      await c.api("POST", "/channels/create", { name: "relayed secret", subscribers: [], invite_only: true }),
    );
    const email = "relay-reader@example.com";
    const password = `pw-${email}-x`;
    ok(await c.api("POST", "/users", { email, password, full_name: "Relay Reader" }));
    const key = ok(await c.api("POST", "/fetch_api_key", { username: email, password }, null));
    const reader = makeApi(c.baseUrl, { email, apiKey: key.api_key as string });
    const denied = await reader("GET", "/messages", {
      anchor: "newest",
      num_before: 5,
      narrow: [["channel", secret.id as number]],
    });
    assert.equal(denied.status, 400);
    assert.deepEqual(denied.body, {
      result: "error",
      msg: `Invalid narrow operator: unknown channel ${String(secret.id)}`,
      code: "BAD_NARROW",
      desc: `unknown channel ${String(secret.id)}`,
    });
  });
});
