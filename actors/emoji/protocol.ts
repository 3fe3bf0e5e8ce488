// The emoji directory's methods (directory.ts): their arguments, replies
// and which a gateway may call. How to add one: docs/architecture.md,
// "Actor protocols".

import { Type } from "typebox";
import { SafeInt, reply } from "../protocol.ts";
import type { RealmEmoji } from "../realm-emoji.ts";
import type { Obj } from "../types.ts";

export const emojiProtocol = {
  /** GET /realm/emoji and /register (spectators of a web-public realm too). */
  list: { args: Type.Object({}), reply: reply<{ emoji: Obj }>(), external: "anonymous" },
  /** Internal: id -> {id, name, deactivated}, for status and reaction checks. */
  lookup: { args: Type.Object({}), reply: reply<{ emoji: Record<string, RealmEmoji> }>() },
  /**
   * POST /realm/emoji/{name}: the raw path name and the upload's facts; the
   * bytes (base64) only when the file is within the size limit. The handler
   * checks them with Zulip's errors, in Zulip's order.
   */
  add: {
    args: Type.Object({
      name: Type.String(),
      fileCount: SafeInt,
      size: Type.Optional(SafeInt),
      mimetype: Type.Optional(Type.String()),
      filename: Type.Optional(Type.String()),
      data: Type.Optional(Type.String()),
    }),
    reply: reply<{ id: string }>(),
    external: "caller",
  },
  /** DELETE /realm/emoji/{name}. */
  remove: { args: Type.Object({ name: Type.String() }), reply: reply(), external: "caller" },
} as const;

export type EmojiProtocol = typeof emojiProtocol;
