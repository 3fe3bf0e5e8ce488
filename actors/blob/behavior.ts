// The blob kind: one immutable file per actor (an uploaded custom emoji
// image today). The bytes are journaled once, as base64 text, so they live
// in the same store as every other actor (LMDB embedded, Redis in a
// cluster) and the actor never touches a store itself.
//
// Only actors write a blob (`put`, internal callers only); the gateway reads
// it (`get`) to serve the file. A blob is placed on its owner's shard (see
// emojiBlobRef): the owner's `put` is then a local call, never a NATS
// message, whose default 1 MB payload limit a 5 MiB image would exceed.

import { detachedHandlers } from "./detached.ts";
import { errors } from "../errors.ts";
import { defineBehavior, handlersOf, roleHandlers, type HandlerOf } from "../protocol.ts";
import type { ActorRef, Caller, Obj } from "../types.ts";
import {
  UPLOADS_KEY,
  blobProtocol,
  type BlobFileProtocol,
  type BlobProtocol,
  type UploadsProtocol,
} from "./protocol.ts";
import {
  applyUploadsFact,
  initialUploads,
  uploadsFromSnapshot,
  uploadsHandlers,
  uploadsToSnapshot,
  type UploadsState,
} from "./uploads.ts";

/** SNAPSHOT: a new field needs a default in fromSnapshot. */
export interface BlobState {
  /** Base64 of the bytes; "" until stored. */
  data: string;
  contentType: string;
  size: number;
}

type FileHandler<M extends keyof BlobFileProtocol> = HandlerOf<BlobState, BlobFileProtocol, M>;

function requireInternal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

const put: FileHandler<"put"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const { data, contentType } = args;
  if (data === "" || contentType === "") throw errors.internal();
  // Immutable: a retried put of the same bytes is a no-op; other bytes are a bug.
  if (state.data !== "") {
    if (state.data !== data) throw errors.internal();
    return { reply: {} };
  }
  const size = Buffer.byteLength(data, "base64");
  return { facts: [{ type: "stored", data, contentType, size }], reply: {} };
};

const get: FileHandler<"get"> = (state) => {
  if (state.data === "") return { reply: null };
  return { reply: { data: state.data, contentType: state.contentType, size: state.size } };
};

// Two roles by key, as the channel kind: "uploads" is the realm's uploads
// directory (./uploads.ts), any other key one immutable file.
type BlobKindState = BlobState | UploadsState;
const isUploads = (ref: ActorRef) => ref.key === UPLOADS_KEY;

/** The state of a file actor; an uploads directory refuses a file's methods. */
function asFile(state: BlobKindState): BlobState {
  if ("byPath" in state) throw errors.internal();
  return state;
}

/** The state of the uploads directory; a file refuses its methods. */
function asUploads(state: BlobKindState): UploadsState {
  if (!("byPath" in state)) throw errors.internal();
  return state;
}

const handlers = handlersOf<BlobKindState, BlobProtocol>()({
  ...roleHandlers(asFile, handlersOf<BlobState, BlobFileProtocol>()({ put, get })),
  ...roleHandlers(
    asUploads,
    handlersOf<UploadsState, UploadsProtocol>()({ ...uploadsHandlers, ...detachedHandlers }),
  ),
});

function fileFromSnapshot(data: string): BlobState {
  const o = JSON.parse(data) as Partial<BlobState>;
  return { data: o.data ?? "", contentType: o.contentType ?? "", size: o.size ?? 0 };
}

function applyFile(state: BlobState, fact: Obj): BlobState {
  if (fact.type === "stored") {
    state.data = String(fact.data);
    state.contentType = String(fact.contentType);
    state.size = Number(fact.size);
  }
  return state;
}

// The emoji images are public (GET /user_avatars/...); storing is the emoji
// directory's. The uploads directory's gateway methods: protocol.ts.
export const blobBehavior = defineBehavior<BlobKindState, BlobProtocol>({
  kind: "blob",
  protocol: blobProtocol,
  initial: (ref) => (isUploads(ref) ? initialUploads(ref) : { data: "", contentType: "", size: 0 }),
  apply: (state, fact: Obj, ref) =>
    isUploads(ref) ? applyUploadsFact(state as UploadsState, fact) : applyFile(state as BlobState, fact),
  toSnapshot: (s) => ("byPath" in s ? uploadsToSnapshot(s) : JSON.stringify(s)),
  fromSnapshot: (data, ref) => (isUploads(ref) ? uploadsFromSnapshot(data, ref) : fileFromSnapshot(data)),
  handlers,
});
