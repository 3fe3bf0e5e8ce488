// State of the queue kind: ONE actor per user (ref.key = user id) holds all of
// that user's event queues. Zulip keeps a user's queues in one Tornado
// process; here they live in one actor on the user's shard, so delivering an
// event to a user is one message, the per-user queue registry is the actor's
// own journal (durable, survives failover). Registrations, deletions and
// heartbeats are journaled facts; delivered events are not: they are stored
// once per batch in the shard's event log (cluster/event-log.ts), and the
// state records how far into it it is (`logPos`); replay applies the log's
// entries for the user between the journaled facts (Behavior.sideLog).
// Acknowledgements and poll times are journaled sparingly (behavior.ts, poll).
//
// Compact on purpose: a node holds up to a million idle queues (docs/benchmarks.md
// "What explains the current figures"). A user's queues are a small array (at most 100, searched
// linearly) rather than a record keyed by queue id, whose unique keys would
// each cost V8 a hidden class; a queue is one small object whose empty event
// buffer is a shared frozen array; registrations are interned (most clients
// register the same way) and never mutated.
//
// SNAPSHOT NOTE: a field added to QueueSetState or QueueState needs a
// default in `queueFromSnapshot`, because snapshots written before it lack it.
// Snapshots written before the array form hold `queues` as a record by id
// (with a `createdAt` per queue); `queueFromSnapshot` reads both.

import type { ActorRef, Obj } from "../types.ts";
import { shapeForQueue, type Registration } from "./shape.ts";

export interface QueuedEvent {
  id: number;
  event: Obj;
}

export interface QueueState {
  id: string;
  reg: Registration;
  /** When a GET /events last reached the queue (Zulip's last_connection_time); registration counts. */
  lastPoll: number;
  /** Id the next event gets (ids start at 0, heartbeats take one). */
  nextId: number;
  /** Newest acknowledged (dropped) event id; -1 for a fresh queue. */
  pruned: number;
  /** Unacknowledged events, ids increasing (NO_EVENTS when none). */
  events: QueuedEvent[];
  /** `pruned` and `lastPoll` as the store has them (a journaled fact or a snapshot): replay gets these. */
  prunedSaved: number;
  polledSaved: number;
}

export interface QueueSetState {
  realmId: number;
  userId: number;
  /** The user's queues, oldest registration first. */
  queues: QueueState[];
  /** Delivery keys seen last (oldest first): a retried delivery is applied once. Absent until one arrives. */
  recentKeys?: string[];
  /**
   * Position in the shard's event log up to which every entry for this
   * user is applied (0: none). Journaled facts carry the position they
   * were decided at (`log`), so replay interleaves them with the entries.
   */
  logPos: number;
}

export const RECENT_KEYS = 256;

/** The shared empty event buffer (frozen: apply replaces it, never pushes to it). */
export const NO_EVENTS: QueuedEvent[] = Object.freeze([]) as unknown as QueuedEvent[];

/**
 * `log` on a journaled fact: the log position it was decided at
 * (QueueSetState.logPos); absent on facts written before the event log.
 */
export type QueueFact =
  | { type: "registered"; queueId: string; reg: Registration; at: number; log?: number }
  /**
   * Per queue, the events (already filtered and shaped for it) in order.
   * With `entry`: the event log's entry they come from, applied in memory
   * only (replay applies the entry itself, as `logged`). Without: journaled
   * (heartbeats, deliveries made without a log, and data written before it).
   */
  | { type: "delivered"; key: string | null; per: Record<string, Obj[]>; entry?: number; log?: number }
  /** An event log entry for this user, as replay applies it: shaped here, per queue. */
  | { type: "logged"; entry: number; key: string; events: Obj[] }
  /** A poll reached the queue, journaled; `ack` is the new newest-pruned id when it changed. */
  | { type: "polled"; queueId: string; at: number; ack: number | null; log?: number }
  /** A poll reached the queue, not journaled (lost with the activation, kept by a snapshot). */
  | { type: "seen"; queueId: string; at: number; ack: number | null }
  | {
      type: "deleted";
      queueId: string;
      reason: "client" | "expired" | "overflow" | "evicted";
      log?: number;
    };

/** Facts the runtime applies without journaling them (Behavior.unjournaled). */
export function unjournaledQueueFact(f: Obj): boolean {
  return f.type === "seen" || f.type === "logged" || (f.type === "delivered" && f.entry !== undefined);
}

// ---- Interning ---------------------------------------------------------------------

/** Bound on distinct interned registrations (narrows are client-chosen text). */
const INTERN_LIMIT = 4096;
const interned = new Map<string, Registration>();

/** One shared, frozen copy per distinct registration (while the table has room). */
export function internRegistration(reg: Registration): Registration {
  const key = JSON.stringify([
    reg.eventTypes,
    reg.narrow,
    reg.capabilities,
    reg.applyMarkdown,
    reg.clientGravatar,
    reg.allPublicStreams,
    reg.timeoutSecs,
  ]);
  const hit = interned.get(key);
  if (hit !== undefined) return hit;
  const frozen: Registration = Object.freeze({
    eventTypes: reg.eventTypes === null ? null : (Object.freeze([...reg.eventTypes]) as string[]),
    narrow: Object.freeze(reg.narrow.map((t) => Object.freeze([t[0], t[1]]))) as [string, string][],
    capabilities: Object.freeze({ ...reg.capabilities }),
    applyMarkdown: reg.applyMarkdown,
    clientGravatar: reg.clientGravatar,
    allPublicStreams: reg.allPublicStreams,
    timeoutSecs: reg.timeoutSecs,
  });
  if (interned.size < INTERN_LIMIT) interned.set(key, frozen);
  return frozen;
}

// ---- Access ------------------------------------------------------------------------

/** The queue with this id, or undefined. */
export function findQueue(state: QueueSetState, queueId: string): QueueState | undefined {
  const qs = state.queues;
  for (let i = 0; i < qs.length; i++) if (qs[i]!.id === queueId) return qs[i];
  return undefined;
}

export function initialQueueSet(ref: ActorRef): QueueSetState {
  return { realmId: ref.realm, userId: Number(ref.key), queues: [], logPos: 0 };
}

function newQueue(id: string, reg: Registration, at: number): QueueState {
  return {
    id,
    reg: internRegistration(reg),
    lastPoll: at,
    nextId: 0,
    pruned: -1,
    events: NO_EVENTS,
    prunedSaved: -1,
    polledSaved: at,
  };
}

function append(q: QueueState, events: readonly Obj[]): void {
  if (q.events === NO_EVENTS) q.events = [];
  for (const event of events) {
    const id = q.nextId++;
    q.events.push({ id, event: { ...event, id } });
  }
}

/**
 * The keys of each `recentKeys` list counted (a list could hold one twice),
 * made at the first look: a queue that has had its 256 deliveries would
 * otherwise compare every delivery's key with all of them. Kept beside the
 * state (snapshots hold the list only) and in step with the list by
 * `rememberKey`.
 */
const keyCounts = new WeakMap<string[], Map<string, number>>();

function countsOf(keys: string[]): Map<string, number> {
  let counts = keyCounts.get(keys);
  if (counts === undefined) {
    counts = new Map();
    for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
    keyCounts.set(keys, counts);
  }
  return counts;
}

/** Whether a delivery key is among the last RECENT_KEYS the state applied. */
export function seenKey(state: QueueSetState, key: string): boolean {
  const keys = state.recentKeys;
  return keys !== undefined && countsOf(keys).has(key);
}

function rememberKey(state: QueueSetState, key: string): void {
  const keys = (state.recentKeys ??= []);
  const counts = countsOf(keys);
  keys.push(key);
  counts.set(key, (counts.get(key) ?? 0) + 1);
  if (keys.length > RECENT_KEYS)
    for (const old of keys.splice(0, keys.length - RECENT_KEYS)) {
      const n = counts.get(old)! - 1;
      if (n === 0) counts.delete(old);
      else counts.set(old, n);
    }
}

function prune(q: QueueState, ack: number): void {
  let n = 0;
  while (n < q.events.length && q.events[n]!.id <= ack) n++;
  if (n === q.events.length) q.events = NO_EVENTS;
  else if (n) q.events.splice(0, n);
  q.pruned = ack;
}

export function applyQueueFact(state: QueueSetState, raw: Obj): QueueSetState {
  const f = raw as unknown as QueueFact;
  switch (f.type) {
    case "registered": {
      const q = newQueue(f.queueId, f.reg, f.at);
      const i = state.queues.findIndex((x) => x.id === f.queueId);
      if (i >= 0) state.queues[i] = q;
      // A copy of the exact size: push() (and spread) would grow the backing store to 17 slots.
      else state.queues = state.queues.concat(q);
      break;
    }
    case "delivered": {
      if (f.key !== null) rememberKey(state, f.key);
      for (const qid of Object.keys(f.per)) {
        const q = findQueue(state, qid);
        const events = f.per[qid]!;
        if (!q || events.length === 0) continue;
        append(q, events);
      }
      if (f.entry !== undefined && f.entry > state.logPos) state.logPos = f.entry;
      break;
    }
    case "logged": {
      // What `deliver` decided for this entry in memory (behavior.ts,
      // entriesDecision): a key seen before takes nothing; each queue gets
      // the events shaped for it; the key is remembered when one took any.
      // Expired and overflowing queues were deleted by the journaled facts
      // decided before the entry, which replay has applied already.
      if (!seenKey(state, f.key)) {
        let took = false;
        for (const q of state.queues) {
          const out: Obj[] = [];
          for (const e of f.events) for (const s of shapeForQueue(e, q.reg, state.userId, q.id)) out.push(s);
          if (out.length === 0) continue;
          append(q, out);
          took = true;
        }
        if (took) rememberKey(state, f.key);
      }
      if (f.entry > state.logPos) state.logPos = f.entry;
      break;
    }
    case "polled":
    case "seen": {
      const q = findQueue(state, f.queueId);
      if (!q) break;
      q.lastPoll = f.at;
      if (f.ack !== null) prune(q, f.ack);
      if (f.type === "polled") {
        q.polledSaved = f.at;
        if (f.ack !== null) q.prunedSaved = f.ack;
      }
      break;
    }
    case "deleted": {
      const i = state.queues.findIndex((x) => x.id === f.queueId);
      if (i >= 0) state.queues.splice(i, 1);
      break;
    }
  }
  return state;
}

/** `prunedSaved` and `polledSaved` are written too but not read: a snapshot's `pruned` and `lastPoll` are saved. */
export function queueToSnapshot(state: QueueSetState): string {
  return JSON.stringify(state);
}

type SnapshotQueue = Partial<QueueState> & { id: string; reg: Registration; createdAt?: number };

export function queueFromSnapshot(data: string, ref: ActorRef): QueueSetState {
  const o = JSON.parse(data) as {
    queues?: SnapshotQueue[] | Record<string, SnapshotQueue>;
    recentKeys?: string[];
    logPos?: number;
  };
  const state = initialQueueSet(ref);
  const raw = o.queues === undefined ? [] : Array.isArray(o.queues) ? o.queues : Object.values(o.queues);
  for (const s of raw) {
    const q = newQueue(s.id, s.reg, s.lastPoll ?? s.createdAt ?? 0);
    q.nextId = s.nextId ?? 0;
    q.pruned = q.prunedSaved = s.pruned ?? -1;
    if (s.events !== undefined && s.events.length > 0) q.events = s.events;
    state.queues.push(q);
  }
  if (o.recentKeys !== undefined && o.recentKeys.length > 0) state.recentKeys = o.recentKeys;
  state.logPos = o.logPos ?? 0;
  return state;
}
