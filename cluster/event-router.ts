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
// applied once.
//
// Outbox: the runtime journals a turn's events in the same append as its
// facts (catalog.ts) and hands them here with a key derived from that journal
// entry ("<actor id>#<seq>"). The promise `route` returns resolves true once
// every recipient's queue actor has the events; only then is the outbox entry
// marked sent. An activation that finds unacknowledged entries (its previous
// node died between the append and the fan-out) routes them again under the
// same key, and the queue actors drop what they already applied.

import { queueRef } from "../actors/index.ts";
import type { ActorRef, Obj, OutEvent, Value } from "../actors/types.ts";
import { actorId, shardOf } from "./addressing.ts";
import type { Store } from "./storage/contract.ts";
import type { ActorRequest, ActorResponse } from "./transport/contract.ts";
import { nextMacrotask } from "./transport/retry.ts";
import { componentLogger, type Logger } from "./log.ts";

/** Read at each use (errors are rare): the root logger may be replaced (setRootLogger). */
const log = (): Logger => componentLogger("event-router");

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
/** Local deliveries started per macrotask (EventRouter.pump). */
const LOCAL_CHUNK = 64;

export interface RouterHost {
  readonly nodeId: string;
  readonly shards: number;
  serves(shard: number): boolean;
  request(req: ActorRequest): Promise<ActorResponse>;
  /**
   * Where the registry of users with queues (LiveQueues) is kept, and the
   * epoch a served shard is written under. Without them every recipient is
   * delivered to (unit tests with a fake host).
   */
  readonly store?: Store;
  epoch?(shard: number): number | null;
}

/** One emitting turn's events for the users of one realm on one shard. */
interface Batch {
  /** Resolved with whether the shard acknowledged the batch (not sent over the wire). */
  done?: (ok: boolean) => void;
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
  private readonly pending = new Map<number, Batch[]>();
  private readonly inflight = new Set<number>();
  /** Users with queues, per shard served here: the others are skipped (LiveQueues). */
  readonly live: LiveQueues;
  /** Batches for shards served here, in arrival order, waiting for `pump`. */
  private readonly local: { shard: number; batch: Batch; forward: boolean; done: (ok: boolean) => void }[] =
    [];
  /** Shard -> how many of its batches wait in `local`. */
  private readonly waiting = new Map<number, number>();
  private pumping = false;
  readonly stats = { local: 0, remoteRequests: 0, failures: 0, skipped: 0 };

  constructor(private readonly host: RouterHost) {
    this.live = new LiveQueues(host);
  }

  /**
   * Route one emitting turn's (or one outbox entry's) events. `key` names
   * them for de-duplication (null: a fresh key). Resolves true when every
   * recipient's queue actor acknowledged them.
   */
  route = (ref: ActorRef, events: OutEvent[], key: string | null = null): Promise<boolean> => {
    const byShard = new Map<number, Record<string, Obj[]>>();
    for (const { event, userIds } of events) {
      for (const userId of new Set(userIds)) {
        const shard = shardOf(queueRef(ref.realm, userId), this.host.shards);
        let users = byShard.get(shard);
        if (!users) byShard.set(shard, (users = {}));
        (users[String(userId)] ??= []).push(event);
      }
    }
    const batchKey = key ?? `${this.host.nodeId}.${this.boot}.${++this.seq}`;
    const acks: Promise<boolean>[] = [];
    for (const [shard, users] of byShard) {
      const batch: Batch = { realm: ref.realm, key: batchKey, users };
      // A shard this node has just taken over may still have remote batches
      // in flight: queue behind them to keep the order. Likewise behind a
      // shard's batches still waiting in the pump, which decides for them.
      if (this.waiting.has(shard) || (this.host.serves(shard) && !this.inflight.has(shard)))
        acks.push(this.deliverLocal(shard, batch, true));
      else acks.push(new Promise((res) => this.enqueueRemote(shard, { ...batch, done: res })));
    }
    return Promise.all(acks).then((oks) => oks.every(Boolean));
  };

  /**
   * A queue actor of `shard` (served here) has, or has no, queues: its
   * state is loaded, or a batch of its facts is durable. Keeps the registry
   * true (a user added earlier by a lost write, or removed by a lost one).
   */
  noteQueues(ref: ActorRef, shard: number, has: boolean): void {
    const key = `${ref.realm}:${ref.key}`;
    if (has) this.live.add(shard, key).catch(() => {});
    else this.live.remove(shard, key);
  }

  /**
   * A queue actor is about to append facts; resolves when they may be
   * appended. A registration waits until the user is in the registry for
   * good, so no node skips a user who has a queue.
   */
  beforeQueueAppend(ref: ActorRef, shard: number, facts: readonly Obj[]): Promise<void> | undefined {
    for (const f of facts)
      if (f.type === "registered") return this.live.add(shard, `${ref.realm}:${ref.key}`);
    return undefined;
  }

  /** This node has taken `shard` over: load whom it must deliver to. */
  acquiredShard(shard: number): void {
    this.live.acquired(shard);
  }

  /** This node stops serving `shard`. */
  forgetShard(shard: number): void {
    this.live.forget(shard);
  }

  /** Answer a router request from another node: deliver to the local queue actors. */
  async receive(args: Obj): Promise<Value> {
    const batches = (Array.isArray(args.batches) ? args.batches : []) as unknown as Batch[];
    const oks = await Promise.all(batches.map((b) => this.deliverLocal(this.shardOfBatch(b), b, false)));
    return { ok: oks.every(Boolean) };
  }

  /** A batch's users all have their queue actor on one shard (route groups them so). */
  private shardOfBatch(batch: Batch): number {
    for (const userId in batch.users) return shardOf(queueRef(batch.realm, Number(userId)), this.host.shards);
    return 0;
  }

  /**
   * One `deliver` per user, through `pump`. `forward`: a batch this node
   * routed, which goes the remote way if the shard has moved by its turn; a
   * batch another node sent here (`receive`) is delivered per user, each
   * request finding the shard's owner itself, since forwarding it could
   * queue it behind this node's own batches in flight to the sender.
   */
  private deliverLocal(shard: number, batch: Batch, forward: boolean): Promise<boolean> {
    return new Promise((done) => {
      this.local.push({ shard, batch, forward, done });
      this.waiting.set(shard, (this.waiting.get(shard) ?? 0) + 1);
      if (!this.pumping) void this.pump();
    });
  }

  /**
   * Start the local deliveries in arrival order, LOCAL_CHUNK users per
   * macrotask. A request reaches its mailbox synchronously when this node
   * serves the shard, and one pump starts them all, so every queue actor
   * gets batches in order. The pause between chunks lets the first queue
   * actors' journal commit and the responses to their parked polls go out
   * while later chunks are decided: a message to a thousand local users
   * otherwise holds every poll until all thousand turns and their one
   * commit are done, and the clients start reading only then. A batch
   * whose shard this node no longer serves by its turn (or that has remote
   * batches in flight again) goes the remote way, and the shard's later
   * batches queue behind it there (route sends them to the pump while one
   * waits), so the order holds across a move.
   */
  private async pump(): Promise<void> {
    this.pumping = true;
    let started = 0;
    try {
      for (let job = this.local.shift(); job !== undefined; job = this.local.shift()) {
        const { shard: batchShard, batch, forward, done } = job;
        if (forward && (!this.host.serves(batchShard) || this.inflight.has(batchShard))) {
          this.enqueueRemote(batchShard, { ...batch, done });
          this.leftPump(batchShard);
          continue;
        }
        const jobs: Promise<boolean>[] = [];
        for (const [userId, events] of Object.entries(batch.users)) {
          const ref = queueRef(batch.realm, Number(userId));
          const shard = shardOf(ref, this.host.shards);
          if (this.host.serves(shard) && this.live.skips(shard, `${batch.realm}:${userId}`)) {
            this.stats.skipped++;
            continue;
          }
          this.stats.local++;
          jobs.push(this.deliverUser(ref, batch.key, events));
          if (++started === LOCAL_CHUNK) {
            started = 0;
            await nextMacrotask();
          }
        }
        // Only now: until every user of the batch has its delivery started,
        // the shard's later batches must wait in the pump behind it.
        this.leftPump(batchShard);
        void Promise.all(jobs).then((oks) => done(oks.every(Boolean)));
      }
    } finally {
      this.pumping = false;
    }
  }

  /** One batch of `shard` has left the pump. */
  private leftPump(shard: number): void {
    const left = this.waiting.get(shard)! - 1;
    if (left === 0) this.waiting.delete(shard);
    else this.waiting.set(shard, left);
  }

  /** True once the queue actor applied (or refused for good) the events. */
  private async deliverUser(ref: ActorRef, key: string, events: Obj[]): Promise<boolean> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const res = await this.host.request({
        ref,
        shard: shardOf(ref, this.host.shards),
        method: "deliver",
        args: { key, events },
        caller: null,
        deadline: Date.now() + ATTEMPT_MS,
        replyGraceMs: 0,
      });
      if (res.ok) return true;
      if (res.kind === "zulip") return true; // refused for good: sending again would not help
    }
    this.stats.failures++;
    log().warn({ realm: ref.realm, key: ref.key }, "event delivery failed; left in the emitter's outbox");
    return false;
  }

  private enqueueRemote(shard: number, batch: Batch): void {
    let q = this.pending.get(shard);
    if (!q) this.pending.set(shard, (q = []));
    q.push(batch);
    if (!this.inflight.has(shard)) void this.flush(shard);
  }

  private async flush(shard: number): Promise<void> {
    this.inflight.add(shard);
    try {
      for (;;) {
        const batches = this.pending.get(shard);
        if (!batches || batches.length === 0) break;
        this.pending.delete(shard);
        const ok = await this.sendRemote(shard, batches);
        for (const b of batches) b.done?.(ok);
      }
    } finally {
      this.inflight.delete(shard);
    }
  }

  private async sendRemote(shard: number, batches: Batch[]): Promise<boolean> {
    const ref: ActorRef = { kind: "queue", realm: 0, key: `${ROUTER_PREFIX}${shard}` };
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      this.stats.remoteRequests++;
      const res = await this.host.request({
        ref,
        shard,
        method: ROUTER_METHOD,
        args: { batches: batches.map(({ realm, key, users }) => ({ realm, key, users })) },
        caller: null,
        deadline: Date.now() + ATTEMPT_MS,
        replyGraceMs: 0,
      });
      if (res.ok) return (res.value as Obj | null)?.ok !== false;
      if (res.kind === "zulip") return true;
    }
    this.stats.failures++;
    log().warn({ shard, batches: batches.length }, "event fan-out failed; batches left in outboxes");
    return false;
  }
}

// ---- Users with queues, per shard ---------------------------------------------------

/** Registry journal entries between two snapshots of it. */
const LIVE_SNAPSHOT_EVERY = 500;

/** Store id of a shard's registry (journal + snapshot; no actor ever runs under it). */
export function liveQueuesId(shard: number): string {
  return actorId({ kind: "queue", realm: 0, key: `~live.${shard}` });
}

/** One registry write: [1 = has a queue / 0 = has none, "realm:user"] in order. */
type LiveOp = [0 | 1, string];

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A failed write is reported to the add that waits for it; nobody else must see an unhandled rejection.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

interface LiveShard {
  epoch: number;
  /** Loaded from the store: until then nobody of the shard is skipped. */
  loaded: boolean;
  /** Gone (shard lost, or a write failed): this object no longer speaks for the shard. */
  dead: boolean;
  /** The routing view: users with a queue, or about to get one ("realm:user"). */
  users: Set<string>;
  /** What the store holds at `seq` (a snapshot's content). */
  durable: Set<string>;
  seq: number;
  snapshotSeq: number;
  /** Changes not written yet, in order, and the promise of the write that takes them. */
  ops: LiveOp[];
  next: Deferred | null;
  writing: boolean;
  /** "realm:user" -> the write that holds its latest change, while unwritten. */
  unwritten: Map<string, Promise<void>>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * The users of each served shard who have at least one event queue, so that
 * the router skips everybody else without activating their queue actor.
 *
 * Durable, in the store beside the shard's actors (a journal of changes and
 * a snapshot), and loaded when the node acquires the shard: after kill -9
 * the next owner knows at once whom to skip, without activating anybody.
 * Rebuilding it on acquisition instead would mean loading every queue actor
 * of the shard (the store can only read an actor it is given the id of).
 *
 * It may hold a user who has no queue left (a lost removal, an expired
 * queue nobody collected): that costs one activation, whose `settled`
 * report removes the entry. It must never miss a user with a queue, so a
 * registration is appended only once the user's entry is durable
 * (`beforeAppend`), and the routing view takes the user in before that, as
 * soon as the registration is decided.
 */
export class LiveQueues {
  private readonly shards = new Map<number, LiveShard>();

  constructor(private readonly host: RouterHost) {}

  /** True when `user` of `realm` has no queue on `shard` for sure. */
  skips(shard: number, key: string): boolean {
    const s = this.shards.get(shard);
    return s !== undefined && s.loaded && !s.users.has(key);
  }

  /** Users registered on a shard (tests, inspection); null while unknown. */
  count(shard: number): number | null {
    const s = this.shards.get(shard);
    return s?.loaded ? s.users.size : null;
  }

  /** This node now serves `shard`: load its registry. */
  acquired(shard: number): void {
    const store = this.host.store;
    const epoch = this.host.epoch?.(shard) ?? null;
    if (!store || epoch === null) return;
    this.forget(shard);
    const s: LiveShard = {
      epoch,
      loaded: false,
      dead: false,
      users: new Set(),
      durable: new Set(),
      seq: 0,
      snapshotSeq: 0,
      ops: [],
      next: null,
      writing: false,
      unwritten: new Map(),
    };
    this.shards.set(shard, s);
    void this.load(store, shard, s);
  }

  /** This node no longer serves `shard`. */
  forget(shard: number): void {
    const s = this.shards.get(shard);
    if (!s) return;
    s.dead = true;
    this.shards.delete(shard);
    s.next?.reject(new Error(`shard ${shard} moved`));
    s.next = null;
  }

  /**
   * `key` has a queue: resolves once that is durable. Rejects when it could
   * not be written (the registration must then fail: see the class note).
   */
  add(shard: number, key: string): Promise<void> {
    if (!this.host.store) return Promise.resolve(); // no registry: nobody is skipped
    let s = this.shards.get(shard);
    if (!s) {
      // Dropped after a failed write, or the shard is being handed off: a
      // registration this node cannot record must not be made.
      this.acquired(shard);
      s = this.shards.get(shard);
      if (!s) return Promise.reject(new Error(`shard ${shard} is not served here`));
    }
    if (s.loaded && s.users.has(key)) return s.unwritten.get(key) ?? Promise.resolve();
    s.users.add(key);
    return this.change(shard, s, [1, key]);
  }

  /** `key` has no queue any more (best effort: a lost removal costs one activation later). */
  remove(shard: number, key: string): void {
    const s = this.shards.get(shard);
    if (!s || (s.loaded && !s.users.has(key))) return;
    s.users.delete(key);
    void this.change(shard, s, [0, key]);
  }

  private change(shard: number, s: LiveShard, op: LiveOp): Promise<void> {
    s.ops.push(op);
    const d = (s.next ??= deferred());
    s.unwritten.set(op[1], d.promise);
    const clear = () => {
      if (s.unwritten.get(op[1]) === d.promise) s.unwritten.delete(op[1]);
    };
    d.promise.then(clear, clear);
    if (s.loaded && !s.writing) void this.write(shard, s);
    return d.promise;
  }

  private async load(store: Store, shard: number, s: LiveShard): Promise<void> {
    const id = liveQueuesId(shard);
    try {
      const snap = await store.loadSnapshot(shard, id);
      const durable = new Set<string>(snap ? (JSON.parse(snap.data) as string[]) : []);
      let seq = snap ? snap.seq : 0;
      for (const e of await store.readJournal(shard, id, seq)) {
        for (const [op, key] of JSON.parse(dec.decode(e.data)) as LiveOp[]) {
          if (op === 1) durable.add(key);
          else durable.delete(key);
        }
        seq = e.seq;
      }
      if (s.dead) return;
      s.durable = durable;
      s.seq = seq;
      s.snapshotSeq = snap ? snap.seq : 0;
      // Changes made while loading come after what the store holds.
      const users = new Set(durable);
      for (const [op, key] of s.ops) {
        if (op === 1) users.add(key);
        else users.delete(key);
      }
      s.users = users;
      s.loaded = true;
      if (s.ops.length) void this.write(shard, s);
    } catch (err) {
      log().warn({ shard, err: String(err) }, "could not load the shard's queue registry; delivering to all");
      this.fail(shard, s, err);
    }
  }

  /** One append at a time per shard; changes made meanwhile share the next one. */
  private async write(shard: number, s: LiveShard): Promise<void> {
    const store = this.host.store!;
    s.writing = true;
    try {
      while (s.ops.length && !s.dead) {
        const ops = s.ops;
        const d = s.next!;
        s.ops = [];
        s.next = null;
        try {
          await store.append(shard, s.epoch, liveQueuesId(shard), s.seq + 1, [
            enc.encode(JSON.stringify(ops)),
          ]);
        } catch (err) {
          d.reject(err);
          this.fail(shard, s, err);
          return;
        }
        s.seq++;
        for (const [op, key] of ops) {
          if (op === 1) s.durable.add(key);
          else s.durable.delete(key);
        }
        d.resolve();
        if (s.seq - s.snapshotSeq >= LIVE_SNAPSHOT_EVERY) {
          const snapshot = { seq: s.seq, data: JSON.stringify([...s.durable]) };
          await store.saveSnapshot(shard, s.epoch, liveQueuesId(shard), snapshot).then(
            () => (s.snapshotSeq = snapshot.seq),
            () => {}, // the journal still holds it all; tried again after the next write
          );
        }
      }
    } finally {
      s.writing = false;
    }
  }

  /**
   * What this node knows of the shard may differ from the store now: forget
   * it (nobody of the shard is skipped) and load it again.
   */
  private fail(shard: number, s: LiveShard, err: unknown): void {
    if (s.dead) return;
    s.next?.reject(err);
    this.forget(shard);
    setTimeout(() => {
      if (!this.shards.has(shard) && this.host.serves(shard)) this.acquired(shard);
    }, 1000).unref();
  }
}
