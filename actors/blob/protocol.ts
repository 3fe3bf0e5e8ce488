// The blob kind's methods: their arguments, replies and which a gateway may
// call. How to add one: docs/architecture.md, "Actor protocols".
//
// One immutable file per actor (emojiBlobRef; any key but "uploads", which
// is the uploads kind's under the same storage ids: actors/uploads).

import { Type } from "typebox";
import { reply } from "../protocol.ts";

export const blobProtocol = {
  /** Store the bytes (base64), once; the emoji directory's only. */
  put: { args: Type.Object({ data: Type.String(), contentType: Type.String() }), reply: reply() },
  /** The gateway serving the file (GET /user_avatars/...: public); null before `put`. */
  get: {
    args: Type.Object({}),
    reply: reply<{ data: string; contentType: string; size: number } | null>(),
    external: "anonymous",
  },
} as const;

export type BlobProtocol = typeof blobProtocol;
