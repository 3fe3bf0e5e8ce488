// The webhook kind: one actor per outgoing-webhook bot (key = bot user id).

import type { Behavior } from "../types.ts";
import { webhookHandlers } from "./handlers.ts";
import {
  applyWebhookFact,
  initialWebhook,
  webhookFromSnapshot,
  webhookToSnapshot,
  type WebhookState,
} from "./state.ts";

export const webhookBehavior: Behavior<WebhookState> = {
  kind: "webhook",
  initial: initialWebhook,
  apply: (state, fact) => applyWebhookFact(state, fact),
  toSnapshot: webhookToSnapshot,
  fromSnapshot: webhookFromSnapshot,
  handlers: webhookHandlers,
};
