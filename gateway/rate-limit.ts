// Zulip's api_by_user rate limit (its RATE_LIMITING_RULES): by default 200
// authenticated requests per user per 60 s, counted across every gateway of
// the cluster, with no actor round trip on the request path.
//
// How: each gateway counts its own requests per user in one-second buckets
// and, every FLUSH_MS, publishes the increments since its last flush on the
// bus (subject `ratelimit.counts`). Every gateway adds the increments it
// hears from the others to a per-user remote tally. A request is refused
// when local + remote requests of the user within the window reach the
// limit; refused requests are not counted (as in Zulip).
//
// Bound: a gateway sees another gateway's requests at most FLUSH_MS plus the
// bus latency late. So over any window the cluster admits at most
// limit + (requests the user sent to the *other* gateways during the last
// FLUSH_MS + bus latency), i.e. with G gateways receiving a user evenly at
// rate r/s, an overshoot of about (G-1)/G × r × (FLUSH_MS + latency)/1000
// requests. With one gateway (embedded mode) the limit is exact. A lost bus
// message (NATS is at-most-once) under-counts only that message's
// increments; a gateway that stops simply ages out after one window.
//
// The window is the current second and the 59 before it, so a request
// leaves the window 59–60 s after it was made, and retry-after and
// X-RateLimit-Reset are computed from the start of the oldest occupied
// second plus 60 s: a client that waits that long is always let through.

import { randomUUID } from "node:crypto";
import { errors, type ZulipError } from "../actors/errors.ts";
import type { Caller } from "../actors/types.ts";
import type { Bus, Subscription } from "../cluster/transport/contract.ts";

export const RATE_LIMIT_SUBJECT = "ratelimit.counts";
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 200;
const WINDOW_SECONDS = 60;
const FLUSH_MS = 250;

/** RATE_LIMIT_PER_MINUTE from the environment: a non-negative integer; 0 disables. */
export function rateLimitFromEnv(): number {
  const raw = process.env.RATE_LIMIT_PER_MINUTE;
  if (raw === undefined || raw === "") return DEFAULT_RATE_LIMIT_PER_MINUTE;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`RATE_LIMIT_PER_MINUTE must be an integer >= 0, not ${raw}`);
  return n;
}

/** Per-second request counts of one user: second -> count. */
type Buckets = Map<number, number>;

/** What one flush carries: [user key, second, count] increments. */
interface CountsMessage {
  from: string;
  counts: [string, number, number][];
}

export interface RateDecision {
  /** Response headers for an admitted request (X-RateLimit-*). */
  headers: Record<string, string>;
  /** Set when the request is refused: the 429 to send. */
  error?: ZulipError;
}

function add(m: Map<string, Buckets>, key: string, second: number, n: number): void {
  let b = m.get(key);
  if (b === undefined) m.set(key, (b = new Map()));
  b.set(second, (b.get(second) ?? 0) + n);
}

/** Count within the window ending at `now` (seconds), dropping older buckets; and the oldest second counted. */
function windowCount(b: Buckets | undefined, nowSecond: number): { count: number; oldest: number | null } {
  if (b === undefined) return { count: 0, oldest: null };
  let count = 0;
  let oldest: number | null = null;
  for (const [s, n] of b) {
    if (s <= nowSecond - WINDOW_SECONDS) {
      b.delete(s);
      continue;
    }
    count += n;
    if (oldest === null || s < oldest) oldest = s;
  }
  return { count, oldest };
}

export class ClusterRateLimiter {
  private readonly id = randomUUID();
  private readonly local = new Map<string, Buckets>();
  private readonly remote = new Map<string, Buckets>();
  /** Increments not yet published. */
  private pending = new Map<string, Buckets>();
  private readonly sub: Subscription;
  private readonly timer: NodeJS.Timeout;
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  constructor(
    private readonly bus: Bus,
    readonly limit: number,
  ) {
    this.sub = bus.subscribe(RATE_LIMIT_SUBJECT, (data) => this.onCounts(data));
    this.timer = setInterval(() => this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
    this.flush();
    this.sub.unsubscribe();
  }

  /** Requests of `caller` counted in the window at `now` (ms), this gateway's and the others' as last heard. */
  usage(caller: Caller, now: number): number {
    const key = `${caller.realmId}:${caller.userId}`;
    const second = Math.floor(now / 1000);
    return windowCount(this.local.get(key), second).count + windowCount(this.remote.get(key), second).count;
  }

  /** Admit or refuse one authenticated request of `caller` at `now` (ms). */
  check(caller: Caller, now: number): RateDecision {
    const key = `${caller.realmId}:${caller.userId}`;
    const second = Math.floor(now / 1000);
    const mine = windowCount(this.local.get(key), second);
    const theirs = windowCount(this.remote.get(key), second);
    const used = mine.count + theirs.count;
    const oldest = minOf(mine.oldest, theirs.oldest);
    // Seconds until the oldest counted request has surely left the window.
    const freeAt = oldest === null ? now : (oldest + WINDOW_SECONDS) * 1000;
    const reset = String(Math.floor(Math.max(freeAt, now) / 1000));
    if (used >= this.limit) {
      const retryAfter = Math.max(0, (freeAt - now) / 1000);
      const headers = {
        "X-RateLimit-Limit": String(this.limit),
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": reset,
      };
      return { headers, error: errors.rateLimited(retryAfter) };
    }
    add(this.local, key, second, 1);
    add(this.pending, key, second, 1);
    return {
      headers: {
        "X-RateLimit-Limit": String(this.limit),
        "X-RateLimit-Remaining": String(this.limit - used - 1),
        "X-RateLimit-Reset": oldest === null ? String(second + WINDOW_SECONDS) : reset,
      },
    };
  }

  private flushes = 0;

  private flush(): void {
    // Once a window, forget users with nothing left in it, so memory follows
    // the users active in the last minute, not every user ever seen.
    if (++this.flushes % ((WINDOW_SECONDS * 1000) / FLUSH_MS) === 0) this.sweep(Date.now());
    if (this.pending.size === 0) return;
    const counts: [string, number, number][] = [];
    for (const [key, b] of this.pending) for (const [s, n] of b) counts.push([key, s, n]);
    this.pending = new Map();
    const msg: CountsMessage = { from: this.id, counts };
    this.bus.publish(RATE_LIMIT_SUBJECT, this.encoder.encode(JSON.stringify(msg)));
  }

  private sweep(now: number): void {
    const second = Math.floor(now / 1000);
    for (const m of [this.local, this.remote]) {
      for (const [key, b] of m) if (windowCount(b, second).count === 0) m.delete(key);
    }
  }

  private onCounts(data: Uint8Array): void {
    let msg: CountsMessage;
    try {
      msg = JSON.parse(this.decoder.decode(data)) as CountsMessage;
    } catch {
      return; // not ours to understand; never let a bad message break requests
    }
    if (msg.from === this.id || !Array.isArray(msg.counts)) return;
    for (const c of msg.counts) {
      if (!Array.isArray(c) || typeof c[0] !== "string" || !Number.isInteger(c[1]) || !Number.isInteger(c[2]))
        continue;
      add(this.remote, c[0], c[1], c[2]);
    }
  }
}

function minOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}
