// The catalog: the activations a node hosts and how a message becomes a turn.
//
// Virtual actors: an actor is activated on its first message (latest
// snapshot + journal replay), takes one message at a time, persists the facts
// of a turn (awaited, fenced by its shard's lease epoch) before it replies,
// and is passivated after an idle period (a snapshot when dirty, then
// dropped). Nothing creates actors explicitly.

import type {
  ActorContext,
  ActorRef,
  Behavior,
  Caller,
  Decision,
  Obj,
  OutEvent,
  Value,
} from "../actors/types.ts";
import { FencedError, MovedError, UnavailableError } from "../actors/errors.ts";
import { decodeFact, encodeFact } from "../proto/codec.ts";
import type { Store } from "./storage/contract.ts";
import type { TimerHandle, TimerWheel } from "./timer-wheel.ts";
import { actorId } from "./addressing.ts";

export interface Turn {
  method: string;
  args: Obj;
  caller: Caller | null;
  deadline: number;
  resolve(v: Value): void;
  reject(e: unknown): void;
}

export interface Activation {
  ref: ActorRef;
  id: string;
  shard: number;
  epoch: number;
  state: unknown;
  /** Seq of the last journal entry folded into state. */
  seq: number;
  /** Seq covered by the last snapshot. */
  snapshotSeq: number;
  mailbox: Turn[];
  running: boolean;
  ready: boolean;
  lastUsed: number;
  /** Set when the shard was lost: every later turn answers "moved". */
  dead: boolean;
  /** Turns whose reply a later turn gives (Decision.park / wake), by key. */
  parked: Map<string, Turn>;
  /** Pending ctx.schedule timers by key. */
  timers: Map<string, TimerHandle>;
}

export interface CatalogHooks {
  /** Called with events once the facts that produced them are durable. */
  emit(ref: ActorRef, events: OutEvent[]): void;
  /** Cluster-wide notices (e.g. auth cache invalidation). */
  notice(subject: string, data: Obj): void;
  /** The shard's lease was found stale by a write: stop serving it. */
  fenced(shard: number): void;
  /** Build the context an actor's handler sees. */
  context(act: Activation, turn: Turn): ActorContext;
}

export interface CatalogOptions {
  store: Store;
  behaviors: Partial<Record<string, Behavior<unknown>>>;
  wheel: TimerWheel;
  hooks: CatalogHooks;
  now?: () => number;
  /** Passivate an actor after this long without a message. */
  idleMs?: number;
  /** Snapshot after this many facts since the last snapshot. */
  snapshotEvery?: number;
  /** Bound on waiting turns per actor; beyond it callers get 503. */
  mailboxLimit?: number;
  /** Most turns decided together and committed in one journal append. */
  batchLimit?: number;
}

export class Catalog {
  private readonly acts = new Map<string, Activation>();
  private readonly now: () => number;
  private readonly idleMs: number;
  private readonly snapshotEvery: number;
  private readonly mailboxLimit: number;
  private readonly batchLimit: number;
  /** Counters for inspection and metrics. */
  readonly stats = { activations: 0, passivations: 0, turns: 0, snapshots: 0, fenced: 0 };

  constructor(private readonly o: CatalogOptions) {
    this.now = o.now ?? Date.now;
    this.idleMs = o.idleMs ?? 5 * 60_000;
    this.snapshotEvery = o.snapshotEvery ?? 200;
    this.mailboxLimit = o.mailboxLimit ?? 5000;
    this.batchLimit = o.batchLimit ?? 256;
  }

  get size(): number {
    return this.acts.size;
  }

  /** Activation counts per shard, and the deepest mailboxes. */
  inspect(): { byShard: Map<number, number>; deepest: { id: string; depth: number }[] } {
    const byShard = new Map<number, number>();
    const depths: { id: string; depth: number }[] = [];
    for (const a of this.acts.values()) {
      byShard.set(a.shard, (byShard.get(a.shard) ?? 0) + 1);
      if (a.mailbox.length) depths.push({ id: a.id, depth: a.mailbox.length });
    }
    depths.sort((x, y) => y.depth - x.depth);
    return { byShard, deepest: depths.slice(0, 10) };
  }

  has(ref: ActorRef): boolean {
    return this.acts.has(actorId(ref));
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
  ): Promise<Value> {
    const id = actorId(ref);
    let act = this.acts.get(id);
    if (act && act.epoch !== epoch) {
      // The shard was lost and re-acquired: the old activation may be stale.
      act.dead = true;
      this.acts.delete(id);
      this.releaseParked(act);
      act = undefined;
    }
    if (!act) act = this.activate(ref, id, shard, epoch);
    if (act.mailbox.length >= this.mailboxLimit) {
      return Promise.reject(new UnavailableError(`mailbox of ${id} is full`, 1));
    }
    return new Promise<Value>((resolve, reject) => {
      act!.mailbox.push({ method, args, caller, deadline, resolve, reject });
      if (act!.ready && !act!.running) void this.drain(act!);
    });
  }

  private activate(ref: ActorRef, id: string, shard: number, epoch: number): Activation {
    const act: Activation = {
      ref,
      id,
      shard,
      epoch,
      state: undefined,
      seq: 0,
      snapshotSeq: 0,
      mailbox: [],
      running: false,
      ready: false,
      lastUsed: this.now(),
      dead: false,
      parked: new Map(),
      timers: new Map(),
    };
    this.acts.set(id, act);
    this.stats.activations++;
    void this.load(act);
    return act;
  }

  private async load(act: Activation): Promise<void> {
    const behavior = this.o.behaviors[act.ref.kind];
    try {
      if (!behavior) throw new Error(`no behavior for kind ${act.ref.kind}`);
      const snap = await this.o.store.loadSnapshot(act.shard, act.id);
      let state = snap ? behavior.fromSnapshot(snap.data, act.ref) : behavior.initial(act.ref);
      let seq = snap ? snap.seq : 0;
      const entries = await this.o.store.readJournal(act.shard, act.id, seq);
      for (const e of entries) {
        state = behavior.apply(state, decodeFact(e.data), act.ref);
        seq = e.seq;
      }
      act.state = state;
      act.seq = seq;
      act.snapshotSeq = snap ? snap.seq : 0;
      act.ready = true;
      this.scheduleIdleCheck(act);
      void this.drain(act);
    } catch (err) {
      // Activation failed (store unreachable...): fail the waiting turns and
      // forget the activation so the next message tries again.
      this.acts.delete(act.id);
      act.dead = true;
      const e = err instanceof Error ? err : new Error(String(err));
      for (const t of act.mailbox.splice(0))
        t.reject(new UnavailableError(`activation failed: ${e.message}`));
    }
  }

  /**
   * Run the mailbox. Group commit: the turns waiting in the mailbox are
   * decided one after the other, each seeing the facts of the ones before
   * (applied in memory at once), then all their facts go to the journal in
   * one append. Replies and events are released only once that append is
   * durable, so nobody observes a state that could still be lost. If the
   * append fails, the in-memory state is ahead of the journal: the
   * activation is discarded and the next message reloads it from the store.
   */
  private async drain(act: Activation): Promise<void> {
    if (act.running) return;
    act.running = true;
    const behavior = this.o.behaviors[act.ref.kind]!;
    try {
      while (act.mailbox.length && !act.dead) {
        const done: { turn: Turn; decision: Decision }[] = [];
        const woken: { turn: Turn; reply: Value }[] = [];
        const facts: Obj[] = [];
        while (act.mailbox.length && done.length < this.batchLimit) {
          const turn = act.mailbox.shift()!;
          const decision = await this.decide(act, behavior, turn);
          if (!decision) continue;
          if (decision.facts && decision.facts.length) {
            let state = act.state;
            for (const f of decision.facts) state = behavior.apply(state, f, act.ref);
            act.state = state;
            for (const f of decision.facts) facts.push(f);
          }
          // Parking and waking take effect at once so the next turn of the
          // batch sees them; the replies still wait for the append below.
          if (decision.wake) {
            for (const w of decision.wake) {
              const t = act.parked.get(w.key);
              if (t === undefined) continue;
              act.parked.delete(w.key);
              woken.push({ turn: t, reply: w.reply });
            }
          }
          if (decision.park !== undefined) {
            const old = act.parked.get(decision.park);
            if (old !== undefined) woken.push({ turn: old, reply: null });
            act.parked.set(decision.park, turn);
          }
          done.push({ turn, decision });
        }
        if (facts.length && !(await this.persist(act, facts, [...done, ...woken]))) return;
        for (const { turn, decision } of done) {
          if (decision.events && decision.events.length) this.o.hooks.emit(act.ref, decision.events);
          if (decision.notices) for (const n of decision.notices) this.o.hooks.notice(n.subject, n.data);
          if (decision.park === undefined) turn.resolve(decision.reply ?? null);
        }
        for (const w of woken) w.turn.resolve(w.reply);
      }
      if (act.dead) for (const t of act.mailbox.splice(0)) t.reject(new MovedError(act.shard));
    } finally {
      act.running = false;
      act.lastUsed = this.now();
    }
  }

  /** One turn's decision, or null when the turn was answered with an error. */
  private async decide(act: Activation, behavior: Behavior<unknown>, turn: Turn): Promise<Decision | null> {
    if (turn.deadline < this.now()) {
      turn.reject(new UnavailableError("deadline exceeded before the turn started"));
      return null;
    }
    const handler = behavior.handlers[turn.method];
    this.stats.turns++;
    if (!handler) {
      turn.reject(new Error(`${act.ref.kind} has no method ${turn.method}`));
      return null;
    }
    try {
      return await handler(act.state, turn.args, this.o.hooks.context(act, turn), turn.caller);
    } catch (err) {
      turn.reject(err);
      return null;
    }
  }

  /** Append a batch's facts; on failure fail the batch and discard the activation. */
  private async persist(act: Activation, facts: Obj[], done: { turn: Turn }[]): Promise<boolean> {
    try {
      await this.o.store.append(act.shard, act.epoch, act.id, act.seq + 1, facts.map(encodeFact));
    } catch (err) {
      const fenced = err instanceof FencedError;
      if (fenced) {
        this.stats.fenced++;
        this.o.hooks.fenced(act.shard);
      }
      act.dead = true;
      if (this.acts.get(act.id) === act) this.acts.delete(act.id);
      const reason = fenced
        ? () => new MovedError(act.shard)
        : () => new UnavailableError(`journal append failed: ${(err as Error).message}`);
      for (const d of done) d.turn.reject(reason());
      for (const t of act.mailbox.splice(0)) t.reject(reason());
      this.releaseParked(act);
      return false;
    }
    act.seq += facts.length;
    if (act.seq - act.snapshotSeq >= this.snapshotEvery) void this.snapshot(act);
    return true;
  }

  private async snapshot(act: Activation): Promise<void> {
    if (act.seq === act.snapshotSeq || act.dead) return;
    const behavior = this.o.behaviors[act.ref.kind]!;
    const seq = act.seq;
    try {
      await this.o.store.saveSnapshot(act.shard, act.epoch, act.id, {
        seq,
        data: behavior.toSnapshot(act.state),
      });
      act.snapshotSeq = Math.max(act.snapshotSeq, seq);
      this.stats.snapshots++;
    } catch (err) {
      if (err instanceof FencedError) this.o.hooks.fenced(act.shard);
      // Otherwise the journal still holds everything; the next snapshot retries.
    }
  }

  /** The activation ends: parked turns go to the next one ("moved": the caller retries). */
  private releaseParked(act: Activation): void {
    for (const t of act.parked.values()) t.reject(new MovedError(act.shard));
    act.parked.clear();
  }

  private scheduleIdleCheck(act: Activation): void {
    this.o.wheel.schedule(this.idleMs, () => {
      if (act.dead || this.acts.get(act.id) !== act) return;
      const idleFor = this.now() - act.lastUsed;
      if (act.running || act.mailbox.length || act.parked.size || idleFor < this.idleMs) {
        this.scheduleIdleCheck(act);
        return;
      }
      void this.passivate(act);
    });
  }

  private async passivate(act: Activation): Promise<void> {
    await this.snapshot(act);
    // A message may have arrived while the snapshot was written.
    if (act.running || act.mailbox.length || act.parked.size) {
      this.scheduleIdleCheck(act);
      return;
    }
    if (this.acts.get(act.id) === act) this.acts.delete(act.id);
    act.dead = true;
    this.stats.passivations++;
  }

  /**
   * Stop serving a shard. Graceful (drain): wait for running turns, snapshot
   * dirty actors, then forget them. Not graceful (lease lost): forget at
   * once; their waiting turns answer "moved".
   */
  async dropShard(shard: number, graceful: boolean): Promise<void> {
    const victims = [...this.acts.values()].filter((a) => a.shard === shard);
    for (const a of victims) this.acts.delete(a.id);
    if (graceful) {
      await Promise.all(
        victims.map(async (a) => {
          while (a.running || (a.mailbox.length && !a.dead)) await new Promise((r) => setTimeout(r, 5));
          await this.snapshot(a);
          a.dead = true;
          this.releaseParked(a);
        }),
      );
    } else {
      for (const a of victims) {
        a.dead = true;
        for (const t of a.mailbox.splice(0)) t.reject(new MovedError(shard));
        this.releaseParked(a);
      }
    }
  }
}
