// File uploads and attachments (Zulip's zerver/views/upload.py and
// attachments.py). The gateway holds the bytes (the upload storage,
// cluster/upload-storage.ts); the realm's uploads directory actor
// (actors/uploads/) holds each file's record: owner, size, the
// messages linking it. A file is served to its owner and to whoever can read
// a message linking it, as Zulip's validate_attachment_request.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { uploadsDirectoryRef } from "../../actors/index.ts";
import type { UploadLookup } from "../../actors/uploads/index.ts";
import { errors } from "../../actors/errors.ts";
import { componentLogger } from "../../cluster/log.ts";
import type { UploadStorage } from "../../cluster/upload-storage.ts";
import {
  defineRoute,
  RawReply,
  uploadStorage,
  uploadedFiles,
  type RouteDef,
  type RouteRequest,
} from "../index.ts";
import { findMessages } from "../narrow.ts";

/**
 * Zulip's MAX_FILE_UPLOAD_SIZE as this server applies it: the request body
 * limit (DEFAULT_BODY_LIMIT, Zulip's nginx client_max_body_size), so a file
 * over it is refused by the body limit before this check.
 */
export const MAX_FILE_UPLOAD_SIZE_MIB = 25;
/** Zulip's temporary file URLs are good for 60 seconds. */
const TEMPORARY_URL_SECONDS = 60;
/** Where the temporary-URL signing key lives: in the shared storage, so every gateway signs alike. */
const SIGNING_KEY = "_keys/temporary-url";

/** Content types a browser may show in place (Zulip's INLINE_MIME_TYPES); others download. */
const INLINE_TYPES = new Set([
  "application/pdf",
  "audio/aac",
  "audio/flac",
  "audio/mp4",
  "audio/mpeg",
  "audio/wav",
  "audio/webm",
  "image/apng",
  "image/avif",
  "image/gif",
  "image/jpeg",
  "image/png",
  "image/webp",
  "text/plain",
  "video/mp4",
  "video/webm",
]);

/** For parts that declare no type (Python's mimetypes.guess_type, the common ones). */
const BY_EXTENSION: Record<string, string> = Object.assign(Object.create(null) as Record<string, string>, {
  txt: "text/plain",
  pdf: "application/pdf",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  heic: "image/heic",
  tif: "image/tiff",
  tiff: "image/tiff",
  svg: "image/svg+xml",
  mp3: "audio/mpeg",
  wav: "audio/wav",
  mp4: "video/mp4",
  webm: "video/webm",
  zip: "application/zip",
  json: "application/json",
  csv: "text/csv",
  html: "text/html",
});

function contentTypeOf(declared: string, filename: string): string {
  const t = declared.toLowerCase().trim();
  if (t !== "" && /^[a-z0-9][a-z0-9.+-]{0,63}\/[a-z0-9][a-z0-9.+-]{0,127}$/.test(t)) return t;
  const dot = filename.lastIndexOf(".");
  const ext = dot >= 0 ? filename.slice(dot + 1).toLowerCase() : "";
  return BY_EXTENSION[ext] ?? "application/octet-stream";
}

/**
 * Zulip's sanitize_name: NFKC, only word characters, whitespace, ".", "-"
 * and "_" kept, runs of whitespace and dashes become one "-"; nothing left
 * (or "." / "..") is "uploaded-file". Also kept under 200 UTF-8 bytes (file
 * systems refuse longer names), the extension preserved.
 */
export function sanitizeName(value: string): string {
  let s = value
    .normalize("NFKC")
    .replace(/[^\p{L}\p{M}\p{N}_\s.-]/gu, "")
    .trim()
    .replace(/[-\s]+/g, "-");
  if (s === "" || s === "." || s === "..") return "uploaded-file";
  if (Buffer.byteLength(s) > 200) {
    const dot = s.lastIndexOf(".");
    const ext = dot > 0 && s.length - dot <= 16 ? s.slice(dot) : "";
    // One pass over the code points: a hostile name costs linear time.
    let budget = 200 - Buffer.byteLength(ext);
    let stem = "";
    for (const ch of s.slice(0, s.length - ext.length)) {
      budget -= Buffer.byteLength(ch);
      if (budget < 0) break;
      stem += ch;
    }
    s = stem + ext;
  }
  return s;
}

function newPathId(realmId: number, filename: string): string {
  return [
    String(realmId),
    randomBytes(1).toString("hex"),
    randomBytes(18).toString("base64url"),
    sanitizeName(filename),
  ].join("/");
}

// ---- thumbnails --------------------------------------------------------------------------

/** Zulip's THUMBNAIL_OUTPUT_FORMATS (POST /register's server_thumbnail_formats). */
export const THUMBNAIL_FORMATS = [
  { name: "840x560-anim.webp", max_width: 840, max_height: 560, format: "webp", animated: true },
  { name: "840x560.webp", max_width: 840, max_height: 560, format: "webp", animated: false },
] as const;
/** Zulip's IMAGE_BOMB_TOTAL_PIXELS: larger images get no thumbnail. */
const MAX_THUMBNAIL_INPUT_PIXELS = 90_000_000;
/**
 * Image types Zulip thumbnails (THUMBNAIL_ACCEPT_IMAGE_TYPES). HEIC needs a
 * HEVC decoder, which sharp's prebuilt libvips lacks (its libheif decodes
 * AVIF only): such an upload is kept and served without thumbnails, as
 * Zulip does with an image it cannot decode (docs/uploads.md).
 */
const THUMBNAIL_INPUT_TYPES = new Set([
  "image/avif",
  "image/gif",
  "image/heic",
  "image/jpeg",
  "image/png",
  "image/tiff",
  "image/webp",
]);

function thumbnailKey(pathId: string, format: string): string {
  return `thumbnail/${pathId}/${format}`;
}

/**
 * Zulip's thumbnails of an uploaded image, stored beside it: every still
 * format, and the animated ones for an animated image. Nothing for bytes
 * that are no image sharp can read, or a decompression bomb.
 */
async function storeThumbnails(
  storage: UploadStorage,
  pathId: string,
  data: Buffer,
): Promise<{ width: number; height: number; animated: boolean } | null> {
  let pages: number;
  let width: number;
  let height: number;
  // Loaded at the first image, not at every start (sharp and libvips are large).
  const { default: sharp } = await import("sharp");
  try {
    const meta = await sharp(data, { limitInputPixels: MAX_THUMBNAIL_INPUT_PIXELS }).metadata();
    pages = meta.pages ?? 1;
    // EXIF orientations 5-8 turn the image on its side.
    const sideways = (meta.orientation ?? 1) >= 5;
    width = (sideways ? meta.height : meta.width) ?? 0;
    height = (sideways ? meta.width : meta.height) ?? 0;
    // One page's height, for an animation.
    if (pages > 1 && meta.pageHeight) height = meta.pageHeight;
  } catch {
    return null;
  }
  if (width <= 0 || height <= 0) return null;
  for (const f of THUMBNAIL_FORMATS) {
    if (f.animated && pages < 2) continue;
    let out: Buffer;
    try {
      out = await sharp(data, { limitInputPixels: MAX_THUMBNAIL_INPUT_PIXELS, animated: f.animated })
        .rotate()
        .resize({ width: f.max_width, height: f.max_height, fit: "inside", withoutEnlargement: true })
        .webp()
        .toBuffer();
    } catch {
      return null;
    }
    await storage.put(thumbnailKey(pathId, f.name), out, "image/webp");
  }
  return { width, height, animated: pages > 1 };
}

/** A file's bytes and thumbnails, best effort: nothing refers to them any more. */
async function removeStored(storage: UploadStorage, pathId: string): Promise<void> {
  for (const key of [pathId, ...THUMBNAIL_FORMATS.map((f) => thumbnailKey(pathId, f.name))]) {
    await storage.delete(key).catch(() => {});
  }
}

// ---- temporary URLs: a signed path_id, valid for a minute ------------------------------

const signingKeys = new WeakMap<UploadStorage, Buffer>();
const keyReloads = new WeakMap<UploadStorage, number>();

async function signingKey(storage: UploadStorage): Promise<Buffer> {
  const cached = signingKeys.get(storage);
  if (cached) return cached;
  let key = await storage.get(SIGNING_KEY);
  if (!key || key.length < 32) {
    // Two gateways racing here: the last write wins and the loser's few
    // tokens (a minute's worth at most) stop verifying.
    await storage.put(SIGNING_KEY, randomBytes(32), "application/octet-stream");
    key = (await storage.get(SIGNING_KEY))!;
  }
  signingKeys.set(storage, key);
  return key;
}

function mac(key: Buffer, payload: string): string {
  return createHmac("sha256", key).update(payload).digest("base64url");
}

async function temporaryUrl(storage: UploadStorage, pathId: string, nowMs: number): Promise<string> {
  const payload = `${pathId}:${Math.floor(nowMs / 1000) + TEMPORARY_URL_SECONDS}`;
  const token = Buffer.from(`${payload}:${mac(await signingKey(storage), payload)}`).toString("hex");
  const name = pathId.slice(pathId.lastIndexOf("/") + 1);
  return `/user_uploads/temporary/${token}/${encodeURIComponent(name)}`;
}

/** The path_id a token signs, or null when it is malformed, forged or expired. */
async function tokenPathId(storage: UploadStorage, token: string, nowMs: number): Promise<string | null> {
  if (token.length > 4096 || token.length % 2 !== 0 || !/^[0-9a-fA-F]+$/.test(token)) return null;
  const text = Buffer.from(token, "hex").toString("utf8");
  const sigAt = text.lastIndexOf(":");
  const expAt = text.lastIndexOf(":", sigAt - 1);
  if (sigAt < 0 || expAt <= 0) return null;
  const payload = text.slice(0, sigAt);
  const given = Buffer.from(text.slice(sigAt + 1));
  const signedBy = (key: Buffer) => {
    const want = Buffer.from(mac(key, payload));
    return given.length === want.length && timingSafeEqual(given, want);
  };
  if (!signedBy(await signingKey(storage))) {
    // Another gateway may have won the race to write the key after this one
    // cached its own: read it again, at most once a minute (forged tokens
    // must not turn into a storage read each).
    const last = keyReloads.get(storage) ?? 0;
    if (nowMs - last < TEMPORARY_URL_SECONDS * 1000) return null;
    keyReloads.set(storage, nowMs);
    signingKeys.delete(storage);
    if (!signedBy(await signingKey(storage))) return null;
  }
  const exp = Number(text.slice(expAt + 1, sigAt));
  if (!Number.isSafeInteger(exp) || exp * 1000 < nowMs) return null;
  return text.slice(0, expAt);
}

// ---- access -------------------------------------------------------------------------------

/** The path_id of /user_uploads/{realm_id_str}/{filename...}; only this realm's. */
function pathIdOf(req: RouteRequest): string | null {
  const realm = req.path.realm_id_str ?? "";
  const rest = req.path["*"] ?? "";
  if (!/^\d{1,15}$/.test(realm) || Number(realm) !== req.realmId || rest === "") return null;
  return `${realm}/${rest}`;
}

/**
 * Zulip's validate_attachment_request: unknown file -> 404; the owner, or a
 * user who can read some message linking it -> allowed; else 403.
 */
async function authorize(req: RouteRequest, pathId: string | null): Promise<UploadLookup> {
  if (pathId === null) throw errors.uploadNotFound();
  const info = await req.call(uploadsDirectoryRef(req.realmId), "lookupUpload", { pathId });
  if (!info) throw errors.uploadNotFound();
  if (info.ownerId === req.caller!.userId) return info;
  if (info.messageIds.length > 0 && (await findMessages(req, info.messageIds)).length > 0) return info;
  throw errors.uploadNotAuthorized();
}

function serveBytes(data: Buffer, info: { name: string; contentType: string }): RawReply {
  const inline = INLINE_TYPES.has(info.contentType);
  // RFC 5987 ext-value: encodeURIComponent leaves ' ( ) * as they are.
  const encoded = encodeURIComponent(info.name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  const disposition = `${inline ? "inline" : "attachment"}; filename*=UTF-8''${encoded}`;
  return new RawReply(data, inline ? info.contentType : "application/octet-stream", {
    "content-disposition": disposition,
    "cache-control": "private, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
  });
}

async function readStored(req: RouteRequest, pathId: string): Promise<Buffer> {
  const data = await uploadStorage(req).get(pathId);
  // A record without bytes: the storage lost them (or a delete is half done).
  if (!data) throw errors.uploadNotFound();
  return data;
}

/**
 * Store one uploaded file as Zulip's upload_message_attachment does: the
 * bytes, their thumbnails, then the attachment record (whose fact sends the
 * owner the `attachment` add event). Shared by POST /user_uploads and the
 * tus protocol's last PATCH (./tus.ts). The caller has checked the size.
 */
export async function storeUpload(
  req: RouteRequest,
  filename: string,
  declaredType: string,
  data: Buffer,
): Promise<{ url: string; filename: string }> {
  const name = filename === "" ? "uploaded-file" : filename;
  const contentType = contentTypeOf(declaredType, name);
  const pathId = newPathId(req.realmId, name);
  const storage = uploadStorage(req);
  // Bytes first: a failure after this leaves an unreferenced object, never
  // a record whose bytes are missing.
  await storage.put(pathId, data, contentType);
  let image: { width: number; height: number; animated: boolean } | null = null;
  if (THUMBNAIL_INPUT_TYPES.has(contentType)) {
    // The upload stands without thumbnails when storing them fails.
    image = await storeThumbnails(storage, pathId, data).catch((err: unknown) => {
      componentLogger("uploads").warn({ err, path_id: pathId }, "storing thumbnails failed");
      return null;
    });
  }
  try {
    await req.call(uploadsDirectoryRef(req.realmId), "recordUpload", {
      pathId,
      name,
      size: data.length,
      contentType,
      ...(image ? { image } : {}),
    });
  } catch (err) {
    await removeStored(storage, pathId);
    throw err;
  }
  const url = `/user_uploads/${pathId}`;
  return { url, filename: name };
}

// ---- routes ---------------------------------------------------------------------------------

const upload = defineRoute({
  method: "POST",
  path: "/user_uploads",
  auth: "required",
  params: {},
  async handler(req) {
    const files = uploadedFiles(req);
    if (files.length === 0) throw errors.uploadNoFile();
    if (files.length !== 1) throw errors.uploadOneFile();
    const f = files[0]!;
    if (f.data.length > MAX_FILE_UPLOAD_SIZE_MIB * 1024 * 1024) {
      throw errors.uploadTooLarge(MAX_FILE_UPLOAD_SIZE_MIB);
    }
    const stored = await storeUpload(req, f.filename, f.mimetype, f.data);
    return { uri: stored.url, ...stored };
  },
});

/** The API form: a temporary URL that needs no credentials. */
const temporaryUrlRoute = defineRoute({
  method: "GET",
  path: "/user_uploads/:realm_id_str/*",
  auth: "required",
  params: {},
  async handler(req) {
    const pathId = pathIdOf(req);
    await authorize(req, pathId);
    return { url: await temporaryUrl(uploadStorage(req), pathId!, Date.now()) };
  },
});

/** The file itself, with the API key (Zulip's override_api_url_scheme). */
const serveFile = defineRoute({
  method: "GET",
  prefix: "",
  path: "/user_uploads/:realm_id_str/*",
  auth: "required",
  params: {},
  async handler(req) {
    const pathId = pathIdOf(req);
    const info = await authorize(req, pathId);
    return serveBytes(await readStored(req, pathId!), info);
  },
});

/** GET /user_uploads/thumbnail/<path_id>/<format>: the thumbnail, to whoever may see the image. */
const serveThumbnail = defineRoute({
  method: "GET",
  prefix: "",
  path: "/user_uploads/thumbnail/:realm_id_str/*",
  auth: "required",
  params: {},
  async handler(req) {
    const full = pathIdOf(req);
    const cut = full === null ? -1 : full.lastIndexOf("/");
    const format = cut < 0 ? "" : full!.slice(cut + 1);
    if (!THUMBNAIL_FORMATS.some((f) => f.name === format)) throw errors.uploadNotFound();
    const pathId = full!.slice(0, cut);
    await authorize(req, pathId);
    const data = await uploadStorage(req).get(thumbnailKey(pathId, format));
    if (!data) throw errors.uploadNotFound();
    return serveBytes(data, { name: format, contentType: "image/webp" });
  },
});

/** Zulip's serve_file_unauthed_from_token: no credentials, the token is the permission. */
const serveTemporary = defineRoute({
  method: "GET",
  prefix: "",
  path: "/user_uploads/temporary/:token/:filename",
  auth: "none",
  params: {},
  async handler(req) {
    const storage = uploadStorage(req);
    const pathId = await tokenPathId(storage, req.path.token ?? "", Date.now());
    if (pathId === null) throw errors.invalidUploadToken();
    if (pathId.slice(pathId.lastIndexOf("/") + 1) !== req.path.filename) throw errors.invalidUploadFilename();
    const data = await storage.get(pathId);
    if (!data) throw errors.uploadNotFound();
    const name = pathId.slice(pathId.lastIndexOf("/") + 1);
    const dot = name.lastIndexOf(".");
    const byExt = BY_EXTENSION[dot >= 0 ? name.slice(dot + 1).toLowerCase() : ""];
    return serveBytes(data, { name, contentType: byExt ?? "application/octet-stream" });
  },
});

const listAttachments = defineRoute({
  method: "GET",
  path: "/attachments",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(uploadsDirectoryRef(req.realmId), "listAttachments", {});
  },
});

const removeAttachment = defineRoute({
  method: "DELETE",
  path: "/attachments/:attachment_id",
  auth: "required",
  params: {},
  async handler(req) {
    const raw = req.path.attachment_id!;
    // Zulip's path converter takes digits only; anything else is no route.
    if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
    const id = Number(raw);
    if (!Number.isSafeInteger(id)) throw errors.invalidAttachment();
    const removed = await req.call(uploadsDirectoryRef(req.realmId), "removeAttachment", { id });
    // The record is gone: the bytes are no longer reachable; removing them
    // may fail (the storage is down) without the client needing to retry.
    await removeStored(uploadStorage(req), removed.pathId);
    return {};
  },
});

export const uploadRoutes: RouteDef[] = [
  upload,
  temporaryUrlRoute,
  serveFile,
  serveTemporary,
  serveThumbnail,
  listAttachments,
  removeAttachment,
];
