// The uploads kind's methods: their arguments, replies and which a gateway
// may call. How to add one: docs/architecture.md, "Actor protocols".
//
// One actor per realm (uploadsDirectoryRef, key "uploads"): the realm's
// uploads directory, Zulip's Attachment rows (state.ts). Its actors keep the
// storage ids they had as the blob kind's second role, blob.<realm>.uploads
// (Behavior.storedAs).

import { Type } from "typebox";
import { SafeInt, SafeIntList, reply } from "../protocol.ts";
import type { Obj } from "../types.ts";

/** Key of the realm's uploads directory (never a file's key: the blob kind owns every other). */
export const UPLOADS_KEY = "uploads";

/** An image upload's facts, for a message's render (never the bytes). */
export interface UploadImageInfo {
  width: number;
  height: number;
  animated: boolean;
  contentType: string;
}

/** What the gateway needs to decide a fetch of an upload. */
export interface UploadLookup {
  ownerId: number;
  name: string;
  size: number;
  contentType: string;
  messageIds: number[];
  isImage: boolean;
}

const PathIds = Type.Array(Type.String());

export const uploadsProtocol = {
  /** The gateway stored the bytes under pathId (checked by the handler): record them as the caller's. */
  recordUpload: {
    args: Type.Object({
      pathId: Type.String(),
      name: Type.String(),
      size: SafeInt,
      contentType: Type.String(),
      image: Type.Optional(Type.Object({ width: SafeInt, height: SafeInt, animated: Type.Boolean() })),
    }),
    reply: reply<Obj>(),
    external: "caller",
  },
  /** GET /attachments. */
  listAttachments: {
    args: Type.Object({}),
    reply: reply<{ attachments: Obj[]; upload_space_used: number }>(),
    external: "caller",
  },
  /** DELETE /attachments/{id}: the reply names the bytes the gateway then removes. */
  removeAttachment: {
    args: Type.Object({ id: SafeInt }),
    reply: reply<{ pathId: string; contentType: string }>(),
    external: "caller",
  },
  /** A fetch of /user_uploads/... (and the thumbnail status): null for no such file. */
  lookupUpload: {
    args: Type.Object({ pathId: Type.String() }),
    reply: reply<UploadLookup | null>(),
    external: "caller",
  },

  // ---- the conversations' calls (internal)
  /** A message links these files: claim the sender's; `others` lists other users' with their messages. */
  claimUploads: {
    args: Type.Object({
      pathIds: PathIds,
      senderId: SafeInt,
      messageId: SafeInt,
      /** ms since the epoch. */
      dateSent: SafeInt,
      /** The message's conversation key. */
      conv: Type.Optional(Type.String()),
      /** The sender received a message linking them: claim other users' files too. */
      shared: Type.Optional(Type.Boolean()),
    }),
    // [path, [[message id, conversation key or ""]]]
    reply: reply<{ claimed: number; others: [string, [number, string][]][] }>(),
  },
  /** Messages were deleted: their files no longer list them. */
  messagesRemoved: { args: Type.Object({ ids: SafeIntList }), reply: reply() },
  /** The images among these files, for a message's render. */
  uploadImages: {
    args: Type.Object({ pathIds: PathIds }),
    reply: reply<{ images: [string, UploadImageInfo][] }>(),
  },
  /** An edit dropped links (detached.ts): the editor's files no message links any more. */
  releaseLinks: {
    args: Type.Object({ messageId: SafeInt, editorId: SafeInt, dropped: PathIds, kept: PathIds }),
    reply: reply<{ detached: Obj[] }>(),
  },
} as const;

export type UploadsProtocol = typeof uploadsProtocol;
