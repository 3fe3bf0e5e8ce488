// Typing notifications, the directory's part (Zulip's zerver/views/typing.py):
// its leaf read of a channel for POST /typing. Nothing here is durable. The
// conversation's part (POST /messages/{id}/typing) is actors/channel/typing.ts.

import { canAccessContent } from "./access.ts";
import { contentAccessViaGroups } from "./handlers.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";

/** Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS (the realm's typingAudience applies it). */
const MAX_CHANNEL_SIZE_FOR_TYPING = 100;

/**
 * Leaf read for POST /typing to a channel (access_stream_by_id_for_message):
 * `ok` false for an unknown or archived channel or one whose content the
 * user cannot access ("Invalid channel ID"); else its can_send_message_group
 * and its active subscribers, or null past the typing size limit (counting
 * subscriptions, so the realm need not be asked about a large channel).
 */
const typingChannel: DirHandler<"typingChannel"> = async (state, args, ctx) => {
  const ch = state.channels[String(args.stream_id)];
  if (!ch || ch.isArchived) return { reply: { ok: false } };
  // Content access through the channel's groups (FL 354) only when the cheap checks fail.
  if (!canAccessContent(state, ch, args) && !(await contentAccessViaGroups(ctx, state, ch, args.userId)))
    return { reply: { ok: false } };
  const subs = state.subs[String(ch.id)];
  const subscribers: number[] = [];
  let large = false;
  if (subs) {
    for (const [id, s] of Object.entries(subs)) {
      if (!s.active) continue;
      if (subscribers.length === MAX_CHANNEL_SIZE_FOR_TYPING) {
        large = true;
        break;
      }
      subscribers.push(Number(id));
    }
  }
  return {
    reply: {
      ok: true,
      canSend: structuredClone(ch.groups.can_send_message_group!),
      subscribers: large ? null : subscribers,
    },
  };
};

export const typingDirectoryHandlers: DirHandlers<"typingChannel"> = { typingChannel };
