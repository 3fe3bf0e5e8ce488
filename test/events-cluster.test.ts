// Event queues in cluster mode (real nats-server, redis-server, two node
// processes, a gateway): queues on both nodes, an event reaches every
// recipient's queue across nodes, and after kill -9 of one node the clients
// keep long-polling through the gateway with no event lost or duplicated.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { shardOf } from "../cluster/addressing.ts";
import { ownerOf } from "../cluster/placement/rendezvous.ts";
import { queueRef, userRef } from "../actors/index.ts";
import {
  makeApi,
  requireBinaries,
  startCluster,
  useCluster,
  type Creds,
  type TestCluster,
} from "./support/index.ts";

const skip = requireBinaries("nats-server", "redis-server");
const REALM = 1;

// Node processes inherit this: parked polls end every 2 s with a heartbeat.
process.env.EVENT_QUEUE_HEARTBEAT_MS = "2000";

interface Client extends Creds {
  userId: number;
  node: string;
  queueId: string;
  /** status_text of every user_status event received, in order. */
  texts: string[];
  ids: number[];
  last: number;
  errors: number;
}

describe("events cluster - delivery and failover", { skip }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("events cluster - a poll's and a presence answer relayed through the gateway keep Zulip's envelope", async () => {
    // Both travel from the node as JSON text and are spliced into the
    // envelope unparsed (gateway/routes/events.ts, members.ts).
    const reg = await c.api("POST", "/register", { event_types: ["presence", "message"] });
    assert.equal(reg.status, 200, JSON.stringify(reg.body));
    const poll = await c.api("GET", "/events", {
      queue_id: reg.body.queue_id,
      last_event_id: reg.body.last_event_id,
      dont_block: true,
    });
    assert.equal(poll.status, 200, JSON.stringify(poll.body));
    // Zulip names the queue in an immediate answer only when the call made it.
    assert.deepEqual(poll.body, { result: "success", msg: "", events: [] });
    const presence = await c.api("POST", "/users/me/presence", { status: "active", last_update_id: -1 });
    assert.equal(presence.status, 200, JSON.stringify(presence.body));
    assert.equal(presence.body.result, "success");
    assert.equal(presence.body.msg, "");
    assert.equal(typeof presence.body.presences, "object");
    assert.equal(typeof presence.body.presence_last_update_id, "number");
    assert.equal(typeof presence.body.server_timestamp, "number");
    // An ignored parameter still gets its list (the answer is then written anew).
    const odd = await c.api("GET", "/events", {
      queue_id: reg.body.queue_id,
      last_event_id: reg.body.last_event_id,
      dont_block: true,
      not_a_zulip_parameter: 1,
    });
    assert.equal(odd.status, 200, JSON.stringify(odd.body));
    assert.deepEqual(odd.body, {
      result: "success",
      msg: "",
      events: [],
      ignored_parameters_unsupported: ["not_a_zulip_parameter"],
    });
  });

  test("events cluster - every recipient's queue gets each event; kill -9 loses and duplicates none", async () => {
    const clients: Client[] = [];
    for (let i = 0; i < 10; i++) {
      const email = `poller${i}@example.com`;
      const password = `pw-${email}`;
      const created = await c.api("POST", "/users", { email, password, full_name: `Poller ${i}` });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const key = await c.api("POST", "/fetch_api_key", { username: email, password }, null);
      assert.equal(key.status, 200, JSON.stringify(key.body));
      const userId = created.body.user_id as number;
      const shard = shardOf(queueRef(REALM, userId), c.shards);
      const who = { email, apiKey: key.body.api_key as string };
      const reg = await makeApi(c.baseUrl, who)("POST", "/register", { event_types: ["user_status"] });
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      clients.push({
        ...who,
        userId,
        node: ownerOf(shard, [...c.nodes.keys()])!,
        queueId: reg.body.queue_id,
        texts: [],
        ids: [],
        last: -1,
        errors: 0,
      });
    }
    const nodesWithQueues = new Set(clients.map((x) => x.node));
    assert.equal(nodesWithQueues.size, 2, "queues on both nodes");
    const victim = clients[0]!.node;
    const survivor = [...c.nodes.keys()].find((n) => n !== victim)!;
    // The writer lives on the surviving node here; an emitter killed between
    // its journal append and the fan-out is the "outbox" test below.
    const writer = clients.find((x) => x.node === survivor)!;

    // A second queue of a user on the victim that nobody polls until the end:
    // its unacknowledged backlog must survive the kill whole.
    const silentOwner = clients.find((x) => x.node === victim)!;
    const silentApi = makeApi(c.baseUrl, silentOwner);
    const silent = await silentApi("POST", "/register", { event_types: ["user_status"] });
    assert.equal(silent.status, 200, JSON.stringify(silent.body));

    let stopPolling = false;
    const poller = async (cl: Client) => {
      const api = makeApi(c.baseUrl, cl);
      while (!stopPolling) {
        const r = await api("GET", "/events", { queue_id: cl.queueId, last_event_id: cl.last }).catch(
          () => null,
        );
        if (!r || r.status !== 200) {
          cl.errors++;
          assert.notEqual(
            r?.body?.code,
            "BAD_EVENT_QUEUE_ID",
            `queue of ${cl.email} lost: ${JSON.stringify(r?.body)}`,
          );
          await new Promise((res) => setTimeout(res, 100));
          continue;
        }
        for (const e of r.body.events) {
          assert.ok(
            e.id > cl.last,
            `${cl.email}: event id ${e.id} after ${cl.last} (duplicate or out of order)`,
          );
          cl.last = e.id;
          cl.ids.push(e.id);
          if (e.type === "user_status") cl.texts.push(e.status_text);
        }
      }
    };
    const pollers = clients.map(poller);

    const acked: string[] = [];
    let stopWriting = false;
    const writerApi = makeApi(c.baseUrl, writer);
    const writing = (async () => {
      for (let i = 1; !stopWriting; i++) {
        const text = `s${i}`;
        const r = await writerApi("POST", "/users/me/status", { status_text: text }).catch(() => null);
        if (r && r.status === 200) acked.push(text);
        await new Promise((res) => setTimeout(res, 50));
      }
    })();

    await new Promise((res) => setTimeout(res, 1500));
    // Before the kill: the first event has reached every queue, on both nodes.
    for (const cl of clients) {
      for (let i = 0; i < 100 && !cl.texts.includes("s1"); i++)
        await new Promise((res) => setTimeout(res, 50));
      assert.ok(cl.texts.includes("s1"), `${cl.email} (on ${cl.node}) got the first event`);
    }

    await c.nodes.get(victim)!.stop("SIGKILL");
    // The writes go on until every queue, those of the killed node included,
    // got one acknowledged after the kill, and a second more; 7 s at most.
    const afterKill = acked.length;
    const failedOver = () => clients.every((cl) => acked.slice(afterKill).some((t) => cl.texts.includes(t)));
    for (let t = 0; t < 7000 && !failedOver(); t += 50) await new Promise((res) => setTimeout(res, 50));
    if (failedOver()) await new Promise((res) => setTimeout(res, 1000));
    stopWriting = true;
    await writing;
    assert.ok(acked.length > 20, `only ${acked.length} acknowledged writes`);

    // Let the pollers catch up with every acknowledged event.
    const want = acked[acked.length - 1]!;
    const until = Date.now() + 20_000;
    while (Date.now() < until && clients.some((cl) => !cl.texts.includes(want))) {
      await new Promise((res) => setTimeout(res, 100));
    }
    stopPolling = true;
    await Promise.all(pollers);

    for (const cl of clients) {
      const seen = new Set(cl.texts);
      assert.equal(seen.size, cl.texts.length, `${cl.email} (on ${cl.node}) got a status twice`);
      const missing = acked.filter((t) => !seen.has(t));
      assert.deepEqual(missing, [], `${cl.email} (on ${cl.node}) lost acknowledged events`);
      // In order: the writer's events arrive in the order they were acknowledged.
      const order = cl.texts.filter((t) => acked.includes(t));
      assert.deepEqual(order, acked, `${cl.email} got events out of order`);
    }
    const backlog = await silentApi("GET", "/events", {
      queue_id: silent.body.queue_id,
      last_event_id: -1,
      dont_block: true,
    });
    assert.equal(backlog.status, 200, JSON.stringify(backlog.body));
    const events = backlog.body.events as { id: number; status_text: string }[];
    assert.deepEqual(
      events.map((e) => e.id),
      events.map((_, i) => i),
      "backlog ids 0..n-1, none lost or repeated",
    );
    assert.deepEqual(
      events.map((e) => e.status_text).filter((t) => acked.includes(t)),
      acked,
      "the unpolled queue kept every acknowledged event, in order",
    );
    const onVictim = clients.filter((cl) => cl.node === victim);
    console.log(
      `${acked.length} events to ${clients.length} queues (${onVictim.length} on the killed node); ` +
        `poll errors during failover: ${clients.reduce((n, cl) => n + cl.errors, 0)}`,
    );
  });
});

describe("events cluster - outbox", { skip }, () => {
  let c: TestCluster;
  before(async () => {
    // A test-only crash point on each node (cluster/catalog.ts): the node
    // kills itself with SIGKILL right after a journal append whose turn
    // carries its marker, before the turn's events reach the router.
    c = await startCluster({
      nodes: ["n1", "n2"],
      nodeEnv: {
        n1: { ZULIP_TEST_CRASH_AFTER_APPEND: "crash-on-n1" },
        n2: { ZULIP_TEST_CRASH_AFTER_APPEND: "crash-on-n2" },
      },
    });
  });
  after(async () => {
    await c?.stop();
  });

  test("events cluster - an emitter killed between its append and the fan-out: the event arrives once after failover", async () => {
    const people: (Creds & { userId: number; queueId: string; last: number; texts: string[] })[] = [];
    for (let i = 0; i < 6; i++) {
      const email = `outbox${i}@example.com`;
      const password = `pw-${email}`;
      const created = await c.api("POST", "/users", { email, password, full_name: `Outbox ${i}` });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const key = await c.api("POST", "/fetch_api_key", { username: email, password }, null);
      const who = { email, apiKey: key.body.api_key as string };
      const reg = await makeApi(c.baseUrl, who)("POST", "/register", { event_types: ["user_status"] });
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      people.push({ ...who, userId: created.body.user_id, queueId: reg.body.queue_id, last: -1, texts: [] });
    }
    const writer = people[0]!;
    const names = [...c.nodes.keys()];
    const victim = ownerOf(shardOf(userRef(REALM, writer.userId), c.shards), names)!;
    const queueNodes = new Set(
      people.map((p) => ownerOf(shardOf(queueRef(REALM, p.userId), c.shards), names)),
    );
    assert.equal(queueNodes.size, 2, "queues on both nodes");
    const writerApi = makeApi(c.baseUrl, writer);

    const set = (text: string) =>
      writerApi("POST", "/users/me/status", { status_text: text }).catch(() => null);
    assert.equal((await set("before"))?.status, 200);
    const marker = `crash-on-${victim}`;
    const proc = c.nodes.get(victim)!;
    const died = new Promise<void>((res) => {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) res();
      else proc.child.once("exit", () => res());
    });
    // The write reaches the journal; its node dies before routing the event.
    // The transport may retry the request at the new owner (at-least-once
    // requests), which then applies the write a second time: that is a second
    // event, legitimately. So: one event per application of the write.
    const crashed = await set(marker);
    await died;
    const applied = crashed?.status === 200 ? 2 : 1;
    console.log(
      `crashed write ${applied === 2 ? "retried at the new owner" : "failed"} (${crashed?.status})`,
    );

    // After failover the writer's actor is activated again (here by its next
    // write) and routes the unacknowledged event first, under its old key.
    let afterOk = false;
    for (let i = 0; i < 100 && !afterOk; i++) {
      afterOk = (await set("after"))?.status === 200;
      if (!afterOk) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(afterOk, "the writer can write again after failover");

    for (const p of people) {
      const api = makeApi(c.baseUrl, p);
      const until = Date.now() + 20_000;
      while (!p.texts.includes("after") && Date.now() < until) {
        const r = await api("GET", "/events", {
          queue_id: p.queueId,
          last_event_id: p.last,
          dont_block: true,
        });
        if (r.status === 200) {
          for (const e of r.body.events) {
            assert.ok(e.id > p.last, `${p.email}: event id ${e.id} after ${p.last}`);
            p.last = e.id;
            if (e.type === "user_status") p.texts.push(e.status_text);
          }
        } else assert.notEqual(r.body.code, "BAD_EVENT_QUEUE_ID", `queue of ${p.email} lost`);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(
        p.texts,
        ["before", ...Array<string>(applied).fill(marker), "after"],
        `${p.email}: each event exactly once, in order`,
      );
    }
  });
});
