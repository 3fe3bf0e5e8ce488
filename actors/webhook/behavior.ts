// The webhook kind: one actor per outgoing-webhook bot (key = bot user id).

import type { Behavior } from "../types.ts";
import { webhookHandlers } from "./handlers.ts";
import {
  applyWebhookFact,
  initialWebhook,
  webhookFromSnapshot,
  webhookToSnapshot,
  type WebhookKindState,
} from "./state.ts";

export const webhookBehavior: Behavior<WebhookKindState> = {
  kind: "webhook",
  initial: initialWebhook,
  apply: (state, fact) => applyWebhookFact(state, fact),
  toSnapshot: webhookToSnapshot,
  fromSnapshot: webhookFromSnapshot,
  handlers: webhookHandlers,
  // Node-side only (the outgoing-webhook worker): no gateway reaches it.
  external: {},
};
