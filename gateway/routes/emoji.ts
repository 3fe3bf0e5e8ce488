// Custom emoji (Zulip's zerver/views/realm_emoji.py): list, upload and
// deactivate through the realm's emoji directory actor, and the images
// themselves at the public URLs their source_url names.

import { MAX_EMOJI_FILE_SIZE, emojiBlobRef, emojiDirectoryRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj } from "../../actors/types.ts";
import { defineRoute, RawReply, uploadedFiles, type RouteDef, type RouteRequest } from "../index.ts";

/** Zulip routes realm/emoji/<path:emoji_name>: the name may hold slashes (and is then refused by name). */
function emojiName(req: RouteRequest): string {
  const raw = req.path["*"] ?? "";
  if (raw === "") throw errors.noSuchRoute();
  return raw;
}

const list = defineRoute({
  method: "GET",
  path: "/realm/emoji",
  auth: "required",
  params: {},
  async handler(req) {
    return (await req.call(emojiDirectoryRef(req.realmId), "list", {})) as Obj;
  },
});

const upload = defineRoute({
  method: "POST",
  path: "/realm/emoji/*",
  auth: "required",
  params: {},
  async handler(req) {
    const files = uploadedFiles(req);
    const f = files.length === 1 ? files[0] : undefined;
    await req.call(emojiDirectoryRef(req.realmId), "add", {
      name: emojiName(req),
      fileCount: files.length,
      ...(f && {
        size: f.data.length,
        mimetype: f.mimetype,
        filename: f.filename,
        // An oversized file is refused by size; its bytes need not travel.
        ...(f.data.length <= MAX_EMOJI_FILE_SIZE && { data: f.data.toString("base64") }),
      }),
    });
    return {};
  },
});

const remove = defineRoute({
  method: "DELETE",
  path: "/realm/emoji/*",
  auth: "required",
  params: {},
  async handler(req) {
    await req.call(emojiDirectoryRef(req.realmId), "remove", { name: emojiName(req) });
    return {};
  },
});

/**
 * The image at source_url: public like Zulip's (no credentials), served
 * only under the realm's own host. An emoji's id never names other bytes
 * (re-uploading a name makes a new id), so clients may cache it for good.
 */
const image = defineRoute({
  method: "GET",
  prefix: "",
  path: "/user_avatars/:realm_id/emoji/images/:file",
  auth: "none",
  params: {},
  async handler(req) {
    const m = /^(\d{1,15})\.([a-z]+)$/.exec(req.path.file ?? "");
    if (!m || req.path.realm_id !== String(req.realmId)) throw errors.noSuchRoute();
    const blob = await req.call(emojiBlobRef(req.realmId, m[1]!), "get", {});
    if (!blob || !blob.contentType.endsWith(`/${m[2]}`)) throw errors.noSuchRoute();
    return new RawReply(Buffer.from(blob.data, "base64"), blob.contentType, {
      "cache-control": "public, max-age=31536000, immutable",
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; img-src 'self'",
    });
  },
});

export const emojiRoutes: RouteDef[] = [list, upload, remove, image];
