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

import type { ActorRef, Caller, Obj, Value } from "../../actors/types.ts";

export interface ActorRequest {
  ref: ActorRef;
  shard: number;
  method: string;
  args: Obj;
  caller: Caller | null;
  /** Absolute deadline, ms since the epoch. */
  deadline: number;
  /** W3C trace context of the caller's span, when sampled or propagated. */
  traceparent?: string;
}

/** Outcome of a request: a reply, or an error the caller re-raises. */
export type ActorResponse =
  | { ok: true; value: Value }
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
  subscribe(subject: string, onMessage: (data: Uint8Array, subject: string) => void): Subscription;
}

/** Client side: used by gateways, and by nodes to reach actors on other nodes. */
export interface ActorClient {
  /**
   * Deliver to the owner of req.shard. Retries on "moved" and on transient
   * failures (refreshing placement) until req.deadline; then resolves to an
   * "unavailable" response. Never rejects.
   */
  request(req: ActorRequest): Promise<ActorResponse>;
}
