// Outgoing webhooks in cluster mode (real nats-server, redis-server, three
// node processes, a gateway) with a real local HTTP receiver:
// - a mention reaches the receiver exactly once when the bot's webhook actor
//   and the channel live on different nodes;
// - kill -9 of the node owning the bot's webhook actor while the receiver
//   holds the request: the attempt is not POSTed again (at most once), and
//   a mention after the failover is delivered;
// - a node that dies right after journaling a delivery (before any POST)
//   loses nothing: the delivery is POSTed once after the failover.
import assert from "node:assert/strict";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { channelConvRef, webhookRef } from "../actors/index.ts";
import type { ActorRef, Obj } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import { ownerOf } from "../cluster/placement/rendezvous.ts";
import {
  assertSuccess,
  requireBinaries,
  sleep,
  startCluster,
  waitFor,
  type TestCluster,
} from "./support/index.ts";

const skip = requireBinaries("nats-server", "redis-server");
const REALM = 1;
const CRASH = "crash-n3-after-enqueue";
/** Short, so a lost attempt's deadline (timeout + 5 s grace) passes within the test. */
const TIMEOUT_MS = 3000;

interface Hit {
  path: string;
  messageId: number;
  content: string;
  /** When the POST arrived (Date.now()). */
  at: number;
}

/** The bots' server: records every POST; per path, hold the request or answer. */
class Receiver {
  server!: Server;
  port = 0;
  readonly hits: Hit[] = [];
  readonly hold = new Set<string>();
  private readonly held: ServerResponse[] = [];
  onHit: ((h: Hit) => void) | null = null;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as Obj;
        const message = body.message as Obj;
        const hit = {
          path: req.url ?? "",
          messageId: Number(message.id),
          content: String(body.data),
          at: Date.now(),
        };
        this.hits.push(hit);
        this.onHit?.(hit);
        if (this.hold.has(hit.path)) {
          this.held.push(res);
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ content: `pong ${hit.messageId}` }));
      });
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  count(messageId: number): number {
    return this.hits.filter((h) => h.messageId === messageId).length;
  }

  async waitFor(messageId: number, ms: number): Promise<void> {
    await waitFor(() => this.count(messageId) > 0, {
      timeoutMs: ms,
      what: `message ${messageId} to reach the receiver`,
    });
  }

  async stop(): Promise<void> {
    for (const r of this.held) r.destroy();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

let c: TestCluster;
const rx = new Receiver();
let alive = ["n1", "n2", "n3"];
let seq = 0;

before(async () => {
  if (skip) return;
  await rx.start();
  c = await startCluster({
    nodes: ["n1", "n2", "n3"],
    // The receiver listens on loopback, which bots may not reach by default.
    env: { WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), OUTGOING_WEBHOOK_ALLOWED_NETWORKS: "127.0.0.0/8" },
    nodeEnv: { n3: { ZULIP_TEST_CRASH_AFTER_APPEND: CRASH } },
  });
});

after(async () => {
  await c?.stop();
  await rx.stop();
});

function nodeOf(ref: ActorRef): string {
  return ownerOf(shardOf(ref, c.shards), alive)!;
}

interface Bot {
  id: number;
  name: string;
  path: string;
}

/** An outgoing-webhook bot whose webhook actor lives on `node`. */
async function botOn(node: string): Promise<Bot> {
  for (let i = 0; i < 40; i++) {
    const n = ++seq;
    const name = `Cluster Hook ${n}`;
    const path = `/hook${n}`;
    const r = await c.api("POST", "/bots", {
      full_name: name,
      short_name: `chook${n}`,
      bot_type: 3,
      payload_url: JSON.stringify(`http://127.0.0.1:${rx.port}${path}`),
      interface_type: 1,
    });
    assertSuccess(r);
    const id = r.body.user_id as number;
    if (nodeOf(webhookRef(REALM, id)) === node) return { id, name, path };
  }
  throw new Error(`no bot landed on ${node}`);
}

let channelName = "";

/** Send to the test channel, retrying while the cluster fails over (not acknowledged = not sent). */
async function mention(bot: Bot, text: string): Promise<number> {
  for (let i = 0; i < 60; i++) {
    const r = await c.api("POST", "/messages", {
      type: "stream",
      to: channelName,
      topic: "hooks",
      content: `@**${bot.name}** ${text}`,
    });
    if (r.status === 200) return r.body.id as number;
    await sleep(500);
  }
  throw new Error("the send never succeeded");
}

describe("outgoing webhooks - cluster", { skip }, () => {
  test("setup: a channel on n1", async () => {
    for (let i = 0; i < 40 && !channelName; i++) {
      const name = `cluster hooks ${i}`;
      const r = await c.api("POST", "/channels/create", { name, subscribers: [] });
      assertSuccess(r);
      if (nodeOf(channelConvRef(REALM, r.body.id as number)) === "n1") channelName = name;
    }
    assert.ok(channelName, "a channel on n1");
  });

  test("a mention reaches the receiver exactly once across nodes; the reply is posted", async () => {
    const bot = await botOn("n2");
    const id = await mention(bot, "hello");
    await rx.waitFor(id, 15_000);
    // The bot's reply lands in the conversation.
    let replied = false;
    for (let i = 0; i < 100 && !replied; i++) {
      const r = await c.api("GET", "/messages", {
        anchor: "newest",
        num_before: 5,
        num_after: 0,
        narrow: JSON.stringify([{ operator: "channel", operand: channelName }]),
        apply_markdown: false,
      });
      assertSuccess(r);
      replied = (r.body.messages as Obj[]).some((m) => m.sender_id === bot.id && m.content === `pong ${id}`);
      if (!replied) await sleep(100);
    }
    assert.ok(replied, "the bot's reply was posted");
    await sleep(1500);
    assert.equal(rx.count(id), 1);
  });

  test("kill -9 of the webhook actor's node mid-request: no second POST; the next mention arrives", async () => {
    const bot = await botOn("n2");
    rx.hold.add(bot.path);
    const killed = new Promise<void>((resolve) => {
      rx.onHit = (h) => {
        if (h.path !== bot.path) return;
        rx.onHit = null;
        // The POST has started: the node holding the bot's webhook actor dies.
        void c.nodes.get("n2")!.stop("SIGKILL").then(resolve);
      };
    });
    const first = await mention(bot, "first");
    await killed;
    const killedAt = Date.now();
    alive = ["n1", "n3"];
    rx.hold.delete(bot.path);
    const second = await mention(bot, "second");
    await rx.waitFor(second, 30_000);
    // The first attempt's deadline (timeout + 5 s grace) passes; it is finished as unknown, never re-sent.
    const wait = TIMEOUT_MS + 5000 + 3000 - (Date.now() - killedAt);
    if (wait > 0) await sleep(wait);
    assert.equal(rx.count(first), 1, "the interrupted attempt was POSTed exactly once");
    assert.equal(rx.count(second), 1, "the mention after failover was POSTed once");
  });

  test("a node killed right after journaling a delivery (before the POST) loses nothing", async () => {
    const bot = await botOn("n3");
    const n3 = c.nodes.get("n3")!.child;
    let diedAt = Infinity;
    n3.once("exit", () => (diedAt = Date.now()));
    // n3 kills itself right after the bot's webhook actor journals the delivery.
    // The send may answer only once the new owner has redelivered it, so the
    // proof that nothing was POSTed before the crash is the POSTs' times.
    const id = await mention(bot, CRASH);
    alive = ["n1"];
    for (let i = 0; i < 100 && n3.signalCode === null; i++) await sleep(50);
    assert.equal(n3.signalCode, "SIGKILL", "n3 crashed at the test crash point");
    assert.ok(
      rx.hits.filter((h) => h.messageId === id).every((h) => h.at >= diedAt),
      "nothing was POSTed before the crash",
    );
    await rx.waitFor(id, 45_000);
    await sleep(3000);
    assert.equal(rx.count(id), 1);
    // And the bot keeps working on its new node.
    const next = await mention(bot, "after");
    await rx.waitFor(next, 30_000);
    assert.equal(rx.count(next), 1);
  });
});
