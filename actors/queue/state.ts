// State of the queue kind: ONE actor per user (ref.key = user id) holds all of
// that user's event queues. Zulip keeps a user's queues in one Tornado
// process; here they live in one actor on the user's shard, so delivering an
// event to a user is one message, the per-user queue registry is the actor's
// own journal (durable, survives failover) and every queue's registration,
// cursor and unacknowledged events are journaled facts.
//
// SNAPSHOT NOTE: a field added to QueueSetState or QueueState needs a
// default in `queueFromSnapshot`, because snapshots written before it lack it.

import type { ActorRef, Obj } from "../types.ts";

/** What POST /register chose for a queue (Zulip's ClientDescriptor fields). */
export interface Registration {
  /** null: every event type. */
  eventTypes: string[] | null;
  /** [operator, operand] pairs; filters message events only. */
  narrow: [string, string][];
  capabilities: Record<string, boolean>;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  allPublicStreams: boolean;
  /** idle_queue_timeout_secs. */
  timeoutSecs: number;
}

export interface QueuedEvent {
  id: number;
  event: Obj;
}

export interface QueueState {
  id: string;
  reg: Registration;
  createdAt: number;
  /** When a GET /events last reached the queue (Zulip's last_connection_time). */
  lastPoll: number;
  /** Id the next event gets (ids start at 0, heartbeats take one). */
  nextId: number;
  /** Newest acknowledged (dropped) event id; -1 for a fresh queue. */
  pruned: number;
  /** Unacknowledged events, ids increasing. */
  events: QueuedEvent[];
}

export interface QueueSetState {
  realmId: number;
  userId: number;
  queues: Record<string, QueueState>;
  /** Delivery keys seen last (oldest first): a retried delivery is applied once. */
  recentKeys: string[];
}

export const RECENT_KEYS = 256;

export type QueueFact =
  | { type: "registered"; queueId: string; reg: Registration; at: number }
  /** Per queue, the events (already filtered and shaped for it) in order. */
  | { type: "delivered"; key: string | null; per: Record<string, Obj[]> }
  /** A poll reached the queue; `ack` is the new newest-pruned id when it changed. */
  | { type: "polled"; queueId: string; at: number; ack: number | null }
  | { type: "deleted"; queueId: string; reason: "client" | "expired" | "overflow" | "evicted" };

export function initialQueueSet(ref: ActorRef): QueueSetState {
  return { realmId: ref.realm, userId: Number(ref.key), queues: {}, recentKeys: [] };
}

export function applyQueueFact(state: QueueSetState, raw: Obj): QueueSetState {
  const f = raw as unknown as QueueFact;
  switch (f.type) {
    case "registered":
      state.queues[f.queueId] = {
        id: f.queueId,
        reg: f.reg,
        createdAt: f.at,
        lastPoll: f.at,
        nextId: 0,
        pruned: -1,
        events: [],
      };
      break;
    case "delivered": {
      if (f.key !== null) {
        state.recentKeys.push(f.key);
        if (state.recentKeys.length > RECENT_KEYS)
          state.recentKeys.splice(0, state.recentKeys.length - RECENT_KEYS);
      }
      for (const [qid, events] of Object.entries(f.per)) {
        const q = state.queues[qid];
        if (!q) continue;
        for (const event of events) {
          const id = q.nextId++;
          q.events.push({ id, event: { ...event, id } });
        }
      }
      break;
    }
    case "polled": {
      const q = state.queues[f.queueId];
      if (!q) break;
      q.lastPoll = f.at;
      if (f.ack !== null) {
        let n = 0;
        while (n < q.events.length && q.events[n]!.id <= f.ack) n++;
        if (n) q.events.splice(0, n);
        q.pruned = f.ack;
      }
      break;
    }
    case "deleted":
      delete state.queues[f.queueId];
      break;
  }
  return state;
}

export function queueToSnapshot(state: QueueSetState): string {
  return JSON.stringify(state);
}

export function queueFromSnapshot(data: string, ref: ActorRef): QueueSetState {
  const o = JSON.parse(data) as Partial<QueueSetState>;
  return { ...initialQueueSet(ref), ...o, recentKeys: o.recentKeys ?? [] };
}
