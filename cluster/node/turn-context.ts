// What a turn's handler reaches through its ActorContext: calls to other
// actors, ids, timers on the node's one wheel, its shard's records and its
// kind's side log.

import type { ActorContext, ActorRef, Behavior, Caller, Obj, Origin, Value } from "../../actors/types.ts";
import type { ArgsOf, MethodOf, Protocol, Ref, ReplyOf, UntypedRef } from "../../actors/protocol.ts";
import { shardOf } from "../addressing.ts";
import type { Activation, Catalog, Turn } from "../catalog.ts";
import { errorToResponse, replyValue, responseValue } from "../responses.ts";
import type { IndexRange, Store } from "../storage/contract.ts";
import type { TimerHandle, TimerWheel } from "../timer-wheel.ts";
import { inSpan, traceparentOf } from "../tracing.ts";
import type { ActorRequest, ActorResponse } from "../transport/contract.ts";
import { DurableReads } from "./durable-reads.ts";
import type { NodeHooks } from "./hooks.ts";
import type { ShardLeases } from "./leases.ts";

const NONE_PARKED: readonly string[] = [];

/** What the turns of a node need of it. */
export interface TurnHost {
  shards: number;
  /** Each kind's behavior (its Behavior.durableReads). */
  behaviors: Partial<Record<string, Behavior<unknown>>>;
  /** Deadline for actor-to-actor calls that have no caller deadline. */
  callTimeoutMs: number;
  store: Store;
  wheel: TimerWheel;
  catalog: Catalog;
  hooks: NodeHooks;
  leases: ShardLeases;
  /** Send from inside the cluster (NodeRuntime.request). */
  request(req: ActorRequest): Promise<ActorResponse>;
  /** The node's entry point (NodeRuntime.handle). */
  handle(req: ActorRequest): Promise<ActorResponse>;
  stopped(): boolean;
}

/** The node's side of its turns' contexts (one per node; TurnContext is one per turn). */
export class TurnServices {
  /** Where a turn reads its shard's records (ctx.getRecords, rangeIndex, indexSize). */
  readonly catalog: Catalog;
  /** Where a turn finds its kind's side log (ctx.sideLog, sideLogHead; KindHooks.sideLog). */
  readonly hooks: NodeHooks;

  /** Replies of Behavior.durableReads methods of other nodes' actors, kept while their journal stays. */
  readonly durableReads: DurableReads;

  constructor(private readonly node: TurnHost) {
    this.catalog = node.catalog;
    this.hooks = node.hooks;
    this.durableReads = new DurableReads(node.store);
  }

  /** The context an actor's handler sees for one turn (CatalogHooks.context). */
  context(act: Activation, turn: Turn): ActorContext {
    return new TurnContext(this, act, turn);
  }

  /** ctx.call of a turn. */
  call(
    act: Activation,
    turn: Turn,
    ref: ActorRef,
    method: string,
    args: Obj,
    caller: Caller | null | undefined,
  ): Promise<Value> {
    const req: ActorRequest = {
      ref,
      shard: shardOf(ref, this.node.shards),
      method,
      args,
      caller: caller ?? null,
      deadline: Math.min(turn.deadline, Date.now() + this.node.callTimeoutMs),
    };
    // The call continues the turn's trace (the actor never sees it).
    if (turn.span) req.traceparent = traceparentOf(turn.span);
    // A turn of a shard being handed off that calls an actor of the same
    // shard is served here: the lease is still ours and the hand-off waits
    // for this very turn (catalog.dropShard), so the transport would wait
    // for the next owner until the deadline.
    const st = this.node.leases.get(req.shard);
    if (st?.status === "releasing" && req.shard === act.shard && st.epoch === act.epoch) {
      return this.node.catalog
        .send(ref, req.shard, st.epoch, method, args, req.caller, req.deadline, req.traceparent)
        .then(replyValue, (err: unknown) => responseValue(errorToResponse(err)));
    }
    if (this.node.behaviors[ref.kind]?.durableReads?.includes(method) && !this.node.leases.serves(req.shard))
      return this.durableReads
        .request(req, this.catalog.idOf(ref), (r) => this.node.request(r))
        .then(responseValue);
    return this.node.request(req).then(responseValue);
  }

  /** ctx.nextId of a turn. */
  nextId(turn: Turn, counter: string): Promise<number> {
    return inSpan(turn.span, () => this.node.store.nextId(counter));
  }

  // Actor timers ride the node's one wheel. When one fires, the runtime
  // sends the method to the actor like any message (handle() checks the
  // lease, and re-activates a passivated actor); a shard that moved
  // meanwhile answers "moved" and the timer is dropped: the new owner's
  // activation re-arms its own timers when it runs. The wheel entry holds
  // the ref, method and args only, never the activation: a passivated
  // actor is garbage as soon as it is dropped.
  /** ctx.schedule of a turn. */
  schedule(act: Activation, key: string, delayMs: number, method: string, args: Obj): void {
    if (act.dead) return;
    const wheel = this.node.wheel;
    const timers = act.timers;
    // At most one pending timer per key: the earliest. A done pair is reused.
    let free = -1;
    if (timers !== null) {
      for (let i = 0; i < timers.length; i += 2) {
        const h = timers[i + 1] as TimerHandle;
        if (h.done) {
          if (free < 0) free = i;
        } else if (timers[i] === key) {
          if (wheel.dueIn(h) <= delayMs) return;
          wheel.cancel(h);
          free = i;
          break;
        }
      }
    }
    const h = wheel.schedule(delayMs, this.fireTimer, act.ref, method, args);
    if (timers === null) act.timers = [key, h];
    else if (free >= 0) {
      timers[free] = key;
      timers[free + 1] = h;
    } else timers.push(key, h);
  }

  /** A ctx.schedule timer is due: send its method to the actor (shared by every entry, no closure). */
  private readonly fireTimer = (ref: ActorRef, method: string, args: Obj): void => {
    if (this.node.stopped()) return;
    void this.node.handle({
      ref,
      shard: shardOf(ref, this.node.shards),
      method,
      args,
      caller: null,
      deadline: Date.now() + this.node.callTimeoutMs,
    });
  };
}

/**
 * The ActorContext of one turn: methods on a prototype, not closures made
 * per turn (a fan-out runs a thousand turns per message).
 */
class TurnContext implements ActorContext {
  constructor(
    private readonly node: TurnServices,
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
    return this.node.call(this.act, this.turn, ref, method, args, caller);
  }

  nextId(counter: string): Promise<number> {
    return this.node.nextId(this.turn, counter);
  }

  schedule(key: string, delayMs: number, method: string, args: Obj): void {
    this.node.schedule(this.act, key, delayMs, method, args);
  }

  parked(): Iterable<string> {
    return this.act.parked === null ? NONE_PARKED : this.act.parked.keys();
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
    return this.node.hooks.sideLogOf(this.act)?.facts(this.act, after, upTo) ?? Promise.resolve([]);
  }

  sideLogNow(after: number, upTo?: number): Obj[] | null {
    const source = this.node.hooks.sideLogOf(this.act);
    return source === undefined ? [] : source.factsNow(this.act, after, upTo);
  }

  sideLogHead(): number {
    return this.node.hooks.sideLogOf(this.act)?.head(this.act) ?? 0;
  }
}
