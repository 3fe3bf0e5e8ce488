// A node: hosts the actors of the shards it holds leases for.
//
// Single activation rests on leases: a node serves a shard only while it
// holds that shard's lease (renewed every `renewMs`, TTL `leaseTtlMs`), and
// every journal or snapshot write carries the lease epoch, which the store
// checks atomically. A node that cannot renew in time stops serving the shard
// by itself (self-fencing); one that was paused past its TTL finds its writes
// refused and answers "moved", so the caller retries at the new owner.
//
// This class takes the requests (handle, refuseExternal) and holds the
// registration seam; its other concerns are modules of node/: leases and
// shard ownership (leases.ts), what a turn reaches through its context,
// timers included (turn-context.ts), and what the domain's wiring and the
// workers register (hooks.ts). It names no actor kind: the domain's wiring
// (cluster/compose/domain.ts) registers what ties a kind to the node.

import type { ActorRef, Behavior, Caller, Kind, Obj, Value } from "../actors/types.ts";
import { errors, type ZulipError } from "../actors/errors.ts";
import {
  argsFit,
  type ArgsOf,
  type MethodOf,
  type Protocol,
  type Ref,
  type ReplyOf,
  type UntypedRef,
} from "../actors/protocol.ts";
import { MovedError } from "./runtime-errors.ts";
import { encodeFlatMap } from "../proto/codec.ts";
import { shardOf } from "./addressing.ts";
import { rootLogger, type Logger } from "./log.ts";
import { Catalog } from "./catalog.ts";
import { metrics } from "./metrics.ts";
import { errorToResponse, okResponse, responseValue } from "./responses.ts";
import type { Store } from "./storage/contract.ts";
import { TimerWheel } from "./timer-wheel.ts";
import type { ActorClient, ActorRequest, ActorResponse, Bus } from "./transport/contract.ts";
import {
  NodeHooks,
  type EventListener,
  type EventRoute,
  type HandoffHandler,
  type KindHooks,
  type NodeService,
} from "./node/hooks.ts";
import { ShardLeases } from "./node/leases.ts";
import { TurnServices } from "./node/turn-context.ts";

export type {
  EventListener,
  EventRoute,
  HandoffHandler,
  KindHooks,
  NodeService,
  SideLogSource,
} from "./node/hooks.ts";

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
  /** Readers of one activation running at once (CatalogOptions). */
  readersPerActivation?: number;
  /** Deadline for actor-to-actor calls that have no caller deadline. */
  callTimeoutMs?: number;
  /** Told when this node starts or stops serving a shard. */
  onShardChange?: (shard: number, serving: boolean) => void;
}

export class NodeRuntime {
  readonly nodeId: string;
  readonly shards: number;
  readonly wheel: TimerWheel;
  readonly catalog: Catalog;
  readonly store: Store;
  /** Lease counters (node/leases.ts). */
  readonly stats: ShardLeases["stats"];
  private readonly o: NodeOptions;
  private readonly log: Logger;
  private readonly callTimeoutMs: number;
  private readonly leases: ShardLeases;
  private readonly hooks = new NodeHooks();
  private readonly turns: TurnServices;
  private halted = false;

  constructor(o: NodeOptions) {
    this.o = o;
    this.nodeId = o.nodeId;
    this.shards = o.shards;
    this.store = o.store;
    // Lines name the node: the entry point's logger does already (node-main),
    // an embedded or test process's does not, and may hold several nodes.
    const base = o.log ?? rootLogger();
    this.log = base.bindings().node === o.nodeId ? base : base.child({ node: o.nodeId });
    this.callTimeoutMs = o.callTimeoutMs ?? 10_000;
    this.wheel = new TimerWheel();
    this.leases = new ShardLeases({
      nodeId: o.nodeId,
      store: o.store,
      log: this.log,
      leaseTtlMs: o.leaseTtlMs ?? 3000,
      renewMs: o.renewMs ?? 1000,
      acquireRetryMs: o.acquireRetryMs ?? 250,
      exclusiveStore: o.exclusiveStore === true,
      acquired: (shard) => {
        this.o.onShardChange?.(shard, true);
        for (const l of this.hooks.acquiredListeners) l(shard);
      },
      left: (shard) => {
        for (const l of this.hooks.leftListeners) l(shard);
        this.o.onShardChange?.(shard, false);
      },
      drop: (shard, graceful) => this.catalog.dropShard(shard, graceful),
    });
    this.stats = this.leases.stats;
    this.catalog = new Catalog({
      store: o.store,
      behaviors: o.behaviors,
      wheel: this.wheel,
      idleMs: o.idleMs,
      snapshotEvery: o.snapshotEvery,
      mailboxLimit: o.mailboxLimit,
      readersPerActivation: o.readersPerActivation,
      hooks: {
        emit: (ref, events, key) => this.hooks.emit(ref, events, key),
        handoff: (_ref, handoffs, key) => this.hooks.handoff(handoffs, key),
        notice: (subject, data) => {
          for (const l of this.hooks.noticeListeners) l(subject, data);
          this.o.bus.publish(`notice.${subject}`, encodeNotice(data));
          // The reply follows the notice: a gateway that cached the old
          // credentials has the notice before the caller can use the new ones.
          return this.o.bus.passedOn?.();
        },
        fenced: (shard) => {
          this.log.warn({ shard }, `write fenced (stale epoch) on shard ${shard}`);
          void this.leases.lose(shard);
        },
        settled: (act) => {
          const settled = this.hooks.kinds.get(act.ref.kind)?.settled;
          // Only the current activation of a shard served at its epoch speaks for the shard.
          if (settled === undefined || act.dead || this.shardEpoch(act.shard) !== act.epoch) return;
          settled(act);
        },
        beforeAppend: (act, facts) => this.hooks.kinds.get(act.ref.kind)?.beforeAppend?.(act, facts),
        sideFacts: (act, after) => this.hooks.sideLogOf(act)?.replay(act, after) ?? Promise.resolve([]),
        sideSaved: (act, position) => {
          const log = this.hooks.sideLogOf(act);
          if (log === undefined || act.dead || this.shardEpoch(act.shard) !== act.epoch) return;
          log.saved(act, position);
        },
        context: (act, turn) => this.turns.context(act, turn),
      },
    });
    this.turns = new TurnServices({
      shards: o.shards,
      behaviors: o.behaviors,
      callTimeoutMs: this.callTimeoutMs,
      store: o.store,
      wheel: this.wheel,
      catalog: this.catalog,
      hooks: this.hooks,
      leases: this.leases,
      request: (req) => this.request(req),
      handle: (req) => this.handle(req),
      stopped: () => this.halted,
    });
  }

  start(): void {
    this.wheel.start();
    metrics.attach(this);
    this.leases.start();
  }

  // ---- The registration seam (node/hooks.ts) ----------------------------------------

  /** Observe the events actors emit (tests, metrics); their route gets them anyway. */
  onEvents(l: EventListener): void {
    this.hooks.listeners.push(l);
  }

  /**
   * Observe the notices of turns run on this node, before they go on the bus
   * (a worker that acts on a turn's notices takes them here: the node that
   * decided them acts on them, with no subscription race).
   */
  onNotice(l: (subject: string, data: Obj) => void): void {
    this.hooks.noticeListeners.push(l);
  }

  /**
   * Handle the durable hand-offs (Decision.handoffs) of `subject` that turns
   * run on this node decide; resolving true acknowledges them. Until then
   * the emitter's outbox keeps them and gives them again at its next
   * activation, so the handler must be idempotent.
   */
  onHandoff(subject: string, handler: HandoffHandler): void {
    this.hooks.handoffHandlers.set(subject, handler);
  }

  /** Told each time this node starts serving a shard (after the lease is taken). */
  onShardAcquired(l: (shard: number) => void): void {
    this.hooks.acquiredListeners.push(l);
  }

  /** Told each time this node stops serving a shard (lost, or handed off), before its activations go. */
  onShardLeft(l: (shard: number) => void): void {
    this.hooks.leftListeners.push(l);
  }

  /** Where the events actors emit go (the domain's event router); until set, they are dropped. */
  routeEvents(route: EventRoute): void {
    this.hooks.eventRoute = route;
  }

  /** The node's part in the actors of `kind` (KindHooks); one set per kind. */
  onKind(kind: Kind, hooks: KindHooks): void {
    this.hooks.kinds.set(kind, hooks);
  }

  /** Answer the requests to the refs `service` owns (NodeService). */
  addService(service: NodeService): void {
    this.hooks.services.push(service);
  }

  // ---- Shards (node/leases.ts) -------------------------------------------------------

  /** True once the node stopped. */
  get stopped(): boolean {
    return this.halted;
  }

  /** Resolves once every wanted shard is served (or the timeout passes). */
  ready(timeoutMs = 30_000): Promise<boolean> {
    return this.leases.ready(timeoutMs);
  }

  /** Whether this node serves `shard` now. */
  serves(shard: number): boolean {
    return this.leases.serves(shard);
  }

  /** Shards this node currently serves. */
  servingShards(): number[] {
    return this.leases.servingShards();
  }

  shardEpoch(shard: number): number | null {
    return this.leases.shardEpoch(shard);
  }

  /** Placement changed: take the shards in `shards`, let go of the others. */
  setDesired(shards: Iterable<number>): void {
    this.leases.setDesired(shards);
  }

  // ---- Requests --------------------------------------------------------------------

  /** Entry point for every transport: one request to one actor. */
  async handle(req: ActorRequest): Promise<ActorResponse> {
    // Held, and renewed in time (self-fencing).
    const st = this.leases.admit(req.shard);
    if (st === null) return errorToResponse(new MovedError(req.shard));
    const service = this.hooks.serviceOf(req.ref);
    if (req.origin === "external") {
      const refused = refuseExternal(req, this.o.behaviors, this.shards, service !== undefined);
      if (refused !== null) return errorToResponse(refused);
    }
    if (service !== undefined) {
      // E.g. another node's events for the recipients on this shard (the event router).
      try {
        return { ok: true, value: await service.receive(req) };
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
      return okResponse(value);
    } catch (err) {
      return errorToResponse(err);
    }
  }

  /**
   * An internal request to an actor of a shard served here, decided at once
   * when its actor is active and idle and its kind decides the method
   * synchronously (Catalog.sendNow): the reply, or undefined (then
   * `request` it).
   */
  requestNow(req: ActorRequest): { reply: Value } | undefined {
    const st = this.leases.admit(req.shard);
    if (st === null || this.hooks.serviceOf(req.ref) !== undefined) return undefined;
    return this.catalog.sendNow(req.ref, st.epoch, req.method, req.args, req.deadline);
  }

  /** Send from inside the cluster (actors, bootstrap, CLI): local when we hold the shard. */
  async request(req: ActorRequest): Promise<ActorResponse> {
    if (this.leases.serves(req.shard)) {
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

  /** Call an actor as `caller` (a worker acting on someone's behalf), returning its reply value, raising its error. */
  callAs<P extends Protocol, M extends MethodOf<P>>(
    ref: Ref<P>,
    method: M,
    args: ArgsOf<P, M>,
    caller: Caller,
  ): Promise<ReplyOf<P, M>>;
  /** Kinds without a protocol yet (actors/protocol.ts): goes when the last kind is converted. */
  callAs(ref: UntypedRef, method: string, args: Obj, caller: Caller): Promise<Value>;
  async callAs(ref: ActorRef, method: string, args: Obj, caller: Caller): Promise<Value> {
    return responseValue(
      await this.request({
        ref,
        shard: shardOf(ref, this.shards),
        method,
        args,
        caller,
        deadline: Date.now() + this.callTimeoutMs,
      }),
    );
  }

  /** Leave: release every shard (graceful) or just stop (for tests of crashes). */
  async stop(graceful = true): Promise<void> {
    await this.leases.stop(graceful);
    this.halted = true;
    metrics.detach(this);
    this.wheel.stop();
  }
}

/**
 * Why a request from outside the cluster may not run, or null. It may call
 * only what the behaviour exposes (Behavior.external), without a caller only
 * the anonymous methods, with a caller only actors of the caller's realm; it
 * must name the actor's own shard (another would host a second activation
 * of the actor there), and never a node service (`internal`: the event
 * router); and its args must fit the method's declared protocol, when the
 * kind has one.
 */
function refuseExternal(
  req: ActorRequest,
  behaviors: NodeOptions["behaviors"],
  shards: number,
  internal: boolean,
): ZulipError | null {
  const external = Object.hasOwn(behaviors, req.ref.kind) ? behaviors[req.ref.kind]?.external : undefined;
  const exposure =
    external !== undefined && Object.hasOwn(external, req.method) ? external[req.method] : undefined;
  if (exposure === undefined || internal || req.shard !== shardOf(req.ref, shards))
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
  return encodeFlatMap(data);
}
