// The blob kind's methods: their arguments, replies and which a gateway may
// call. How to add one: docs/architecture.md, "Actor protocols".
//
// The kind has two roles by key, each with its own methods and address
// (actors/addresses.ts): a file (any key but "uploads", behavior.ts) and the
// realm's uploads directory (key "uploads", uploads.ts and detached.ts). An
// actor refuses the other role's methods.

import { Type } from "typebox";
import { SafeInt, SafeIntList, reply } from "../protocol.ts";
import type { Obj } from "../types.ts";

/** Key of the realm's uploads directory (never a file's key). */
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

// ---- a file (emojiBlobRef): one immutable file
export const blobFileProtocol = {
  /** Store the bytes (base64), once; the emoji directory's only. */
  put: { args: Type.Object({ data: Type.String(), contentType: Type.String() }), reply: reply() },
  /** The gateway serving the file (GET /user_avatars/...: public); null before `put`. */
  get: {
    args: Type.Object({}),
    reply: reply<{ data: string; contentType: string; size: number } | null>(),
    external: "anonymous",
  },
} as const;

// ---- the realm's uploads directory (uploadsDirectoryRef): Zulip's Attachment rows
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

/** Every method of the kind: the behaviour's protocol (the node checks gateways' args against it). */
export const blobProtocol = { ...blobFileProtocol, ...uploadsProtocol } as const;

export type BlobFileProtocol = typeof blobFileProtocol;
export type UploadsProtocol = typeof uploadsProtocol;
export type BlobProtocol = typeof blobProtocol;
