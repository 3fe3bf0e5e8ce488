// The webhook kind's methods (handlers.ts): their arguments and replies.
// How to add one: docs/architecture.md, "Actor protocols".
//
// One actor per outgoing-webhook bot (webhookRef, key = the bot's user id):
// its outbox. The realm's index of bots with pending deliveries is the
// webhook index kind's (actors/webhook-index). Every method is internal: the
// node-side worker (webhook/worker.ts) and the actors call them, never a
// gateway.

import { Type } from "typebox";
import { AnyObj, SafeInt, reply } from "../protocol.ts";
import type { Obj } from "../types.ts";

export type Trigger = "mention" | "direct_message";

/** A delivery the worker claimed: one attempt to make. */
export interface ClaimedDelivery {
  messageId: number;
  attempt: number;
  trigger: Trigger;
  /** Failed attempts before this one. */
  failures: number;
  message: Obj;
}

export const webhookProtocol = {
  /** A message triggered the bot (the worker, from the send's hand-off): journal one delivery. */
  enqueue: {
    args: Type.Object({
      messageId: SafeInt,
      // The hand-off's value, unchecked until here: the handler refuses others.
      trigger: Type.String(),
      message: Type.Optional(AnyObj),
    }),
    reply: reply<{ queued: boolean }>(),
  },
  /** The worker takes up to `max` (default 1) due deliveries; attempts time out after `timeoutMs`. */
  claim: {
    args: Type.Object({ max: Type.Optional(Type.Number()), timeoutMs: Type.Optional(Type.Number()) }),
    reply: reply<{ deliveries: ClaimedDelivery[] }>(),
  },
  /** The outcome of an attempt: "retry" (after `retryAfterMs`), "done" or "dropped". */
  report: {
    args: Type.Object({
      messageId: SafeInt,
      attempt: SafeInt,
      outcome: Type.Union([Type.Literal("retry"), Type.Literal("done"), Type.Literal("dropped")]),
      retryAfterMs: Type.Optional(Type.Number()),
    }),
    reply: reply<{ accepted: boolean; exhausted?: boolean }>(),
  },
  /** Timer target and resume point (the worker's sweep). */
  poke: { args: Type.Object({}), reply: reply<{ pending: number }>() },
  /** For tests and inspection: the pending deliveries without their messages. */
  outbox: {
    args: Type.Object({}),
    reply: reply<{
      pending: {
        messageId: number;
        trigger: Trigger;
        status: "ready" | "attempting" | "backoff";
        attempt: number;
        failures: number;
      }[];
      recent: number[];
    }>(),
  },
} as const;

export type WebhookProtocol = typeof webhookProtocol;
