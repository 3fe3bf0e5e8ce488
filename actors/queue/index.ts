// The queue kind's door: siblings import only from here.

export {
  DEFAULT_QUEUE_TIMEOUT_SECS,
  MAX_QUEUE_TIMEOUT_SECS,
  MOBILE_QUEUE_TIMEOUT_SECS,
  queueBehavior,
  queueOwner,
  queueRef,
} from "./behavior.ts";
export { EMPTY_TOPIC_DISPLAY_NAME, isSupportedNarrowTerm, shapeForQueue } from "./shape.ts";
export type { QueueSetState } from "./state.ts";
export type { Registration } from "./shape.ts";
