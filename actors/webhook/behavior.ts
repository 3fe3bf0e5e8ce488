// The webhook kind: one actor per outgoing-webhook bot (key = the bot's
// user id), its durable outbox: protocol.ts. The realm's index of bots with
// pending deliveries, once this kind's second role under key "~index", is
// the webhookIndex kind's (actors/webhook-index), under the same storage
// ids: this kind owns every other key.

import { INDEX_KEY } from "../addresses.ts";
import { defineBehavior } from "../protocol.ts";
import { webhookHandlers } from "./handlers.ts";
import { webhookProtocol, type WebhookProtocol } from "./protocol.ts";
import {
  applyWebhookFact,
  initialWebhook,
  webhookFromSnapshot,
  webhookToSnapshot,
  type WebhookState,
} from "./state.ts";

// Node-side only (the outgoing-webhook worker): no method is external.
export const webhookBehavior = defineBehavior<WebhookState, WebhookProtocol>({
  kind: "webhook",
  ownsKey: (key) => key !== INDEX_KEY,
  protocol: webhookProtocol,
  initial: initialWebhook,
  apply: (state, fact) => applyWebhookFact(state, fact),
  toSnapshot: webhookToSnapshot,
  fromSnapshot: webhookFromSnapshot,
  handlers: webhookHandlers,
});
