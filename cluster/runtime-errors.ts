// Errors of the actor runtime itself (shard ownership, lease fencing,
// overload), as opposed to actors/errors.ts, Zulip's registry of what a
// client is told. Actor code never raises these: the node, the store and the
// transports do, and cluster/responses.ts turns them into wire responses.
import { errors, ZulipError } from "../actors/errors.ts";

/** Raised inside a node when it no longer owns the shard of the addressed actor. */
export class MovedError extends Error {
  constructor(readonly shard: number) {
    super(`shard ${shard} moved`);
    this.name = "MovedError";
  }
}

/** Raised when a write was refused because a newer lease epoch exists. */
export class FencedError extends Error {
  constructor(
    readonly shard: number,
    readonly epoch: number,
  ) {
    super(`write to shard ${shard} with stale epoch ${epoch} refused`);
    this.name = "FencedError";
  }
}

/** A node or gateway is overloaded or nothing could answer in time. */
export class UnavailableError extends Error {
  constructor(
    msg: string,
    readonly retryAfterSeconds = 1,
  ) {
    super(msg);
    this.name = "UnavailableError";
  }
}

const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOTCONN",
]);
// Redis replies that mean "not now" (a restart loading its AOF, a cluster failover).
const REDIS_BUSY = /^(LOADING|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|BUSY)\b/;
// node-redis errors raised while its socket is down or reconnecting.
const CLIENT_DOWN = new Set([
  "ClientClosedError",
  "SocketClosedUnexpectedlyError",
  "ConnectionTimeoutError",
  "ReconnectStrategyError",
  "DisconnectsClientError",
]);

/** A store error that passes with time (connection lost, Redis loading), as opposed to a bug. */
export function isStoreUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && NETWORK_CODES.has(code)) return true;
  return REDIS_BUSY.test(err.message) || CLIENT_DOWN.has(err.constructor.name);
}

/** Normalise anything thrown into a ZulipError for the HTTP boundary. */
export function toZulipError(err: unknown): ZulipError {
  if (err instanceof ZulipError) return err;
  if (err instanceof UnavailableError) return errors.unavailable(err.retryAfterSeconds);
  return errors.internal();
}
