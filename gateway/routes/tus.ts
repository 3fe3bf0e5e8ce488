// Resumable uploads: the tus 1.0 protocol at /api/v1/tus (feature level
// 295), which Zulip serves through tusd and its hooks (zerver/views/tusd.py).
// Served here directly over the upload storage (docs/uploads.md):
//
//   OPTIONS /tus            the server's capabilities
//   POST    /tus            create an upload (Upload-Length, Upload-Metadata
//                           filename/filetype) -> 201 Location /api/v1/tus/<id>
//   HEAD    /tus/<id>       how much arrived -> Upload-Offset
//   PATCH   /tus/<id>       append bytes at Upload-Offset -> 204; the last
//                           PATCH -> 200 {"url", "filename"}, as Zulip's
//                           pre-finish hook answers it
//   DELETE  /tus/<id>       abandon an unfinished upload (termination)
//
// The partial data lives in the upload storage, not in memory, so an
// upload resumes on another gateway or after a restart: each PATCH's bytes
// are one object, and a small JSON record holds the offset. The record is
// only its owner's (anyone else sees 404), unfinished uploads expire after
// UPLOAD_TTL_MS, and a user has at most MAX_OPEN_UPLOADS of them (creating
// another drops the oldest): abandoned bytes stay bounded. When the last
// byte arrives the chunks become an ordinary upload exactly as POST
// /user_uploads makes one (storeUpload: same checks, record, event,
// thumbnails), and the partial objects are removed.
//
// Like tusd without a lock provider, concurrent PATCHes of one upload are
// not serialised: tus clients send one at a time.

import { randomBytes } from "node:crypto";
import { errors } from "../../actors/errors.ts";
import type { UploadStorage } from "../../cluster/upload-storage.ts";
import {
  API_PREFIX,
  defineRoute,
  RawReply,
  rawBody,
  requestHeader,
  uploadStorage,
  type RouteDef,
  type RouteRequest,
} from "../index.ts";
import { MAX_FILE_UPLOAD_SIZE_MIB, storeUpload } from "./uploads.ts";

const TUS_VERSION = "1.0.0";
const MAX_SIZE = MAX_FILE_UPLOAD_SIZE_MIB * 1024 * 1024;
/** Unfinished uploads are forgotten a day after their last PATCH. */
export const UPLOAD_TTL_MS = 24 * 60 * 60 * 1000;
/** Unfinished uploads one user may hold. */
export const MAX_OPEN_UPLOADS = 10;
/** PATCHes one upload may take: bounds the objects (and the work) one upload costs. */
export const MAX_CHUNKS = 1000;
/** Upload-Metadata is a short list of key/value pairs; longer is refused unread. */
const MAX_METADATA_CHARS = 8192;

/** SNAPSHOT-like: stored JSON; a new field needs a default in readInfo. */
interface TusInfo {
  owner: number;
  length: number;
  offset: number;
  chunks: number;
  filename: string;
  filetype: string;
  /** ms since the epoch. */
  expires: number;
}

interface OpenEntry {
  id: string;
  expires: number;
}

const infoKey = (realm: number, id: string) => `tus/${realm}/${id}/info`;
const chunkKey = (realm: number, id: string, n: number) => `tus/${realm}/${id}/${n}`;
const userKey = (realm: number, userId: number) => `tus/${realm}/users/${userId}`;

function baseHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return { "Tus-Resumable": TUS_VERSION, "Cache-Control": "no-store", ...extra };
}

function checkVersion(req: RouteRequest): void {
  if (requestHeader(req, "tus-resumable") !== TUS_VERSION) throw errors.tusUnsupportedVersion();
}

/** A decimal header value within 0..max, or null. */
function nonNegative(raw: string | undefined, max: number): number | null {
  if (raw === undefined || !/^\d{1,16}$/.test(raw)) return null;
  const n = Number(raw);
  return n <= max ? n : null;
}

/** tus Upload-Metadata: comma-separated "key base64value" pairs (value optional). */
export function parseMetadata(raw: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (raw === undefined || raw.trim() === "") return out;
  if (raw.length > MAX_METADATA_CHARS) throw errors.tusInvalidMetadata();
  for (const pair of raw.split(",")) {
    const parts = pair.trim().split(" ");
    const key = parts[0] ?? "";
    const value = parts[1] ?? "";
    if (key === "" || parts.length > 2 || out.has(key)) throw errors.tusInvalidMetadata();
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) throw errors.tusInvalidMetadata();
    out.set(key, Buffer.from(value, "base64").toString("utf8"));
  }
  return out;
}

function uploadId(req: RouteRequest): string {
  const id = req.path.upload_id ?? "";
  if (!/^[A-Za-z0-9_-]{24}$/.test(id)) throw errors.tusUploadNotFound();
  return id;
}

async function readJson(storage: UploadStorage, key: string): Promise<unknown> {
  const data = await storage.get(key);
  if (!data) return null;
  try {
    return JSON.parse(data.toString("utf8")) as unknown;
  } catch {
    return null;
  }
}

async function writeJson(storage: UploadStorage, key: string, value: unknown): Promise<void> {
  await storage.put(key, Buffer.from(JSON.stringify(value)), "application/json");
}

/** The caller's live upload, or 404 (unknown, someone else's, expired). */
async function loadOwn(req: RouteRequest, id: string, now: number): Promise<TusInfo> {
  const o = (await readJson(uploadStorage(req), infoKey(req.realmId, id))) as Partial<TusInfo> | null;
  if (!o || o.owner !== req.caller!.userId) throw errors.tusUploadNotFound();
  const info: TusInfo = {
    owner: o.owner,
    length: o.length ?? 0,
    offset: o.offset ?? 0,
    chunks: o.chunks ?? 0,
    filename: o.filename ?? "",
    filetype: o.filetype ?? "",
    expires: o.expires ?? 0,
  };
  if (info.expires <= now) {
    await discard(uploadStorage(req), req.realmId, id, info.chunks);
    throw errors.tusUploadNotFound();
  }
  return info;
}

/** An upload's objects, best effort: nothing refers to them any more. */
async function discard(storage: UploadStorage, realm: number, id: string, chunks: number): Promise<void> {
  // The record first: once it is gone the chunks are unreachable.
  await storage.delete(infoKey(realm, id)).catch(() => {});
  for (let n = 0; n < chunks; n++) await storage.delete(chunkKey(realm, id, n)).catch(() => {});
}

async function readOpen(storage: UploadStorage, realm: number, userId: number): Promise<OpenEntry[]> {
  const o = await readJson(storage, userKey(realm, userId));
  if (!Array.isArray(o)) return [];
  return o.filter(
    (e): e is OpenEntry =>
      typeof e === "object" && e !== null && typeof e.id === "string" && typeof e.expires === "number",
  );
}

/** Forget one upload in its owner's list of unfinished uploads. */
async function closeEntry(req: RouteRequest, id: string): Promise<void> {
  const storage = uploadStorage(req);
  const key = userKey(req.realmId, req.caller!.userId);
  const open = await readOpen(storage, req.realmId, req.caller!.userId);
  await writeJson(
    storage,
    key,
    open.filter((e) => e.id !== id),
  );
}

function expiresHeader(ms: number): string {
  return new Date(ms).toUTCString();
}

/** All chunks in order -> an ordinary upload; the partial objects go. */
async function finish(req: RouteRequest, id: string, info: TusInfo): Promise<RawReply> {
  const storage = uploadStorage(req);
  const parts: Buffer[] = [];
  for (let n = 0; n < info.chunks; n++) {
    const part = await storage.get(chunkKey(req.realmId, id, n));
    // The storage lost a chunk: the upload cannot complete; the client starts over.
    if (!part) {
      await discard(storage, req.realmId, id, info.chunks);
      throw errors.tusUploadNotFound();
    }
    parts.push(part);
  }
  const data = Buffer.concat(parts);
  if (data.length !== info.length) {
    await discard(storage, req.realmId, id, info.chunks);
    throw errors.tusUploadNotFound();
  }
  // Zulip's pre-finish hook: "", "." and ".." are stored as "uploaded-file".
  const name = info.filename === "." || info.filename === ".." ? "" : info.filename;
  const stored = await storeUpload(req, name, info.filetype, data);
  await discard(storage, req.realmId, id, info.chunks);
  await closeEntry(req, id).catch(() => {});
  return new RawReply(
    Buffer.from(JSON.stringify(stored)),
    "application/json",
    baseHeaders({ "Upload-Offset": String(info.length) }),
    200,
  );
}

const options = defineRoute({
  method: "OPTIONS",
  // Not Zulip's JSON API (tusd answers it, not Django): no schema case.
  prefix: API_PREFIX,
  path: "/tus",
  auth: "none",
  params: {},
  handler() {
    return Promise.resolve(
      new RawReply(
        Buffer.alloc(0),
        "text/plain",
        baseHeaders({
          "Tus-Version": TUS_VERSION,
          "Tus-Extension": "creation,termination,expiration",
          "Tus-Max-Size": String(MAX_SIZE),
        }),
        204,
      ),
    );
  },
});

const create = defineRoute({
  method: "POST",
  prefix: API_PREFIX,
  path: "/tus",
  auth: "required",
  params: {},
  async handler(req) {
    checkVersion(req);
    const rawLength = requestHeader(req, "upload-length");
    if (rawLength === undefined) throw errors.tusSizeDeferred();
    const length = nonNegative(rawLength, Number.MAX_SAFE_INTEGER);
    if (length === null) throw errors.tusInvalidLength();
    if (length > MAX_SIZE) throw errors.tusTooLarge(MAX_FILE_UPLOAD_SIZE_MIB);
    const meta = parseMetadata(requestHeader(req, "upload-metadata"));
    const now = Date.now();
    const id = randomBytes(18).toString("base64url");
    const info: TusInfo = {
      owner: req.caller!.userId,
      length,
      offset: 0,
      chunks: 0,
      filename: meta.get("filename") ?? "",
      filetype: meta.get("filetype") ?? "",
      expires: now + UPLOAD_TTL_MS,
    };
    const location = `${API_PREFIX}/tus/${id}`;
    if (length === 0) {
      const reply = await finish(req, id, info);
      return new RawReply(reply.body, reply.contentType, { ...reply.headers, Location: location }, 201);
    }
    const storage = uploadStorage(req);
    // Expired and surplus unfinished uploads of this user go first. Their
    // records tell the expiry (a PATCH extends it) and the chunks to remove.
    const open: (OpenEntry & { chunks: number })[] = [];
    for (const e of await readOpen(storage, req.realmId, info.owner)) {
      const o = (await readJson(storage, infoKey(req.realmId, e.id))) as Partial<TusInfo> | null;
      if (!o) continue;
      const entry = { id: e.id, expires: o.expires ?? 0, chunks: o.chunks ?? 0 };
      if (entry.expires <= now) await discard(storage, req.realmId, e.id, entry.chunks);
      else open.push(entry);
    }
    open.sort((a, b) => a.expires - b.expires);
    while (open.length >= MAX_OPEN_UPLOADS) {
      const e = open.shift()!;
      await discard(storage, req.realmId, e.id, e.chunks);
    }
    await writeJson(storage, infoKey(req.realmId, id), info);
    open.push({ id, expires: info.expires, chunks: 0 });
    await writeJson(
      storage,
      userKey(req.realmId, info.owner),
      open.map((e) => ({ id: e.id, expires: e.expires })),
    );
    return new RawReply(
      Buffer.alloc(0),
      "text/plain",
      baseHeaders({ Location: location, "Upload-Expires": expiresHeader(info.expires) }),
      201,
    );
  },
});

/** HEAD (Fastify answers HEAD with this GET's headers and no body). */
const status = defineRoute({
  method: "GET",
  prefix: API_PREFIX,
  path: "/tus/:upload_id",
  auth: "required",
  params: {},
  async handler(req) {
    checkVersion(req);
    const info = await loadOwn(req, uploadId(req), Date.now());
    return new RawReply(
      Buffer.alloc(0),
      "text/plain",
      baseHeaders({
        "Upload-Offset": String(info.offset),
        "Upload-Length": String(info.length),
        "Upload-Expires": expiresHeader(info.expires),
      }),
      200,
    );
  },
});

const append = defineRoute({
  method: "PATCH",
  prefix: API_PREFIX,
  path: "/tus/:upload_id",
  auth: "required",
  params: {},
  async handler(req) {
    checkVersion(req);
    const chunk = rawBody(req);
    if (chunk === null) throw errors.tusInvalidContentType();
    const offset = nonNegative(requestHeader(req, "upload-offset"), Number.MAX_SAFE_INTEGER);
    if (offset === null) throw errors.tusInvalidOffset();
    const id = uploadId(req);
    const now = Date.now();
    const info = await loadOwn(req, id, now);
    if (offset !== info.offset) throw errors.tusMismatchedOffset();
    if (offset + chunk.length > info.length) throw errors.tusSizeExceeded();
    if (chunk.length > 0) {
      if (info.chunks >= MAX_CHUNKS) throw errors.tusTooManyChunks();
      const storage = uploadStorage(req);
      // The chunk first: a record never counts bytes that are not stored.
      await storage.put(chunkKey(req.realmId, id, info.chunks), chunk, "application/octet-stream");
      info.chunks += 1;
      info.offset += chunk.length;
      info.expires = now + UPLOAD_TTL_MS;
      await writeJson(storage, infoKey(req.realmId, id), info);
    }
    if (info.offset === info.length) return finish(req, id, info);
    return new RawReply(
      Buffer.alloc(0),
      "text/plain",
      baseHeaders({ "Upload-Offset": String(info.offset), "Upload-Expires": expiresHeader(info.expires) }),
      204,
    );
  },
});

const terminate = defineRoute({
  method: "DELETE",
  prefix: API_PREFIX,
  path: "/tus/:upload_id",
  auth: "required",
  params: {},
  async handler(req) {
    checkVersion(req);
    const id = uploadId(req);
    const info = await loadOwn(req, id, Date.now());
    await discard(uploadStorage(req), req.realmId, id, info.chunks);
    await closeEntry(req, id);
    return new RawReply(Buffer.alloc(0), "text/plain", baseHeaders(), 204);
  },
});

export const tusRoutes: RouteDef[] = [options, create, status, append, terminate];
