// The event router's local delivery pump (cluster/event-router.ts) with a
// fake host: deliveries start 64 users per macrotask, in arrival order, and
// a shard's batches keep their order when the shard moves away while some
// of them still wait in the pump.
import assert from "node:assert/strict";
import { test } from "node:test";
import { queueRef } from "../actors/index.ts";
import type { ActorRef, Obj } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import { EventRouter, ROUTER_METHOD } from "../cluster/event-router.ts";
import type { ActorRequest, ActorResponse } from "../cluster/transport/contract.ts";

const SHARDS = 4;
const REALM = 1;
const EMITTER: ActorRef = { kind: "channel", realm: REALM, key: "9" };

/** `n` user ids whose queue actors live on `shard`. */
function usersOn(shard: number, n: number): number[] {
  const out: number[] = [];
  for (let id = 1; out.length < n; id++) if (shardOf(queueRef(REALM, id), SHARDS) === shard) out.push(id);
  return out;
}

function fakeHost(served: Set<number>) {
  const log: { method: string; user: string; key: string }[] = [];
  const host = {
    nodeId: "t",
    shards: SHARDS,
    serves: (shard: number) => served.has(shard),
    request: (req: ActorRequest): Promise<ActorResponse> => {
      if (req.method === ROUTER_METHOD) {
        for (const b of req.args.batches as { key: string; users: Record<string, unknown> }[])
          for (const user of Object.keys(b.users)) log.push({ method: req.method, user, key: b.key });
        return Promise.resolve({ ok: true, value: { ok: true } });
      }
      log.push({ method: req.method, user: req.ref.key, key: (req.args as Obj).key as string });
      return Promise.resolve({ ok: true, value: { delivered: 1 } });
    },
  };
  return { host, log };
}

const event = (n: number) => ({ type: "message", message: { id: n } });

test("event router: local deliveries start 64 users per macrotask, in order", async () => {
  const { host, log } = fakeHost(new Set([0, 1, 2, 3]));
  const router = new EventRouter(host);
  const users = usersOn(0, 200);
  const a = router.route(EMITTER, [{ event: event(1), userIds: users }], "a");
  const b = router.route(EMITTER, [{ event: event(2), userIds: users }], "b");
  assert.equal(log.length, 64, "the first chunk starts at once, the rest after a macrotask");
  assert.deepEqual(await Promise.all([a, b]), [true, true]);
  assert.equal(log.length, 400);
  // Every user got batch a before batch b.
  const firstB = log.findIndex((x) => x.key === "b");
  assert.ok(log.slice(0, firstB).every((x) => x.key === "a"));
  assert.equal(firstB, 200);
});

test("event router: a shard that moves away mid-pump keeps its batches in order", async () => {
  const served = new Set([0, 1, 2, 3]);
  const { host, log } = fakeHost(served);
  const router = new EventRouter(host);
  const users = usersOn(0, 100);
  const a = router.route(EMITTER, [{ event: event(1), userIds: users }], "a");
  assert.equal(log.length, 64);
  // The shard moves while 36 of batch a's users still wait for the next chunk.
  served.delete(0);
  const b = router.route(EMITTER, [{ event: event(2), userIds: [users[99]!] }], "b");
  const c = router.route(EMITTER, [{ event: event(3), userIds: [users[0]!] }], "c");
  assert.deepEqual(await Promise.all([a, b, c]), [true, true, true]);
  assert.deepEqual(
    log.map((x) => x.key),
    [...Array(100).fill("a"), "b", "c"],
    "b and c, routed after the move, reach the new owner after all of a",
  );
  assert.deepEqual(
    log.slice(100).map((x) => x.method),
    [ROUTER_METHOD, ROUTER_METHOD],
  );
});

test("event router: a batch another node sent is delivered per user, never forwarded as a batch", async () => {
  // This node does not (or no longer) serve shard 0: the per-user requests
  // find the owner themselves. Forwarding the batch could queue it behind
  // this node's own batches in flight to the sender (a cycle that lost
  // events in the kill -9 cluster test until the attempts ran out).
  const { host, log } = fakeHost(new Set());
  const router = new EventRouter(host);
  const users = usersOn(0, 3);
  const reply = await router.receive({
    batches: [
      { realm: REALM, key: "r", users: Object.fromEntries(users.map((u) => [String(u), [event(1)]])) },
    ],
  });
  assert.deepEqual(reply, { ok: true });
  assert.deepEqual(
    log.map((x) => [x.method, x.key]),
    users.map(() => ["deliver", "r"]),
  );
});
