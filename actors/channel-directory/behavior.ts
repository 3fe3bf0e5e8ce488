// The channel directory kind: one actor per realm (key "directory") holding
// the realm's channel metadata, names, subscriptions and channel folders.
// The messages are the channel kind's (one conversation actor per channel
// or direct-message conversation, actors/channel).
//
// Both roles were one kind, `channel`, until they were split: the
// directory keeps its actor's storage id `channel.<realm>.directory`
// (storedAs), so its journal and snapshots are read unchanged, and each
// kind serves its own keys only (ownsKey).

import { defineBehavior, handlersOf, type MethodOf } from "../protocol.ts";
import { directoryHandlers } from "./handlers.ts";
import { registerStateDirectoryHandlers } from "./register-state.ts";
import { bulkDeleteDirectoryHandlers } from "./bulk-delete-handlers.ts";
import { messageExtrasDirectoryHandlers } from "./message-extras.ts";
import { typingDirectoryHandlers } from "./typing.ts";
import { channelExtrasDirectoryHandlers } from "./channel-extras.ts";
import { receivedDirectoryHandlers } from "./received.ts";
import { inviteDirectoryHandlers } from "./invites.ts";
import { roleAccessDirectoryHandlers } from "./role-access.ts";
import { deactivatedPeersDirectoryHandlers } from "./deactivated-peers.ts";
import { markdownLinksDirectoryHandlers } from "./markdown-links.ts";
import { retentionDirectoryHandlers } from "./retention.ts";
import { applyFolderFact, folderDirectoryHandlers } from "./folders.ts";
import { userAccessDirectoryHandlers } from "./user-access.ts";
import { userChannelsDirectoryHandlers } from "./user-channels.ts";
import { firstMessageDirectoryHandlers } from "./first-message.ts";
import { recentlyActiveDirectoryHandlers } from "./recently-active.ts";
import { channelDirectoryProtocol, type ChannelDirectoryProtocol } from "./protocol.ts";
import {
  CHANNEL_DIRECTORY_KEY,
  applyDirFact,
  dirFromSnapshot,
  dirToSnapshot,
  initialDir,
  type DirState,
} from "./state.ts";

const handlers = handlersOf<DirState, ChannelDirectoryProtocol>()({
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
});

export const channelDirectoryBehavior = defineBehavior<DirState, ChannelDirectoryProtocol>({
  kind: "channelDirectory",
  protocol: channelDirectoryProtocol,
  storedAs: "channel",
  ownsKey: (key) => key === CHANNEL_DIRECTORY_KEY,
  initial: initialDir,
  apply: (state, fact) => applyFolderFact(applyDirFact(state, fact), fact),
  toSnapshot: dirToSnapshot,
  fromSnapshot: dirFromSnapshot,
  handlers,
  // The leaf reads of history reads and narrows answer from the last durable
  // state, beside the directory's writes (subscriptions, settings): a change
  // acknowledged before the read began is in it.
  readers: [
    "readContext",
    "userSpans",
    "channelSpans",
    "narrowContext",
    "lookupNames",
  ] satisfies MethodOf<ChannelDirectoryProtocol>[],
  // Every send asks for its channel's context: a node that does not serve
  // the directory reuses its last answer while the directory's journal has
  // not moved (a reply that asked the group directory says so: `volatile`).
  durableReads: ["sendContext"] satisfies MethodOf<ChannelDirectoryProtocol>[],
});
