// State of the uploads kind: the realm's uploads directory (one actor per
// realm, key "uploads"), Zulip's Attachment rows. Each uploaded file's
// record (owner, name, size, content type, the messages that link it) and
// the realm's upload_space_used. The bytes are not here: the gateway keeps
// them in the upload storage (cluster/upload-storage.ts) and records them
// here after storing them.

import type { ActorRef, Obj, OutEvent } from "../types.ts";

export interface Attachment {
  id: number;
  pathId: string;
  name: string;
  size: number;
  contentType: string;
  ownerId: number;
  /** ms since the epoch. */
  createTime: number;
  /** Messages linking the file, ascending by id; date_sent in ms. */
  messages: { id: number; dateSent: number; conv?: string }[];
  /** An image the gateway made thumbnails of (absent in records made before thumbnails). */
  image?: { width: number; height: number; animated: boolean };
}

/** SNAPSHOT: a new field needs a default in uploadsFromSnapshot. */
export interface UploadsState {
  realmId: number;
  byPath: Map<string, Attachment>;
  /** Sum of the sizes of every attachment of the realm. */
  spaceUsed: number;
}

export type UploadsFact =
  | { type: "attachmentAdded"; attachment: Attachment }
  /** `conv`: the message's conversation key (absent in facts written before it). */
  | { type: "attachmentClaimed"; pathId: string; messageId: number; dateSent: number; conv?: string }
  | { type: "attachmentRemoved"; pathId: string }
  /** Deleted messages no longer link the file; it stays its owner's. */
  | { type: "attachmentUnclaimed"; pathId: string; messageIds: number[] };

export function initialUploads(ref: ActorRef): UploadsState {
  return { realmId: ref.realm, byPath: new Map(), spaceUsed: 0 };
}

export function applyUploadsFact(state: UploadsState, raw: Obj): UploadsState {
  const fact = raw as unknown as UploadsFact;
  switch (fact.type) {
    case "attachmentAdded": {
      const a = fact.attachment;
      if (state.byPath.has(a.pathId)) break;
      state.byPath.set(a.pathId, { ...a, messages: [...a.messages] });
      state.spaceUsed += a.size;
      break;
    }
    case "attachmentClaimed": {
      const a = state.byPath.get(fact.pathId);
      if (!a || a.messages.some((m) => m.id === fact.messageId)) break;
      a.messages.push({
        id: fact.messageId,
        dateSent: fact.dateSent,
        ...(fact.conv === undefined ? {} : { conv: fact.conv }),
      });
      a.messages.sort((x, y) => x.id - y.id);
      break;
    }
    case "attachmentUnclaimed": {
      const a = state.byPath.get(fact.pathId);
      if (!a) break;
      const gone = new Set(fact.messageIds);
      a.messages = a.messages.filter((m) => !gone.has(m.id));
      break;
    }
    case "attachmentRemoved": {
      const a = state.byPath.get(fact.pathId);
      if (!a) break;
      state.byPath.delete(fact.pathId);
      state.spaceUsed -= a.size;
      break;
    }
    default:
      break;
  }
  return state;
}

export function uploadsToSnapshot(state: UploadsState): string {
  return JSON.stringify({
    realmId: state.realmId,
    attachments: [...state.byPath.values()],
    spaceUsed: state.spaceUsed,
  });
}

export function uploadsFromSnapshot(data: string, ref: ActorRef): UploadsState {
  const o = JSON.parse(data) as { attachments?: Attachment[]; spaceUsed?: number };
  const state = initialUploads(ref);
  for (const a of o.attachments ?? []) state.byPath.set(a.pathId, a);
  state.spaceUsed = o.spaceUsed ?? [...state.byPath.values()].reduce((n, a) => n + a.size, 0);
  return state;
}

export function fact(f: UploadsFact): Obj {
  return f as unknown as Obj;
}

export function format(a: Attachment): Obj {
  return {
    id: a.id,
    name: a.name,
    path_id: a.pathId,
    size: a.size,
    // Seconds since feature level 443 (stored in ms); message ids only since 472.
    create_time: Math.floor(a.createTime / 1000),
    message_ids: a.messages.map((m) => m.id),
  };
}

/** The `attachment` event of a file, to its owner's queues (Zulip's notify_attachment_update). */
export function event(op: "add" | "update", a: Attachment, spaceUsed: number): OutEvent {
  return {
    event: { type: "attachment", op, attachment: format(a), upload_space_used: spaceUsed },
    userIds: [a.ownerId],
  };
}
