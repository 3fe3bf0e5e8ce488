// Handlers of the uploads kind (state.ts): the gateway records, lists,
// removes and looks up files; the conversations claim and release them.
//
// A leaf: it calls no other actor, so a conversation may call `claim` from
// inside its send turn. Events go to the owner's queues only, as Zulip's
// notify_attachment_update.

import { errors } from "../errors.ts";
import type { HandlerOf, SomeHandlersOf } from "../protocol.ts";
import type { Caller, Obj, OutEvent } from "../types.ts";
import type { UploadImageInfo, UploadsProtocol } from "./protocol.ts";
import { event, fact, format, type Attachment, type UploadsState } from "./state.ts";

type UploadsHandler<M extends keyof UploadsProtocol> = HandlerOf<UploadsState, UploadsProtocol, M>;

/** Zulip's path_id: "<realm>/<2 hex>/<24 url-safe>/<sanitized name>". */
const PATH_ID = /^(\d{1,15})\/[0-9a-f]{2}\/[A-Za-z0-9_-]{24}\/[^/]{1,255}$/;

/** An end user of this realm (the gateway's callers); internal callers pass null. */
function member(state: UploadsState, caller: Caller | null): Caller {
  if (!caller || caller.realmId !== state.realmId) throw errors.accessDenied();
  return caller;
}

/** The gateway stored the bytes under pathId: record them as the caller's. */
const recordUpload: UploadsHandler<"recordUpload"> = async (state, args, ctx, caller) => {
  const c = member(state, caller);
  const { pathId, size, image } = args;
  const m = PATH_ID.exec(pathId);
  if (!m || Number(m[1]) !== state.realmId) throw errors.internal();
  if (state.byPath.has(pathId)) throw errors.internal();
  const attachment: Attachment = {
    id: await ctx.nextId(`attachment.${state.realmId}`),
    pathId,
    name: args.name,
    size,
    contentType: args.contentType,
    ownerId: c.userId,
    createTime: ctx.now(),
    messages: [],
  };
  if (image) attachment.image = { width: image.width, height: image.height, animated: image.animated };
  return {
    facts: [fact({ type: "attachmentAdded", attachment })],
    events: [event("add", attachment, state.spaceUsed + size)],
    reply: format(attachment),
  };
};

/** GET /attachments: the caller's files, by id. */
const listAttachments: UploadsHandler<"listAttachments"> = (state, _args, _ctx, caller) => {
  const c = member(state, caller);
  const own: Obj[] = [];
  for (const a of state.byPath.values()) if (a.ownerId === c.userId) own.push(format(a));
  own.sort((x, y) => Number(x.id) - Number(y.id));
  return { reply: { attachments: own, upload_space_used: state.spaceUsed } };
};

/** DELETE /attachments/{id}: only the owner's; the reply names the bytes the gateway then removes. */
const removeAttachment: UploadsHandler<"removeAttachment"> = (state, args, _ctx, caller) => {
  const c = member(state, caller);
  const id = args.id;
  let found: Attachment | undefined;
  for (const a of state.byPath.values()) {
    if (a.id === id && a.ownerId === c.userId) {
      found = a;
      break;
    }
  }
  if (!found) throw errors.invalidAttachment();
  return {
    facts: [fact({ type: "attachmentRemoved", pathId: found.pathId })],
    events: [
      {
        event: {
          type: "attachment",
          op: "remove",
          attachment: { id: found.id },
          upload_space_used: state.spaceUsed - found.size,
        },
        userIds: [found.ownerId],
      },
    ],
    reply: { pathId: found.pathId, contentType: found.contentType },
  };
};

/**
 * What the gateway needs to decide a fetch: the owner and the messages
 * linking the file (the gateway checks the caller's access to them). Null
 * when no such file exists in this realm.
 */
const lookupUpload: UploadsHandler<"lookupUpload"> = (state, args, _ctx, caller) => {
  member(state, caller);
  const a = state.byPath.get(args.pathId);
  if (!a) return { reply: null };
  return {
    reply: {
      ownerId: a.ownerId,
      name: a.name,
      size: a.size,
      contentType: a.contentType,
      messageIds: a.messages.map((m) => m.id),
      isImage: a.image !== undefined,
    },
  };
};

/**
 * A message was sent (or edited) linking these path_ids (internal: from
 * the conversation's turn). Zulip claims a file for a message when the
 * sender owns it or can already see it. The sender's own files are claimed
 * here; other users' existing files come back in `others` with the
 * messages linking them, and the conversation claims them again with
 * `shared` once it knows the sender received one of those messages.
 */
const claimUploads: UploadsHandler<"claimUploads"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const { pathIds, senderId, messageId, dateSent } = args;
  const shared = args.shared === true;
  const conv = args.conv === undefined ? {} : { conv: args.conv };
  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  const others: [string, [number, string][]][] = [];
  const seen = new Set<string>();
  for (const p of pathIds) {
    if (seen.has(p)) continue;
    seen.add(p);
    const a = state.byPath.get(p);
    if (!a || a.messages.some((m) => m.id === messageId)) continue;
    if (a.ownerId !== senderId && !shared) {
      // [path, [[message id, conversation key or ""]]]
      if (a.messages.length) others.push([p, a.messages.map((m) => [m.id, m.conv ?? ""])]);
      continue;
    }
    facts.push(fact({ type: "attachmentClaimed", pathId: p, messageId, dateSent, ...conv }));
    const after = { ...a, messages: [...a.messages, { id: messageId, dateSent, ...conv }] };
    events.push(event("update", after, state.spaceUsed));
  }
  return { facts, events, reply: { claimed: facts.length, others } };
};

/**
 * Messages were deleted (internal: the conversation deleting them): each
 * attachment they linked drops them from its messages and its owner gets
 * the `attachment` update event. A file no message links any more stays
 * listed and deletable by its owner, as Zulip keeps unclaimed attachments.
 * O(attachments + ids).
 */
const messagesRemoved: UploadsHandler<"messagesRemoved"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const ids = new Set(args.ids);
  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  if (ids.size === 0) return { reply: {} };
  for (const a of state.byPath.values()) {
    const messageIds = a.messages.filter((m) => ids.has(m.id)).map((m) => m.id);
    if (!messageIds.length) continue;
    facts.push(fact({ type: "attachmentUnclaimed", pathId: a.pathId, messageIds }));
    const gone = new Set(messageIds);
    const after = { ...a, messages: a.messages.filter((m) => !gone.has(m.id)) };
    events.push(event("update", after, state.spaceUsed));
  }
  return { facts, events, reply: {} };
};

/**
 * The images among these path_ids, for a message's render (internal: the
 * conversations). As Zulip's markdown previews any image upload of the
 * realm a message links: only dimensions and type, never the bytes.
 */
const uploadImages: UploadsHandler<"uploadImages"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const images: [string, UploadImageInfo][] = [];
  for (const p of args.pathIds) {
    const a = state.byPath.get(p);
    if (!a?.image) continue;
    images.push([p, { ...a.image, contentType: a.contentType }]);
  }
  return { reply: { images } };
};

export const uploadsHandlers: SomeHandlersOf<
  UploadsState,
  UploadsProtocol,
  | "uploadImages"
  | "recordUpload"
  | "listAttachments"
  | "removeAttachment"
  | "lookupUpload"
  | "claimUploads"
  | "messagesRemoved"
> = {
  uploadImages,
  recordUpload,
  listAttachments,
  removeAttachment,
  lookupUpload,
  claimUploads,
  messagesRemoved,
};

/**
 * The path_ids a message's content links (its "/user_uploads/<path_id>"
 * links, relative or absolute, of this realm), in order, without repeats.
 * One left-to-right scan with a non-backtracking pattern: linear time.
 */
export function linkedPathIds(content: string, realmId: number): string[] {
  const out = new Set<string>();
  const re = /\/user_uploads\/(\d{1,15}\/[0-9a-f]{2}\/[A-Za-z0-9_-]{24}\/[^\s/)\]>"'?#]{1,255})/g;
  for (let m = re.exec(content); m !== null; m = re.exec(content)) {
    let p = m[1]!;
    if (!p.startsWith(`${realmId}/`)) continue;
    try {
      p = decodeURIComponent(p);
    } catch {
      continue;
    }
    out.add(p);
  }
  return [...out];
}
