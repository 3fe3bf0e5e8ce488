// The webhook index kind's door.
export { webhookIndexBehavior } from "./behavior.ts";
export type { WebhookIndexState } from "./behavior.ts";
export { webhookIndexRef } from "../addresses.ts";
