// Small pieces shared by the transports: the canned responses, the retry
// backoff and a timer-coalescing sleep. No client library imports here, so
// the embedded mode can use it without loading gRPC or NATS.
import type { ActorResponse } from "./contract.ts";

export const UNAVAILABLE_MSG = "Service temporarily unavailable, retry later.";

/** What a caller gets when nothing answered before its deadline (a fresh object each time). */
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
