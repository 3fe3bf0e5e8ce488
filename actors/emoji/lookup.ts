// Emoji name/code lookups and Zulip's emoji checks (zerver/lib/emoji.py
// `get_emoji_data`, `check_emoji_request`), pure functions over a realm's
// custom emoji map; index.ts adds the versions that fetch that map.

import { own } from "../dict.ts";
import { errors } from "../errors.ts";
import type { RealmEmoji } from "../realm-emoji.ts";
import { emojiTables } from "./emoji-data.ts";

export const REACTION_TYPES = ["unicode_emoji", "realm_emoji", "zulip_extra_emoji"] as const;
export type ReactionType = (typeof REACTION_TYPES)[number];

export function unicodeCodeForName(name: string): string | undefined {
  return emojiTables().nameToCode.get(name);
}

export function unicodeNameForCode(code: string): string | undefined {
  return emojiTables().codeToName.get(code);
}

/**
 * Zulip's get_emoji_data: the code and type a bare name stands for. Active
 * custom emoji win over "zulip", which wins over unicode names.
 */
export function emojiDataForName(
  name: string,
  realmEmoji: Record<string, RealmEmoji>,
): { emojiCode: string; reactionType: ReactionType } {
  for (const e of Object.values(realmEmoji)) {
    if (e.name === name && !e.deactivated) return { emojiCode: e.id, reactionType: "realm_emoji" };
  }
  if (name === "zulip") return { emojiCode: "zulip", reactionType: "zulip_extra_emoji" };
  const code = unicodeCodeForName(name);
  if (code !== undefined) return { emojiCode: code, reactionType: "unicode_emoji" };
  throw errors.emojiDoesNotExist(name);
}

/** Zulip's check_emoji_request: is (name, code, type) a valid emoji to set now? */
export function checkEmojiRequest(
  name: string,
  code: string,
  type: string,
  realmEmoji: Record<string, RealmEmoji>,
): void {
  if (type === "realm_emoji") {
    const e = own(realmEmoji, code);
    if (!e) throw errors.invalidCustomEmoji();
    if (e.name !== name) throw errors.invalidCustomEmojiName();
    if (e.deactivated) throw errors.deactivatedCustomEmoji();
  } else if (type === "zulip_extra_emoji") {
    if (code !== "zulip") throw errors.invalidEmojiCode();
    if (name !== code) throw errors.invalidEmojiName();
  } else if (type === "unicode_emoji") {
    if (unicodeNameForCode(code) === undefined) throw errors.invalidEmojiCode();
    if (unicodeCodeForName(name) !== code) throw errors.invalidEmojiName();
  } else {
    throw errors.invalidEmojiType();
  }
}
