// State of the webhook kind: one actor per outgoing-webhook bot (key = the
// bot's user id) holding its durable outbox, the deliveries that messages
// triggered and what became of their attempts.
//
// A delivery moves ready -> attempting -> (backoff -> attempting)* -> gone.
// "attempting" is journaled before the node-side worker POSTs, so after a
// crash the next activation knows an attempt may have reached the receiver
// and never starts it again (docs/webhooks.md, "At most once").
//
// The realm's index of the bots that may have pending deliveries is the
// webhook index kind's (actors/webhook-index), which once was this kind's
// second role under key "~index": this kind owns every other key.
//
// SNAPSHOT NOTE: a field added to WebhookState or Delivery needs a default in
// `webhookFromSnapshot`, because snapshots written before it lack it.

import type { ActorRef, Obj } from "../types.ts";
import type { Trigger } from "./protocol.ts";

export interface Delivery {
  /** The triggering message's id: the idempotency key of the delivery. */
  messageId: number;
  trigger: Trigger;
  /** The message in the payload's message-list format (payload.ts). */
  message: Obj;
  /** Failed attempts so far that Zulip retries (its `failed_tries`). */
  failures: number;
  status: "ready" | "attempting" | "backoff";
  /** Attempt number of the current or last claim; a report must name it. */
  attempt: number;
  /** backoff: not before this time (ms). attempting: the worker's deadline (ms). */
  until: number;
}

export interface WebhookState {
  realmId: number;
  botId: number;
  /** Pending deliveries by message id. */
  pending: Record<string, Delivery>;
  /** Message ids finished most recently (bounded), so a repeated trigger is ignored. */
  recent: number[];
  /**
   * How many deliveries were ever queued: the generation the index marks and
   * clears carry, so a late "idle" cannot clear a newer "pending".
   */
  gen: number;
}

/** How many finished message ids a bot remembers for de-duplication. */
export const RECENT_LIMIT = 1000;

export type WebhookFact =
  | { type: "queued"; delivery: Delivery }
  | { type: "claimed"; messageId: number; attempt: number; until: number }
  | { type: "backoff"; messageId: number; failures: number; until: number }
  | { type: "finished"; messageId: number; outcome: string };

export function initialWebhook(ref: ActorRef): WebhookState {
  return { realmId: ref.realm, botId: Number(ref.key), pending: {}, recent: [], gen: 0 };
}

export function applyWebhookFact(state: WebhookState, fact: Obj): WebhookState {
  const f = fact as unknown as WebhookFact;
  switch (f.type) {
    case "queued":
      state.pending[String(f.delivery.messageId)] = { ...f.delivery };
      state.gen++;
      break;
    case "claimed": {
      const d = state.pending[String(f.messageId)];
      if (d) Object.assign(d, { status: "attempting", attempt: f.attempt, until: f.until });
      break;
    }
    case "backoff": {
      const d = state.pending[String(f.messageId)];
      if (d) Object.assign(d, { status: "backoff", failures: f.failures, until: f.until });
      break;
    }
    case "finished":
      delete state.pending[String(f.messageId)];
      state.recent.push(f.messageId);
      if (state.recent.length > RECENT_LIMIT) state.recent.splice(0, state.recent.length - RECENT_LIMIT);
      break;
  }
  return state;
}

export function webhookToSnapshot(state: WebhookState): string {
  return JSON.stringify(state);
}

export function webhookFromSnapshot(data: string, ref: ActorRef): WebhookState {
  // Snapshots written before the index became its own kind also hold `role: "bot"`: not read.
  const s = JSON.parse(data) as Partial<WebhookState>;
  // Snapshots from before `gen` lack it: the pending count is a floor that keeps marks ordered.
  const pending = s.pending ?? {};
  const recent = s.recent ?? [];
  return {
    ...initialWebhook(ref),
    pending,
    recent,
    gen: s.gen ?? Object.keys(pending).length + recent.length,
  };
}
