// The blob kind: one immutable file per actor (an uploaded custom emoji
// image today). The bytes are journaled once, as base64 text, so they live
// in the same store as every other actor (LMDB embedded, Redis in a
// cluster) and the actor never touches a store itself.
//
// Only actors write a blob (`put`, internal callers only); the gateway reads
// it (`get`) to serve the file. A blob is placed on its owner's shard (see
// emojiBlobRef): the owner's `put` is then a local call, never a NATS
// message, whose default 1 MB payload limit a 5 MiB image would exceed.
//
// The realm's uploads directory was this kind's second role until it became
// the uploads kind: it keeps its storage id blob.<realm>.uploads, so this
// kind owns every key but that one (ownsKey).

import { UPLOADS_KEY } from "../addresses.ts";
import { errors } from "../errors.ts";
import { defineBehavior, handlersOf, type HandlerOf } from "../protocol.ts";
import type { Caller, Obj } from "../types.ts";
import { blobProtocol, type BlobProtocol } from "./protocol.ts";

/** SNAPSHOT: a new field needs a default in fromSnapshot. */
export interface BlobState {
  /** Base64 of the bytes; "" until stored. */
  data: string;
  contentType: string;
  size: number;
}

type BlobHandler<M extends keyof BlobProtocol> = HandlerOf<BlobState, BlobProtocol, M>;

function requireInternal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

const put: BlobHandler<"put"> = (state, args, _ctx, caller) => {
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

const get: BlobHandler<"get"> = (state) => {
  if (state.data === "") return { reply: null };
  return { reply: { data: state.data, contentType: state.contentType, size: state.size } };
};

function fromSnapshot(data: string): BlobState {
  const o = JSON.parse(data) as Partial<BlobState>;
  return { data: o.data ?? "", contentType: o.contentType ?? "", size: o.size ?? 0 };
}

function apply(state: BlobState, fact: Obj): BlobState {
  if (fact.type === "stored") {
    state.data = String(fact.data);
    state.contentType = String(fact.contentType);
    state.size = Number(fact.size);
  }
  return state;
}

// The emoji images are public (GET /user_avatars/...); storing is the emoji directory's.
export const blobBehavior = defineBehavior<BlobState, BlobProtocol>({
  kind: "blob",
  ownsKey: (key) => key !== UPLOADS_KEY,
  protocol: blobProtocol,
  initial: () => ({ data: "", contentType: "", size: 0 }),
  apply,
  toSnapshot: (s) => JSON.stringify(s),
  fromSnapshot,
  handlers: handlersOf<BlobState, BlobProtocol>()({ put, get }),
});
