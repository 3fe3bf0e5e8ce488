// Leaf reads of the user's message flag index for POST /register:
// starred_messages and recent_private_conversations (Zulip's
// get_starred_message_ids and get_recent_private_conversations). Both walk
// only the caller's own index, as unread_msgs does.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { Caller } from "../types.ts";
import { FLAG_BITS, msgsOf } from "./flags.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<
  UserState,
  UserProtocol,
  "dmConversationKeys" | "starredMessages" | "recentPrivateConversations"
>;

/** Zulip's rule: the conversations of the user's 1000 newest direct messages. */
const RECENT_DM_MESSAGES = 1000;

function requireSelf(state: UserState, caller: Caller | null): void {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId))
    throw errors.accessDenied();
}

/** Ids of the messages the user starred, ascending. */
const starredMessages: Handlers["starredMessages"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  const m = msgsOf(state);
  const starred = FLAG_BITS.starred!;
  const out: number[] = [];
  for (const id of m.ids) if (m.entries[String(id)]![1] & starred) out.push(id);
  return { reply: { starred_messages: out } };
};

/**
 * The direct-message conversations among the user's newest 1000 direct
 * messages, newest first: the other participants (none for a DM to
 * oneself) and the conversation's newest message id.
 */
const recentPrivateConversations: Handlers["recentPrivateConversations"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  const m = msgsOf(state);
  const seen = new Map<string, { max_message_id: number; user_ids: number[] }>();
  let taken = 0;
  // Newest first; the walk stops once the cap of direct messages is reached.
  for (let i = m.ids.length - 1; i >= 0 && taken < RECENT_DM_MESSAGES; i--) {
    const id = m.ids[i]!;
    const conv = m.entries[String(id)]![0];
    if (!conv.startsWith("dm:")) continue;
    taken++;
    if (seen.has(conv)) continue;
    const userIds = conv
      .slice(3)
      .split(",")
      .map(Number)
      .filter((u) => u !== state.userId)
      .sort((a, b) => a - b);
    seen.set(conv, { max_message_id: id, user_ids: userIds });
  }
  return { reply: { recent_private_conversations: [...seen.values()] } };
};

/**
 * Internal ({} -> {keys}): the direct-message conversations the user holds
 * rows of, for `manage migrate` (which activates every conversation).
 */
const dmConversationKeys: Handlers["dmConversationKeys"] = (state, _args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const keys = new Set<string>();
  for (const e of Object.values(msgsOf(state).entries)) if (e[0].startsWith("dm:")) keys.add(e[0]);
  return { reply: { keys: [...keys].sort() } };
};

export const registerStateHandlers: Handlers = {
  dmConversationKeys,
  starredMessages,
  recentPrivateConversations,
};
