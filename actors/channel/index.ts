// The channel kind's door: siblings import only from here.

export { channelBehavior } from "./behavior.ts";
export { channelConvRef, channelDirectoryRef, dmConvRef } from "./refs.ts";
export { GROUP_SETTINGS, TOPICS_POLICIES } from "./state.ts";
export {
  GROUP_DEFAULTS as CHANNEL_GROUP_DEFAULTS,
  NO_EVERYONE as CHANNEL_NO_EVERYONE,
} from "./directory-handlers.ts";
export type { DirState, GroupValue } from "./state.ts";
export { MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH } from "./validate.ts";
export {
  EMPTY_TOPIC_NAME,
  MAX_MESSAGE_LENGTH,
  MAX_TOPIC_LENGTH,
  shapeForClient,
} from "./conversation-handlers.ts";
export { LARGER_THAN_MAX_MESSAGE_ID, MAX_MESSAGES_PER_FETCH, matchesSearch, windowIds } from "./window.ts";
export { renderMarkdown } from "./markdown.ts";
