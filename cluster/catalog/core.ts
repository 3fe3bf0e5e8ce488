// The catalog's core: the Activation and Turn types, the hooks and options
// the catalog is made with, the state its modules share (CatalogCore), and
// one turn's decision. The modules beside this one each hold one concern of
// the catalog (cluster/catalog.ts assembles them): activation.ts (activation
// and load), mailbox.ts (the mailbox and its turns), readers.ts
// (Behavior.readers), group-commit.ts (appends shared across actors),
// outbox.ts (events and hand-offs, released and retried), snapshots.ts and
// passivation.ts.

import type {
  ActorContext,
  ActorRef,
  Behavior,
  Caller,
  Decision,
  Obj,
  OutEvent,
  TurnReply,
} from "../../actors/types.ts";
import { UnavailableError } from "../runtime-errors.ts";
import type { Store } from "../storage/contract.ts";
import type { TimerHandle, TimerWheel } from "../timer-wheel.ts";
import { startTurnSpan, type Span } from "../tracing.ts";
import { metrics } from "../metrics.ts";
import { GroupCommit } from "./group-commit.ts";

export interface Turn {
  method: string;
  args: Obj;
  caller: Caller | null;
  deadline: number;
  resolve(v: TurnReply): void;
  reject(e: unknown): void;
  /** The caller's W3C traceparent when the request is sampled (cluster/tracing.ts). */
  trace?: string;
  /** The turn's span once it started (sampled requests only). */
  span?: Span | null;
  /** Set only for requests from outside the cluster (ActorContext.origin). */
  origin?: "external";
}

/**
 * One active actor. Its optional fields are added when first needed and
 * cleared by assigning `undefined`, never with `delete`: deleting a
 * property other than the last one added turns the object into a hash
 * table (V8's dictionary mode) for good, and every turn of the actor
 * then reads its fields the slow way.
 */
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
   * The Maps below are null while empty: an idle activation (of a million
   * idle ones) should not carry three empty hash tables.
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
   * the size of the last snapshot, so a big state (100,000 messages) is
   * serialized every so many facts that each fact pays a
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
  ahead: boolean;
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
export const SNAPSHOT_CHARS_PER_FACT = 2000;

/**
 * Readers (Behavior.readers) of one activation running at once; more wait
 * in order. Unbounded, 50 concurrent reads of one busy actor took the
 * event loop from its sends (embedded: 4 senders got 7 sends/s instead of
 * 18, and the reads were slower too); a few at once keep reads off the
 * writer's path and still overlap their calls to other actors. A cluster
 * node allows more (CLUSTER_READERS_PER_ACTIVATION): there a read spends
 * most of its time waiting for other nodes, and the bound, divided by that
 * wait, capped a channel's reads.
 */
export const READERS_PER_ACTIVATION = 4;
export const CLUSTER_READERS_PER_ACTIVATION = 16;

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

/** A Decision.handoffs entry. */
export interface Handoff {
  subject: string;
  data: Obj;
}

export interface CatalogHooks {
  /**
   * Called with events once the facts that produced them are durable.
   * `key` (set when the events are in the actor's outbox) identifies them
   * for de-duplication; the promise says whether every recipient
   * acknowledged them (then the outbox entry is done).
   */
  emit(ref: ActorRef, events: OutEvent[], key: string | null): Promise<boolean>;
  /**
   * Called with a batch's hand-offs once its facts are durable (`key` as for
   * `emit`, null when not journaled); true acknowledges them.
   */
  handoff?(ref: ActorRef, handoffs: Handoff[], key: string | null): Promise<boolean>;
  /**
   * Cluster-wide notices (e.g. auth cache invalidation). A promise: the
   * turn's reply waits for it (the notice is on its way to every gateway
   * before the caller hears back).
   */
  notice(subject: string, data: Obj): void | Promise<void>;
  /** The shard's lease was found stale by a write: stop serving it. */
  fenced(shard: number): void;
  /**
   * The activation's state is loaded, or a batch's facts are durable (in
   * turn order, before the batch's replies and events): e.g. the event
   * router's registry follows the actor's state.
   */
  settled?(act: Activation): void;
  /**
   * A batch's journal entries are about to be appended; the append waits
   * for the promise, and fails with it (e.g. a registration waits until the
   * event router's registry holds it).
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
  /** Readers of one activation running at once (default READERS_PER_ACTIVATION). */
  readersPerActivation?: number;
}

/** What the catalog's modules share: its options, its activations, its counters. */
export class CatalogCore {
  readonly acts = new Map<string, Activation>();
  /** Appends of unsampled turns waiting for their shard's next group commit. */
  readonly commit: GroupCommit;
  readonly now: () => number;
  readonly idleMs: number;
  readonly snapshotEvery: number;
  readonly mailboxLimit: number;
  readonly batchLimit: number;
  readonly readersPerActivation: number;
  /** Counters for inspection and metrics. */
  readonly stats = { activations: 0, passivations: 0, turns: 0, snapshots: 0, fenced: 0, entryRetries: 0 };

  constructor(readonly o: CatalogOptions) {
    this.commit = new GroupCommit(o.store);
    this.now = o.now ?? Date.now;
    this.idleMs = o.idleMs ?? 5 * 60_000;
    this.snapshotEvery = o.snapshotEvery ?? 200;
    this.mailboxLimit = o.mailboxLimit ?? 5000;
    this.batchLimit = o.batchLimit ?? 256;
    this.readersPerActivation = o.readersPerActivation ?? READERS_PER_ACTIVATION;
  }
}

/** One turn's decision, or null when the turn was answered with an error. */
export async function decide(
  c: CatalogCore,
  act: Activation,
  behavior: Behavior<unknown>,
  turn: Turn,
  state: unknown = act.state,
): Promise<Decision | null> {
  if (turn.deadline < c.now()) {
    turn.reject(new UnavailableError("deadline exceeded before the turn started"));
    return null;
  }
  const handler = behavior.handlers[turn.method];
  c.stats.turns++;
  if (!handler) {
    turn.reject(new Error(`${act.ref.kind} has no method ${turn.method}`));
    return null;
  }
  const started = performance.now();
  try {
    if (turn.trace !== undefined) turn.span = startTurnSpan(act.ref, turn.method, turn.trace, turn);
    return await handler(state, turn.args, c.o.hooks.context(act, turn), turn.caller);
  } catch (err) {
    turn.reject(err);
    return null;
  } finally {
    metrics.turn(act.ref.kind, performance.now() - started);
  }
}
