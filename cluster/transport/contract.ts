// The transport contract. One interface, two implementations (NATS + gRPC for
// cluster mode, in-process for embedded mode), one conformance suite
// (test/transport-conformance.test.ts) that both must pass.
//
// Two jobs:
// - Requests to actors. A caller (gateway or node) sends an ActorRequest to
//   the node that owns the actor's shard and awaits the ActorResponse.
//   Gateway -> node travels over long-lived bidirectional gRPC streams
//   multiplexed by correlation id; node -> node travels over NATS subjects
//   `act.<shard>.<kind>.<realm>.<key>`.
// - Broadcast: membership heartbeats, placement, cache invalidation and
//   event fan-out, as subject-addressed byte messages.

import type { ActorRef, Caller, Obj, Origin, Value } from "../../actors/types.ts";

export interface ActorRequest {
  ref: ActorRef;
  shard: number;
  method: string;
  args: Obj;
  caller: Caller | null;
  /**
   * Start-by time, ms since the epoch: no turn starts for this request after
   * it (cluster/catalog.ts), and no transport sends a new attempt after it.
   * It is not how long the caller waits: see replyGraceMs.
   */
  deadline: number;
  /**
   * How long past `deadline` the caller keeps waiting for the reply to an
   * attempt it has sent (default REPLY_GRACE_MS, cluster/transport/retry.ts):
   * a turn that started just before the deadline may commit facts after it,
   * and answering 503 then would make a client that retries do it twice.
   * 0 for idempotent callers that prefer to retry fast. Local to the
   * caller's process: never sent over the wire.
   */
  replyGraceMs?: number;
  /** W3C trace context of the caller's span, when sampled or propagated. */
  traceparent?: string;
  /**
   * "external" when the request came through the gateway-facing transport
   * (the gRPC server, the embedded gateway's client), which sets it on every
   * request it receives; absent: internal. Never sent over the wire.
   */
  origin?: Origin;
}

/** Outcome of a request: a reply, or an error the caller re-raises. */
export type ActorResponse =
  | {
      ok: true;
      value: Value;
      /**
       * The value's UTF-8 JSON text as it travelled (gRPC, NATS); `value` is
       * then parsed from it on first read, so a gateway that relays a reply
       * unchanged (route-types.ts `Relayed`) never parses it.
       */
      json?: Uint8Array;
    }
  | {
      ok: false;
      /** "zulip": a ZulipError to pass to the client; "moved": retry elsewhere; "unavailable": 503 */
      kind: "zulip" | "moved" | "unavailable";
      code: string;
      msg: string;
      status: number;
      extra?: Obj;
      headers?: Record<string, string>;
    };

/** What a node exposes to its transports. */
export type RequestHandler = (req: ActorRequest) => Promise<ActorResponse>;

/** A live node as the membership protocol sees it. */
export interface NodeInfo {
  id: string;
  /** host:port of its gRPC server ("" in embedded mode). */
  grpc: string;
  /** True once the node announced it is leaving (SIGTERM drain). */
  draining: boolean;
  lastSeen: number;
}

export interface Subscription {
  unsubscribe(): void;
}

export interface Bus {
  publish(subject: string, data: Uint8Array): void;
  /**
   * Resolves once the bus's server holds every message published before
   * the call, and so has passed them on to the subscribers (at most about
   * a second: it never rejects, and gives up when the server is away).
   */
  passedOn?(): Promise<void>;
  subscribe(subject: string, onMessage: (data: Uint8Array, subject: string) => void): Subscription;
}

/** Client side: used by gateways, and by nodes to reach actors on other nodes. */
export interface ActorClient {
  /**
   * Deliver to the owner of req.shard. Retries on "moved" and on transient
   * failures (refreshing placement) until req.deadline, never starting an
   * attempt after it; an attempt already sent is awaited until
   * req.deadline + grace (replyWaitUntil in retry.ts). Then resolves to an
   * "unavailable" response. Never rejects.
   */
  request(req: ActorRequest): Promise<ActorResponse>;
}
