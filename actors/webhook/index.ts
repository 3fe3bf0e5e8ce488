// The webhook kind's door: siblings import only from here.

export { webhookBehavior } from "./behavior.ts";
export {
  ATTEMPT_GRACE_MS,
  IDLE_NOTICE,
  MAX_REQUEST_RETRIES,
  PER_BOT_CONCURRENCY,
  READY_NOTICE,
} from "./handlers.ts";
export {
  OUTGOING_WEBHOOK_BOT,
  TRIGGER_NOTICE,
  outgoingWebhookHandoffs,
  webhookMessage,
  type TriggerUser,
} from "./triggers.ts";
export type { ClaimedDelivery, Trigger } from "./protocol.ts";
export { webhookRef } from "../addresses.ts";
export { isWebhookUrl } from "./url.ts";
