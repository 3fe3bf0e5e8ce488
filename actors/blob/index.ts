// The blob kind's door.
export { blobBehavior } from "./behavior.ts";
export type { BlobState } from "./behavior.ts";
export type { UploadImageInfo, UploadLookup } from "./protocol.ts";
export { emojiBlobRef, uploadsDirectoryRef } from "../addresses.ts";
export { linkedPathIds } from "./uploads.ts";
