// The webhook index kind's methods (behavior.ts): their arguments and
// replies. How to add one: docs/architecture.md, "Actor protocols".
//
// One actor per realm (webhookIndexRef, key "~index"): the bots that may
// have pending outgoing-webhook deliveries. Every method is internal: the
// bots' webhook actors mark themselves, the node-side worker
// (webhook/worker.ts) clears and reads. Its actors keep the storage ids they
// had as the webhook kind's second role, webhook.<realm>.~index
// (Behavior.storedAs).

import { Type } from "typebox";
import { SafeInt, reply } from "../protocol.ts";

/** Key of the realm's index actor (never a bot id: the webhook kind owns every other). */
export const INDEX_KEY = "~index";

export const webhookIndexProtocol = {
  /** A bot may have pending deliveries from generation `gen` on (the bot's own call). */
  mark: { args: Type.Object({ botId: SafeInt, gen: SafeInt }), reply: reply<{ marked: boolean }>() },
  /** A bot had nothing pending at generation `gen` (the worker, on its notice). */
  clear: { args: Type.Object({ botId: SafeInt, gen: SafeInt }), reply: reply<{ cleared: boolean }>() },
  /** The bots that may have pending deliveries (the worker's sweep). */
  pendingBots: { args: Type.Object({}), reply: reply<{ bots: { botId: number; gen: number }[] }>() },
} as const;

export type WebhookIndexProtocol = typeof webhookIndexProtocol;
