// Small pieces shared by the transports: the canned responses, the retry
// backoff and a timer-coalescing sleep. No client library imports here, so
// the embedded mode can use it without loading gRPC or NATS.
import type { ActorRequest, ActorResponse } from "./contract.ts";

// ---- Deadlines: start-by, and how long to wait -----------------------------
// A request's `deadline` is a start-by time. The runtime refuses to start a
// turn after it (cluster/catalog.ts), and no transport sends an attempt after
// it. But a turn that started at deadline - 1 ms still runs its handler,
// its nested calls and its journal append, and once appended its facts are
// committed: a caller that stopped waiting exactly at the deadline answered
// 503 for a request that succeeded, and a client that retried posted twice
// (issue 10). So a transport waits for the reply to an attempt it has SENT
// until deadline + REPLY_GRACE_MS; retry decisions ("moved", no responders,
// a lost connection) still stop at the deadline.
//
// Nested hops (gateway -gRPC-> node A, whose turn calls -NATS-> node B, whose
// turn may call -NATS-> node C): the inner wait must end before the outer
// one, with room for the outer turn's own append and reply. Each node -> node
// hop therefore hands the callee a start-by NESTED_START_RESERVE_MS earlier
// than its own (NatsActorClient), and waits until that earlier deadline +
// grace:
//   gateway waits for A until      D + G
//   A starts by D; waits for B until D - R + G   (B starts by D - R)
//   B waits for C until            D - 2R + G   (C starts by D - 2R)
// so a reply, or a definite "unavailable", always reaches each turn R before
// its own caller gives up, and R is what that turn has left for its append.
// A turn's call to an actor of its own node goes through no transport (no
// bound, it awaits the local turn) and needs no reserve. Calls made inside a
// turn take min(turn's deadline, now + callTimeout) (cluster/node.ts), so
// they never get a later start-by than the turn itself. A call made less
// than R before the turn's own start-by is answered "unavailable" at once:
// the calling turn fails (nothing journaled), which is unambiguous.
//
// What stays ambiguous: a started turn whose node died or stalled, or whose
// journal append failed or hung, mid-turn. A stall past the grace ends in a
// 503 without knowing whether the facts were committed; a connection seen
// lost before the deadline is retried at the shard's next owner, which may
// run the turn a second time (docs/architecture.md "Deadlines").

/**
 * How long past its deadline a caller waits for the reply to an attempt it
 * has sent: covers a turn started just before the deadline, i.e. its handler,
 * its nested calls (each bounded by its own, earlier, deadline + grace) and
 * its journal append (group commit). Well above a healthy turn's duration,
 * well below any HTTP timeout in front of the gateway.
 */
export const REPLY_GRACE_MS = 5000;

/**
 * How much earlier than the caller's own start-by a node -> node call's
 * callee must start (only when the call has a grace): the time the calling
 * turn keeps, after its nested call resolved, for its own append and reply.
 */
export const NESTED_START_RESERVE_MS = 1000;

/** Until when a caller waits for the reply to an attempt of `req` it has sent. */
export function replyWaitUntil(req: ActorRequest): number {
  return req.deadline + graceOf(req);
}

export function graceOf(req: ActorRequest): number {
  const g = req.replyGraceMs;
  return g === undefined || !(g >= 0) ? REPLY_GRACE_MS : g;
}

export const UNAVAILABLE_MSG = "Service temporarily unavailable, retry later.";

/** What a caller gets when nothing answered in time (a fresh object each time). */
export function unavailable(retryAfterSeconds = 1): ActorResponse {
  return {
    ok: false,
    kind: "unavailable",
    code: "SERVICE_UNAVAILABLE",
    msg: UNAVAILABLE_MSG,
    status: 503,
    headers: { "Retry-After": String(retryAfterSeconds) },
  };
}

/** A handler that rejected instead of resolving: Zulip's internal error. */
export function internalError(): ActorResponse {
  return { ok: false, kind: "zulip", code: "", msg: "Internal server error", status: 500 };
}

/**
 * Marker a transport resolves when the connection failed before a reply came
 * (stream broken, node unreachable, no responders). Callers that retry compare
 * by identity; it never leaves the transport layer (see ClusterClient).
 */
export const CONNECTION_LOST: ActorResponse = Object.freeze({
  ok: false,
  kind: "unavailable",
  code: "SERVICE_UNAVAILABLE",
  msg: UNAVAILABLE_MSG,
  status: 503,
}) as ActorResponse;

/** Answer of a node that is shutting down: go elsewhere. */
export const MOVED_CLOSING: ActorResponse = Object.freeze({
  ok: false,
  kind: "moved",
  code: "MOVED",
  msg: "node is shutting down",
  status: 503,
}) as ActorResponse;

export const BACKOFF_MIN_MS = 25;
export const BACKOFF_MAX_MS = 200;

export function nextBackoff(ms: number): number {
  return ms >= BACKOFF_MAX_MS / 2 ? BACKOFF_MAX_MS : ms * 2;
}

/** Resolves in the event loop's next check phase: after pending I/O callbacks and microtasks. */
export function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * At most `perMacrotask` units of work per macrotask, shared by every loop
 * that spends from it. Per loop, a count would not do: loops started in
 * one microtask run (one per shard, say) each spend a whole share before
 * the first of them pauses, and whatever their work resolves (replies to
 * send) waits for all of them.
 */
export class MacrotaskBudget {
  /** Units spent in this macrotask. */
  private used = 0;
  /** Loops waiting for a unit, in the order they asked; each is woken once, with its unit. */
  private readonly waiting: (() => void)[] = [];
  /** A refill is due in the next check phase. */
  private armed = false;

  constructor(private readonly perMacrotask: number) {}

  /**
   * One unit: undefined when it may be spent now, else a promise that
   * resolves once it is (in a later macrotask, after the units waiting
   * before it). A waiting loop is woken only when its unit is granted:
   * 256 loops asking for a thousand units between them are woken once per
   * unit they waited for, not every one of them at every macrotask.
   */
  spend(): Promise<void> | undefined {
    this.arm();
    if (this.waiting.length === 0 && this.used < this.perMacrotask) {
      this.used++;
      return undefined;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private arm(): void {
    if (this.armed) return;
    this.armed = true;
    setImmediate(this.refill);
  }

  /** A new macrotask: its units go first to the loops that waited, in order. */
  private readonly refill = (): void => {
    this.armed = false;
    const n = Math.min(this.perMacrotask, this.waiting.length);
    this.used = n;
    if (n === 0) return;
    for (const wake of this.waiting.splice(0, n)) wake();
    this.arm();
  };
}

// ---- Coalesced sleeps --------------------------------------------------------
// When a node dies, every in-flight request retries at once; one setTimeout
// per request would be thousands of timers. Wake-ups are rounded up to a 5 ms
// slot and each slot has one timer.

const SLOT_MS = 5;
const slots = new Map<number, Array<() => void>>();

export function delay(ms: number): Promise<void> {
  const slot = Math.ceil((Date.now() + Math.max(0, ms)) / SLOT_MS);
  return new Promise<void>((resolve) => {
    let waiters = slots.get(slot);
    if (!waiters) {
      waiters = [];
      slots.set(slot, waiters);
      setTimeout(fireSlot, Math.max(0, slot * SLOT_MS - Date.now()), slot);
    }
    waiters.push(resolve);
  });
}

function fireSlot(slot: number): void {
  const waiters = slots.get(slot);
  slots.delete(slot);
  if (waiters) for (const w of waiters) w();
}
