// A node: hosts the actors of the shards it holds leases for.
//
// Single activation rests on leases: a node serves a shard only while it
// holds that shard's lease (renewed every `renewMs`, TTL `leaseTtlMs`), and
// every journal or snapshot write carries the lease epoch, which the store
// checks atomically. A node that cannot renew in time stops serving the shard
// by itself (self-fencing); one that was paused past its TTL finds its writes
// refused and answers "moved", so the caller retries at the new owner.

import type {
  ActorContext,
  ActorRef,
  Behavior,
  Caller,
  Obj,
  Origin,
  OutEvent,
  Value,
} from "../actors/types.ts";
import { errors, type ZulipError } from "../actors/errors.ts";
import {
  argsFit,
  typedCall,
  typedCallAs,
  type ArgsOf,
  type MethodOf,
  type Protocol,
  type Ref,
  type ReplyOf,
  type UntypedRef,
} from "../actors/protocol.ts";
import { MovedError } from "./runtime-errors.ts";
import { deliverMessages, MESSAGE_DELIVERY } from "../actors/channel/delivery.ts";
import { ACCESS_CHANGE, emitAccessChangeEvents, relayAccessEvents } from "../actors/channel/user-access.ts";
import { ACCESS_RELAY } from "../actors/realm/user-access.ts";
import { attachScheduledDelivery } from "../actors/user/scheduled-delivery.ts";
import { attachRetention } from "../actors/channel/retention.ts";
import { PUSH_NOTIFY } from "../actors/channel/push-candidates.ts";
import { pb, toPbMap } from "../proto/codec.ts";
import { shardOf } from "./addressing.ts";
import { rootLogger, type Logger } from "./log.ts";
import { Catalog, type Activation, type Turn } from "./catalog.ts";
import { EventRouter, isRouterRef } from "./event-router.ts";
import { metrics } from "./metrics.ts";
import { errorToResponse, responseValue } from "./responses.ts";
import type { IndexRange, Store } from "./storage/contract.ts";
import { TimerWheel, type TimerHandle } from "./timer-wheel.ts";
import { inSpan, traceparentOf } from "./tracing.ts";
import type { ActorClient, ActorRequest, ActorResponse, Bus } from "./transport/contract.ts";

export interface NodeOptions {
  nodeId: string;
  shards: number;
  store: Store;
  behaviors: Partial<Record<string, Behavior<unknown>>>;
  /** Reaches actors whose shard another node holds. */
  outbound: ActorClient;
  bus: Bus;
  leaseTtlMs?: number;
  renewMs?: number;
  /**
   * The store is this process's alone (embedded mode: LMDB, server.pid), so
   * no other node can take a shard: a renewal that comes late (an event-loop
   * stall past the TTL) must not fence the node out. Pair it with a store
   * whose leases do not lapse either (createLmdbStore's `exclusive`).
   * Cluster nodes leave it off: there a late renewal may mean another node
   * holds the shard now.
   */
  exclusiveStore?: boolean;
  /** The process's logger (cluster/log.ts); the node logs through a child naming it. */
  log?: Logger;
  /** How often to retry acquiring wanted shards held by someone else. */
  acquireRetryMs?: number;
  idleMs?: number;
  snapshotEvery?: number;
  mailboxLimit?: number;
  /** Deadline for actor-to-actor calls that have no caller deadline. */
  callTimeoutMs?: number;
  /** Told when this node starts or stops serving a shard. */
  onShardChange?: (shard: number, serving: boolean) => void;
}

type ShardStatus = "acquiring" | "active" | "releasing";

interface ShardState {
  status: ShardStatus;
  epoch: number;
  /** When the lease was last taken or renewed (ms, local clock). */
  renewedAt: number;
  selfFenced?: boolean;
}

export type EventListener = (ref: ActorRef, events: OutEvent[]) => void;
/**
 * A Decision.handoffs handler: the data of every hand-off of its subject in
 * one journaled batch, in order; `key` names the outbox entry (null when
 * not journaled).
 */
export type HandoffHandler = (data: Obj[], key: string | null) => Promise<boolean>;

export class NodeRuntime {
  readonly nodeId: string;
  readonly shards: number;
  readonly wheel: TimerWheel;
  readonly catalog: Catalog;
  /** Routes every emitted event to its recipients' queue actors (event-router.ts). */
  readonly router: EventRouter;
  private readonly o: NodeOptions;
  private readonly leaseTtlMs: number;
  private readonly renewMs: number;
  private readonly exclusiveStore: boolean;
  private readonly log: Logger;
  private readonly acquireRetryMs: number;
  private readonly callTimeoutMs: number;
  private readonly state = new Map<number, ShardState>();
  private desired = new Set<number>();
  private readonly listeners: EventListener[] = [];
  private readonly noticeListeners: ((subject: string, data: Obj) => void)[] = [];
  private readonly handoffHandlers = new Map<string, HandoffHandler>();
  private readonly acquiredListeners: ((shard: number) => void)[] = [];
  private renewTimer: NodeJS.Timeout | null = null;
  private acquireTimer: NodeJS.Timeout | null = null;
  private acquiring = false;
  private stopped = false;
  readonly stats = { leaseRenewals: 0, leaseLosses: 0, shardAcquisitions: 0, shardReleases: 0 };

  constructor(o: NodeOptions) {
    this.o = o;
    this.nodeId = o.nodeId;
    this.shards = o.shards;
    this.leaseTtlMs = o.leaseTtlMs ?? 3000;
    this.renewMs = o.renewMs ?? 1000;
    this.exclusiveStore = o.exclusiveStore === true;
    // Lines name the node: the entry point's logger does already (node-main),
    // an embedded or test process's does not, and may hold several nodes.
    const base = o.log ?? rootLogger();
    this.log = base.bindings().node === o.nodeId ? base : base.child({ node: o.nodeId });
    this.acquireRetryMs = o.acquireRetryMs ?? 250;
    this.callTimeoutMs = o.callTimeoutMs ?? 10_000;
    this.wheel = new TimerWheel();
    this.catalog = new Catalog({
      store: o.store,
      behaviors: o.behaviors,
      wheel: this.wheel,
      idleMs: o.idleMs,
      snapshotEvery: o.snapshotEvery,
      mailboxLimit: o.mailboxLimit,
      hooks: {
        emit: (ref, events, key) => {
          for (const l of this.listeners) l(ref, events);
          return this.router.route(ref, events, key);
        },
        handoff: async (_ref, handoffs, key) => {
          // Each subject's handler gets the batch's hand-offs of it at once;
          // acknowledged once every handler acknowledged. A subject nobody
          // handles stays in the outbox (given again at the emitter's next
          // activation).
          const bySubject = new Map<string, Obj[]>();
          for (const h of handoffs) {
            const list = bySubject.get(h.subject);
            if (list) list.push(h.data);
            else bySubject.set(h.subject, [h.data]);
          }
          const oks = await Promise.all(
            [...bySubject].map(([subject, data]) => {
              const handler = this.handoffHandlers.get(subject);
              return handler ? handler(data, key).catch(() => false) : false;
            }),
          );
          return oks.every(Boolean);
        },
        notice: (subject, data) => {
          for (const l of this.noticeListeners) l(subject, data);
          this.o.bus.publish(`notice.${subject}`, encodeNotice(data));
        },
        fenced: (shard) => {
          this.log.warn({ shard }, `write fenced (stale epoch) on shard ${shard}`);
          void this.loseShard(shard);
        },
        settled: (act) => {
          // Only the current activation of a shard served at its epoch speaks for the shard.
          if (act.ref.kind !== "queue" || act.dead || this.shardEpoch(act.shard) !== act.epoch) return;
          const queues = (act.state as { queues?: unknown[] } | undefined)?.queues;
          this.router.noteQueues(act.ref, act.shard, queues !== undefined && queues.length > 0);
        },
        beforeAppend: (act, facts) =>
          act.ref.kind === "queue" ? this.router.beforeQueueAppend(act.ref, act.shard, facts) : undefined,
        // The queue kind's deliveries live in its shard's event log (cluster/event-log.ts).
        sideFacts: (act, after) =>
          act.ref.kind === "queue"
            ? this.router.log.replay(act.shard, act.ref.realm, Number(act.ref.key), after)
            : Promise.resolve([]),
        sideSaved: (act, position) => {
          if (act.ref.kind !== "queue" || act.dead || this.shardEpoch(act.shard) !== act.epoch) return;
          this.router.log.saved(act.shard, act.ref.realm, Number(act.ref.key), position);
        },
        context: (act, turn) => this.context(act, turn),
      },
    });
    // Sent messages reach their recipients' flags, one call per recipient
    // for a whole batch of sends (actors/channel/delivery.ts).
    const call = typedCall((ref, m, a) => this.call(ref, m, a));
    this.onHandoff(MESSAGE_DELIVERY, (data) => deliverMessages(data, call));
    // Events about a user for the guests who may access them (restricted user access).
    this.onHandoff(ACCESS_RELAY, (data) => relayAccessEvents(data, call));
    // A guest's gained and lost channel peers, less its DM partners (restricted user access).
    this.onHandoff(ACCESS_CHANGE, (data) => emitAccessChangeEvents(data, call));
    // Push notifications go out through the push worker (cluster/push-worker.ts), which
    // replaces this; a node run without one drops them rather than keep them.
    this.onHandoff(PUSH_NOTIFY, () => Promise.resolve(true));
    // Scheduled messages: their delivery attempts and the sweep after a takeover.
    attachScheduledDelivery({
      call,
      callAs: typedCallAs(async (ref, method, args, caller) =>
        responseValue(
          await this.request({
            ref,
            shard: shardOf(ref, this.shards),
            method,
            args,
            caller,
            deadline: Date.now() + this.callTimeoutMs,
          }),
        ),
      ),
      onHandoff: (subject, handler) => this.onHandoff(subject, handler),
      onShardAcquired: (l) => this.onShardAcquired(l),
      shardOf: (ref) => shardOf(ref, this.shards),
    });
    // Message retention: sweeps of the realms this node serves (actors/channel/retention.ts).
    attachRetention({
      call: typedCall((ref, m, a) => this.call(ref, m, a)),
      onShardAcquired: (l) => this.onShardAcquired(l),
      shardOf: (ref) => shardOf(ref, this.shards),
      servingShards: () => this.servingShards(),
      stopped: () => this.stopped,
    });
    this.router = new EventRouter({
      nodeId: this.nodeId,
      shards: this.shards,
      serves: (shard) => this.state.get(shard)?.status === "active",
      request: (req) => this.request(req),
      store: o.store,
      epoch: (shard) => this.shardEpoch(shard),
    });
    this.onShardAcquired((shard) => this.router.acquiredShard(shard));
  }

  start(): void {
    this.wheel.start();
    metrics.attach(this);
    this.renewTimer = setInterval(() => void this.renewAll(), this.renewMs);
    this.acquireTimer = setInterval(() => void this.acquireWanted(), this.acquireRetryMs);
  }

  /** Observe the events actors emit (tests, metrics); the event router gets them anyway. */
  onEvents(l: EventListener): void {
    this.listeners.push(l);
  }

  /**
   * Observe the notices of turns run on this node, before they go on the bus
   * (the outgoing-webhook worker takes its triggers here: the node that
   * decided them acts on them, with no subscription race).
   */
  onNotice(l: (subject: string, data: Obj) => void): void {
    this.noticeListeners.push(l);
  }

  /**
   * Handle the durable hand-offs (Decision.handoffs) of `subject` that turns
   * run on this node decide; resolving true acknowledges them. Until then
   * the emitter's outbox keeps them and gives them again at its next
   * activation, so the handler must be idempotent.
   */
  onHandoff(subject: string, handler: HandoffHandler): void {
    this.handoffHandlers.set(subject, handler);
  }

  /** Told each time this node starts serving a shard (after the lease is taken). */
  onShardAcquired(l: (shard: number) => void): void {
    this.acquiredListeners.push(l);
  }

  /** Resolves once every wanted shard is served (or the timeout passes). */
  async ready(timeoutMs = 30_000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if ([...this.desired].every((s) => this.state.get(s)?.status === "active")) return true;
      await new Promise((r) => setTimeout(r, 20));
    }
    return false;
  }

  /** Shards this node currently serves. */
  servingShards(): number[] {
    return [...this.state.entries()].filter(([, s]) => s.status === "active").map(([n]) => n);
  }

  shardEpoch(shard: number): number | null {
    const s = this.state.get(shard);
    return s && s.status === "active" ? s.epoch : null;
  }

  /** Placement changed: take the shards in `shards`, let go of the others. */
  setDesired(shards: Iterable<number>): void {
    this.desired = new Set(shards);
    for (const [shard, st] of this.state) {
      if (!this.desired.has(shard) && st.status === "active") void this.releaseShard(shard);
    }
    void this.acquireWanted();
  }

  /** Entry point for every transport: one request to one actor. */
  async handle(req: ActorRequest): Promise<ActorResponse> {
    const st = this.state.get(req.shard);
    if (!st || st.status !== "active") return errorToResponse(new MovedError(req.shard));
    if (!this.exclusiveStore && Date.now() - st.renewedAt > this.leaseTtlMs) {
      // Self-fencing: our lease may have expired (paused process, store
      // unreachable). Refuse rather than risk a second writer.
      if (!st.selfFenced)
        this.log.warn({ shard: req.shard }, `lost lease of shard ${req.shard} (not renewed in time)`);
      st.selfFenced = true;
      return errorToResponse(new MovedError(req.shard));
    }
    if (req.origin === "external") {
      const refused = refuseExternal(req, this.o.behaviors, this.shards);
      if (refused !== null) return errorToResponse(refused);
    }
    if (isRouterRef(req.ref)) {
      // Another node's events for the users of this shard.
      try {
        return { ok: true, value: await this.router.receive(req.args) };
      } catch (err) {
        return errorToResponse(err);
      }
    }
    try {
      const value = await this.catalog.send(
        req.ref,
        req.shard,
        st.epoch,
        req.method,
        req.args,
        req.caller,
        req.deadline,
        req.traceparent,
        req.origin,
      );
      return { ok: true, value };
    } catch (err) {
      return errorToResponse(err);
    }
  }

  /** Send from inside the cluster (actors, bootstrap, CLI): local when we hold the shard. */
  async request(req: ActorRequest): Promise<ActorResponse> {
    const st = this.state.get(req.shard);
    if (st && st.status === "active") {
      const res = await this.handle(req);
      if (res.ok || res.kind !== "moved") return res;
    }
    return this.o.outbound.request(req);
  }

  /** Call an actor and return its reply value, raising its error. */
  call<P extends Protocol, M extends MethodOf<P>>(
    ref: Ref<P>,
    method: M,
    args: ArgsOf<P, M>,
    timeoutMs?: number,
  ): Promise<ReplyOf<P, M>>;
  /** Kinds without a protocol yet (actors/protocol.ts): goes when the last kind is converted. */
  call(ref: UntypedRef, method: string, args: Obj, timeoutMs?: number): Promise<Value>;
  async call(ref: ActorRef, method: string, args: Obj, timeoutMs = this.callTimeoutMs): Promise<Value> {
    const res = await this.request({
      ref,
      shard: shardOf(ref, this.shards),
      method,
      args,
      caller: null,
      deadline: Date.now() + timeoutMs,
    });
    return responseValue(res);
  }

  private context(act: Activation, turn: Turn): ActorContext {
    return new TurnContext(this, act, turn);
  }

  /** ctx.call of a turn. */
  turnCall(
    act: Activation,
    turn: Turn,
    ref: ActorRef,
    method: string,
    args: Obj,
    caller: Caller | null | undefined,
  ): Promise<Value> {
    const req: ActorRequest = {
      ref,
      shard: shardOf(ref, this.shards),
      method,
      args,
      caller: caller ?? null,
      deadline: Math.min(turn.deadline, Date.now() + this.callTimeoutMs),
    };
    // The call continues the turn's trace (the actor never sees it).
    if (turn.span) req.traceparent = traceparentOf(turn.span);
    // A turn of a shard being handed off that calls an actor of the same
    // shard is served here: the lease is still ours and the hand-off waits
    // for this very turn (catalog.dropShard), so the transport would wait
    // for the next owner until the deadline.
    const st = this.state.get(req.shard);
    if (st?.status === "releasing" && req.shard === act.shard && st.epoch === act.epoch) {
      return this.catalog
        .send(ref, req.shard, st.epoch, method, args, req.caller, req.deadline, req.traceparent)
        .catch((err: unknown) => responseValue(errorToResponse(err)));
    }
    return this.request(req).then(responseValue);
  }

  /** ctx.nextId of a turn. */
  turnNextId(turn: Turn, counter: string): Promise<number> {
    return inSpan(turn.span, () => this.o.store.nextId(counter));
  }

  // Actor timers ride the node's one wheel. When one fires, the runtime
  // sends the method to the actor like any message (handle() checks the
  // lease, and re-activates a passivated actor); a shard that moved
  // meanwhile answers "moved" and the timer is dropped: the new owner's
  // activation re-arms its own timers when it runs. The wheel entry holds
  // the ref, method and args only, never the activation: a passivated
  // actor is garbage as soon as it is dropped.
  /** ctx.schedule of a turn. */
  turnSchedule(act: Activation, key: string, delayMs: number, method: string, args: Obj): void {
    if (act.dead) return;
    const timers = act.timers;
    // At most one pending timer per key: the earliest. A done pair is reused.
    let free = -1;
    if (timers !== null) {
      for (let i = 0; i < timers.length; i += 2) {
        const h = timers[i + 1] as TimerHandle;
        if (h.done) {
          if (free < 0) free = i;
        } else if (timers[i] === key) {
          if (this.wheel.dueIn(h) <= delayMs) return;
          this.wheel.cancel(h);
          free = i;
          break;
        }
      }
    }
    const h = this.wheel.schedule(delayMs, this.fireTimer, act.ref, method, args);
    if (timers === null) act.timers = [key, h];
    else if (free >= 0) {
      timers[free] = key;
      timers[free + 1] = h;
    } else timers.push(key, h);
  }

  /** A ctx.schedule timer is due: send its method to the actor (shared by every entry, no closure). */
  private readonly fireTimer = (ref: ActorRef, method: string, args: Obj): void => {
    if (this.stopped) return;
    void this.handle({
      ref,
      shard: shardOf(ref, this.shards),
      method,
      args,
      caller: null,
      deadline: Date.now() + this.callTimeoutMs,
    });
  };

  private async acquireWanted(): Promise<void> {
    if (this.acquiring || this.stopped) return;
    this.acquiring = true;
    try {
      const wanted = [...this.desired].filter((s) => !this.state.has(s));
      await Promise.all(
        wanted.map(async (shard) => {
          this.state.set(shard, { status: "acquiring", epoch: 0, renewedAt: 0 });
          let epoch: number | null = null;
          try {
            epoch = await this.o.store.acquireLease(shard, this.nodeId, this.leaseTtlMs);
          } catch {
            epoch = null;
          }
          const now = Date.now();
          if (epoch === null || !this.desired.has(shard) || this.stopped) {
            this.state.delete(shard);
            if (epoch !== null) await this.o.store.releaseLease(shard, this.nodeId, epoch).catch(() => {});
            return;
          }
          this.router.forgetShard(shard);
          this.state.set(shard, { status: "active", epoch, renewedAt: now });
          this.stats.shardAcquisitions++;
          metrics.shardMove("acquired");
          this.o.onShardChange?.(shard, true);
          for (const l of this.acquiredListeners) l(shard);
        }),
      );
    } finally {
      this.acquiring = false;
    }
  }

  private async renewAll(): Promise<void> {
    const active = [...this.state.entries()].filter(([, s]) => s.status === "active");
    await Promise.all(
      active.map(async ([shard, st]) => {
        const startedAt = Date.now();
        let ok: boolean;
        try {
          ok = await this.o.store.renewLease(shard, this.nodeId, st.epoch, this.leaseTtlMs);
        } catch {
          metrics.leaseRenewal("failed");
          return; // store unreachable: keep trying; handle() self-fences after the TTL
        }
        if (this.state.get(shard) !== st) return;
        if (ok) {
          // Count the TTL from when we asked, not when Redis answered.
          st.renewedAt = startedAt;
          st.selfFenced = false;
          this.stats.leaseRenewals++;
          metrics.leaseRenewal("ok");
        } else {
          this.log.warn({ shard, epoch: st.epoch }, `lost lease of shard ${shard} (epoch ${st.epoch})`);
          metrics.leaseRenewal("lost");
          await this.loseShard(shard);
        }
      }),
    );
  }

  /** The lease is gone (expired and taken, or fenced): stop at once. */
  private async loseShard(shard: number): Promise<void> {
    const st = this.state.get(shard);
    if (!st || st.status !== "active") return;
    this.state.delete(shard);
    this.router.forgetShard(shard);
    this.stats.leaseLosses++;
    metrics.shardMove("lost");
    this.o.onShardChange?.(shard, false);
    await this.catalog.dropShard(shard, false);
  }

  /** Graceful hand-off: no new turns, finish running ones, snapshot, release. */
  private async releaseShard(shard: number): Promise<void> {
    const st = this.state.get(shard);
    if (!st || st.status !== "active") return;
    st.status = "releasing";
    this.router.forgetShard(shard);
    this.o.onShardChange?.(shard, false);
    await this.catalog.dropShard(shard, true);
    await this.o.store.releaseLease(shard, this.nodeId, st.epoch).catch(() => {});
    if (this.state.get(shard) === st) this.state.delete(shard);
    this.stats.shardReleases++;
    metrics.shardMove("released");
  }

  /** Leave: release every shard (graceful) or just stop (for tests of crashes). */
  async stop(graceful = true): Promise<void> {
    if (graceful) {
      this.desired = new Set();
      await Promise.all([...this.state.keys()].map((s) => this.releaseShard(s)));
    }
    this.stopped = true;
    metrics.detach(this);
    if (this.renewTimer) clearInterval(this.renewTimer);
    if (this.acquireTimer) clearInterval(this.acquireTimer);
    this.wheel.stop();
  }
}

/**
 * Why a request from outside the cluster may not run, or null. It may call
 * only what the behaviour exposes (Behavior.external), without a caller only
 * the anonymous methods, with a caller only actors of the caller's realm; it
 * must name the actor's own shard (another would host a second activation
 * of the actor there), and never the event router; and its args must fit
 * the method's declared protocol, when the kind has one.
 */
function refuseExternal(
  req: ActorRequest,
  behaviors: NodeOptions["behaviors"],
  shards: number,
): ZulipError | null {
  const external = Object.hasOwn(behaviors, req.ref.kind) ? behaviors[req.ref.kind]?.external : undefined;
  const exposure =
    external !== undefined && Object.hasOwn(external, req.method) ? external[req.method] : undefined;
  if (exposure === undefined || isRouterRef(req.ref) || req.shard !== shardOf(req.ref, shards))
    return errors.accessDenied();
  if (req.caller === null) {
    if (exposure !== "anonymous") return errors.notLoggedIn();
  } else if (req.caller.realmId !== req.ref.realm) return errors.accessDenied();
  // Checked here, before the actor is activated, so handlers may trust
  // their args' declared types (actor-to-actor calls are typed at compile time).
  const protocol = behaviors[req.ref.kind]?.protocol;
  if (protocol !== undefined && !argsFit(protocol, req.method, req.args))
    return errors.invalidActorArgs(req.ref.kind, req.method);
  return null;
}

function encodeNotice(data: Obj): Uint8Array {
  return pb.MapValue.encode(toPbMap(data)).finish();
}

/**
 * The ActorContext of one turn: methods on a prototype, not closures made
 * per turn (a fan-out runs a thousand turns per message).
 */
class TurnContext implements ActorContext {
  constructor(
    private readonly node: NodeRuntime,
    private readonly act: Activation,
    private readonly turn: Turn,
  ) {}

  get self(): ActorRef {
    return this.act.ref;
  }

  get origin(): Origin {
    return this.turn.origin ?? "internal";
  }

  now(): number {
    return Date.now();
  }

  call<P extends Protocol, M extends MethodOf<P>>(
    ref: Ref<P>,
    method: M,
    args: ArgsOf<P, M>,
    caller?: Caller | null,
  ): Promise<ReplyOf<P, M>>;
  call(ref: UntypedRef, method: string, args: Obj, caller?: Caller | null): Promise<Value>;
  call(ref: ActorRef, method: string, args: Obj, caller?: Caller | null): Promise<Value> {
    return this.node.turnCall(this.act, this.turn, ref, method, args, caller);
  }

  nextId(counter: string): Promise<number> {
    return this.node.turnNextId(this.turn, counter);
  }

  schedule(key: string, delayMs: number, method: string, args: Obj): void {
    this.node.turnSchedule(this.act, key, delayMs, method, args);
  }

  parked(): string[] {
    return this.act.parked === null ? [] : [...this.act.parked.keys()];
  }

  getRecords(keys: string[]): Promise<Array<Uint8Array | null>> {
    return inSpan(this.turn.span, () => this.node.catalog.getRecords(this.act, keys));
  }

  rangeIndex(index: string, range: IndexRange): Promise<number[]> {
    return inSpan(this.turn.span, () => this.node.catalog.rangeIndex(this.act, index, range));
  }

  indexSize(index: string): Promise<number> {
    return inSpan(this.turn.span, () => this.node.catalog.indexSize(this.act, index));
  }

  sideLog(after: number, upTo?: number): Promise<Obj[]> {
    const { ref, shard } = this.act;
    if (ref.kind !== "queue") return Promise.resolve([]);
    return this.node.router.log.facts(shard, ref.realm, Number(ref.key), after, upTo);
  }

  sideLogHead(): number {
    const { ref, shard } = this.act;
    return ref.kind === "queue" ? this.node.router.log.head(shard, ref.realm, Number(ref.key)) : 0;
  }
}
