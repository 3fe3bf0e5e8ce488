// Waiting in tests: a pause, and polling a condition until it holds.
import assert from "node:assert/strict";

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface WaitOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between two tries (default 50 ms). */
  stepMs?: number;
  /** What is awaited, for the failure message. */
  what?: string;
}

type Truthy<T> = Exclude<T, false | 0 | "" | null | undefined>;

/**
 * Calls `cond` (sync or async) until it returns a truthy value and returns
 * that value; fails the test after `timeoutMs`. The condition is tried once
 * more at the deadline, so a slow last step still counts.
 */
export async function waitFor<T>(cond: () => T | Promise<T>, opts: WaitOptions = {}): Promise<Truthy<T>> {
  const { timeoutMs = 10_000, stepMs = 50, what = "a condition" } = opts;
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) return v as Truthy<T>;
    if (Date.now() >= end) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(Math.min(stepMs, Math.max(0, end - Date.now())));
  }
}
