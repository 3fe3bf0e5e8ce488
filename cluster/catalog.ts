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
  Origin,
  OutEvent,
  Value,
} from "../actors/types.ts";
import { errors } from "../actors/errors.ts";
import { FencedError, MovedError, UnavailableError } from "./runtime-errors.ts";
import { decodeFact, encodeFact } from "../proto/codec.ts";
import type { AppendItem, IndexRange, RecordWrite, Store } from "./storage/contract.ts";
import type { TimerHandle, TimerWheel } from "./timer-wheel.ts";
import { actorId } from "./addressing.ts";
import { continueSpan, inSpan, SpanKind, startTurnSpan, withSpan, type Span } from "./tracing.ts";
import { metrics } from "./metrics.ts";
import { nextMacrotask } from "./transport/retry.ts";

export interface Turn {
  method: string;
  args: Obj;
  caller: Caller | null;
  deadline: number;
  resolve(v: Value): void;
  reject(e: unknown): void;
  /** The caller's W3C traceparent when the request is sampled (cluster/tracing.ts). */
  trace?: string;
  /** The turn's span once it started (sampled requests only). */
  span?: Span | null;
  /** Set only for requests from outside the cluster (ActorContext.origin). */
  origin?: "external";
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
  /**
   * Turns whose reply a later turn gives (Decision.park / wake), by key.
   * The Maps below are null while empty: an idle activation (a million
   * idle queue actors) should not carry three empty hash tables.
   */
  parked: Map<string, Turn> | null;
  /**
   * ctx.schedule timers as [key, handle, key, handle, ...] (a flat array is
   * 64 B for the usual one timer, a Map ~200 B); null while none was armed.
   * Fired or cancelled handles stay until their pair is reused.
   */
  timers: (string | TimerHandle)[] | null;
  /** The activation's span while it loads, when a sampled message activated it (cluster/tracing.ts). */
  loadSpan?: Span;
  /**
   * Outbox: events journaled with the facts that produced them (by the seq
   * of their `~outbox` journal entry) and not yet acknowledged by the router.
   */
  outbox: Map<number, OutEvent[]> | null;
  /** Outbox seqs acknowledged since the last append (journaled as `~sent` with the next one); null when none. */
  sent: number[] | null;
  /**
   * Durable hand-offs (Decision.handoffs) journaled as `~handoff` entries and
   * not yet acknowledged by the node's handler, by seq; absent while none.
   */
  handoffs?: Map<number, Handoff[]>;
  /**
   * Facts between snapshots, when more than the catalog's default: set from
   * the size of the last snapshot, so a big state (a channel of 100,000
   * messages) is serialized every so many facts that each fact pays a
   * bounded share of it, instead of the whole state every 200 facts.
   */
  snapshotEvery?: number;
  /** The snapshot of this activation being written (one at a time: a later one waits for it). */
  snapshotting?: Promise<void>;
  /**
   * The state holds unjournaled facts (Behavior.unjournaled) no snapshot
   * has: how many, and since when. The activation is then snapshotted
   * within UNSAVED_MS (or after as many such facts as journaled ones), so
   * a side log's entries are not needed for long (Behavior.sideLog).
   */
  unsaved?: { n: number; since: number };
  /**
   * Behavior.readers: the state as of the last durable batch, which readers
   * see while `state` is ahead of the store. Made at activation for the
   * actors that serve readers (Behavior.servesReaders), else by the first
   * reader, and kept up to date by applying each batch's facts again once
   * they are durable.
   */
  committed?: unknown;
  /** Facts of the current batch are folded into `state` but not yet durable. */
  ahead?: boolean;
  /** Readers running now (they keep the activation from passivating). */
  reading?: number;
  /** Readers waiting for the activation to load, or for a batch to be durable before the first committed view. */
  readWaiting?: Turn[];
}

/**
 * Snapshot characters per fact of journal kept between snapshots: a state
 * whose snapshot is 2 MB is snapshotted every 1,000 facts (its journal
 * then stays well below its snapshot's size, so activation costs about the
 * same), and the serialization costs each fact about 2 KB.
 */
const SNAPSHOT_CHARS_PER_FACT = 2000;

/**
 * Readers (Behavior.readers) of one activation running at once; more wait
 * in order. Unbounded, 50 concurrent reads of a busy channel took the
 * event loop from its sends (embedded: 4 senders got 7 sends/s instead of
 * 18, and the reads were slower too); a few at once keep reads off the
 * writer's path and still overlap their calls to other actors.
 */
export const READERS_PER_ACTIVATION = 4;

/**
 * How long a state may hold unjournaled facts that no snapshot has
 * (Activation.unsaved), at the usual snapshot size; a bigger state, whose
 * snapshots are spaced out (Activation.snapshotEvery), waits that many
 * times longer.
 */
export const UNSAVED_MS = 60_000;

/** One fact of an actor's side log, for its replay (CatalogHooks.sideFacts). */
export interface SideFact {
  /** Its position in the log (increasing). */
  pos: number;
  /** When it entered the log (ms since the epoch). */
  at: number;
  fact: Obj;
}

/** Backoff of a failed outbox or hand-off entry's next attempt (Catalog.retryLater). */
const ENTRY_RETRY_MIN_MS = 1_000;
const ENTRY_RETRY_MAX_MS = 30_000;

/** A Decision.handoffs entry. */
export interface Handoff {
  subject: string;
  data: Obj;
}

/** Journal entries the runtime writes beside an actor's facts (never shown to `apply`). */
const OUTBOX = "~outbox";
const SENT = "~sent";
const HANDOFF = "~handoff";
/** Snapshot envelope marker: the behaviour's snapshot plus the pending outbox. */
const ENVELOPE = "\u0001";

/**
 * Test-only crash point (inert unless the variable is set): a node whose
 * environment has ZULIP_TEST_CRASH_AFTER_APPEND kills itself with SIGKILL
 * right after a journal append whose turn arguments contain that text,
 * before the turn's events reach the router.
 */
const CRASH_AFTER_APPEND = process.env.ZULIP_TEST_CRASH_AFTER_APPEND || null;

export interface CatalogHooks {
  /**
   * Called with events once the facts that produced them are durable.
   * `key` (set when the events are in the actor's outbox) identifies them
   * for de-duplication; the promise says whether every recipient's queue
   * actor acknowledged them (then the outbox entry is done).
   */
  emit(ref: ActorRef, events: OutEvent[], key: string | null): Promise<boolean>;
  /**
   * Called with a batch's hand-offs once its facts are durable (`key` as for
   * `emit`, null when not journaled); true acknowledges them.
   */
  handoff?(ref: ActorRef, handoffs: Handoff[], key: string | null): Promise<boolean>;
  /** Cluster-wide notices (e.g. auth cache invalidation). */
  notice(subject: string, data: Obj): void;
  /** The shard's lease was found stale by a write: stop serving it. */
  fenced(shard: number): void;
  /**
   * The activation's state is loaded, or a batch's facts are durable (in
   * turn order, before the batch's replies and events): e.g. the event
   * router learns whether a queue actor has queues.
   */
  settled?(act: Activation): void;
  /**
   * A batch's journal entries are about to be appended; the append waits
   * for the promise, and fails with it (e.g. a queue registration waits
   * until the event router's registry of users with queues holds the user).
   */
  beforeAppend?(act: Activation, facts: readonly Obj[]): Promise<void> | undefined;
  /**
   * The facts of the activation's side log (Behavior.sideLog) after
   * `after`, in order, for its replay at activation; rejects when they
   * cannot be had (the activation then fails, as a failed load).
   */
  sideFacts?(act: Activation, after: number): Promise<SideFact[]>;
  /**
   * The store holds the activation's state up to `position` of its side
   * log (a snapshot of it, or the one it was loaded from): the log's facts
   * up to there are no longer needed for it.
   */
  sideSaved?(act: Activation, position: number): void;
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

/** An append waiting for the next cross-actor group commit of its shard. */
interface QueuedAppend extends AppendItem {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Most actors' appends written in one `appendMany`. */
const COMMIT_GROUP_LIMIT = 512;

export class Catalog {
  private readonly acts = new Map<string, Activation>();
  /**
   * Appends of unsampled turns waiting for the next group commit, by
   * "<shard>:<epoch>". Many activations that append in the same tick (a
   * message fanned out to 1,000 user actors) share one store write.
   */
  private readonly commits = new Map<string, { shard: number; epoch: number; items: QueuedAppend[] }>();
  private commitTimer: NodeJS.Immediate | null = null;
  private readonly now: () => number;
  private readonly idleMs: number;
  private readonly snapshotEvery: number;
  private readonly mailboxLimit: number;
  private readonly batchLimit: number;
  /** Counters for inspection and metrics. */
  readonly stats = { activations: 0, passivations: 0, turns: 0, snapshots: 0, fenced: 0, entryRetries: 0 };

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
    return this.acts.has(this.idOf(ref));
  }

  /** The storage id of an actor: its kind's, or the kind it is stored as (Behavior.storedAs). */
  idOf(ref: ActorRef): string {
    const storedAs = this.o.behaviors[ref.kind]?.storedAs;
    return actorId(storedAs === undefined ? ref : { ...ref, kind: storedAs });
  }

  /** Every activation in memory (metrics and the admin API read them; never mutate). */
  activations(): IterableIterator<Activation> {
    return this.acts.values();
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
  ): Promise<Value> {
    // Kinds sharing storage ids each serve their own keys only (Behavior.ownsKey).
    if (this.o.behaviors[ref.kind]?.ownsKey?.(ref.key) === false)
      return Promise.reject(errors.accessDenied());
    const id = this.idOf(ref);
    let act = this.acts.get(id);
    if (act && act.epoch !== epoch) {
      // The shard was lost and re-acquired: the old activation may be stale.
      act.dead = true;
      this.acts.delete(id);
      this.releaseParked(act);
      act = undefined;
    }
    if (!act) act = this.activate(ref, id, shard, epoch, traceparent);
    const behavior = this.o.behaviors[ref.kind];
    if (behavior?.readers?.includes(method))
      return this.read(act, behavior, method, args, caller, deadline, traceparent, origin);
    if (act.mailbox.length >= this.mailboxLimit) {
      metrics.rejected("mailbox");
      return Promise.reject(new UnavailableError(`mailbox of ${id} is full`, 1));
    }
    return new Promise<Value>((resolve, reject) => {
      const turn: Turn = { method, args, caller, deadline, resolve, reject };
      if (traceparent !== undefined) turn.trace = traceparent;
      if (origin === "external") turn.origin = origin;
      act!.mailbox.push(turn);
      if (act!.ready && !act!.running) void this.drain(act!);
    });
  }

  /**
   * A Behavior.readers method: decided at once, beside the mailbox, against
   * the committed view (Activation.committed): never behind the writer's
   * turns, never forcing its batch to commit, never seeing a fact that is
   * not durable yet. A send acknowledged before the read began is in that
   * view, since a batch's replies go out only after its facts are applied
   * to it.
   */
  private read(
    act: Activation,
    behavior: Behavior<unknown>,
    method: string,
    args: Obj,
    caller: Caller | null,
    deadline: number,
    traceparent?: string,
    origin?: Origin,
  ): Promise<Value> {
    if ((act.reading ?? 0) + (act.readWaiting?.length ?? 0) >= this.mailboxLimit) {
      metrics.rejected("mailbox");
      return Promise.reject(new UnavailableError(`readers of ${act.id} are too many`, 1));
    }
    return new Promise<Value>((resolve, reject) => {
      const turn: Turn = { method, args, caller, deadline, resolve, reject };
      if (traceparent !== undefined) turn.trace = traceparent;
      if (origin === "external") turn.origin = origin;
      // The first committed view is a copy of the state, taken while no batch is ahead of the store.
      if (!this.mayRead(act) || act.readWaiting || (act.reading ?? 0) >= READERS_PER_ACTIVATION)
        (act.readWaiting ??= []).push(turn);
      else void this.runReader(act, behavior, turn);
    });
  }

  /** A deep copy of the activation's state: the snapshot encoding's (it leaves out caches). */
  private copyState(behavior: Behavior<unknown>, act: Activation): unknown {
    return behavior.fromSnapshot(behavior.toSnapshot(act.state), act.ref);
  }

  /** Start the readers that waited for the activation to load or for its batch to be durable. */
  private flushReaders(act: Activation): void {
    const waiting = act.readWaiting;
    if (waiting === undefined || !this.mayRead(act)) return;
    const behavior = this.o.behaviors[act.ref.kind]!;
    while (waiting.length && (act.reading ?? 0) < READERS_PER_ACTIVATION)
      void this.runReader(act, behavior, waiting.shift()!);
    if (!waiting.length) delete act.readWaiting;
  }

  /** A reader may start now (below the bound, it waits only for these). */
  private mayRead(act: Activation): boolean {
    return act.ready && !(act.committed === undefined && act.ahead);
  }

  private async runReader(act: Activation, behavior: Behavior<unknown>, turn: Turn): Promise<void> {
    if (act.dead) {
      turn.reject(new MovedError(act.shard));
      return;
    }
    act.committed ??= this.copyState(behavior, act);
    act.reading = (act.reading ?? 0) + 1;
    let decision: Decision | null;
    try {
      decision = await this.decide(act, behavior, turn, act.committed);
    } finally {
      act.reading = act.reading! - 1;
      act.lastUsed = this.now();
      this.flushReaders(act);
    }
    if (decision === null) return;
    if (
      decision.facts?.length ||
      decision.writes?.length ||
      decision.events?.length ||
      decision.notices?.length ||
      decision.handoffs?.length ||
      decision.park !== undefined ||
      decision.wake?.length
    ) {
      // A method declared a reader that decided a change: a bug, refused rather than half done.
      turn.reject(new Error(`${act.ref.kind}.${turn.method} is a reader but decided a change`));
      return;
    }
    // The activation was fenced while the read ran: the caller asks the shard's next owner.
    if (act.dead) turn.reject(new MovedError(act.shard));
    else turn.resolve(decision.reply ?? null);
  }

  private activate(
    ref: ActorRef,
    id: string,
    shard: number,
    epoch: number,
    traceparent?: string,
  ): Activation {
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
      parked: null,
      timers: null,
      outbox: null,
      sent: null,
    };
    this.acts.set(id, act);
    this.stats.activations++;
    metrics.activated(ref.kind);
    // A sampled first message traces the activation (snapshot + journal reads).
    const span =
      traceparent === undefined ? null : continueSpan(`${ref.kind} activate`, SpanKind.INTERNAL, traceparent);
    if (span === null) void this.load(act);
    else {
      act.loadSpan = span;
      void this.load(act).finally(() => span.end());
    }
    return act;
  }

  private async load(act: Activation): Promise<void> {
    const behavior = this.o.behaviors[act.ref.kind];
    try {
      if (!behavior) throw new Error(`no behavior for kind ${act.ref.kind}`);
      const snap = await inSpan(act.loadSpan, () => this.o.store.loadSnapshot(act.shard, act.id));
      let data = snap ? snap.data : null;
      if (data !== null && data.startsWith(ENVELOPE)) {
        const env = JSON.parse(data.slice(ENVELOPE.length)) as {
          s: string;
          o: [number, OutEvent[]][];
          h?: [number, Handoff[]][];
        };
        data = env.s;
        for (const [seq, events] of env.o) (act.outbox ??= new Map()).set(seq, events);
        for (const [seq, h] of env.h ?? []) (act.handoffs ??= new Map()).set(seq, h);
      }
      let state = data !== null ? behavior.fromSnapshot(data, act.ref) : behavior.initial(act.ref);
      let seq = snap ? snap.seq : 0;
      const entries = await inSpan(act.loadSpan, () => this.o.store.readJournal(act.shard, act.id, seq));
      // The side log's facts after the snapshot's position, each applied
      // before the first journaled fact decided after it (Behavior.sideLog).
      const side = behavior.sideLog;
      const sidePos = side === undefined ? 0 : side.position(state);
      const sideFacts =
        side !== undefined && this.o.hooks.sideFacts ? await this.o.hooks.sideFacts(act, sidePos) : [];
      let next = 0;
      let oldest = Infinity;
      const sideUpTo = (pos: number) => {
        for (; next < sideFacts.length && sideFacts[next]!.pos <= pos; next++) {
          state = behavior.apply(state, sideFacts[next]!.fact, act.ref);
          oldest = Math.min(oldest, sideFacts[next]!.at);
        }
      };
      for (const e of entries) {
        const f = decodeFact(e.data);
        if (OUTBOX in f) (act.outbox ??= new Map()).set(e.seq, f[OUTBOX] as unknown as OutEvent[]);
        else if (HANDOFF in f) (act.handoffs ??= new Map()).set(e.seq, f[HANDOFF] as unknown as Handoff[]);
        else if (SENT in f)
          for (const s of f[SENT] as number[]) {
            act.outbox?.delete(s);
            act.handoffs?.delete(s);
          }
        else {
          const at = side?.decidedAt(f);
          if (at !== undefined) sideUpTo(at);
          state = behavior.apply(state, f, act.ref);
        }
        seq = e.seq;
      }
      sideUpTo(Infinity);
      if (next > 0) act.unsaved = { n: next, since: oldest };
      act.snapshotSeq = snap ? snap.seq : 0;
      if (snap) this.sizeSnapshots(act, snap.data.length);
      // Behavior.upgrade: conversions run before any turn, each step one
      // fenced append (a failure fails the activation, as a failed load).
      let upgraded = false;
      for (let step = behavior.upgrade?.(state, act.ref); step; step = behavior.upgrade!(state, act.ref)) {
        if (step.facts.length === 0 && step.writes.length === 0) break;
        const entries = step.facts.map(encodeFact);
        await this.o.store.append(act.shard, act.epoch, act.id, seq + 1, entries, step.writes);
        for (const f of step.facts) state = behavior.apply(state, f, act.ref);
        seq += entries.length;
        upgraded = true;
      }
      act.state = state;
      act.seq = seq;
      // The converted state's snapshot replaces the old one at once.
      if (upgraded) await this.snapshot(act);
      // Readers see the committed view; taken now, the first reader need not
      // wait for a batch in flight to be durable.
      if (behavior.readers?.length && (behavior.servesReaders?.(act.ref) ?? true))
        act.committed = this.copyState(behavior, act);
      act.ready = true;
      this.o.hooks.settled?.(act);
      if (side !== undefined) this.o.hooks.sideSaved?.(act, sidePos);
      this.scheduleIdleCheck(act);
      // Events whose facts are durable but whose delivery was never
      // acknowledged (the previous owner died in between): send them again,
      // under their original keys, before any new turn emits.
      if (act.outbox !== null && act.outbox.size === 0) act.outbox = null;
      if (act.outbox !== null) {
        const outbox = act.outbox;
        for (const s of [...outbox.keys()].sort((a, b) => a - b)) void this.release(act, s, outbox.get(s)!);
      }
      // Hand-offs likewise (outgoing-webhook triggers; the handlers are idempotent).
      if (act.handoffs !== undefined && act.handoffs.size === 0) delete act.handoffs;
      if (act.handoffs !== undefined)
        for (const [s, h] of [...act.handoffs].sort((a, b) => a[0] - b[0])) void this.handOff(act, s, h);
      this.flushReaders(act);
      void this.drain(act);
    } catch (err) {
      // Activation failed (store unreachable...): fail the waiting turns and
      // forget the activation so the next message tries again.
      this.acts.delete(act.id);
      act.dead = true;
      const e = err instanceof Error ? err : new Error(String(err));
      for (const t of [...act.mailbox.splice(0), ...(act.readWaiting ?? [])])
        t.reject(new UnavailableError(`activation failed: ${e.message}`));
      delete act.readWaiting;
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
        /** The batch's facts to journal, and all of them in order (Behavior.unjournaled ones too). */
        const facts: Obj[] = [];
        const applied: Obj[] = [];
        const writes: RecordWrite[] = [];
        const unjournaled = behavior.unjournaled;
        while (act.mailbox.length && done.length < this.batchLimit) {
          // A turn that may read records waits for the batch's writes (Behavior.blind).
          if (writes.length && !behavior.blind?.includes(act.mailbox[0]!.method)) break;
          const turn = act.mailbox.shift()!;
          const decision = await this.decide(act, behavior, turn);
          if (!decision) continue;
          if (decision.writes) for (const w of decision.writes) writes.push(w);
          if (decision.facts && decision.facts.length) {
            act.ahead = true;
            let state = act.state;
            for (const f of decision.facts) state = behavior.apply(state, f, act.ref);
            act.state = state;
            let kept = 0;
            for (const f of decision.facts) {
              applied.push(f);
              if (unjournaled?.(f)) kept++;
              else facts.push(f);
            }
            if (kept) {
              const u = (act.unsaved ??= { n: 0, since: this.now() });
              u.n += kept;
            }
          }
          // Parking and waking take effect at once so the next turn of the
          // batch sees them; the replies still wait for the append below.
          if (decision.wake) {
            for (const w of decision.wake) {
              const t = act.parked?.get(w.key);
              if (t === undefined) continue;
              act.parked!.delete(w.key);
              woken.push({ turn: t, reply: w.reply });
            }
          }
          if (decision.park !== undefined) {
            const parked = (act.parked ??= new Map());
            const old = parked.get(decision.park);
            if (old !== undefined) woken.push({ turn: old, reply: null });
            parked.set(decision.park, turn);
          }
          done.push({ turn, decision });
        }
        // Outbox: the events of the batch are journaled in the same append as
        // its facts, so a crash after the append cannot lose them.
        const events: OutEvent[] = [];
        for (const { decision } of done) if (decision.events) events.push(...decision.events);
        let outboxSeq: number | null = null;
        const handoffs: Handoff[] = [];
        for (const { decision } of done) if (decision.handoffs) handoffs.push(...decision.handoffs);
        let handoffSeq: number | null = null;
        // The committed view exists only if it was taken before this batch's first fact.
        const forCommitted = act.committed !== undefined && applied.length ? applied : null;
        if (facts.length || writes.length) {
          const journal = facts;
          if (act.sent !== null) {
            journal.unshift({ [SENT]: act.sent });
            act.sent = null;
          }
          if (events.length) {
            journal.push({ [OUTBOX]: events as unknown as Value[] });
            outboxSeq = act.seq + journal.length;
            // Before the append: a snapshot it triggers must carry the entry.
            (act.outbox ??= new Map()).set(outboxSeq, events);
          }
          if (handoffs.length) {
            journal.push({ [HANDOFF]: handoffs as unknown as Value[] });
            handoffSeq = act.seq + journal.length;
            (act.handoffs ??= new Map()).set(handoffSeq, handoffs);
          }
          if (!(await this.persist(act, journal, [...done, ...woken], writes))) return;
          if (forCommitted !== null) {
            let view = act.committed;
            for (const f of forCommitted) view = behavior.apply(view, f, act.ref);
            act.committed = view;
          }
          delete act.ahead;
          this.flushReaders(act);
          this.o.hooks.settled?.(act);
          if (
            CRASH_AFTER_APPEND &&
            done.some((d) => JSON.stringify(d.turn.args).includes(CRASH_AFTER_APPEND))
          )
            process.kill(process.pid, "SIGKILL");
        } else if (applied.length) {
          // Unjournaled facts only: nothing to wait for.
          if (forCommitted !== null) {
            let view = act.committed;
            for (const f of forCommitted) view = behavior.apply(view, f, act.ref);
            act.committed = view;
          }
          delete act.ahead;
          this.flushReaders(act);
        }
        let emitted: Promise<unknown> | undefined;
        if (outboxSeq !== null) {
          emitted = this.release(act, outboxSeq, events);
        } else if (events.length) {
          // No facts, nothing durable: ephemeral events (typing...) go out as they are.
          void this.o.hooks.emit(act.ref, events, null);
        }
        let handed: Promise<unknown> | undefined;
        if (handoffs.length) {
          // Hand-offs start beside the events, not after them: a send's
          // reply waits for its hand-offs (the rows of its sender and
          // flagged recipients, a few turns since a channel message stores
          // nothing per ordinary recipient), and must not wait for its
          // fan-out to every queue too (a send's latency grew with its
          // channel's online users). The next macrotask: the parked polls
          // the events woke are answered in microtasks, and their
          // responses are written before the hand-offs take the CPU.
          const start = emitted === undefined ? Promise.resolve() : nextMacrotask();
          handed =
            handoffSeq !== null
              ? start.then(() => this.handOff(act, handoffSeq, handoffs))
              : start.then(() => this.o.hooks.handoff?.(act.ref, handoffs, null).catch(() => false));
        }
        for (const { turn, decision } of done) {
          if (decision.notices) for (const n of decision.notices) this.o.hooks.notice(n.subject, n.data);
          if (decision.park !== undefined) continue;
          const reply = decision.reply ?? null;
          if (decision.replyAfterHandoffs && handed !== undefined)
            void handed.then(() => turn.resolve(reply));
          else if (decision.replyAfterEvents && emitted !== undefined)
            void emitted.then(() => turn.resolve(reply));
          else turn.resolve(reply);
        }
        for (const w of woken) w.turn.resolve(w.reply);
        if (act.unsaved !== undefined && act.snapshotting === undefined && this.unsavedDue(act))
          void this.snapshot(act);
      }
      if (act.dead) for (const t of act.mailbox.splice(0)) t.reject(new MovedError(act.shard));
    } finally {
      act.running = false;
      act.lastUsed = this.now();
      // An idle activation keeps no grown buffers: drop the mailbox's backing
      // store and the emptied parked-turn table.
      if (act.mailbox.length === 0) act.mailbox = [];
      if (act.parked !== null && act.parked.size === 0) act.parked = null;
    }
  }

  /**
   * Hand an outbox entry to the router; once acknowledged, journal it as sent
   * with the next append. The returned promise settles with the first
   * attempt; a failed entry is given again (retryLater) while this
   * activation lives, under the same key.
   */
  private release(act: Activation, seq: number, events: OutEvent[], attempt = 0): Promise<void> {
    const pending = () => act.outbox?.get(seq) === events;
    return this.o.hooks.emit(act.ref, events, `${act.id}#${seq}`).then(
      (ok) => {
        if (!pending()) return;
        if (!ok)
          return this.retryLater(act, attempt, pending, () => this.release(act, seq, events, attempt + 1));
        act.outbox!.delete(seq);
        if (act.outbox!.size === 0) act.outbox = null;
        (act.sent ??= []).push(seq);
      },
      () => this.retryLater(act, attempt, pending, () => this.release(act, seq, events, attempt + 1)),
    );
  }

  /** Give a journaled hand-off entry to the node; once acknowledged, journal it as sent with the next append. */
  private handOff(
    act: Activation,
    seq: number,
    handoffs: Handoff[],
    attempt = 0,
  ): Promise<unknown> | undefined {
    const hook = this.o.hooks.handoff;
    if (!hook) return undefined;
    const pending = () => act.handoffs?.get(seq) === handoffs;
    return hook(act.ref, handoffs, `${act.id}#${seq}`).then(
      (ok) => {
        if (!pending()) return;
        if (!ok)
          return this.retryLater(act, attempt, pending, () => this.handOff(act, seq, handoffs, attempt + 1));
        act.handoffs!.delete(seq);
        if (act.handoffs!.size === 0) delete act.handoffs;
        (act.sent ??= []).push(seq);
      },
      () => this.retryLater(act, attempt, pending, () => this.handOff(act, seq, handoffs, attempt + 1)),
    );
  }

  /**
   * An outbox or hand-off entry failed (its router or handler gave up, e.g.
   * NATS was down for its whole retry budget): try it again after a backoff
   * while this activation is the current one. Without this, an actor that
   * stays busy (a channel's conversation) is never activated again, and the
   * entry would wait for that forever. An actor that goes idle is still
   * passivated: its entries wait in its snapshot or journal for its next
   * activation (an entry that can never be delivered must not pin an
   * activation). Not awaited by the first attempt's caller.
   */
  private retryLater(act: Activation, attempt: number, pending: () => boolean, again: () => unknown): void {
    const ms = Math.min(ENTRY_RETRY_MIN_MS * 2 ** attempt, ENTRY_RETRY_MAX_MS);
    this.o.wheel.schedule(ms, this.retryDue, act, pending, again);
  }

  private readonly retryDue = (act: Activation, pending: () => boolean, again: () => unknown): void => {
    if (act.dead || this.acts.get(act.id) !== act || !pending()) return;
    this.stats.entryRetries++;
    void again();
  };

  /** One turn's decision, or null when the turn was answered with an error. */
  private async decide(
    act: Activation,
    behavior: Behavior<unknown>,
    turn: Turn,
    state: unknown = act.state,
  ): Promise<Decision | null> {
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
    const started = performance.now();
    try {
      if (turn.trace !== undefined) turn.span = startTurnSpan(act.ref, turn.method, turn.trace, turn);
      return await handler(state, turn.args, this.o.hooks.context(act, turn), turn.caller);
    } catch (err) {
      turn.reject(err);
      return null;
    } finally {
      metrics.turn(act.ref.kind, performance.now() - started);
    }
  }

  /** Append a batch's facts; on failure fail the batch and discard the activation. */
  private async persist(
    act: Activation,
    facts: Obj[],
    done: { turn: Turn }[],
    writes: RecordWrite[] = [],
  ): Promise<boolean> {
    const started = performance.now();
    try {
      const before = this.o.hooks.beforeAppend?.(act, facts);
      if (before !== undefined) await before;
      const entries = facts.map(encodeFact);
      // Group commit: the append runs under the first sampled turn of the
      // batch, on its own so the trace shows this actor's write; the appends
      // of unsampled batches share one store write with the other actors of
      // their shard that append in the same tick.
      const traced = done.find((d) => d.turn.span)?.turn.span;
      await (traced
        ? withSpan(traced, () =>
            this.o.store.append(act.shard, act.epoch, act.id, act.seq + 1, entries, writes),
          )
        : this.queueAppend(act, entries, writes));
      metrics.appended(facts.length, performance.now() - started);
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
    if (act.seq - act.snapshotSeq >= (act.snapshotEvery ?? this.snapshotEvery) && !act.snapshotting)
      void this.snapshot(act);
    return true;
  }

  /** Append in the shard's next group commit (one `appendMany` for every actor that appends this tick). */
  private queueAppend(act: Activation, entries: Uint8Array[], writes: RecordWrite[]): Promise<void> {
    return new Promise((resolve, reject) => {
      const key = `${act.shard}:${act.epoch}`;
      let group = this.commits.get(key);
      if (group === undefined)
        this.commits.set(key, (group = { shard: act.shard, epoch: act.epoch, items: [] }));
      const item: QueuedAppend = { actor: act.id, firstSeq: act.seq + 1, entries, resolve, reject };
      if (writes.length) item.writes = writes;
      group.items.push(item);
      this.commitTimer ??= setImmediate(() => this.commitQueued());
    });
  }

  private commitQueued(): void {
    this.commitTimer = null;
    const groups = [...this.commits.values()];
    this.commits.clear();
    for (const g of groups) {
      for (let i = 0; i < g.items.length; i += COMMIT_GROUP_LIMIT)
        void this.commitGroup(g.shard, g.epoch, g.items.slice(i, i + COMMIT_GROUP_LIMIT));
    }
  }

  private async commitGroup(shard: number, epoch: number, items: QueuedAppend[]): Promise<void> {
    if (items.length === 1) {
      const it = items[0]!;
      try {
        await this.o.store.append(shard, epoch, it.actor, it.firstSeq, it.entries, it.writes);
        it.resolve();
      } catch (err) {
        it.reject(err);
      }
      return;
    }
    let ok: boolean[];
    try {
      ok = await this.o.store.appendMany(shard, epoch, items);
    } catch (err) {
      for (const it of items) it.reject(err);
      return;
    }
    items.forEach((it, i) => (ok[i] ? it.resolve() : it.reject(new FencedError(shard, epoch))));
  }

  /** Whether the activation's unjournaled facts should be snapshotted now (Activation.unsaved). */
  private unsavedDue(act: Activation): boolean {
    const u = act.unsaved!;
    const every = act.snapshotEvery ?? this.snapshotEvery;
    return u.n >= every || this.now() - u.since >= UNSAVED_MS * Math.max(1, every / this.snapshotEvery);
  }

  /** Snapshot the activation when it is ahead of its last snapshot; one at a time. */
  private snapshot(act: Activation): Promise<void> {
    const running = act.snapshotting;
    if (running !== undefined) return running.then(() => this.snapshot(act));
    if ((act.seq === act.snapshotSeq && act.unsaved === undefined) || act.dead) return Promise.resolve();
    const p: Promise<void> = this.writeSnapshot(act).finally(() => {
      if (act.snapshotting === p) delete act.snapshotting;
    });
    act.snapshotting = p;
    return p;
  }

  private async writeSnapshot(act: Activation): Promise<void> {
    const behavior = this.o.behaviors[act.ref.kind]!;
    const seq = act.seq;
    const position = behavior.sideLog?.position(act.state);
    const unsaved = act.unsaved;
    delete act.unsaved;
    let data = behavior.toSnapshot(act.state);
    // The snapshot drops the journal it covers: unacknowledged outbox entries ride along.
    if ((act.outbox !== null && act.outbox.size) || act.handoffs?.size) {
      const env: { s: string; o: [number, OutEvent[]][]; h?: [number, Handoff[]][] } = {
        s: data,
        o: act.outbox === null ? [] : [...act.outbox.entries()],
      };
      if (act.handoffs?.size) env.h = [...act.handoffs.entries()];
      data = ENVELOPE + JSON.stringify(env);
    }
    try {
      await this.o.store.saveSnapshot(act.shard, act.epoch, act.id, { seq, data });
      act.snapshotSeq = Math.max(act.snapshotSeq, seq);
      this.sizeSnapshots(act, data.length);
      this.stats.snapshots++;
      if (position !== undefined) this.o.hooks.sideSaved?.(act, position);
    } catch (err) {
      if (err instanceof FencedError) this.o.hooks.fenced(act.shard);
      // Otherwise the journal (and the side log) still hold everything; the next snapshot retries.
      if (unsaved !== undefined) {
        const later = act.unsaved as Activation["unsaved"];
        act.unsaved = {
          n: unsaved.n + (later?.n ?? 0),
          since: Math.min(unsaved.since, later?.since ?? Infinity),
        };
      }
    }
  }

  /** Space snapshots by the size of the last one (Activation.snapshotEvery). */
  private sizeSnapshots(act: Activation, chars: number): void {
    const every = Math.ceil(chars / SNAPSHOT_CHARS_PER_FACT);
    if (every > this.snapshotEvery) act.snapshotEvery = every;
    else delete act.snapshotEvery;
  }

  /** ctx.getRecords of a turn: the actor's shard's records (never fenced: reads). */
  getRecords(act: Activation, keys: string[]): Promise<Array<Uint8Array | null>> {
    return this.o.store.getRecords(act.shard, keys);
  }

  /** ctx.rangeIndex of a turn. */
  rangeIndex(act: Activation, index: string, range: IndexRange): Promise<number[]> {
    return this.o.store.rangeIndex(act.shard, index, range);
  }

  /** ctx.indexSize of a turn. */
  indexSize(act: Activation, index: string): Promise<number> {
    return this.o.store.indexSize(act.shard, index);
  }

  /** The activation ends: parked turns and waiting readers go to the next one ("moved": the caller retries). */
  private releaseParked(act: Activation): void {
    const waiting = act.readWaiting;
    if (waiting !== undefined) {
      delete act.readWaiting;
      for (const t of waiting) t.reject(new MovedError(act.shard));
    }
    const parked = act.parked;
    if (parked === null) return;
    act.parked = null;
    for (const t of parked.values()) t.reject(new MovedError(act.shard));
  }

  /**
   * How long an activation stays without a turn before it is passivated:
   * the catalog's `idleMs` when given (tests, benchmarks), else its kind's
   * (Behavior.idleMs), else five minutes.
   */
  private idleAfter(act: Activation): number {
    return this.o.idleMs ?? this.o.behaviors[act.ref.kind]?.idleMs ?? this.idleMs;
  }

  private scheduleIdleCheck(act: Activation): void {
    // A shared callback with the activation as its argument: no closure per check.
    this.o.wheel.schedule(this.idleAfter(act), this.idleCheck, act);
  }

  private readonly idleCheck = (act: Activation): void => {
    if (act.dead || this.acts.get(act.id) !== act) return;
    const idleFor = this.now() - act.lastUsed;
    if (
      act.running ||
      act.mailbox.length ||
      act.parked?.size ||
      act.reading ||
      act.readWaiting ||
      idleFor < this.idleAfter(act)
    ) {
      this.scheduleIdleCheck(act);
      return;
    }
    void this.passivate(act);
  };

  private async passivate(act: Activation): Promise<void> {
    await this.snapshot(act);
    // A message may have arrived while the snapshot was written (or it failed).
    if (
      act.running ||
      act.mailbox.length ||
      act.parked?.size ||
      act.reading ||
      act.readWaiting ||
      act.unsaved !== undefined
    ) {
      this.scheduleIdleCheck(act);
      return;
    }
    if (this.acts.get(act.id) === act) this.acts.delete(act.id);
    act.dead = true;
    this.stats.passivations++;
    metrics.passivated(act.ref.kind);
  }

  /**
   * Stop serving a shard. Graceful (drain): wait for running turns, snapshot
   * dirty actors, then forget them. Not graceful (lease lost): forget at
   * once; their waiting turns answer "moved".
   */
  async dropShard(shard: number, graceful: boolean): Promise<void> {
    if (graceful) {
      // The shard's activations stay reachable until all of them are idle at
      // once: a draining turn may call an actor of its own shard (the node
      // serves such calls here, see NodeRuntime.context), and removing the
      // callee first would make it wait for the shard's next owner, which
      // waits for this drain. Once all are idle no turn of the shard runs, so
      // nothing new starts on it; the loop only catches activations such calls
      // created meanwhile.
      for (;;) {
        const victims = [...this.acts.values()].filter((a) => a.shard === shard);
        if (victims.length === 0) return;
        while (victims.some((a) => !a.dead && (a.running || !a.ready || a.mailbox.length > 0 || a.reading)))
          await new Promise((r) => setTimeout(r, 5));
        for (const a of victims) if (this.acts.get(a.id) === a) this.acts.delete(a.id);
        await Promise.all(
          victims.map(async (a) => {
            await this.snapshot(a);
            a.dead = true;
            this.releaseParked(a);
          }),
        );
      }
    }
    const victims = [...this.acts.values()].filter((a) => a.shard === shard);
    for (const a of victims) {
      this.acts.delete(a.id);
      a.dead = true;
      for (const t of a.mailbox.splice(0)) t.reject(new MovedError(shard));
      this.releaseParked(a);
    }
  }
}
