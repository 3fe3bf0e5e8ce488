// The uploads kind: the realm's uploads directory (one actor per realm, key
// "uploads"), Zulip's Attachment rows (state.ts, handlers.ts, detached.ts).
//
// It was the blob kind's second role until it became its own kind: its
// actor keeps the storage id blob.<realm>.uploads (storedAs), so its journal
// and snapshots are read unchanged, and it owns that one key (ownsKey), the
// blob kind every other.

import { UPLOADS_KEY } from "../addresses.ts";
import { defineBehavior, handlersOf } from "../protocol.ts";
import { detachedHandlers } from "./detached.ts";
import { uploadsHandlers } from "./handlers.ts";
import { uploadsProtocol, type UploadsProtocol } from "./protocol.ts";
import {
  applyUploadsFact,
  initialUploads,
  uploadsFromSnapshot,
  uploadsToSnapshot,
  type UploadsState,
} from "./state.ts";

// The gateway's methods (recordUpload, listAttachments, removeAttachment,
// lookupUpload) need a caller of the realm; the conversations' are internal.
export const uploadsBehavior = defineBehavior<UploadsState, UploadsProtocol>({
  kind: "uploads",
  storedAs: "blob",
  ownsKey: (key) => key === UPLOADS_KEY,
  protocol: uploadsProtocol,
  initial: initialUploads,
  apply: (state, fact) => applyUploadsFact(state, fact),
  toSnapshot: uploadsToSnapshot,
  fromSnapshot: uploadsFromSnapshot,
  handlers: handlersOf<UploadsState, UploadsProtocol>()({ ...uploadsHandlers, ...detachedHandlers }),
});
