// A cluster whose NATS server takes messages of at most 16 KiB (real
// nats-server, redis-server, two nodes, a gateway): actor requests and
// answers larger than that travel in parts (cluster/transport/nats-actor.ts).
// Before they did, a node's answer over the limit was dropped and its caller
// waited out the deadline: every channel creation in an organization of
// 10,000 users answered 503 (the realm's whole roster, 1.7 MB, asked for
// once by each process). Here 150 bots make the roster about 25 KB, and a
// long message to 30 queues makes the event router's batches for the other
// node larger than the limit too.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  makeApi,
  requireBinaries,
  startCluster,
  startRedis,
  type Creds,
  type TestCluster,
} from "./support/index.ts";
import { startNatsWithConfig } from "./support/services.ts";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { realmRef } from "../actors/index.ts";
import { actorSubject, shardOf } from "../cluster/addressing.ts";
import { NatsBus, type ActorRequest } from "../cluster/transport/index.ts";
import { PART_HEADER } from "../cluster/transport/nats-actor.ts";
import { fromPbResponse, pb, toPbRequest } from "../proto/codec.ts";

const skip = requireBinaries("nats-server", "redis-server");

const MAX_PAYLOAD = 16 * 1024;

describe("cluster - NATS messages over max_payload", { skip }, () => {
  let dir: string;
  let c: TestCluster;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "nats-payload-"));
    const config = join(dir, "nats.conf");
    writeFileSync(config, `listen: $NATS_LISTEN\nmax_payload: ${MAX_PAYLOAD}\n`);
    const nats = await startNatsWithConfig(config, {});
    const redis = await startRedis();
    c = await startCluster({ nodes: ["n1", "n2"], shards: 8, nats, redis });
  });
  after(async () => {
    await c?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("channels are created, and a long message reaches every queue on both nodes", async () => {
    const bots: (Creds & { userId: number })[] = [];
    for (let i = 0; i < 150; i++) {
      const r = await c.api("POST", "/bots", {
        full_name: `Payload bot number ${i} with a long enough name`,
        short_name: `payload-bot-${i}`,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      bots.push({ email: "", apiKey: r.body.api_key as string, userId: r.body.user_id as number });
    }
    const listed = (await c.api("GET", "/bots")).body.bots as { user_id: number; username: string }[];
    for (const b of bots) b.email = listed.find((x) => x.user_id === b.userId)!.username;

    // Channels land on shards of both nodes; each node's first roster is
    // the whole organization's, over the limit.
    const members = bots.slice(0, 30);
    const names = Array.from({ length: 6 }, (_, i) => `payload-${i}`);
    for (const name of names) {
      const t0 = Date.now();
      const r = await c.api("POST", "/users/me/subscriptions", {
        subscriptions: JSON.stringify([{ name }]),
        principals: JSON.stringify([c.owner.email, ...members.map((b) => b.userId)]),
      });
      assert.equal(r.status, 200, `${name}: ${JSON.stringify(r.body)}`);
      assert.ok(Date.now() - t0 < 5000, `${name}: ${Date.now() - t0} ms`);
    }

    const queues = await Promise.all(
      members.map(async (b) => {
        const api = makeApi(c.baseUrl, b);
        const reg = await api("POST", "/register", { event_types: JSON.stringify(["message"]) });
        assert.equal(reg.status, 200, JSON.stringify(reg.body));
        return { api, id: reg.body.queue_id as string, last: reg.body.last_event_id as number };
      }),
    );

    // About 9,000 characters: each event is over half the limit.
    const content = Array.from({ length: 900 }, (_, i) => `w${i % 10}ord${i}`).join(" ");
    for (const name of names) {
      const sent = await c.api("POST", "/messages", { type: "stream", to: name, topic: "big", content });
      assert.equal(sent.status, 200, `${name}: ${JSON.stringify(sent.body)}`);
    }
    for (const q of queues) {
      const got: string[] = [];
      const until = Date.now() + 15_000;
      while (got.length < names.length && Date.now() < until) {
        const r = await q.api("GET", "/events", { queue_id: q.id, last_event_id: q.last, dont_block: true });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        for (const e of r.body.events as { id: number; type: string; message?: { content: string } }[]) {
          q.last = e.id;
          if (e.type === "message") got.push(e.message!.content);
        }
        if (got.length < names.length) await new Promise((res) => setTimeout(res, 100));
      }
      assert.equal(got.length, names.length);
      for (const html of got) assert.ok(html.includes("w9ord899"));
    }

    // A direct-message draft names its recipients; the realm answers for them only.
    const draft = await c.api("POST", "/drafts", {
      drafts: JSON.stringify([{ type: "private", to: [bots[149]!.userId], topic: "", content: "hi" }]),
    });
    assert.equal(draft.status, 200, JSON.stringify(draft.body));
  });

  test("a part of a request whose first part went elsewhere is answered moved", async () => {
    // As when a shard changes owner between two parts: the new owner cannot
    // join it, and tells the caller to send it again.
    const bus = await NatsBus.connect(c.nats.url, "payload-test");
    try {
      const req: ActorRequest = {
        ref: realmRef(1),
        shard: shardOf(realmRef(1), c.shards),
        method: "publicInfo",
        args: {},
        caller: null,
        deadline: Date.now() + 5000,
      };
      const headers = natsHeaders();
      headers.set(PART_HEADER, "1/2");
      const data = pb().ActorRequest.encode(toPbRequest(0, req)).finish();
      const msg = await bus.nc.request(actorSubject(req.ref, req.shard), data, { timeout: 2000, headers });
      const { res } = fromPbResponse(pb().ActorResponse.decode(msg.data) as never);
      assert.deepEqual(res, {
        ok: false,
        kind: "moved",
        code: "MOVED",
        msg: "request arrived in part",
        status: 503,
      });
    } finally {
      await bus.close();
    }
  });
});
