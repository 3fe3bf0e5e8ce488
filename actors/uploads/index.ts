// The uploads kind's door.
export { uploadsBehavior } from "./behavior.ts";
export type { UploadsState } from "./state.ts";
export type { UploadImageInfo, UploadLookup } from "./protocol.ts";
export { uploadsDirectoryRef } from "../addresses.ts";
export { linkedPathIds } from "./handlers.ts";
