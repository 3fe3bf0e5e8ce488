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

import { channelDirectoryRef, queueRef } from "../actors/index.ts";
import type { ChannelDirectoryProtocol } from "../actors/channel-directory/index.ts";
import type { ArgsOf } from "../actors/protocol.ts";
import type { ActorRef, Obj, OutEvent, Value } from "../actors/types.ts";
import { actorId, shardOf } from "./addressing.ts";
import type { Store } from "./storage/contract.ts";
import type { ActorRequest, ActorResponse } from "./transport/contract.ts";
import { nextMacrotask } from "./transport/retry.ts";
import { componentLogger, type Logger } from "./log.ts";
import { EventLog } from "./event-log.ts";

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
  /** Local deliveries started since the last pause (LOCAL_CHUNK). */
  private chunk = 0;
  /** Batches for shards served here, in arrival order, waiting for `pump`. */
  private readonly local: LocalJob[] = [];
  /** Shard -> how many of its batches wait in `local`. */
  private readonly waiting = new Map<number, number>();
  private pumping = false;
  /**
   * `local`: deliveries started; `skipped`: listed users without a queue;
   * `fanned`: users reached through a channel audience (all with a queue).
   */
  readonly stats = { local: 0, remoteRequests: 0, failures: 0, skipped: 0, fanned: 0 };

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
        if (audience !== null) for (let s = 0; s < this.host.shards; s++) if (!mine.has(s)) mine.set(s, []);
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
    if (!(await this.live.ready(shard))) return null;
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
          if (!this.host.serves(shard)) await this.away(job);
          else {
            this.leftPump(batchShard);
            done(false);
          }
          continue;
        }
        let users: Iterable<[string | number, Obj[]]>;
        if (batch.entries) {
          const per = await this.expand(shard, batch);
          if (per === null) {
            if (!this.host.serves(shard)) await this.away(job);
            else {
              this.leftPump(batchShard);
              done(false);
            }
            continue;
          }
          users = per;
        } else {
          users = Object.entries(batch.users ?? {});
        }
        if (logged) {
          await this.logBatch(shard, batch, users, forward, done);
          continue;
        }
        for (const [userId, events] of users) {
          if (this.live.skips(shard, batch.realm, Number(userId))) {
            this.stats.skipped++;
            continue;
          }
          if (!batch.entries) for (const e of events) this.live.track(shard, batch.realm, Number(userId), e);
          this.stats.local++;
          jobs.push(
            this.deliverUser(queueRef(batch.realm, Number(userId)), shard, { key: batch.key, events }),
          );
          if (++this.chunk === LOCAL_CHUNK) {
            this.chunk = 0;
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

  /**
   * A batch for a shard served here: the users it reaches (those with a
   * queue), stored once in the shard's event log, and each user's queue
   * actor told the entry's position (it reads the events from the log,
   * once the entry is durable). The append is not awaited here: the
   * deliveries reach the mailboxes now, in order (a poll that comes after
   * the emitter's reply finds the events), and the pump goes on with the
   * next batch, whose entry may share the append. The shard's later batches
   * stay behind this one in the pump until its append is done, since a
   * failed append sends it the remote way (the shard has moved, usually).
   */
  private async logBatch(
    shard: number,
    batch: Batch,
    users: Iterable<[string | number, Obj[]]>,
    forward: boolean,
    done: (outcome: Outcome) => void,
  ): Promise<void> {
    const listed: [number, Obj[]][] = [];
    for (const [userId, events] of users) {
      if (this.live.skips(shard, batch.realm, Number(userId))) {
        this.stats.skipped++;
        continue;
      }
      if (!batch.entries) for (const e of events) this.live.track(shard, batch.realm, Number(userId), e);
      listed.push([Number(userId), events]);
    }
    if (listed.length === 0) {
      this.leftPump(shard);
      done(true);
      return;
    }
    const { entry, durable } = this.log.append(shard, batch.realm, batch.key, listed);
    let failed = false;
    const written = durable.then(
      () => {
        this.leftPump(shard);
        return true;
      },
      () => {
        failed = true;
        if (forward) this.enqueueRemote(shard, { ...batch, done });
        else done(this.host.serves(shard) ? false : MOVED);
        this.leftPump(shard);
        return false;
      },
    );
    // Once durable, a queue actor that misses this delivery (or is not
    // active) applies the entry at its next delivery, poll or activation:
    // a failed attempt only delays it.
    const jobs: Promise<boolean>[] = [];
    for (const [userId] of listed) {
      if (failed) break;
      this.stats.local++;
      jobs.push(this.deliverUser(queueRef(batch.realm, userId), shard, { entry }, () => failed));
      if (++this.chunk === LOCAL_CHUNK) {
        this.chunk = 0;
        await nextMacrotask();
      }
    }
    void written.then(async (ok) => {
      if (!ok) return;
      await Promise.all(jobs);
      done(true);
    });
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

  /** One batch of `shard` has left the pump. */
  private leftPump(shard: number): void {
    const left = this.waiting.get(shard)! - 1;
    if (left === 0) this.waiting.delete(shard);
    else this.waiting.set(shard, left);
  }

  /**
   * True once the queue actor (on `shard`) applied, or refused for good, the
   * events; false when given up (or `cancelled`).
   */
  private async deliverUser(
    ref: ActorRef,
    shard: number,
    args: Obj,
    cancelled?: () => boolean,
  ): Promise<boolean> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (cancelled?.()) return false;
      const res = await this.host.request({
        ref,
        shard,
        method: "deliver",
        args,
        caller: null,
        deadline: Date.now() + ATTEMPT_MS,
        replyGraceMs: 0,
      });
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

// ---- Users with queues, per shard ---------------------------------------------------

/** Registry journal entries between two snapshots of it. */
const LIVE_SNAPSHOT_EVERY = 500;

/** Store id of a shard's registry (journal + snapshot; no actor ever runs under it). */
export function liveQueuesId(shard: number): string {
  return actorId({ kind: "queue", realm: 0, key: `~live.${shard}` });
}

/** One registry write: [1 = has a queue / 0 = has none, "realm:user"] in order. */
type LiveOp = [0 | 1, string];

/** A subscription change seen in a `subscription` event: [1 = add / 0 = remove, channel id]. */
type SubOp = [0 | 1, number];

/**
 * The subscriptions of every user with none (LiveShard.subs), shared and
 * never changed: an empty Set of their own cost idle queues about 200 B
 * each (most of a passivated queue's heap).
 */
const NO_SUBS: ReadonlySet<number> = new Set<number>();

/** How long a batch with a channel audience waits for its shard's index. */
const INDEX_WAIT_MS = 15_000;
/** Attempts of one read of subscriptions from a realm's channel directory. */
const FETCH_ATTEMPTS = 5;

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
  /**
   * The routing view: the users with a queue, or about to get one, by
   * realm (realm -> user ids; also the realm audiences, OutEvent.everyone).
   */
  byRealm: Map<number, Set<number>>;
  /** How many users `byRealm` holds. */
  size: number;
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
  /**
   * The index of subscriptions, for channel audiences (OutEvent.channel):
   * "realm:user" -> channel ids, for every user of `users` whose
   * subscriptions are known (the others are in `fetching`).
   */
  subs: Map<string, Set<number> | typeof NO_SUBS>;
  /** "realm:channel" -> the users of `subs` subscribed to it. */
  byChannel: Map<string, Set<number>>;
  /**
   * "realm:user" -> the changes seen in its `subscription` events, in order,
   * while its subscriptions are being read from the channel directory.
   */
  fetching: Map<string, SubOp[]>;
  /** Until the registry is loaded and its users' subscriptions asked for: every change seen, in order. */
  early: [string, SubOp][] | null;
  /** Woken when the index may have become complete (or the shard was dropped). */
  waiters: (() => void)[];
  /** Users whose subscriptions are read at the next macrotask. */
  toRead: string[];
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A registry key: "realm:user". */
function parseKey(key: string): [realm: number, userId: number] {
  const at = key.indexOf(":");
  return [Number(key.slice(0, at)), Number(key.slice(at + 1))];
}

function hasUser(s: LiveShard, key: string): boolean {
  const [realm, userId] = parseKey(key);
  return s.byRealm.get(realm)?.has(userId) ?? false;
}

/** `key` has a queue on the shard, or has none, in the routing view. */
function setUser(s: LiveShard, key: string, has: boolean): void {
  const [realm, userId] = parseKey(key);
  let mine = s.byRealm.get(realm);
  if (has) {
    if (!mine) s.byRealm.set(realm, (mine = new Set()));
    if (!mine.has(userId)) s.size++;
    mine.add(userId);
  } else if (mine?.delete(userId)) {
    s.size--;
    if (mine.size === 0) s.byRealm.delete(realm);
  }
}

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

  /**
   * True once `shard`'s index of subscriptions is complete, so that a
   * channel audience can be expanded there (waits for it up to
   * INDEX_WAIT_MS). False when the shard is not served here or its
   * registry cannot be had. Without a store there is no index: a channel
   * audience reaches its listed users only (unit tests with a fake host).
   */
  async ready(shard: number): Promise<boolean> {
    if (!this.host.store) return true;
    const until = Date.now() + INDEX_WAIT_MS;
    for (;;) {
      const s = this.shards.get(shard);
      if (s && s.loaded && s.early === null && s.fetching.size === 0) return true;
      if (!this.host.serves(shard) || Date.now() >= until) return false;
      if (!s) this.acquired(shard);
      const s2 = this.shards.get(shard);
      await new Promise<void>((res) => {
        const t = setTimeout(res, 250);
        s2?.waiters.push(() => {
          clearTimeout(t);
          res();
        });
      });
    }
  }

  /** The users of `realm` with a queue on `shard` (ready() first). */
  realmUsers(shard: number, realm: number): ReadonlySet<number> | undefined {
    return this.shards.get(shard)?.byRealm.get(realm);
  }

  /** The users of `realm` with a queue on `shard` subscribed to `channel` (ready() first). */
  subscribers(shard: number, realm: number, channel: number): ReadonlySet<number> | undefined {
    return this.shards.get(shard)?.byChannel.get(`${realm}:${channel}`);
  }

  /**
   * An event is being delivered to `userId` of `realm`, a user of `shard`:
   * a `subscription` add or remove changes the index. Called by the pump in
   * delivery order, so a message routed after the change is expanded with it.
   */
  track(shard: number, realm: number, userId: number, event: Obj): void {
    if (event.type !== "subscription" || (event.op !== "add" && event.op !== "remove")) return;
    const s = this.shards.get(shard);
    if (!s) return;
    const key = `${realm}:${userId}`;
    const op = event.op === "add" ? 1 : 0;
    for (const sub of Array.isArray(event.subscriptions) ? event.subscriptions : []) {
      const id = (sub as Obj | null)?.stream_id;
      if (typeof id !== "number") continue;
      if (s.early) {
        s.early.push([key, [op, id]]);
        continue;
      }
      const pending = s.fetching.get(key);
      if (pending) pending.push([op, id]);
      else if (s.subs.has(key)) this.setSub(s, key, realm, userId, op, id);
    }
  }

  private setSub(s: LiveShard, key: string, realm: number, userId: number, op: 0 | 1, channel: number): void {
    const mine = s.subs.get(key)!;
    const ck = `${realm}:${channel}`;
    if (op === 1) {
      if (mine === NO_SUBS) s.subs.set(key, new Set([channel]));
      else (mine as Set<number>).add(channel);
      let set = s.byChannel.get(ck);
      if (!set) s.byChannel.set(ck, (set = new Set()));
      set.add(userId);
    } else {
      if (mine !== NO_SUBS) (mine as Set<number>).delete(channel);
      const set = s.byChannel.get(ck);
      set?.delete(userId);
      if (set?.size === 0) s.byChannel.delete(ck);
    }
  }

  /** `key` has no queue any more: out of the index. */
  private dropSubs(s: LiveShard, key: string): void {
    s.fetching.delete(key);
    const mine = s.subs.get(key);
    if (!mine) return;
    const [realm, user] = key.split(":").map(Number) as [number, number];
    for (const channel of [...mine]) this.setSub(s, key, realm, user, 0, channel);
    s.subs.delete(key);
    this.wake(s);
  }

  private wake(s: LiveShard): void {
    if (s.dead || (s.loaded && s.early === null && s.fetching.size === 0)) {
      const waiters = s.waiters;
      s.waiters = [];
      for (const w of waiters) w();
    }
  }

  /**
   * Read the subscriptions of `keys` ("realm:user") from their realms'
   * channel directories. Changes seen meanwhile are applied after the
   * reply: a user's events come in the directory's order, so those seen
   * are the ones after some point before the read, and applying them again
   * on the read's result gives each channel its last change.
   */
  private fetchSubs(shard: number, s: LiveShard, keys: string[]): void {
    const byRealm = new Map<number, [string, SubOp[]][]>();
    for (const key of keys) {
      let ops = s.fetching.get(key);
      if (!ops) s.fetching.set(key, (ops = []));
      const realm = Number(key.slice(0, key.indexOf(":")));
      const list = byRealm.get(realm);
      if (list) list.push([key, ops]);
      else byRealm.set(realm, [[key, ops]]);
    }
    for (const [realm, list] of byRealm)
      void this.readSubs(
        realm,
        list.map(([k]) => Number(k.slice(k.indexOf(":") + 1))),
      ).then(
        (reply) => {
          if (s.dead) return;
          for (const [key, ops] of list) {
            // Removed, or removed and added again (a newer read) meanwhile.
            if (s.fetching.get(key) !== ops) continue;
            s.fetching.delete(key);
            const userId = Number(key.slice(key.indexOf(":") + 1));
            s.subs.set(key, NO_SUBS);
            const got = reply[String(userId)];
            for (const channel of Array.isArray(got) ? got : [])
              if (typeof channel === "number") this.setSub(s, key, realm, userId, 1, channel);
            for (const [op, channel] of ops) this.setSub(s, key, realm, userId, op, channel);
          }
          this.wake(s);
        },
        (err: unknown) => {
          // Channel audiences of the shard wait (ready()); listed users and
          // the registry of queues are unaffected. Read again shortly.
          log().warn({ shard, realm, err: String(err) }, "could not read subscriptions; retrying");
          setTimeout(() => {
            if (s.dead) return;
            const again = list.filter(([key, ops]) => s.fetching.get(key) === ops).map(([key]) => key);
            if (again.length) this.fetchSubs(shard, s, again);
          }, 1000).unref();
        },
      );
  }

  private async readSubs(realm: number, userIds: number[]): Promise<Obj> {
    const ref = channelDirectoryRef(realm);
    let last = "";
    for (let attempt = 0; attempt < FETCH_ATTEMPTS; attempt++) {
      const res = await this.host.request({
        ref,
        shard: shardOf(ref, this.host.shards),
        method: "subscribedChannels",
        args: { user_ids: userIds } satisfies ArgsOf<ChannelDirectoryProtocol, "subscribedChannels">,
        caller: null,
        deadline: Date.now() + ATTEMPT_MS * 5,
        replyGraceMs: 0,
      });
      if (res.ok) return (res.value ?? {}) as Obj;
      last = `${res.kind}: ${res.msg}`;
      if (res.kind === "zulip") break;
    }
    throw new Error(last);
  }

  /** True when `user` of `realm` has no queue on `shard` for sure. */
  skips(shard: number, realm: number, userId: number): boolean {
    const s = this.shards.get(shard);
    return s !== undefined && s.loaded && !(s.byRealm.get(realm)?.has(userId) ?? false);
  }

  /** Users registered on a shard (tests, inspection); null while unknown. */
  count(shard: number): number | null {
    const s = this.shards.get(shard);
    return s?.loaded ? s.size : null;
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
      byRealm: new Map(),
      size: 0,
      durable: new Set(),
      seq: 0,
      snapshotSeq: 0,
      ops: [],
      next: null,
      writing: false,
      unwritten: new Map(),
      subs: new Map(),
      byChannel: new Map(),
      fetching: new Map(),
      early: [],
      waiters: [],
      toRead: [],
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
    this.wake(s);
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
    if (s.loaded && hasUser(s, key)) return s.unwritten.get(key) ?? Promise.resolve();
    setUser(s, key, true);
    // Before the registry is loaded, its load reads every user's subscriptions.
    if (s.early === null && !s.subs.has(key) && !s.fetching.has(key)) {
      // Registrations of one macrotask share one read per realm.
      s.fetching.set(key, []);
      if (s.toRead.push(key) === 1)
        setImmediate(() => {
          const keys = s.toRead.filter((k) => s.fetching.has(k));
          s.toRead = [];
          if (!s.dead && keys.length) this.fetchSubs(shard, s, keys);
        });
    }
    return this.change(shard, s, [1, key]);
  }

  /** `key` has no queue any more (best effort: a lost removal costs one activation later). */
  remove(shard: number, key: string): void {
    const s = this.shards.get(shard);
    if (!s || (s.loaded && !hasUser(s, key))) return;
    setUser(s, key, false);
    this.dropSubs(s, key);
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
      s.byRealm = new Map();
      s.size = 0;
      for (const key of users) setUser(s, key, true);
      s.loaded = true;
      // The index: every user's subscriptions, with the changes seen since
      // the shard was acquired applied after (see fetchSubs).
      const early = s.early ?? [];
      s.early = null;
      for (const key of users) s.fetching.set(key, []);
      for (const [key, op] of early) s.fetching.get(key)?.push(op);
      if (users.size) this.fetchSubs(shard, s, [...users]);
      else this.wake(s);
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
