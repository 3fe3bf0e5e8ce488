// Event routing: every Decision.events {event, userIds} an actor of this node
// emits reaches the queue actor of each recipient (one per user, on the
// user's shard; actors/queue/state.ts).
//
// Recipients are grouped by shard. Shards this node serves get one local
// `deliver` per user (a direct mailbox push, no network). The batches for
// other shards go out at the end of the tick, ONE request per node that
// owns them (as far as this node knows: the node that last answered for
// the shard), addressed to the router of one of them (ref {kind: "queue",
// key: "~router.<shard>"}, explicit shard). The node that gets it delivers
// the batches of the shards it serves and names the others, which go out
// again on their own. Requests go through the actor transport, so a shard
// that is changing owner is retried ("moved") until the new owner answers.
// Per destination shard at most one request is in flight; events emitted
// meanwhile ride on the next one, which keeps each emitter's events in
// order and batches fan-out under load.
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
import { shardOf } from "./addressing.ts";
import type { Store } from "./storage/contract.ts";
import type { ActorRequest, ActorResponse } from "./transport/contract.ts";
import { MacrotaskBudget } from "./transport/retry.ts";
import { componentLogger, type Logger } from "./log.ts";
import { EventLog } from "./event-log.ts";
import { LiveQueues } from "./live-queues.ts";

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
   * The same request to an actor of a shard served here, decided at once
   * when it can be (NodeRuntime.requestNow): its reply, or undefined (then
   * `request` it). Absent: always `request`.
   */
  requestNow?(req: ActorRequest): { reply: Value } | undefined;
  /**
   * Where the registry of users with queues (LiveQueues) is kept, and the
   * epoch a served shard is written under. Without them every recipient is
   * delivered to (unit tests with a fake host).
   */
  readonly store?: Store;
  epoch?(shard: number): number | null;
}

/**
 * Who of a shard gets an event besides the users it lists: the subscribers
 * with a queue of a channel (OutEvent.channel), every user of the realm with
 * a queue (REALM, OutEvent.everyone), or nobody else (null).
 */
type Audience = number | typeof REALM | null;
const REALM = "realm";

/**
 * One event of a batch that has an audience: the event, the users of the
 * batch's shard it names, who else of the shard gets it, and the users of
 * the shard the audience leaves out (OutEvent.except; absent: none).
 */
type Entry = [event: Obj, users: number[], audience: Audience, except?: number[]];

/** One emitting turn's events for the users of one realm on one shard. */
interface Batch {
  /** Resolved with whether the shard acknowledged the batch (not sent over the wire). */
  done?: (ok: boolean) => void;
  realm: number;
  key: string;
  /** The shard of the batch's queue actors (absent: the shard of the first user). */
  shard?: number;
  /** user id -> events in order; a batch without a channel audience. */
  users?: Record<string, Obj[]>;
  /**
   * The events in order, when one of them has an audience: the shard's
   * owner expands them from its registry of queues and its index of their
   * users' subscriptions, so the batch's size does not grow with the
   * channel or the realm.
   */
  entries?: Entry[];
}

/**
 * How a local delivery of a batch ended: acknowledged by every queue actor
 * (true), not (false: its emitter's outbox gives it again), or not looked
 * at, since its shard is not served here any more (MOVED: another node's
 * batch, which its sender sends again at once).
 */
type Outcome = boolean | typeof MOVED;
const MOVED = "moved";

interface LocalJob {
  shard: number;
  batch: Batch;
  forward: boolean;
  done: (outcome: Outcome) => void;
}

export function isRouterRef(ref: ActorRef): boolean {
  return ref.kind === "queue" && ref.key.startsWith(ROUTER_PREFIX);
}

export class EventRouter {
  private seq = 0;
  private readonly boot = Date.now().toString(36);
  private readonly pending = new Map<number, Batch[]>();
  private readonly inflight = new Set<number>();
  /** Shard -> the node that last answered for it: remote batches are grouped by it. */
  private readonly owners = new Map<number, string>();
  /** A flush of the waiting remote batches is due at the end of this tick. */
  private flushing = false;
  /** Users with queues, per shard served here: the others are skipped (LiveQueues). */
  readonly live: LiveQueues;
  /** Each batch for a shard served here, stored once before its users are told (event-log.ts). */
  readonly log: EventLog;
  /** Local deliveries started per macrotask, over all shards (LOCAL_CHUNK). */
  private readonly chunks = new MacrotaskBudget(LOCAL_CHUNK);
  /** Batches for shards served here, in arrival order, waiting for `pump`. */
  private readonly local: LocalJob[] = [];
  /** Shard -> how many of its batches wait in `local`. */
  private readonly waiting = new Map<number, number>();
  private pumping = false;
  /**
   * `local`: deliveries started; `skipped`: listed users without a queue;
   * `fanned`: users reached through a channel audience (all with a queue);
   * `inline`: local deliveries an idle queue actor took at once (requestNow).
   */
  readonly stats = { local: 0, inline: 0, remoteRequests: 0, failures: 0, skipped: 0, fanned: 0 };

  constructor(private readonly host: RouterHost) {
    this.live = new LiveQueues(host);
    this.log = new EventLog(host);
  }

  /**
   * Route one emitting turn's (or one outbox entry's) events. `key` names
   * them for de-duplication (null: a fresh key). Resolves true when every
   * recipient's queue actor acknowledged them.
   */
  route = (ref: ActorRef, events: OutEvent[], key: string | null = null): Promise<boolean> => {
    const batchKey = key ?? `${this.host.nodeId}.${this.boot}.${++this.seq}`;
    const batches = new Map<number, Batch>();
    if (events.some((e) => e.channel !== undefined || e.everyone)) {
      // An audience reaches every shard: whoever of the channel or the realm
      // has a queue is known only there. O(shards + listed users) per event.
      for (const { event, userIds, channel, everyone, except } of events) {
        const audience: Audience = everyone ? REALM : (channel ?? null);
        const mine = new Map<number, number[]>();
        for (const userId of new Set(userIds)) {
          const shard = this.queueShard(ref.realm, userId);
          const list = mine.get(shard);
          if (list) list.push(userId);
          else mine.set(shard, [userId]);
        }
        if (audience !== null)
          for (let s = 0; s < this.host.shards; s++)
            if (!mine.has(s) && (batches.has(s) || !this.reachesNobody(s, ref.realm, audience)))
              mine.set(s, []);
        const left = new Map<number, number[]>();
        if (audience !== null)
          for (const userId of new Set(except)) {
            const shard = this.queueShard(ref.realm, userId);
            const list = left.get(shard);
            if (list) list.push(userId);
            else left.set(shard, [userId]);
          }
        for (const [shard, users] of mine) {
          let b = batches.get(shard);
          if (!b) batches.set(shard, (b = { realm: ref.realm, key: batchKey, shard, entries: [] }));
          const out = left.get(shard);
          b.entries!.push(out ? [event, users, audience, out] : [event, users, audience]);
        }
      }
    } else {
      for (const { event, userIds } of events) {
        for (const userId of new Set(userIds)) {
          const shard = this.queueShard(ref.realm, userId);
          let b = batches.get(shard);
          if (!b) batches.set(shard, (b = { realm: ref.realm, key: batchKey, shard, users: {} }));
          (b.users![String(userId)] ??= []).push(event);
        }
      }
    }
    const acks: Promise<Outcome>[] = [];
    for (const [shard, batch] of batches) {
      // A shard this node has just taken over may still have remote batches
      // in flight: queue behind them to keep the order. Likewise behind a
      // shard's batches still waiting in the pump, which decides for them.
      if (this.waiting.has(shard) || (this.host.serves(shard) && !this.inflight.has(shard)))
        acks.push(this.deliverLocal(shard, batch, true));
      else acks.push(new Promise((res) => this.enqueueRemote(shard, { ...batch, done: res })));
    }
    return Promise.all(acks).then((oks) => oks.every((ok) => ok === true));
  };

  /**
   * Whether an audience entry that lists no user of `shard` would reach
   * nobody there, as far as this node knows for sure now: the shard is
   * served here, its registry and index are complete, and none of its
   * batches wait in the pump, whose expansions may still change the index
   * (a subscription routed before this event). Such an entry is left out,
   * so that a send to a small channel or a realm event costs O(shards it
   * reaches) here instead of a batch per shard. The caller checks the turn's
   * own batches (an earlier event of the same turn) the same way.
   */
  private reachesNobody(shard: number, realm: number, audience: number | typeof REALM): boolean {
    if (!this.host.serves(shard) || this.inflight.has(shard) || this.waiting.has(shard)) return false;
    if (!this.live.readyNow(shard)) return false;
    const reached =
      audience === REALM ? this.live.realmUsers(shard, realm) : this.live.subscribers(shard, realm, audience);
    return reached === undefined || reached.size === 0;
  }

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
    this.log.acquired(shard);
  }

  /** This node stops serving `shard`. */
  forgetShard(shard: number): void {
    this.live.forget(shard);
    this.log.forget(shard);
  }

  /** The shard of a user's queue actor, remembered: every event to the user needs it. */
  private readonly shardCache = new Map<number, Map<number, number>>();
  private queueShard(realm: number, userId: number): number {
    let byUser = this.shardCache.get(realm);
    if (!byUser) this.shardCache.set(realm, (byUser = new Map()));
    let shard = byUser.get(userId);
    if (shard === undefined) {
      shard = shardOf(queueRef(realm, userId), this.host.shards);
      byUser.set(userId, shard);
    }
    return shard;
  }

  /**
   * Answer a router request from another node: deliver the batches of the
   * shards served here to their queue actors, and name the shards that are
   * not (the sender sends their batches again on their own).
   */
  async receive(args: Obj): Promise<Value> {
    const batches = fromWire(args);
    const moved = new Set<number>();
    const failed = new Set<number>();
    await Promise.all(
      batches.map(async (b) => {
        const shard = this.shardOfBatch(b);
        if (moved.has(shard) || !this.host.serves(shard)) return void moved.add(shard);
        // Reaches nobody here (see route): acknowledged without a turn in the pump.
        const empty = ([, users, audience]: Entry) =>
          audience !== null && !users.length && this.reachesNobody(shard, b.realm, audience);
        if (b.entries?.every(empty)) return;
        const outcome = await this.deliverLocal(shard, b, false);
        if (outcome === MOVED) moved.add(shard);
        else if (!outcome) failed.add(shard);
      }),
    );
    for (const shard of moved) failed.delete(shard);
    return { ok: failed.size === 0, node: this.host.nodeId, moved: [...moved], failed: [...failed] };
  }

  /** A batch's users all have their queue actor on one shard (route groups them so). */
  private shardOfBatch(batch: Batch): number {
    if (typeof batch.shard === "number") return batch.shard;
    for (const userId in batch.users) return shardOf(queueRef(batch.realm, Number(userId)), this.host.shards);
    return 0;
  }

  /**
   * The users of a batch with an audience and their events in order, at the
   * shard's owner: the listed users, for a channel entry every user of the
   * shard with a queue subscribed to it, and for a realm entry every user
   * of the realm with a queue on the shard. Null when the shard's index
   * cannot be had (the batch is then not acknowledged, and its emitter's
   * outbox gives it again).
   */
  private async expand(shard: number, batch: Batch): Promise<Map<number, Obj[]> | null> {
    // Checked again once ready() settled, since the continuation comes
    // later: a shard forgotten meanwhile (it moved) has an empty registry,
    // and the batch would be acknowledged with nobody reached.
    if (!(await this.live.ready(shard)) || !this.live.holds(shard)) return null;
    const per = new Map<number, Obj[]>();
    const add = (userId: number, event: Obj) => {
      const list = per.get(userId);
      if (list) list.push(event);
      else per.set(userId, [event]);
    };
    for (const [event, users, audience, except] of batch.entries!) {
      if (audience === null) {
        for (const userId of users) {
          this.live.track(shard, batch.realm, userId, event);
          add(userId, event);
        }
        continue;
      }
      const reached =
        audience === REALM
          ? this.live.realmUsers(shard, batch.realm)
          : this.live.subscribers(shard, batch.realm, audience);
      const out = except && except.length ? new Set(except) : null;
      for (const userId of users) if (!reached?.has(userId)) add(userId, event);
      if (reached)
        for (const userId of reached) {
          if (out?.has(userId)) continue;
          this.stats.fanned++;
          add(userId, event);
        }
    }
    return per;
  }

  /**
   * One `deliver` per user, through `pump`. `forward`: a batch this node
   * routed, which goes the remote way if the shard has moved by its turn. A
   * batch another node sent here (`receive`) then resolves MOVED, and its
   * sender sends it again: forwarding it from here could queue it behind
   * this node's own batches in flight to the sender.
   */
  private deliverLocal(shard: number, batch: Batch, forward: boolean): Promise<Outcome> {
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
   * this node routed whose shard it no longer serves by its turn (or that
   * has remote batches in flight again) goes the remote way, and the
   * shard's later batches queue behind it there (route sends them to the
   * pump while one waits), so the order holds across a move; another
   * node's batch goes back to its sender (`away`).
   */
  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      for (let job = this.local.shift(); job !== undefined; job = this.local.shift()) {
        const { shard: batchShard, batch, forward, done } = job;
        if (!this.host.serves(batchShard) || (forward && this.inflight.has(batchShard))) {
          await this.away(job);
          continue;
        }
        const jobs: Promise<boolean>[] = [];
        // Every user of a batch has their queue actor on the batch's shard (route groups them so).
        const shard = batchShard;
        const logged = this.log.enabled;
        if (logged && !this.log.isReady(shard) && !(await this.log.ready(shard))) {
          await this.undelivered(job);
          continue;
        }
        let users: Iterable<[string | number, Obj[]]>;
        if (batch.entries) {
          const per = await this.expand(shard, batch);
          if (per === null) {
            await this.undelivered(job);
            continue;
          }
          users = per;
        } else {
          users = Object.entries(batch.users ?? {});
        }
        if (logged) {
          this.logBatch(shard, batch, users, forward, done);
          continue;
        }
        for (const [userId, events] of users) {
          if (this.live.skips(shard, batch.realm, Number(userId))) {
            this.stats.skipped++;
            continue;
          }
          const pause = this.chunks.spend();
          if (pause !== undefined) await pause;
          if (!batch.entries) for (const e of events) this.live.track(shard, batch.realm, Number(userId), e);
          this.stats.local++;
          jobs.push(
            this.deliverUser(queueRef(batch.realm, Number(userId)), shard, { key: batch.key, events }),
          );
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

  /**
   * A batch for a shard served here: the users it reaches (those with a
   * queue), stored once in the shard's event log, and each user's queue
   * actor told the entry's position once the entry is durable (it reads
   * the events from the log). The append is not awaited here: the pump
   * goes on with the next batch, whose entry may share the append, and the
   * shard's later batches stay behind this one in the pump until its
   * append is done, since a failed append sends it the remote way (the
   * shard has moved, usually). A poll that comes after the emitter's reply
   * but before the delivery finds the entry in the log's index and applies
   * it first (actors/queue/behavior.ts, poll).
   */
  private logBatch(
    shard: number,
    batch: Batch,
    users: Iterable<[string | number, Obj[]]>,
    forward: boolean,
    done: (outcome: Outcome) => void,
  ): void {
    const listed: number[] = [];
    const some: [number, Obj[]][] = [];
    for (const [userId, events] of users) {
      if (this.live.skips(shard, batch.realm, Number(userId))) {
        this.stats.skipped++;
        continue;
      }
      if (!batch.entries) for (const e of events) this.live.track(shard, batch.realm, Number(userId), e);
      listed.push(Number(userId));
      some.push([Number(userId), events]);
    }
    if (listed.length === 0) {
      this.leftPump(shard);
      done(true);
      return;
    }
    const { entry, durable } = this.log.append(shard, batch.realm, batch.key, some);
    durable.then(
      () => {
        this.leftPump(shard);
        void this.deliverEntry(shard, batch.realm, entry, listed).then(() => done(true));
      },
      () => {
        if (forward) this.enqueueRemote(shard, { ...batch, done });
        else done(this.host.serves(shard) ? false : MOVED);
        this.leftPump(shard);
      },
    );
  }

  /**
   * A durable log entry to its users' queue actors, LOCAL_CHUNK users per
   * macrotask: an idle queue actor takes it at once (its `deliver` decides
   * synchronously, NodeRuntime.requestNow), a busy one by a request behind
   * its turns. Resolves once every one took it or was given up on: an actor
   * that misses it (or is not active) applies the entry at its next
   * delivery, poll or activation, so a failed attempt only delays it.
   */
  private async deliverEntry(shard: number, realm: number, entry: number, users: number[]): Promise<void> {
    const args: Obj = { entry };
    const requests: Promise<boolean>[] = [];
    for (const userId of users) {
      const pause = this.chunks.spend();
      if (pause !== undefined) await pause;
      this.stats.local++;
      const ref = queueRef(realm, userId);
      if (this.host.requestNow?.(deliverRequest(ref, shard, args)) !== undefined) this.stats.inline++;
      else requests.push(this.deliverUser(ref, shard, args));
    }
    await Promise.all(requests);
  }

  /**
   * A batch whose shard is not served here by its turn in the pump (or,
   * routed here, whose shard has remote batches in flight): to the shard's
   * owner, behind the batches before it.
   */
  private async away(job: LocalJob): Promise<void> {
    if (job.forward) {
      // An earlier batch whose log append is still in flight goes the
      // remote way if that append fails: this one must follow it.
      if (this.log.busy(job.shard)) await this.log.settled(job.shard);
      this.enqueueRemote(job.shard, { ...job.batch, done: job.done });
    } else job.done(MOVED);
    this.leftPump(job.shard);
  }

  /**
   * A batch the pump could not deliver (its shard's log or index could not
   * be had): to the owner if the shard moved meanwhile, else not
   * acknowledged (its emitter's outbox gives it again).
   */
  private async undelivered(job: LocalJob): Promise<void> {
    if (!this.host.serves(job.shard)) return this.away(job);
    this.leftPump(job.shard);
    job.done(false);
  }

  /** One batch of `shard` has left the pump. */
  private leftPump(shard: number): void {
    const left = this.waiting.get(shard)! - 1;
    if (left === 0) this.waiting.delete(shard);
    else this.waiting.set(shard, left);
  }

  /**
   * True once the queue actor (on `shard`) applied, or refused for good, the
   * events; false when given up.
   */
  private async deliverUser(ref: ActorRef, shard: number, args: Obj): Promise<boolean> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const res = await this.host.request(deliverRequest(ref, shard, args));
      if (res.ok) return true;
      if (res.kind === "zulip") return true; // refused for good: sending again would not help
    }
    this.stats.failures++;
    log().warn(
      { realm: ref.realm, key: ref.key },
      args.entry === undefined
        ? "event delivery failed; left in the emitter's outbox"
        : "event delivery failed; the queue actor applies the log entry at its next turn that reads the log",
    );
    return false;
  }

  private enqueueRemote(shard: number, batch: Batch): void {
    let q = this.pending.get(shard);
    if (!q) this.pending.set(shard, (q = []));
    q.push(batch);
    if (!this.inflight.has(shard)) this.scheduleFlush();
  }

  /**
   * Send what waits at the end of this tick: a turn's batches for many
   * shards go out together, one request per node that owns them.
   */
  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => {
      this.flushing = false;
      const groups = new Map<string, number[]>();
      for (const shard of this.pending.keys()) {
        if (this.inflight.has(shard)) continue;
        // Unknown owner: a request of its own, whose answer names the owner.
        const owner = this.owners.get(shard) ?? `~${shard}`;
        const group = groups.get(owner);
        if (group) group.push(shard);
        else groups.set(owner, [shard]);
      }
      for (const shards of groups.values()) void this.flush(shards);
    });
  }

  /**
   * One request with the waiting batches of `shards`, addressed to the
   * first one's router: its owner delivers the batches of the shards it
   * serves and names the others, which go back to the front of their
   * queues and out again on their own (the transport then finds their
   * owner). Per shard one request at a time, so each shard's batches keep
   * their order.
   */
  private async flush(shards: number[]): Promise<void> {
    const taken: [number, Batch[]][] = [];
    for (const shard of shards) {
      taken.push([shard, this.pending.get(shard)!]);
      this.pending.delete(shard);
      this.inflight.add(shard);
    }
    const answer = await this.sendRemote(
      shards[0]!,
      taken.flatMap(([, batches]) => batches),
    ).catch((): RemoteAnswer => ({ node: null, moved: new Set(), failed: "all" }));
    for (const [shard, batches] of taken) {
      this.inflight.delete(shard);
      if (answer.moved.has(shard)) {
        this.owners.delete(shard);
        this.pending.set(shard, [...batches, ...(this.pending.get(shard) ?? [])]);
        continue;
      }
      if (answer.node !== null) this.owners.set(shard, answer.node);
      const ok = answer.failed !== "all" && !answer.failed.has(shard);
      for (const b of batches) b.done?.(ok);
    }
    if (this.pending.size) this.scheduleFlush();
  }

  private async sendRemote(shard: number, batches: Batch[]): Promise<RemoteAnswer> {
    const ref: ActorRef = { kind: "queue", realm: 0, key: `${ROUTER_PREFIX}${shard}` };
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      this.stats.remoteRequests++;
      const res = await this.host.request({
        ref,
        shard,
        method: ROUTER_METHOD,
        args: toWire(batches),
        caller: null,
        deadline: Date.now() + ATTEMPT_MS,
        replyGraceMs: 0,
      });
      if (res.ok) return readAnswer(res.value);
      if (res.kind === "zulip") return { node: null, moved: new Set(), failed: new Set() };
    }
    this.stats.failures++;
    log().warn({ shard, batches: batches.length }, "event fan-out failed; batches left in outboxes");
    return { node: null, moved: new Set(), failed: "all" };
  }
}

/** One attempt of a `deliver` to a queue actor. */
function deliverRequest(ref: ActorRef, shard: number, args: Obj): ActorRequest {
  return {
    ref,
    shard,
    method: "deliver",
    args,
    caller: null,
    deadline: Date.now() + ATTEMPT_MS,
    replyGraceMs: 0,
  };
}

/**
 * A router request's args: the batches, with each event replaced by its
 * index in `events`, where it is written once. A message to a channel goes
 * to every shard, so its batches for one node all carry the same event:
 * written out in each, its JSON was most of a cluster send's cost.
 */
function toWire(batches: Batch[]): Obj {
  const events: Obj[] = [];
  const index = new Map<Obj, number>();
  const at = (event: Obj): number => {
    let i = index.get(event);
    if (i === undefined) index.set(event, (i = events.push(event) - 1));
    return i;
  };
  const wire = batches.map(({ done: _done, entries, users, ...rest }) => {
    const out: Obj = { ...rest };
    if (entries) out.entries = entries.map(([event, ...more]) => [at(event), ...more] as Value);
    if (users) {
      const per: Obj = {};
      for (const userId in users) per[userId] = users[userId]!.map(at);
      out.users = per;
    }
    return out;
  });
  return { events, batches: wire };
}

/** The batches of a router request (toWire); throws on an event index the request has not. */
function fromWire(args: Obj): Batch[] {
  const batches = (Array.isArray(args.batches) ? args.batches : []) as unknown as Batch[];
  const events = args.events;
  if (!Array.isArray(events)) return batches; // a node of an older version: events inline
  const event = (i: unknown): Obj => {
    const e = typeof i === "number" ? events[i] : undefined;
    if (e === null || typeof e !== "object" || Array.isArray(e)) throw new Error(`no event ${String(i)}`);
    return e;
  };
  for (const b of batches) {
    if (b.entries) for (const entry of b.entries) entry[0] = event(entry[0]);
    if (b.users) for (const userId in b.users) b.users[userId] = b.users[userId]!.map(event);
  }
  return batches;
}

/** A node's answer to a router request (EventRouter.receive). */
interface RemoteAnswer {
  /** The node that answered: it serves the shards not in `moved`. */
  node: string | null;
  /** Shards the node does not serve: their batches were not looked at. */
  moved: Set<number>;
  /** Shards whose batches were not all acknowledged ("all": none was). */
  failed: Set<number> | "all";
}

function readAnswer(value: Value | undefined): RemoteAnswer {
  const v = (value ?? {}) as Obj;
  const shards = (list: Value[]) => new Set(list.filter((s): s is number => typeof s === "number"));
  return {
    node: typeof v.node === "string" ? v.node : null,
    moved: shards(Array.isArray(v.moved) ? v.moved : []),
    // Without `failed` (a node of an older version): all or nothing.
    failed: Array.isArray(v.failed) ? shards(v.failed) : v.ok === false ? "all" : new Set(),
  };
}
