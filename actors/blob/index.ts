// The blob kind's door.
export { blobBehavior } from "./behavior.ts";
export type { BlobState } from "./behavior.ts";
export { emojiBlobRef } from "../addresses.ts";
