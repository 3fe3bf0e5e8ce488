// The emoji door: unicode name/code lookups, Zulip's emoji checks for user
// status and reactions, and the realm's custom emoji (the "emoji" kind's
// directory actor). Callers that validate an emoji use the async helpers
// below, which read the realm's custom emoji only when the answer can
// depend on them.

import type { ActorContext } from "../types.ts";
import { emojiDirectoryRef } from "./directory.ts";
import type { RealmEmoji } from "../realm-emoji.ts";
import { checkEmojiRequest, emojiDataForName, type ReactionType } from "./lookup.ts";

export {
  REACTION_TYPES,
  checkEmojiRequest,
  emojiDataForName,
  unicodeCodeForName,
  unicodeNameForCode,
} from "./lookup.ts";
export type { ReactionType } from "./lookup.ts";
export {
  MAX_EMOJI_FILE_SIZE,
  MAX_EMOJI_FILE_SIZE_MIB,
  emojiBehavior,
  emojiDirectoryRef,
  emojiSourceUrl,
} from "./directory.ts";
export { EMOJI_IMAGE_TYPES } from "./image.ts";

/** The realm's custom emoji (deactivated ones too), by id. */
export async function realmEmojiOf(ctx: ActorContext, realmId: number): Promise<Record<string, RealmEmoji>> {
  return (await ctx.call(emojiDirectoryRef(realmId), "lookup", {})).emoji;
}

/** Zulip's get_emoji_data against the realm's current custom emoji. */
export async function resolveEmojiName(
  ctx: ActorContext,
  realmId: number,
  name: string,
): Promise<{ emojiCode: string; reactionType: ReactionType }> {
  return emojiDataForName(name, await realmEmojiOf(ctx, realmId));
}

/** Zulip's check_emoji_request; reads the custom emoji only for reaction_type realm_emoji. */
export async function checkEmoji(
  ctx: ActorContext,
  realmId: number,
  name: string,
  code: string,
  type: string,
): Promise<void> {
  checkEmojiRequest(name, code, type, type === "realm_emoji" ? await realmEmojiOf(ctx, realmId) : {});
}
