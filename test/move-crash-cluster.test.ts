// A move of messages to another channel is one turn of the source and a
// durable hand-off (actors/channel/move.ts). In cluster mode (real
// nats-server, redis-server, three node processes, a gateway), the source's
// node kills itself right after journaling the move, before the target's
// moveIn (the test crash point ZULIP_TEST_CRASH_AFTER_APPEND): once the
// source is activated on its next owner, the move completes exactly once:
// every message is in the target and none in the source, and each
// breadcrumb is posted once.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { channelConvRef } from "../actors/index.ts";
import type { Obj } from "../actors/types.ts";
import {
  assertSuccess,
  createChannel,
  NOTIFICATION_BOT,
  nodeOf,
  requireBinaries,
  sleep,
  startCluster,
  type TestCluster,
} from "./support/index.ts";

const skip = requireBinaries("nats-server", "redis-server");
const REALM = 1;
const CRASH = "move-crash-n3";

let c: TestCluster;

before(async () => {
  if (skip) return;
  c = await startCluster({
    nodes: ["n1", "n2", "n3"],
    nodeEnv: { n3: { ZULIP_TEST_CRASH_AFTER_APPEND: CRASH } },
  });
});

after(async () => {
  await c?.stop();
});

/** A channel of the owner whose conversation lives on `want(node)`. */
async function channelOn(want: (node: string) => boolean): Promise<{ id: number; name: string }> {
  const me = assertSuccess(await c.api("GET", "/users/me")).user_id as number;
  for (let i = 0; i < 60; i++) {
    const ch = await createChannel(c, [me]);
    if (want(nodeOf(c, channelConvRef(REALM, ch.id)))) return ch;
  }
  throw new Error("no channel landed where wanted");
}

/** A channel's messages (raw content), oldest first; null while the cluster fails over. */
async function messagesOf(name: string): Promise<Obj[] | null> {
  const r = await c.api("GET", "/messages", {
    anchor: "newest",
    num_before: 100,
    num_after: 0,
    narrow: JSON.stringify([{ operator: "channel", operand: name }]),
    apply_markdown: false,
  });
  return r.status === 200 ? (r.body.messages as Obj[]) : null;
}

describe("moving messages - cluster, crash after the decision", { skip }, () => {
  test("the source's node dies before the target's moveIn: the move completes once", async () => {
    const source = await channelOn((n) => n === "n3");
    const target = await channelOn((n) => n !== "n3");
    const sent: number[] = [];
    for (const text of ["one", "two", "three"]) {
      const r = assertSuccess(
        await c.api("POST", "/messages", { type: "stream", to: source.name, topic: "old", content: text }),
      );
      sent.push(r.id as number);
    }
    const n3 = c.nodes.get("n3")!.child;
    const died = new Promise<void>((res) => n3.once("exit", () => res()));
    // The new topic carries the crash point's text: n3 dies right after the
    // source's `move` turn is journaled, before its hand-off runs. The
    // gateway may retry the request at the new owner (which then joins the
    // pending move) or answer 503; either way the move must end complete.
    const topic = `new ${CRASH}`;
    const moved = await c.api("PATCH", `/messages/${sent[0]}`, {
      stream_id: target.id,
      topic,
      propagate_mode: "change_all",
      send_notification_to_old_thread: true,
      send_notification_to_new_thread: true,
    });
    await died;
    assert.equal(n3.signalCode, "SIGKILL", "n3 crashed at the test crash point");
    assert.ok([200, 503].includes(moved.status), JSON.stringify(moved.body));

    // Reading the source activates it on its new owner, which gives the
    // move's hand-off again.
    let inSource: Obj[] = [];
    let inTarget: Obj[] = [];
    const until = Date.now() + 45_000;
    for (;;) {
      inSource = (await messagesOf(source.name)) ?? inSource;
      inTarget = (await messagesOf(target.name)) ?? inTarget;
      const done =
        sent.every((id) => inTarget.some((m) => m.id === id)) &&
        !inSource.some((m) => sent.includes(m.id as number)) &&
        inTarget.some((m) => m.sender_id === NOTIFICATION_BOT.id) &&
        inSource.some((m) => m.sender_id === NOTIFICATION_BOT.id);
      if (done) break;
      assert.ok(Date.now() < until, `the move did not complete: ${JSON.stringify({ inSource, inTarget })}`);
      await sleep(300);
    }
    // Give a repeated hand-off time to do harm, then look again.
    await sleep(3000);
    inSource = (await messagesOf(source.name))!;
    inTarget = (await messagesOf(target.name))!;
    assert.deepEqual(
      inTarget.filter((m) => sent.includes(m.id as number)).map((m) => [m.id, m.subject, m.content]),
      sent.map((id, i) => [id, topic, ["one", "two", "three"][i]]),
      "every message in the target once, in the new topic",
    );
    assert.deepEqual(
      inSource.filter((m) => sent.includes(m.id as number)),
      [],
      "no moved message left in the source",
    );
    const bot = (ms: Obj[]) => ms.filter((m) => m.sender_id === NOTIFICATION_BOT.id).map((m) => m.content);
    assert.equal(bot(inTarget).length, 1, "one breadcrumb in the new topic");
    assert.equal(bot(inSource).length, 1, "one breadcrumb in the old topic");
    assert.ok(
      String(bot(inTarget)[0]).startsWith(`This topic was moved here from #**${source.name}>old** by `),
    );
    assert.ok(
      String(bot(inSource)[0]).startsWith(`This topic was moved to #**${target.name}>${topic}** by `),
    );
  });
});
