// The channel directory kind's door: siblings import only from here. The
// conversations (actors/channel) import the directory's pure helpers and
// types from here too; the directory imports nothing of theirs.

export { channelDirectoryBehavior } from "./behavior.ts";
export { channelDirectoryRef } from "./refs.ts";
export { CHANNEL_DIRECTORY_KEY, GROUP_SETTINGS, TOPICS_POLICIES } from "./state.ts";
export { GROUP_DEFAULTS as CHANNEL_GROUP_DEFAULTS, NO_EVERYONE as CHANNEL_NO_EVERYONE } from "./handlers.ts";
export type { DirState, GroupValue } from "./state.ts";
export type {
  ChannelDirectoryProtocol,
  ChannelInfo,
  ChannelLists,
  NarrowContext,
  ReadContext,
} from "./protocol.ts";
export { FOLDER_DESCRIPTION_MAX, FOLDER_NAME_MAX } from "./folders.ts";
export { MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH } from "./validate.ts";
export { historyProtected, isAdmin, isGuest } from "./access.ts";
export { ACCESS_CHANGE, emitAccessChangeEvents, relayAccessEvents } from "./user-access.ts";
export {
  BOT_POSTS,
  MAX_BULK_NEW_SUBSCRIPTION_MESSAGES,
  type BotPost,
  type BotPostOrder,
} from "./bot-posts.ts";
// What a rendering needs from other actors, for the conversations' sends and edits.
export { MAX_LINKED_TOPICS, topicLatestFor, type LocalLatest } from "./markdown-links.ts";
export { checkGroupMentions, mentionGroupsFor } from "./group-mentions.ts";
export { roster, type Roster, type RosterEntry } from "./roster-view.ts";
