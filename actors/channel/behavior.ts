// The channel kind: conversations, one actor per channel (key = the
// channel id) or direct-message conversation (key "dm:<ids>"), holding its
// messages. The realm's channel metadata and subscriptions are the channel
// directory kind's (actors/channel-directory), which keeps the key
// "directory" among this kind's storage ids: a conversation owns every
// other key (ownsKey).

import { CHANNEL_DIRECTORY_KEY } from "../channel-directory/state.ts";
import type { Behavior, Handler } from "../types.ts";
import { conversationHandlers } from "./conversation-handlers.ts";
import {
  applyConvFact,
  convFromSnapshot,
  convToSnapshot,
  initialConv,
  upgradeConv,
  type ConvState,
} from "./conversation-state.ts";
import { bulkDeleteConversationHandlers } from "./bulk-delete-handlers.ts";
import { messageExtrasConversationHandlers } from "./message-extras.ts";
import { typingConversationHandlers } from "./typing.ts";
import { channelExtrasConversationHandlers } from "./channel-extras.ts";
import { receivedConversationHandlers } from "./received.ts";
import { markdownLinksConversationHandlers } from "./markdown-links.ts";
import { retentionConversationHandlers, withDmListing } from "./retention.ts";
import { subscriptionNoticeConversationHandlers } from "./subscription-notices.ts";

const handlers: Record<string, Handler<ConvState>> = {};
for (const [name, h] of Object.entries({
  ...conversationHandlers,
  ...bulkDeleteConversationHandlers,
  ...messageExtrasConversationHandlers,
  ...typingConversationHandlers,
  ...channelExtrasConversationHandlers,
  ...receivedConversationHandlers,
  ...markdownLinksConversationHandlers,
  ...retentionConversationHandlers,
  ...subscriptionNoticeConversationHandlers,
}))
  handlers[name] = withDmListing(h);

export const channelBehavior: Behavior<ConvState> = {
  kind: "channel",
  ownsKey: (key) => key !== CHANNEL_DIRECTORY_KEY,
  initial: initialConv,
  apply: (state, fact) => applyConvFact(state, fact),
  toSnapshot: convToSnapshot,
  fromSnapshot: convFromSnapshot,
  handlers,
  // A send only adds a message (its id is new): sends batch together even
  // though each writes records; every other method reads what earlier turns wrote.
  blind: ["send"],
  // History reads answer from the last durable state beside the sends.
  readers: [
    "fetch",
    "getByIds",
    "locateIds",
    "topics",
    "messageEditHistory",
    "readReceipts",
    "matchNarrow",
    "receivedRows",
    "topicLatest",
  ],
  upgrade: upgradeConv,
  // Nothing without a caller: messages have no spectator reads yet.
  external: {
    send: "caller",
    fetch: "caller",
    getByIds: "caller",
    locateIds: "caller",
    topics: "caller",
    react: "caller",
    edit: "caller",
    remove: "caller",
    prepareMove: "caller",
    moveIn: "caller",
    completeMove: "caller",
    removeMany: "caller",
    messageEditHistory: "caller",
    readReceipts: "caller",
    matchNarrow: "caller",
    editTyping: "caller",
    deleteTopicBatch: "caller",
    receivedRows: "caller",
    subscriptionNotice: "caller",
  },
};
