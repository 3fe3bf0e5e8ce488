// The queue kind: one actor per user (ref.key = ref.shardKey = user id) that
// owns every event queue of that user (see state.ts for why one actor).
//
// Delivered events are not journaled here: the shard's event log holds
// them once per batch (cluster/event-log.ts), a `deliver` names the log
// position, and the actor applies the log's entries for its user in memory
// (`entriesDecision`); its snapshot records the position, and replay applies
// the entries after it (state.ts, `logged`). A poll journals nothing unless
// its time or acknowledgement has run too far ahead of the journal (`poll`).
//
// Long-polls are deferred replies: a poll with nothing to return parks
// (Decision.park) and a later turn (a delivery, a heartbeat timer, a newer
// poll, DELETE /events) wakes it. Timers come from the node's timer wheel
// through ctx.schedule. The only call out is the realm's `syncSendPrefs` (a
// leaf): when the user's first queue that watches public channels
// (all_public_streams or a narrow, shape.ts) appears and when the last one
// goes, so that sends to public channels address this user.

import { randomBytes } from "node:crypto";
import { errors } from "../errors.ts";
import { queueRef, realmRef } from "../addresses.ts";
import { defineBehavior, handlersOf, type DecisionOf, type HandlerOf, type ReplyOf } from "../protocol.ts";
import type { ActorContext, Caller, Decision, Obj, Value } from "../types.ts";
import { queueProtocol, type QueueProtocol } from "./protocol.ts";
import { flagsFor, shapeForQueue, watchesPublicChannels, type Registration } from "./shape.ts";
import {
  applyQueueFact,
  findQueue,
  initialQueueSet,
  queueFromSnapshot,
  queueToSnapshot,
  seenKey,
  unjournaledQueueFact,
  type QueueFact,
  type QueueSetState,
  type QueueState,
} from "./state.ts";

/** Zulip's DEFAULT_EVENT_QUEUE_TIMEOUT_SECS and MAX_QUEUE_TIMEOUT_SECS. */
export const DEFAULT_QUEUE_TIMEOUT_SECS = 600;
export const MAX_QUEUE_TIMEOUT_SECS = 604800;
/** "mobile" idle_queue_timeout: the docs' "currently 12 hours". */
export const MOBILE_QUEUE_TIMEOUT_SECS = 12 * 3600;
/** Zulip holds queues in an unbounded deque; we bound them and expire an overflowing queue. */
const DEFAULT_MAX_EVENTS = 10_000;
/** Queues per user; registering one more evicts the least recently polled. */
const MAX_QUEUES_PER_USER = 100;
/**
 * A poll is journaled when the last journaled poll of its queue is older
 * than this (or a tenth of the queue's timeout, when less): after a crash,
 * a queue's idle time counts from at most that long before its last poll.
 */
const POLL_JOURNAL_MS = 60_000;
/**
 * A poll is journaled when it acknowledges at least this many events past
 * the last journaled acknowledgement (or a tenth of the queue bound, when
 * less): after a crash, at most that many events the client already has
 * are back in the queue (never returned: they are at or below the id the
 * client acknowledges), so they count little against the bound.
 */
const ACK_JOURNAL_EVENTS = 100;
/** The wheel may fire up to a tick early. */
const TIMER_SLACK_MS = 150;
/** A queue actor with no turn and no parked poll for this long is passivated (Behavior.idleMs). */
export const QUEUE_IDLE_MS = 60_000;

function envInt(name: string): number | null {
  const v = process.env[name];
  if (v === undefined || v === "") return null;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? n : null;
}

/** Zulip: 45 s plus a random 0-10 s; EVENT_QUEUE_HEARTBEAT_MS fixes it (tests). */
function heartbeatDelayMs(): number {
  return envInt("EVENT_QUEUE_HEARTBEAT_MS") ?? 45_000 + Math.floor(Math.random() * 10_000);
}

/** EVENT_QUEUE_MAX_EVENTS as read in this macrotask (null: not yet). */
let maxEventsNow: number | null = null;

/**
 * The queue bound. Read at most once per macrotask: a fan-out decides
 * hundreds of deliveries in one, and each read of process.env costs about
 * a microsecond; a change to the variable counts from the next macrotask.
 */
function maxEvents(): number {
  if (maxEventsNow === null) {
    maxEventsNow = envInt("EVENT_QUEUE_MAX_EVENTS") ?? DEFAULT_MAX_EVENTS;
    setImmediate(() => (maxEventsNow = null));
  }
  return maxEventsNow;
}

export { queueRef };

type QueueHandler<M extends keyof QueueProtocol> = HandlerOf<QueueSetState, QueueProtocol, M>;

/** Queue ids are "<owner user id>:<random>" so any gateway finds the owner's shard. */
export function queueOwner(queueId: string): number | null {
  const m = /^([1-9][0-9]{0,15}):[0-9a-f]{16}$/.exec(queueId);
  return m ? Number(m[1]) : null;
}

function fact(f: QueueFact): Obj {
  return f as unknown as Obj;
}

function requireInternal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

/** The parked poll of a queue: key "poll|<queue id>|<heartbeat due ms>|<n>". */
function parkedKey(ctx: ActorContext, queueId: string): string | null {
  // Compared in place: this runs for every queue at every delivery.
  const bar = 5 + queueId.length;
  for (const k of ctx.parked())
    if (k.startsWith("poll|") && k.startsWith(queueId, 5) && k.charCodeAt(bar) === 124) return k;
  return null;
}

let parkSeq = 0;

/** Whether nothing polled the queue for its whole timeout (a parked poll still keeps it). */
function idleTooLong(q: QueueState, now: number): boolean {
  return now - q.lastPoll >= q.reg.timeoutSecs * 1000;
}

function isExpired(q: QueueState, now: number, ctx: ActorContext): boolean {
  return idleTooLong(q, now) && parkedKey(ctx, q.id) === null;
}

/** The caller's live queue, or BAD_EVENT_QUEUE_ID (unknown, expired, or another user's). */
function ownQueue(
  state: QueueSetState,
  queueId: string,
  caller: Caller | null,
  ctx: ActorContext,
): QueueState {
  const q = findQueue(state, queueId);
  if (!q || (caller && caller.userId !== state.userId) || isExpired(q, ctx.now(), ctx)) {
    throw errors.badEventQueueId(queueId);
  }
  return q;
}

/** Args of the expiry timer: one shared object (a wheel entry keeps it until it fires). */
const EXPIRE_ARGS: Obj = Object.freeze({}) as Obj;

/**
 * Arm the actor's ONE idle-expiry timer (key "exp") for the queue that could
 * expire first; `extra` is a queue being registered in this turn, `parked`
 * the parked poll of each queue (by index) when the turn has them. The
 * runtime keeps the earliest of repeated arms, and `expire` re-arms for the
 * next one, so one wheel entry serves all of a user's queues.
 */
function armExpiry(
  state: QueueSetState,
  ctx: ActorContext,
  extra?: { timeoutSecs: number },
  parked?: readonly (string | null)[],
): void {
  const now = ctx.now();
  let left = extra === undefined ? Infinity : extra.timeoutSecs * 1000;
  const queues = state.queues;
  for (let i = 0; i < queues.length; i++) {
    const q = queues[i]!;
    const timeoutMs = q.reg.timeoutSecs * 1000;
    // A parked poll keeps its queue alive; check again a whole timeout later.
    const qLeft =
      (parked ? parked[i] : parkedKey(ctx, q.id)) !== null ? timeoutMs : q.lastPoll + timeoutMs - now;
    if (qLeft < left) left = qLeft;
  }
  if (left !== Infinity) ctx.schedule("exp", Math.max(left, 0), "expire", EXPIRE_ARGS);
}

/**
 * A poll's answer: the queue's unacknowledged events, then the lists of
 * `fresh` ones in order, with the ids they will get.
 */
function withNew(q: QueueState, fresh: readonly (readonly Obj[])[]): Value[] {
  const out: Value[] = [];
  for (const e of q.events) out.push(e.event);
  let id = q.nextId;
  for (const list of fresh) for (const ev of list) out.push({ ...ev, id: id++ });
  return out;
}

/**
 * Deliver shaped events to queues: one `delivered` fact, overflowing queues
 * expired, parked polls woken with everything unacknowledged.
 */
function deliverDecision(
  state: QueueSetState,
  ctx: ActorContext,
  key: string | null,
  shaped: Record<string, Obj[]>,
  extraFacts: Obj[] = [],
): DecisionOf<{ delivered: number }> {
  const facts = [...extraFacts];
  const wake: { key: string; reply: Value }[] = [];
  const per: Record<string, Obj[]> = {};
  const limit = maxEvents();
  const log = state.logPos;
  for (const [qid, events] of Object.entries(shaped)) {
    const q = findQueue(state, qid);
    if (!q || events.length === 0) continue;
    const parked = parkedKey(ctx, qid);
    if (q.events.length + events.length > limit) {
      // Never unbounded memory: the client finds the queue gone and re-registers.
      facts.push(fact({ type: "deleted", queueId: qid, reason: "overflow", log }));
      if (parked) wake.push({ key: parked, reply: { events: [], queue_id: qid } });
      continue;
    }
    per[qid] = events;
    if (parked) wake.push({ key: parked, reply: { events: withNew(q, [events]), queue_id: qid } });
  }
  if (Object.keys(per).length) facts.unshift(fact({ type: "delivered", key, per, log }));
  return { facts, wake, reply: { delivered: Object.keys(per).length } };
}

/** One entry of the shard's event log for this user (the facts ctx.sideLog gives). */
interface Logged {
  entry: number;
  key: string;
  events: Obj[];
}

/**
 * Apply event log entries for this user, in order, in memory: per entry an
 * unjournaled `delivered` fact naming it (state.ts replays the entry itself
 * as `logged`, to the same effect), and, journaled, the deletions decided
 * on the way (queues expired before the first entry, queues an entry would
 * overflow), each stamped with the log position it was decided at so that
 * replay puts it between the same entries. Parked polls are woken with
 * everything unacknowledged.
 */
function entriesDecision(
  state: QueueSetState,
  ctx: ActorContext,
  logged: readonly Logged[],
): DecisionOf<{ delivered: number; duplicate?: boolean }> {
  let pos = state.logPos;
  if (!logged.some((e) => e.entry > pos)) return { reply: { delivered: 0, duplicate: true } };
  const facts: Obj[] = [];
  const now = ctx.now();
  const limit = maxEvents();
  const queues = state.queues;
  /** Per queue (by index): its parked poll, looked up once for the whole turn. */
  const parked = queues.map((q) => parkedKey(ctx, q.id));
  /**
   * Per queue (by index): the events this turn adds, one list per entry
   * (each is its fact's too, never pushed to), for the wake replies.
   */
  const added: (Obj[][] | undefined)[] = new Array<Obj[][] | undefined>(queues.length);
  /** Per queue (by index): how many events those are (for the bound). */
  const addedCount: number[] = new Array<number>(queues.length).fill(0);
  /** Per queue (by index): deleted in this turn ("expired" or "overflow"). */
  const gone: (string | undefined)[] = new Array<string | undefined>(queues.length);
  for (let i = 0; i < queues.length; i++)
    if (idleTooLong(queues[i]!, now) && parked[i] === null) {
      facts.push(fact({ type: "deleted", queueId: queues[i]!.id, reason: "expired", log: pos }));
      gone[i] = "expired";
    }
  const keys: string[] = [];
  let delivered = 0;
  for (const e of logged) {
    if (e.entry <= pos) continue;
    const per: Record<string, Obj[]> = {};
    let took = false;
    if (!seenKey(state, e.key) && !keys.includes(e.key)) {
      for (let i = 0; i < queues.length; i++) {
        if (gone[i] !== undefined) continue;
        const q = queues[i]!;
        const out: Obj[] = [];
        for (const ev of e.events)
          for (const sh of shapeForQueue(ev, q.reg, state.userId, q.id)) out.push(sh);
        if (out.length === 0) continue;
        if (q.events.length + addedCount[i]! + out.length > limit) {
          // Never unbounded memory: the client finds the queue gone and re-registers.
          facts.push(fact({ type: "deleted", queueId: q.id, reason: "overflow", log: pos }));
          gone[i] = "overflow";
          continue;
        }
        per[q.id] = out;
        took = true;
        delivered++;
        (added[i] ??= []).push(out);
        addedCount[i]! += out.length;
      }
    }
    if (took) keys.push(e.key);
    facts.push(fact({ type: "delivered", key: took ? e.key : null, per, entry: e.entry }));
    pos = e.entry;
  }
  const wake: { key: string; reply: Value }[] = [];
  for (let i = 0; i < queues.length; i++) {
    const q = queues[i]!;
    const mine = added[i];
    if (gone[i] !== "overflow" && !mine) continue;
    const key = parked[i];
    if (!key) continue;
    if (gone[i] === "overflow") {
      wake.push({ key, reply: { events: [], queue_id: q.id } });
      continue;
    }
    wake.push({ key, reply: { events: withNew(q, mine!), queue_id: q.id } });
  }
  if (queues.length) armExpiry(state, ctx, undefined, parked);
  return { facts, wake, reply: { delivered } };
}

/**
 * The event log's entries for this user after what the state has applied,
 * as a decision; a context with no log (no store) has none to give.
 */
async function catchUpDecision(
  state: QueueSetState,
  ctx: ActorContext,
  upTo?: number,
): Promise<DecisionOf<{ delivered: number; duplicate?: boolean }>> {
  if (ctx.sideLog === undefined) return { reply: { delivered: 0, duplicate: true } };
  const logged = (await ctx.sideLog(state.logPos, upTo)) as unknown as Logged[];
  return withdrawIfLast(state, ctx, entriesDecision(state, ctx, logged), strayIn(state, logged));
}

/** Whether an entry not applied yet holds an event for this user only as a watcher of public channels. */
function strayIn(state: QueueSetState, logged: readonly Logged[]): boolean {
  return logged.some((e) => e.entry > state.logPos && e.events.some((ev) => watcherOnly(ev, state.userId)));
}

/** Entries for this user wait in the event log (a delivery was missed): apply them in a turn of their own. */
function catchUpSoon(state: QueueSetState, ctx: ActorContext): void {
  const head = ctx.sideLogHead?.();
  if (head !== undefined && head > state.logPos) ctx.schedule("catchUp", 0, "catchUp", EXPIRE_ARGS);
}

// ---- watching public channels (the realm's view, actors/realm/send-prefs.ts) ------

function reportAllPublic(state: QueueSetState, ctx: ActorContext, on: boolean): Promise<unknown> {
  return ctx.call(realmRef(state.realmId), "syncSendPrefs", { userId: state.userId, allPublic: on });
}

/** A message event addressed to this user only as a watcher of public channels. */
function watcherOnly(event: Obj, userId: number): boolean {
  return event.type === "message" && flagsFor(event, userId) === null;
}

/**
 * After a decision: when it deletes the user's last queue watching public channels
 * (or a watcher-only event found none: a stale entry), withdraw the user
 * from the realm's view. Best effort: an entry left behind costs one
 * dropped event per send and is withdrawn again at the next one.
 */
function withdrawIfLast<D extends Pick<Decision, "facts">>(
  state: QueueSetState,
  ctx: ActorContext,
  decision: D,
  stray = false,
): D | Promise<D> {
  const deleted = new Set<string>();
  for (const f of decision.facts ?? []) if (f.type === "deleted") deleted.add(f.queueId as string);
  const now = ctx.now();
  let hadOne = false;
  for (const q of state.queues) {
    if (!watchesPublicChannels(q.reg)) continue;
    if (!deleted.has(q.id) && !isExpired(q, now, ctx)) return decision;
    hadOne = true;
  }
  if (!hadOne && !stray) return decision;
  return reportAllPublic(state, ctx, false).then(
    () => decision,
    () => decision,
  );
}

// ---- register ----------------------------------------------------------------

function readRegistration(args: Obj): Registration {
  const eventTypes = Array.isArray(args.eventTypes) ? args.eventTypes.map(String) : null;
  const narrow = Array.isArray(args.narrow)
    ? args.narrow.map((t) => [String((t as Value[])[0]), String((t as Value[])[1])] as [string, string])
    : [];
  const caps: Record<string, boolean> = {};
  const rawCaps = args.capabilities;
  if (rawCaps && typeof rawCaps === "object" && !Array.isArray(rawCaps)) {
    for (const [k, v] of Object.entries(rawCaps)) caps[k] = v === true;
  }
  let timeout = typeof args.timeoutSecs === "number" ? args.timeoutSecs : DEFAULT_QUEUE_TIMEOUT_SECS;
  if (!(timeout >= 1)) timeout = DEFAULT_QUEUE_TIMEOUT_SECS;
  return {
    eventTypes,
    narrow,
    capabilities: caps,
    applyMarkdown: args.applyMarkdown === true,
    clientGravatar: args.clientGravatar === true,
    allPublicStreams: args.allPublicStreams === true,
    timeoutSecs: Math.min(timeout, MAX_QUEUE_TIMEOUT_SECS),
  };
}

const register: QueueHandler<"register"> = async (state, args, ctx, caller) => {
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId))
    throw errors.accessDenied();
  const now = ctx.now();
  const reg = readRegistration(args);
  // Before the queue exists: a failed report fails the registration.
  const watches = watchesPublicChannels(reg);
  if (watches) await reportAllPublic(state, ctx, true);
  const facts: Obj[] = [];
  const log = state.logPos;
  const live = state.queues.filter((q) => {
    if (!isExpired(q, now, ctx)) return true;
    facts.push(fact({ type: "deleted", queueId: q.id, reason: "expired", log }));
    return false;
  });
  const wake: { key: string; reply: Value }[] = [];
  if (live.length >= MAX_QUEUES_PER_USER) {
    live.sort((a, b) => a.lastPoll - b.lastPoll);
    for (const q of live.slice(0, live.length - MAX_QUEUES_PER_USER + 1)) {
      facts.push(fact({ type: "deleted", queueId: q.id, reason: "evicted", log }));
      const parked = parkedKey(ctx, q.id);
      if (parked) wake.push({ key: parked, reply: { events: [], queue_id: q.id } });
    }
  }
  const queueId = `${state.userId}:${randomBytes(8).toString("hex")}`;
  facts.push(fact({ type: "registered", queueId, reg, at: now, log }));
  armExpiry(state, ctx, reg);
  const decision: DecisionOf<ReplyOf<QueueProtocol, "register">> = {
    facts,
    wake,
    reply: { queue_id: queueId, last_event_id: -1, idle_queue_timeout_secs: reg.timeoutSecs },
  };
  return watches ? decision : withdrawIfLast(state, ctx, decision);
};

// ---- poll (GET /events) ---------------------------------------------------------

const poll: QueueHandler<"poll"> = (state, args, ctx, caller) => {
  const queueId = args.queueId;
  const q = ownQueue(state, queueId, caller, ctx);
  if (args.caughtUp !== true && logWaiting(state, ctx)) return catchUpThen(state, args, ctx, caller, poll);
  const last = args.lastEventId ?? q.pruned;
  // As Zulip's GET /events: prune through last_event_id, which must be an event of this queue.
  if (last < q.pruned) throw errors.eventAlreadyPruned(last);
  let newest = q.pruned;
  for (const e of q.events) {
    if (e.id > last) break;
    newest = e.id;
  }
  if (newest !== last) throw errors.eventNotInQueue(last);
  const now = ctx.now();
  const remaining = q.events.filter((e) => e.id > last).map((e) => e.event);
  // Journaled only when the journal's poll time or acknowledgement has
  // fallen too far behind (POLL_JOURNAL_MS, ACK_JOURNAL_EVENTS); otherwise
  // in memory only (kept by the next snapshot). Lost with the activation,
  // an acknowledgement only brings back events at or below the id the
  // client acknowledges again with its next poll: never returned to it.
  const journal =
    now - q.polledSaved >= Math.min(POLL_JOURNAL_MS, q.reg.timeoutSecs * 100) ||
    last - q.prunedSaved >= Math.max(1, Math.min(ACK_JOURNAL_EVENTS, Math.floor(maxEvents() / 10)));
  const facts = [
    journal
      ? fact({
          type: "polled",
          queueId,
          at: now,
          ack: last > q.prunedSaved ? last : null,
          log: state.logPos,
        })
      : fact({ type: "seen", queueId, at: now, ack: last !== q.pruned ? last : null }),
  ];
  const wake: { key: string; reply: Value }[] = [];
  // A newer poll finishes the older one with no events.
  const older = parkedKey(ctx, queueId);
  if (older) wake.push({ key: older, reply: { events: [], queue_id: queueId } });
  armExpiry(state, ctx);
  catchUpSoon(state, ctx);
  if (remaining.length || args.dontBlock === true) return { facts, wake, reply: { events: remaining } };
  const due = now + heartbeatDelayMs();
  ctx.schedule(`hb|${queueId}`, due - now, "heartbeat", { queueId });
  return { facts, wake, park: `poll|${queueId}|${due}|${++parkSeq}` };
};

/**
 * Whether entries for this user are in the log and their delivery is on
 * its way (the router tells queue actors once an entry is durable). A poll
 * or a register's cut then applies them first and is decided again on the
 * state they make, as if the delivery had come before it: a client that
 * polls right after its send is answered sees its message.
 */
function logWaiting(state: QueueSetState, ctx: ActorContext): boolean {
  const head = ctx.sideLogHead?.();
  return head !== undefined && head > state.logPos;
}

/**
 * The first decision of a turn that finds log entries waiting: the entries
 * applied, then the turn again (Decision.again). When they cannot be read
 * now (the log is unavailable here), the turn is decided on the state as
 * it is, and the entries come with their delivery.
 */
async function catchUpThen<A extends Obj & { caughtUp?: boolean }, R extends Value>(
  state: QueueSetState,
  args: A,
  ctx: ActorContext,
  caller: Caller | null,
  handler: (
    state: QueueSetState,
    args: A,
    ctx: ActorContext,
    caller: Caller | null,
  ) => DecisionOf<R> | Promise<DecisionOf<R>>,
): Promise<DecisionOf<R>> {
  const again = { ...args, caughtUp: true };
  let caught: Decision;
  try {
    caught = await catchUpDecision(state, ctx);
  } catch {
    return handler(state, again, ctx, caller);
  }
  return { facts: caught.facts ?? [], wake: caught.wake ?? [], again };
}

// ---- timers -------------------------------------------------------------------

const heartbeat: QueueHandler<"heartbeat"> = (state, args, ctx, caller) => {
  requireInternal(caller);
  const queueId = args.queueId;
  const key = parkedKey(ctx, queueId);
  if (!key || !findQueue(state, queueId)) return {};
  const due = Number(key.split("|")[2]);
  const now = ctx.now();
  if (now + TIMER_SLACK_MS < due) {
    // The timer belonged to an older poll; wait for this one's due time.
    ctx.schedule(`hb|${queueId}`, due - now, "heartbeat", { queueId });
    return {};
  }
  catchUpSoon(state, ctx);
  return withdrawIfLast(
    state,
    ctx,
    deliverDecision(state, ctx, null, { [queueId]: [{ type: "heartbeat" }] }),
  );
};

/**
 * The expiry timer: collect every queue idle past its timeout, then re-arm
 * for the next. Timers may fire late, early or twice (one armed by an
 * earlier activation of this actor), so this only acts on what is due now.
 */
const expire: QueueHandler<"expire"> = (state, _args, ctx, caller) => {
  requireInternal(caller);
  const now = ctx.now();
  const facts: Obj[] = [];
  for (const q of state.queues) {
    if (isExpired(q, now, ctx))
      facts.push(fact({ type: "deleted", queueId: q.id, reason: "expired", log: state.logPos }));
  }
  if (facts.length < state.queues.length) {
    const expired = new Set(facts.map((f) => f.queueId as string));
    armExpiry({ ...state, queues: state.queues.filter((q) => !expired.has(q.id)) }, ctx);
  }
  return facts.length ? withdrawIfLast(state, ctx, { facts }) : { facts };
};

// ---- deliver (the event router) --------------------------------------------------

const deliver: QueueHandler<"deliver"> = (state, args, ctx, caller) => {
  requireInternal(caller);
  if (args.entry !== undefined) {
    if (args.entry <= state.logPos) return { reply: { delivered: 0, duplicate: true } };
    // Up to that entry: those after it may not be durable yet, and come with their own delivery.
    const now = ctx.sideLogNow?.(state.logPos, args.entry) as Logged[] | null | undefined;
    if (now !== undefined && now !== null)
      return withdrawIfLast(state, ctx, entriesDecision(state, ctx, now), strayIn(state, now));
    return catchUpDecision(state, ctx, args.entry);
  }
  // Without a log (no store, or a batch for a shard that moved): the events
  // come with the request and are journaled here.
  const queues = state.queues;
  const events = args.events ?? [];
  const stray = events.some((e) => watcherOnly(e, state.userId));
  if (queues.length === 0) {
    const none: DecisionOf<{ delivered: number }> = { reply: { delivered: 0 } };
    return withdrawIfLast(state, ctx, none, stray);
  }
  const key = args.key ?? null;
  if (key !== null && seenKey(state, key)) return { reply: { delivered: 0, duplicate: true } };
  const now = ctx.now();
  const expired: Obj[] = [];
  const shaped: Record<string, Obj[]> = {};
  for (const q of queues) {
    if (isExpired(q, now, ctx)) {
      expired.push(fact({ type: "deleted", queueId: q.id, reason: "expired", log: state.logPos }));
      continue;
    }
    const out: Obj[] = [];
    for (const e of events) for (const s of shapeForQueue(e, q.reg, state.userId, q.id)) out.push(s);
    if (out.length) shaped[q.id] = out;
  }
  armExpiry(state, ctx);
  return withdrawIfLast(state, ctx, deliverDecision(state, ctx, key, shaped, expired), stray);
};

/**
 * `deliver` of a log entry decided at once (Behavior.inline), when every
 * entry up to it is durable and in memory and none is a stray watcher's
 * event (whose withdrawal calls the realm); null otherwise, and the
 * handler above decides the turn.
 */
function deliverNow(state: QueueSetState, args: Obj, ctx: ActorContext): Decision | null {
  const entry = args.entry;
  if (typeof entry !== "number" || ctx.sideLogNow === undefined) return null;
  if (entry <= state.logPos) return { reply: { delivered: 0, duplicate: true } };
  const logged = ctx.sideLogNow(state.logPos, entry) as unknown as Logged[] | null;
  if (logged === null || strayIn(state, logged)) return null;
  const decision = entriesDecision(state, ctx, logged);
  // Deletions (expiry, overflow) may withdraw the user from the realm's view: that calls out.
  return decision.facts?.some((f) => f.type === "deleted") ? null : decision;
}

const catchUp: QueueHandler<"catchUp"> = (state, _args, ctx, caller) => {
  requireInternal(caller);
  return catchUpDecision(state, ctx);
};

// ---- delete (DELETE /events) and reads --------------------------------------------

const remove: QueueHandler<"delete"> = (state, args, ctx, caller) => {
  const queueId = args.queueId;
  ownQueue(state, queueId, caller, ctx);
  const parked = parkedKey(ctx, queueId);
  return withdrawIfLast(state, ctx, {
    facts: [fact({ type: "deleted", queueId, reason: "client", log: state.logPos })],
    wake: parked ? [{ key: parked, reply: { events: [], queue_id: queueId } }] : [],
    reply: {},
  });
};

/**
 * POST /register's cut: the id of the newest event in a queue (-1 when none
 * arrived yet), so the register route can tell whether events landed while
 * it fetched the initial state (gateway/routes/events.ts).
 */
const newest: QueueHandler<"newest"> = (state, args, ctx, caller) => {
  const q = ownQueue(state, args.queueId, caller, ctx);
  if (args.caughtUp !== true && logWaiting(state, ctx)) return catchUpThen(state, args, ctx, caller, newest);
  return { reply: { last_event_id: q.nextId - 1 } };
};

/** Internal: the user's queues, for inspection and tests. */
const list: QueueHandler<"list"> = (state, _args, _ctx, caller) => {
  requireInternal(caller);
  return {
    reply: state.queues.map((q) => ({
      queue_id: q.id,
      next_id: q.nextId,
      pruned: q.pruned,
      pending: q.events.length,
      last_poll: q.lastPoll,
    })),
  };
};

export const queueBehavior = defineBehavior<QueueSetState, QueueProtocol>({
  kind: "queue",
  protocol: queueProtocol,
  initial: initialQueueSet,
  apply: applyQueueFact,
  toSnapshot: queueToSnapshot,
  fromSnapshot: queueFromSnapshot,
  unjournaled: unjournaledQueueFact,
  sideLog: {
    position: (state) => state.logPos,
    decidedAt: (f) => (typeof f.log === "number" ? f.log : undefined),
  },
  inline: { deliver: (state, args, ctx) => deliverNow(state, args, ctx) },
  handlers: handlersOf<QueueSetState, QueueProtocol>()({
    register,
    poll,
    heartbeat,
    expire,
    deliver,
    catchUp,
    delete: remove,
    newest,
    list,
  }),
  // A queue nobody polls costs its activation (~850 B of heap) until it is
  // passivated, then ~170 B (its expiry timer on the wheel); a polled queue
  // always has its poll parked, so this never passivates a live client's queue.
  idleMs: QUEUE_IDLE_MS,
});
