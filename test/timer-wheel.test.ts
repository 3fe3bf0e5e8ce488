import { test } from "node:test";
import assert from "node:assert/strict";
import { TimerWheel } from "../cluster/timer-wheel.ts";

test("timer wheel - fires due timers in order, skips cancelled, handles far timers", () => {
  let now = 1_000_000;
  const wheel = new TimerWheel(100, 8, () => now);
  const fired: string[] = [];
  wheel.schedule(250, () => fired.push("a"));
  const b = wheel.schedule(300, () => fired.push("b"));
  wheel.schedule(5_000, () => fired.push("far")); // more than one revolution (8 slots x 100 ms)
  wheel.schedule(0, () => fired.push("now"));
  assert.equal(wheel.size, 4);
  wheel.cancel(b);
  now += 200;
  wheel.advance();
  assert.deepEqual(fired, ["now"]);
  now += 200;
  wheel.advance();
  assert.deepEqual(fired, ["now", "a"]);
  now += 4_000;
  wheel.advance();
  assert.deepEqual(fired, ["now", "a"]);
  now += 1_000;
  wheel.advance();
  assert.deepEqual(fired, ["now", "a", "far"]);
  assert.equal(wheel.size, 0);
});

test("timer wheel - a million timers cost one interval and little memory", () => {
  let now = 0;
  const wheel = new TimerWheel(100, 1024, () => now);
  let n = 0;
  for (let i = 0; i < 1_000_000; i++) wheel.schedule(600_000 + (i % 1000), () => n++);
  assert.equal(wheel.size, 1_000_000);
  now = 700_000;
  wheel.advance();
  assert.equal(n, 1_000_000);
  assert.equal(wheel.size, 0);
});
