// The channel kind: conversations, one actor per channel (key = the
// channel id) or direct-message conversation (key "dm:<ids>"), holding its
// messages. The realm's channel metadata and subscriptions are the channel
// directory kind's (actors/channel-directory), which keeps the key
// "directory" among this kind's storage ids: a conversation owns every
// other key (ownsKey).

import { CHANNEL_DIRECTORY_KEY } from "../channel-directory/index.ts";
import { defineBehavior, handlersOf, type MethodOf } from "../protocol.ts";
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
import { channelProtocol, type ChannelProtocol } from "./protocol.ts";

const handlers = handlersOf<ConvState, ChannelProtocol>()({
  ...conversationHandlers,
  ...bulkDeleteConversationHandlers,
  ...messageExtrasConversationHandlers,
  ...typingConversationHandlers,
  ...channelExtrasConversationHandlers,
  ...receivedConversationHandlers,
  ...markdownLinksConversationHandlers,
  ...retentionConversationHandlers,
});

export const channelBehavior = defineBehavior<ConvState, ChannelProtocol>({
  kind: "channel",
  protocol: channelProtocol,
  ownsKey: (key) => key !== CHANNEL_DIRECTORY_KEY,
  initial: initialConv,
  apply: (state, fact) => applyConvFact(state, fact),
  toSnapshot: convToSnapshot,
  fromSnapshot: convFromSnapshot,
  handlers,
  // A send only adds a message (its id is new): sends batch together even
  // though each writes records; every other method reads what earlier turns wrote.
  blind: ["send"] satisfies MethodOf<ChannelProtocol>[],
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
  ] satisfies MethodOf<ChannelProtocol>[],
  upgrade: upgradeConv,
});

// A DM conversation lists itself with the directory for the retention sweep,
// once per activation, after its first turn that finds or leaves messages
// in it (retention.ts).
for (const [name, h] of Object.entries(channelBehavior.handlers))
  channelBehavior.handlers[name] = withDmListing(h);
