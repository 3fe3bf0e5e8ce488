// The webhook kind's door: siblings import only from here.

import type { ActorRef } from "../types.ts";

export { webhookBehavior } from "./behavior.ts";
export {
  ATTEMPT_GRACE_MS,
  IDLE_NOTICE,
  MAX_REQUEST_RETRIES,
  PER_BOT_CONCURRENCY,
  READY_NOTICE,
  webhookIndexRef,
} from "./handlers.ts";
export {
  OUTGOING_WEBHOOK_BOT,
  TRIGGER_NOTICE,
  outgoingWebhookHandoffs,
  webhookMessage,
  type TriggerUser,
} from "./triggers.ts";
export type { Trigger } from "./state.ts";

/** The outbox of one outgoing-webhook bot. */
export function webhookRef(realmId: number, botId: number): ActorRef {
  return { kind: "webhook", realm: realmId, key: String(botId) };
}
export { isWebhookUrl } from "./url.ts";
