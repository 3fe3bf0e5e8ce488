// One hashed timer wheel per node for every actor timer (passivation, queue
// heartbeats and expiry). A million idle queues cannot each own a
// setTimeout: a setTimeout costs 420 B+ per timer, a closure per timer
// about 150 B more (function + context) and keeps whatever it captured
// alive until it fires. So an entry holds no closure of its own: a shared
// callback and up to three arguments (`schedule(ms, fn, a, b, c)` calls
// `fn(a, b, c)`), about 80 B per entry, and one interval drives them all.

import { componentLogger } from "./log.ts";

export interface TimerHandle {
  /** Cancelled timers are skipped when their slot comes round. */
  cancelled: boolean;
  /** True once the timer fired or was cancelled. */
  readonly done: boolean;
}

type Callback = (a: never, b: never, c: never) => void;

class Entry implements TimerHandle {
  cancelled = false;
  fired = false;
  constructor(
    /** Due time in ms since the wheel's origin (a small integer, no boxed double). */
    public due: number,
    public fn: Callback,
    public a: unknown,
    public b: unknown,
    public c: unknown,
  ) {}

  get done(): boolean {
    return this.cancelled || this.fired;
  }
}

export class TimerWheel {
  private readonly slots: Entry[][];
  private cursor = 0;
  /** Times are kept relative to the origin so they stay small integers. */
  private readonly origin: number;
  private cursorTime: number;
  private interval: NodeJS.Timeout | null = null;
  private count = 0;

  constructor(
    private readonly tickMs = 100,
    slotCount = 1024,
    private readonly now: () => number = Date.now,
  ) {
    this.slots = Array.from({ length: slotCount }, () => []);
    this.origin = this.now();
    this.cursorTime = 0;
  }

  start(): void {
    if (this.interval) return;
    this.cursorTime = this.now() - this.origin;
    this.interval = setInterval(() => this.advance(), this.tickMs);
    this.interval.unref();
  }

  stop(): void {
    if (this.interval) clearInterval(this.interval);
    this.interval = null;
  }

  get size(): number {
    return this.count;
  }

  /**
   * Call `fn(a, b, c)` after `delayMs` (within a tick). Pass a long-lived
   * function (a bound method, a module-level function) and the data as
   * arguments: the entry then costs no closure and keeps only a, b and c alive.
   */
  schedule<A = undefined, B = undefined, C = undefined>(
    delayMs: number,
    fn: (a: A, b: B, c: C) => void,
    a?: A,
    b?: B,
    c?: C,
  ): TimerHandle {
    const due = this.now() - this.origin + Math.max(0, delayMs);
    const e = new Entry(due, fn as unknown as Callback, a, b, c);
    this.place(e);
    this.count++;
    return e;
  }

  /** Milliseconds until a pending timer is due (negative when overdue). */
  dueIn(h: TimerHandle): number {
    return (h as Entry).due - (this.now() - this.origin);
  }

  cancel(h: TimerHandle): void {
    h.cancelled = true;
    // The entry waits in its slot until it comes round: let go of its data now.
    if (h instanceof Entry) h.a = h.b = h.c = undefined;
  }

  private place(e: Entry): void {
    const ticksAhead = Math.max(1, Math.ceil((e.due - this.cursorTime) / this.tickMs));
    // Entries further out than one revolution sit in a slot and are
    // re-placed when it comes round before they are due.
    const slot = (this.cursor + Math.min(ticksAhead, this.slots.length - 1)) % this.slots.length;
    this.slots[slot]!.push(e);
  }

  /** Fire everything due up to now. Public for tests. */
  advance(): void {
    const now = this.now() - this.origin;
    while (this.cursorTime + this.tickMs <= now) {
      this.cursor = (this.cursor + 1) % this.slots.length;
      this.cursorTime += this.tickMs;
      const bucket = this.slots[this.cursor]!;
      if (bucket.length === 0) continue;
      this.slots[this.cursor] = [];
      for (const e of bucket) {
        if (e.cancelled) {
          this.count--;
          continue;
        }
        if (e.due > this.cursorTime + this.tickMs) {
          this.place(e);
          continue;
        }
        this.count--;
        e.fired = true;
        const { fn, a, b, c } = e;
        // A fired entry may stay referenced (as a handle): keep nothing alive through it.
        e.a = e.b = e.c = undefined;
        try {
          (fn as (a: unknown, b: unknown, c: unknown) => void)(a, b, c);
        } catch (err) {
          componentLogger("timer-wheel").error({ err }, "timer callback failed");
        }
      }
    }
  }
}
