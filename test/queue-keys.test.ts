// A queue actor applies a delivery key once (actors/queue/state.ts,
// recentKeys): the last 256 keys are remembered, across a snapshot, and an
// older key counts as new again. The keys are looked up in a count kept
// beside the list, so this checks that the count follows the list.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  applyQueueFact,
  initialQueueSet,
  queueFromSnapshot,
  queueToSnapshot,
  RECENT_KEYS,
  seenKey,
  type QueueSetState,
} from "../actors/queue/state.ts";
import type { Obj } from "../actors/types.ts";
import { registration } from "./support/fixtures.ts";

const ref = { kind: "queue" as const, realm: 1, key: "7" };
const QUEUE = "7:0123456789abcdef";

function fresh(): QueueSetState {
  const state = initialQueueSet(ref);
  const reg = registration();
  return applyQueueFact(state, { type: "registered", queueId: QUEUE, reg, at: 0 } as unknown as Obj);
}

function deliver(state: QueueSetState, key: string): QueueSetState {
  return applyQueueFact(state, {
    type: "delivered",
    key,
    per: { [QUEUE]: [{ type: "heartbeat" }] },
  } as unknown as Obj);
}

/** A log entry for the user: applied (one more event in the queue) unless its key was seen. */
function applied(state: QueueSetState, key: string, entry: number): boolean {
  const before = state.queues[0]!.nextId;
  applyQueueFact(state, { type: "logged", entry, key, events: [{ type: "heartbeat" }] } as unknown as Obj);
  return state.queues[0]!.nextId > before;
}

test("queue keys - the last 256 keys are remembered, older ones are not", () => {
  let state = fresh();
  const total = RECENT_KEYS + 44;
  for (let i = 0; i < total; i++) state = deliver(state, `k${i}`);
  assert.equal(state.recentKeys!.length, RECENT_KEYS);
  for (let i = 0; i < total; i++) assert.equal(seenKey(state, `k${i}`), i >= 44, `k${i}`);
  assert.equal(applied(state, `k${total - 1}`, 1), false, "a remembered key is applied once");
  assert.equal(applied(state, "k10", 2), true, "a forgotten key counts as new");
  // Applying it remembered it, and pushed the oldest out.
  assert.equal(seenKey(state, "k10"), true);
  assert.equal(seenKey(state, "k44"), false);
});

test("queue keys - a snapshot keeps them, and a key listed twice stays until both go", () => {
  let state = fresh();
  for (let i = 0; i < 10; i++) state = deliver(state, `k${i}`);
  const saved = JSON.parse(queueToSnapshot(state)) as Obj;
  // A list holding one key twice (not written by this code, but readable).
  (saved.recentKeys as string[]).push("k9");
  let loaded = queueFromSnapshot(JSON.stringify(saved), ref);
  assert.equal(seenKey(loaded, "k3"), true);
  assert.equal(applied(loaded, "k5", 11), false);
  // Push out the first k9 only: the second keeps it remembered.
  for (let i = 0; i < RECENT_KEYS - 1; i++) loaded = deliver(loaded, `n${i}`);
  assert.ok(!loaded.recentKeys!.includes("k8"));
  assert.ok(loaded.recentKeys!.includes("k9"));
  assert.equal(seenKey(loaded, "k8"), false);
  assert.equal(seenKey(loaded, "k9"), true);
  loaded = deliver(loaded, "last");
  assert.equal(seenKey(loaded, "k9"), false, "gone with its last copy");
});
