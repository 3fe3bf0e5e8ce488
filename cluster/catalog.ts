// The catalog: the activations a node hosts and how a message becomes a turn.
//
// Virtual actors: an actor is activated on its first message (latest
// snapshot + journal replay), takes one message at a time, persists the facts
// of a turn (awaited, fenced by its shard's lease epoch) before it replies,
// and is passivated after an idle period (a snapshot when dirty, then
// dropped). Nothing creates actors explicitly.
//
// This class is the catalog's face; each concern is a module of catalog/,
// over the state they share (catalog/core.ts: the Activation type and
// CatalogCore): activation and load (activation.ts), the mailbox and its
// turns (mailbox.ts), readers (readers.ts), group commit (group-commit.ts),
// the outbox and hand-offs (outbox.ts), snapshots (snapshots.ts), and
// passivation and leaving a shard (passivation.ts).

import type { ActorRef, Caller, Obj, Origin, TurnReply, Value } from "../actors/types.ts";
import { errors } from "../actors/errors.ts";
import { UnavailableError } from "./runtime-errors.ts";
import type { IndexRange } from "./storage/contract.ts";
import { actorId } from "./addressing.ts";
import { metrics } from "./metrics.ts";
import { activate } from "./catalog/activation.ts";
import { CatalogCore, type Activation, type CatalogOptions, type Turn } from "./catalog/core.ts";
import { drain, inlineTurn } from "./catalog/mailbox.ts";
import { dropShard, releaseParked } from "./catalog/passivation.ts";
import { read } from "./catalog/readers.ts";

export {
  CLUSTER_READERS_PER_ACTIVATION,
  READERS_PER_ACTIVATION,
  UNSAVED_MS,
  type Activation,
  type CatalogHooks,
  type CatalogOptions,
  type Handoff,
  type SideFact,
  type Turn,
} from "./catalog/core.ts";

/** The settle callbacks of an inline turn (its reply is returned). */
const ignore = (): void => {};

export class Catalog {
  private readonly c: CatalogCore;
  /** Counters for inspection and metrics. */
  readonly stats: CatalogCore["stats"];

  constructor(o: CatalogOptions) {
    this.c = new CatalogCore(o);
    this.stats = this.c.stats;
  }

  get size(): number {
    return this.c.acts.size;
  }

  /** Activation counts per shard, and the deepest mailboxes. */
  inspect(): { byShard: Map<number, number>; deepest: { id: string; depth: number }[] } {
    const byShard = new Map<number, number>();
    const depths: { id: string; depth: number }[] = [];
    for (const a of this.c.acts.values()) {
      byShard.set(a.shard, (byShard.get(a.shard) ?? 0) + 1);
      if (a.mailbox.length) depths.push({ id: a.id, depth: a.mailbox.length });
    }
    depths.sort((x, y) => y.depth - x.depth);
    return { byShard, deepest: depths.slice(0, 10) };
  }

  has(ref: ActorRef): boolean {
    return this.c.acts.has(this.idOf(ref));
  }

  /** The storage id of an actor: its kind's, or the kind it is stored as (Behavior.storedAs). */
  idOf(ref: ActorRef): string {
    const storedAs = this.c.o.behaviors[ref.kind]?.storedAs;
    return actorId(storedAs === undefined ? ref : { ...ref, kind: storedAs });
  }

  /** Every activation in memory (metrics and the admin API read them; never mutate). */
  activations(): IterableIterator<Activation> {
    return this.c.acts.values();
  }

  /** Queue a message for an actor of a shard this node holds at `epoch`. */
  send(
    ref: ActorRef,
    shard: number,
    epoch: number,
    method: string,
    args: Obj,
    caller: Caller | null,
    deadline: number,
    traceparent?: string,
    origin?: Origin,
  ): Promise<TurnReply> {
    // Kinds sharing storage ids each serve their own keys only (Behavior.ownsKey).
    if (this.c.o.behaviors[ref.kind]?.ownsKey?.(ref.key) === false)
      return Promise.reject(errors.accessDenied());
    const id = this.idOf(ref);
    let act = this.c.acts.get(id);
    if (act && act.epoch !== epoch) {
      // The shard was lost and re-acquired: the old activation may be stale.
      act.dead = true;
      this.c.acts.delete(id);
      releaseParked(act);
      act = undefined;
    }
    if (!act) act = activate(this.c, ref, id, shard, epoch, traceparent);
    const behavior = this.c.o.behaviors[ref.kind];
    if (behavior?.readers?.includes(method))
      return read(this.c, act, behavior, method, args, caller, deadline, traceparent, origin);
    if (act.mailbox.length >= this.c.mailboxLimit) {
      metrics.rejected("mailbox");
      return Promise.reject(new UnavailableError(`mailbox of ${id} is full`, 1));
    }
    return new Promise<TurnReply>((resolve, reject) => {
      const turn: Turn = { method, args, caller, deadline, resolve, reject };
      if (traceparent !== undefined) turn.trace = traceparent;
      if (origin === "external") turn.origin = origin;
      act!.mailbox.push(turn);
      if (act!.ready && !act!.running) void drain(this.c, act!);
    });
  }

  /**
   * The turn `send` would queue, decided and applied at once when the actor
   * is active and idle and its kind can decide the method synchronously
   * (Behavior.inline; catalog/mailbox.ts, inlineTurn): its reply, or
   * undefined when not taken (then `send` it).
   */
  sendNow(
    ref: ActorRef,
    epoch: number,
    method: string,
    args: Obj,
    deadline: number,
  ): { reply: Value } | undefined {
    const behavior = this.c.o.behaviors[ref.kind];
    const decider = behavior?.inline?.[method];
    if (decider === undefined) return undefined;
    const act = this.c.acts.get(this.idOf(ref));
    if (act === undefined || act.epoch !== epoch) return undefined;
    const turn: Turn = { method, args, caller: null, deadline, resolve: ignore, reject: ignore };
    return inlineTurn(this.c, act, behavior!, decider, turn);
  }

  /** ctx.getRecords of a turn: the actor's shard's records (never fenced: reads). */
  getRecords(act: Activation, keys: string[]): Promise<Array<Uint8Array | null>> {
    return this.c.o.store.getRecords(act.shard, keys);
  }

  /** ctx.rangeIndex of a turn. */
  rangeIndex(act: Activation, index: string, range: IndexRange): Promise<number[]> {
    return this.c.o.store.rangeIndex(act.shard, index, range);
  }

  /** ctx.indexSize of a turn. */
  indexSize(act: Activation, index: string): Promise<number> {
    return this.c.o.store.indexSize(act.shard, index);
  }

  /** Stop serving a shard: graceful (drain, snapshot) or not (lease lost); catalog/passivation.ts. */
  dropShard(shard: number, graceful: boolean): Promise<void> {
    return dropShard(this.c, shard, graceful);
  }
}
