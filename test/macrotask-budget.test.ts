// MacrotaskBudget (cluster/transport/retry.ts): loops spending from one
// budget do at most its units per macrotask between them, in the order
// they asked, and whatever one loop's work resolves runs before the next
// share starts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MacrotaskBudget } from "../cluster/transport/retry.ts";

test("loops started in one microtask run share the budget of each macrotask", async () => {
  const budget = new MacrotaskBudget(4);
  /** Per macrotask (counted by setImmediate ticks), which loop did a unit. */
  let tick = 0;
  const byTick: string[][] = [];
  const count = () => {
    tick++;
    if (running) setImmediate(count);
  };
  let running = true;
  setImmediate(count);
  const loop = async (name: string, units: number) => {
    for (let i = 0; i < units; i++) {
      const pause = budget.spend();
      if (pause !== undefined) await pause;
      (byTick[tick] ??= []).push(name);
    }
  };
  await Promise.all([loop("a", 6), loop("b", 3), loop("c", 3)]);
  running = false;
  const shares = byTick.filter((x) => x !== undefined);
  for (const s of shares)
    assert.ok(s.length <= 4, `at most 4 units in one macrotask: ${JSON.stringify(shares)}`);
  assert.deepEqual(shares.flat().sort(), ["a", "a", "a", "a", "a", "a", "b", "b", "b", "c", "c", "c"]);
  // The first loop takes the first share whole; the others wait their turn.
  assert.deepEqual(shares[0], ["a", "a", "a", "a"]);
});

test("work a share resolves runs before the next share", async () => {
  const budget = new MacrotaskBudget(2);
  const order: string[] = [];
  const loop = async (name: string) => {
    for (let i = 0; i < 2; i++) {
      const pause = budget.spend();
      if (pause !== undefined) await pause;
      order.push(`${name}${i}`);
      // A reply resolved by this unit: a short promise chain.
      void Promise.resolve()
        .then(() => undefined)
        .then(() => order.push(`${name}${i} answered`));
    }
  };
  await Promise.all([loop("a"), loop("b")]);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order.slice(0, 4), ["a0", "a1", "a0 answered", "a1 answered"]);
});
