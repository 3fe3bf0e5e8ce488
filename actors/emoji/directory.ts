// The emoji kind: one directory actor per realm (key "directory") holding
// the realm's custom emoji metadata (Zulip's RealmEmoji rows); the image
// bytes live in blob actors (../blob) placed on this actor's shard.
//
// Calls go one way: the directory calls the group directory (permission),
// the realm (recipients of events) and its blobs, all leaves that never
// call back; user and channel actors call the directory's `lookup`.
//
// Deleting an emoji deactivates it (Zulip keeps the row, so old messages,
// reactions and statuses still resolve); its name is then free again, and
// a new upload under that name is a new emoji with a new id.

import { own } from "../dict.ts";
import { errors } from "../errors.ts";
import { isUserInGroupSetting, realmGroupSetting } from "../permissions/index.ts";
import { emojiBlobRef, emojiDirectoryRef } from "../addresses.ts";
import { defineBehavior, handlersOf, type HandlerOf } from "../protocol.ts";
import type { Caller, Obj, Value } from "../types.ts";
import { unicodeCodeForName } from "./lookup.ts";
import { EMOJI_IMAGE_TYPES, declaredImageType, isAnimated, sniffImageType } from "./image.ts";
import { emojiProtocol, type EmojiProtocol } from "./protocol.ts";

export { emojiDirectoryRef };

type EmojiHandler<M extends keyof EmojiProtocol> = HandlerOf<EmojiDirState, EmojiProtocol, M>;

/** Zulip's MAX_EMOJI_FILE_SIZE_MIB default. */
export const MAX_EMOJI_FILE_SIZE_MIB = 5;
export const MAX_EMOJI_FILE_SIZE = MAX_EMOJI_FILE_SIZE_MIB * 1024 * 1024;

const ROLE_ADMIN = 200;
const ROLE_GUEST = 600;

/** SNAPSHOT: a new field needs a default in fromSnapshot. */
export interface EmojiRecord {
  id: string;
  name: string;
  /** File extension of the stored image ("png"...). */
  ext: string;
  contentType: string;
  animated: boolean;
  deactivated: boolean;
  authorId: number | null;
}

export interface EmojiDirState {
  realmId: number;
  /** By id (string), in id order. */
  emoji: Record<string, EmojiRecord>;
}

type EmojiFact = { type: "added"; emoji: EmojiRecord } | { type: "deactivated"; id: string };

/** Zulip serves emoji at /user_avatars/<realm id>/emoji/images/<file name>. */
export function emojiSourceUrl(realmId: number, e: { id: string; ext: string }): string {
  return `/user_avatars/${realmId}/emoji/images/${e.id}.${e.ext}`;
}

/** The API's RealmEmoji object. still_url: we make no still image (see image.ts). */
export function formatEmoji(realmId: number, e: EmojiRecord): Obj {
  return {
    id: e.id,
    name: e.name,
    source_url: emojiSourceUrl(realmId, e),
    still_url: null,
    deactivated: e.deactivated,
    author_id: e.authorId,
  };
}

function formatAll(state: EmojiDirState): Obj {
  const out: Obj = {};
  for (const e of Object.values(state.emoji)) out[e.id] = formatEmoji(state.realmId, e);
  return out;
}

function activeByName(state: EmojiDirState, name: string): EmojiRecord | undefined {
  return Object.values(state.emoji).find((e) => e.name === name && !e.deactivated);
}

/** Zulip's check_valid_emoji_name (after upload_emoji's strip and space -> underscore). */
export function checkValidEmojiName(name: string): void {
  if (name === "") throw errors.emojiNameMissing();
  if (/^[0-9a-z\-_]+$/.test(name)) {
    if (/[-_]$/.test(name)) throw errors.emojiNameBadEnd();
    return;
  }
  throw errors.emojiNameBadChars();
}

function requireRealmCaller(state: EmojiDirState, caller: Caller | null): Caller {
  if (!caller || caller.realmId !== state.realmId) throw errors.accessDenied();
  return caller;
}

// ---- handlers -------------------------------------------------------------------

/** GET /realm/emoji and /register: every custom emoji, deactivated ones too. Public within the realm (spectators too). */
const list: EmojiHandler<"list"> = (state, _args, _ctx, caller) => {
  if (caller && caller.realmId !== state.realmId) throw errors.accessDenied();
  return { reply: { emoji: formatAll(state) } };
};

/** Internal: id -> {id, name, deactivated}, for status and reaction checks. */
const lookup: EmojiHandler<"lookup"> = (state, _args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const out: Record<string, { id: string; name: string; deactivated: boolean }> = {};
  for (const e of Object.values(state.emoji))
    out[e.id] = { id: e.id, name: e.name, deactivated: e.deactivated };
  return { reply: { emoji: out } };
};

/** POST /realm/emoji/{name} (arguments: protocol.ts). Checks in Zulip's order. */
const add: EmojiHandler<"add"> = async (state, args, ctx, caller) => {
  const c = requireRealmCaller(state, caller);
  // Zulip's require_member_or_admin.
  if (c.role === ROLE_GUEST) throw errors.notAllowedForGuests();
  if (c.isBot) throw errors.botsNotAllowed();
  const name = args.name.trim().replace(/ /g, "_");
  checkValidEmojiName(name);
  const allowed = await realmGroupSetting(ctx, state.realmId, "can_add_custom_emoji_group");
  if (!(await isUserInGroupSetting(ctx, state.realmId, allowed, c.userId, { allowEveryone: false })))
    throw errors.insufficientPermission();
  if (activeByName(state, name)) throw errors.customEmojiExists();
  if (args.fileCount !== 1) throw errors.exactlyOneFile();
  if (unicodeCodeForName(name) !== undefined && c.role > ROLE_ADMIN) throw errors.overrideDefaultEmoji();
  const size = args.size ?? Infinity;
  if (size > MAX_EMOJI_FILE_SIZE || args.data === undefined)
    throw errors.emojiFileTooLarge(MAX_EMOJI_FILE_SIZE_MIB);
  const declared = declaredImageType(args.mimetype ?? "", args.filename ?? "");
  if (declared !== null && own(EMOJI_IMAGE_TYPES, declared) === undefined) throw errors.invalidImageFormat();
  const bytes = Buffer.from(args.data, "base64");
  const type = sniffImageType(bytes);
  // Without a declared type only the bytes can make it an image.
  if (type === null) throw declared === null ? errors.invalidImageFormat() : errors.undecodableImage();

  const id = String(await ctx.nextId(`realmEmoji.${state.realmId}`));
  const record: EmojiRecord = {
    id,
    name,
    ext: EMOJI_IMAGE_TYPES[type]!,
    contentType: type,
    animated: isAnimated(bytes, type),
    deactivated: false,
    authorId: c.userId,
  };
  // The bytes first: a failure after this leaves an unreferenced blob, never
  // an emoji without its image.
  await ctx.call(emojiBlobRef(state.realmId, id), "put", { data: args.data, contentType: type });
  const all = formatAll(state);
  const emoji = formatEmoji(state.realmId, record);
  all[id] = emoji;
  // One event for both client kinds; the queue keeps the form the client
  // asked for (actors/queue/shape.ts, individual_emoji_changes).
  const event: Obj = { type: "realm_emoji", op: "add", emoji, realm_emoji: all };
  return {
    facts: [{ type: "added", emoji: record as unknown as Value } as Obj],
    events: [{ event, userIds: [], everyone: true }],
    reply: { id },
  };
};

/** DELETE /realm/emoji/{name}: an administrator or the emoji's author deactivates it. */
const remove: EmojiHandler<"remove"> = async (state, args, ctx, caller) => {
  const c = requireRealmCaller(state, caller);
  const name = args.name;
  const e = activeByName(state, name);
  if (!e) throw errors.customEmojiNotFound(name);
  if (c.role > ROLE_ADMIN && e.authorId !== c.userId) throw errors.notEmojiAuthor();
  const all = formatAll(state);
  all[e.id] = { ...(all[e.id] as Obj), deactivated: true };
  const event: Obj = {
    type: "realm_emoji",
    op: "update_one",
    emoji_id: e.id,
    data: { deactivated: true },
    realm_emoji: all,
  };
  return {
    facts: [{ type: "deactivated", id: e.id }],
    events: [{ event, userIds: [], everyone: true }],
    reply: {},
  };
};

// ---- behaviour --------------------------------------------------------------------

function applyEmojiFact(state: EmojiDirState, fact: EmojiFact): EmojiDirState {
  if (fact.type === "added") state.emoji[fact.emoji.id] = { ...fact.emoji };
  else if (fact.type === "deactivated") {
    const e = state.emoji[fact.id];
    if (e) e.deactivated = true;
  }
  return state;
}

export const emojiBehavior = defineBehavior<EmojiDirState, EmojiProtocol>({
  kind: "emoji",
  protocol: emojiProtocol,
  initial: (ref) => ({ realmId: ref.realm, emoji: {} }),
  apply: (state, fact) => applyEmojiFact(state, fact as unknown as EmojiFact),
  toSnapshot: (s) => JSON.stringify(s),
  fromSnapshot(data, ref) {
    const o = JSON.parse(data) as Partial<EmojiDirState>;
    return { realmId: o.realmId ?? ref.realm, emoji: o.emoji ?? {} };
  },
  handlers: handlersOf<EmojiDirState, EmojiProtocol>()({ list, lookup, add, remove }),
});
