// The webhook kind: one actor per outgoing-webhook bot (key = bot user id),
// and one index per realm (key "~index"): protocol.ts.

import { defineBehavior } from "../protocol.ts";
import { webhookHandlers } from "./handlers.ts";
import { webhookProtocol, type WebhookProtocol } from "./protocol.ts";
import {
  applyWebhookFact,
  initialWebhook,
  webhookFromSnapshot,
  webhookToSnapshot,
  type WebhookKindState,
} from "./state.ts";

// Node-side only (the outgoing-webhook worker): no method is external.
export const webhookBehavior = defineBehavior<WebhookKindState, WebhookProtocol>({
  kind: "webhook",
  protocol: webhookProtocol,
  initial: initialWebhook,
  apply: (state, fact) => applyWebhookFact(state, fact),
  toSnapshot: webhookToSnapshot,
  fromSnapshot: webhookFromSnapshot,
  handlers: webhookHandlers,
});
