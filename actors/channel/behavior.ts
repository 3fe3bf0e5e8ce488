// The channel kind, two roles chosen by ref.key: "directory" (the realm's
// channel metadata, names and subscriptions) and conversations (a channel
// id, or "dm:<ids>"): the messages of one channel or DM conversation.

import { errors } from "../errors.ts";
import type { ActorRef, Behavior, Handler, Obj } from "../types.ts";
import { conversationHandlers } from "./conversation-handlers.ts";
import {
  applyConvFact,
  convFromSnapshot,
  convToSnapshot,
  initialConv,
  upgradeConv,
  type ConvState,
} from "./conversation-state.ts";
import { directoryHandlers } from "./directory-handlers.ts";
import { registerStateDirectoryHandlers } from "./register-state.ts";
import { bulkDeleteConversationHandlers, bulkDeleteDirectoryHandlers } from "./bulk-delete-handlers.ts";
import { messageExtrasConversationHandlers, messageExtrasDirectoryHandlers } from "./message-extras.ts";
import { typingConversationHandlers, typingDirectoryHandlers } from "./typing.ts";
import { channelExtrasConversationHandlers, channelExtrasDirectoryHandlers } from "./channel-extras.ts";
import { receivedConversationHandlers, receivedDirectoryHandlers } from "./received.ts";
import { inviteDirectoryHandlers } from "./invites.ts";
import { roleAccessDirectoryHandlers } from "./role-access.ts";
import { deactivatedPeersDirectoryHandlers } from "./deactivated-peers.ts";
import { markdownLinksConversationHandlers, markdownLinksDirectoryHandlers } from "./markdown-links.ts";
import { retentionConversationHandlers, retentionDirectoryHandlers, withDmListing } from "./retention.ts";
import { applyFolderFact, folderDirectoryHandlers } from "./folders.ts";
import { userAccessDirectoryHandlers } from "./user-access.ts";
import { userChannelsDirectoryHandlers } from "./user-channels.ts";
import { subscriptionNoticeConversationHandlers } from "./subscription-notices.ts";
import { firstMessageDirectoryHandlers } from "./first-message.ts";
import { recentlyActiveDirectoryHandlers } from "./recently-active.ts";
import { applyDirFact, dirFromSnapshot, dirToSnapshot, initialDir, type DirState } from "./state.ts";

type ChannelKindState = DirState | ConvState;
const isDir = (ref: ActorRef) => ref.key === "directory";

const handlers: Record<string, Handler<ChannelKindState>> = {};
for (const [name, h] of Object.entries({
  ...directoryHandlers,
  ...bulkDeleteDirectoryHandlers,
  ...messageExtrasDirectoryHandlers,
  ...registerStateDirectoryHandlers,
  ...typingDirectoryHandlers,
  ...channelExtrasDirectoryHandlers,
  ...receivedDirectoryHandlers,
  ...inviteDirectoryHandlers,
  ...roleAccessDirectoryHandlers,
  ...deactivatedPeersDirectoryHandlers,
  ...markdownLinksDirectoryHandlers,
  ...retentionDirectoryHandlers,
  ...folderDirectoryHandlers,
  ...userAccessDirectoryHandlers,
  ...userChannelsDirectoryHandlers,
  ...firstMessageDirectoryHandlers,
  ...recentlyActiveDirectoryHandlers,
})) {
  handlers[name] = (state, args, ctx, caller) => {
    if (!isDir(ctx.self)) throw errors.internal(); // a caller bug: wrong key
    return h(state as DirState, args, ctx, caller);
  };
}
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
})) {
  const listed = withDmListing(h);
  handlers[name] = (state, args, ctx, caller) => {
    if (isDir(ctx.self)) throw errors.internal();
    return listed(state as ConvState, args, ctx, caller);
  };
}

export const channelBehavior: Behavior<ChannelKindState> = {
  kind: "channel",
  initial: (ref) => (isDir(ref) ? initialDir(ref) : initialConv(ref)),
  apply: (state, fact: Obj, ref) =>
    isDir(ref)
      ? applyFolderFact(applyDirFact(state as DirState, fact), fact)
      : applyConvFact(state as ConvState, fact),
  toSnapshot: (state) => ("channels" in state ? dirToSnapshot(state) : convToSnapshot(state)),
  fromSnapshot: (data, ref) => (isDir(ref) ? dirFromSnapshot(data, ref) : convFromSnapshot(data, ref)),
  handlers,
  // A send only adds a message (its id is new): sends batch together even
  // though each writes records; every other method reads what earlier turns wrote.
  blind: ["send"],
  // History reads answer from the last durable state beside the sends.
  // The directory has none of these methods (its wrapper refuses them), so
  // it keeps no committed copy of its state.
  servesReaders: (ref) => !isDir(ref),
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
  upgrade: (state, ref) => (isDir(ref) ? null : upgradeConv(state as ConvState)),
  // Nothing without a caller: channels and messages have no spectator reads yet.
  external: {
    createChannel: "caller",
    subscribe: "caller",
    unsubscribe: "caller",
    mySubscriptions: "caller",
    listChannels: "caller",
    getChannel: "caller",
    channelIdByName: "caller",
    members: "caller",
    updateChannel: "caller",
    archiveChannel: "caller",
    setSubProperties: "caller",
    registerState: "caller",
    peersOfDeactivated: "caller",
    defaultChannelIds: "caller",
    channelNamesByIds: "caller",
    sendContext: "caller",
    lookupNames: "caller",
    narrowContext: "caller",
    publicChannelIds: "caller",
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
    renderPreview: "caller",
    editTyping: "caller",
    setDefaultChannel: "caller",
    joinDefaultChannels: "caller",
    subscriptionStatus: "caller",
    updateSubscriptions: "caller",
    deleteTopicBatch: "caller",
    receivedRows: "caller",
    checkInviteChannels: "caller",
    roleAccessChanged: "caller",
    createChannelFolder: "caller",
    channelFolders: "caller",
    updateChannelFolder: "caller",
    reorderChannelFolders: "caller",
    registerChannelFolders: "caller",
    accessibleUsers: "caller",
    userChannels: "caller",
    subscriptionNotice: "caller",
  },
};
