// Event routing: every Decision.events {event, userIds} an actor of this node
// emits reaches the queue actor of each recipient (one per user, on the
// user's shard; actors/queue/state.ts).
//
// Recipients are grouped by shard. Shards this node serves get one local
// `deliver` per user (a direct mailbox push, no network). Every other shard
// gets ONE request per destination shard, addressed to that shard's router
// (ref {kind: "queue", key: "~router.<shard>"}, explicit shard), which the
// owning node answers by delivering locally. Requests go through the actor
// transport, so a shard that is changing owner is retried ("moved") until
// the new owner answers. Per destination shard at most one request is in
// flight; events emitted meanwhile ride on the next one, which keeps each
// emitter's events in order and batches fan-out under load.
//
// At-least-once with de-duplication: every batch carries a key that the
// queue actor remembers (QueueSetState.recentKeys), so a retried delivery is
// applied once. Known gap: events of an emitter whose node dies after its
// journal append but before this router ran are lost (no outbox).

import { queueRef } from "../actors/index.ts";
import type { ActorRef, Obj, OutEvent, Value } from "../actors/types.ts";
import { shardOf } from "./addressing.ts";
import type { ActorRequest, ActorResponse } from "./transport/contract.ts";

export const ROUTER_METHOD = "routeEvents";
const ROUTER_PREFIX = "~router.";
/**
 * Deadline of one delivery attempt. Short on purpose: a request sent to a
 * node that died never gets an answer (the transport waits for the whole
 * deadline), and deliveries are idempotent (keys), so a lost attempt is
 * simply sent again, to the shard's new owner. About a minute in all.
 */
const ATTEMPT_MS = 2_000;
const ATTEMPTS = 30;

export interface RouterHost {
  readonly nodeId: string;
  readonly shards: number;
  serves(shard: number): boolean;
  request(req: ActorRequest): Promise<ActorResponse>;
}

/** One emitting turn's events for the users of one realm on one shard. */
interface Batch {
  realm: number;
  key: string;
  /** user id -> events in order. */
  users: Record<string, Obj[]>;
}

export function isRouterRef(ref: ActorRef): boolean {
  return ref.kind === "queue" && ref.key.startsWith(ROUTER_PREFIX);
}

export class EventRouter {
  private seq = 0;
  private readonly boot = Date.now().toString(36);
  private readonly outbox = new Map<number, Batch[]>();
  private readonly inflight = new Set<number>();
  readonly stats = { local: 0, remoteRequests: 0, failures: 0 };

  constructor(private readonly host: RouterHost) {}

  /** NodeRuntime.onEvents listener. */
  route = (ref: ActorRef, events: OutEvent[]): void => {
    const byShard = new Map<number, Record<string, Obj[]>>();
    for (const { event, userIds } of events) {
      for (const userId of new Set(userIds)) {
        const shard = shardOf(queueRef(ref.realm, userId), this.host.shards);
        let users = byShard.get(shard);
        if (!users) byShard.set(shard, (users = {}));
        (users[String(userId)] ??= []).push(event);
      }
    }
    for (const [shard, users] of byShard) {
      const batch: Batch = { realm: ref.realm, key: `${this.host.nodeId}.${this.boot}.${++this.seq}`, users };
      // A shard this node has just taken over may still have remote batches
      // in flight: queue behind them to keep the order.
      if (this.host.serves(shard) && !this.inflight.has(shard)) void this.deliverLocal(batch);
      else this.enqueueRemote(shard, batch);
    }
  };

  /** Answer a router request from another node: deliver to the local queue actors. */
  async receive(args: Obj): Promise<Value> {
    const batches = (Array.isArray(args.batches) ? args.batches : []) as unknown as Batch[];
    await Promise.all(batches.map((b) => this.deliverLocal(b)));
    return { ok: true };
  }

  /**
   * One `deliver` per user. The request reaches the mailbox synchronously
   * when this node serves the shard, so batches keep their order.
   */
  private deliverLocal(batch: Batch): Promise<void> {
    const jobs: Promise<void>[] = [];
    for (const [userId, events] of Object.entries(batch.users)) {
      const ref = queueRef(batch.realm, Number(userId));
      this.stats.local++;
      jobs.push(this.deliverUser(ref, batch.key, events));
    }
    return Promise.all(jobs).then(() => undefined);
  }

  private async deliverUser(ref: ActorRef, key: string, events: Obj[]): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const res = await this.host.request({
        ref,
        shard: shardOf(ref, this.host.shards),
        method: "deliver",
        args: { key, events },
        caller: null,
        deadline: Date.now() + ATTEMPT_MS,
      });
      if (res.ok) return;
      if (res.kind === "zulip") break;
    }
    this.stats.failures++;
    console.warn(`event delivery to ${ref.realm}/${ref.key} failed; events dropped`);
  }

  private enqueueRemote(shard: number, batch: Batch): void {
    let q = this.outbox.get(shard);
    if (!q) this.outbox.set(shard, (q = []));
    q.push(batch);
    if (!this.inflight.has(shard)) void this.flush(shard);
  }

  private async flush(shard: number): Promise<void> {
    this.inflight.add(shard);
    try {
      for (;;) {
        const batches = this.outbox.get(shard);
        if (!batches || batches.length === 0) break;
        this.outbox.delete(shard);
        await this.sendRemote(shard, batches);
      }
    } finally {
      this.inflight.delete(shard);
    }
  }

  private async sendRemote(shard: number, batches: Batch[]): Promise<void> {
    const ref: ActorRef = { kind: "queue", realm: 0, key: `${ROUTER_PREFIX}${shard}` };
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      this.stats.remoteRequests++;
      const res = await this.host.request({
        ref,
        shard,
        method: ROUTER_METHOD,
        args: { batches: batches as unknown as Value[] },
        caller: null,
        deadline: Date.now() + ATTEMPT_MS,
      });
      if (res.ok) return;
      if (res.kind === "zulip") break;
    }
    this.stats.failures++;
    console.warn(`event fan-out to shard ${shard} failed; ${batches.length} batches dropped`);
  }
}
