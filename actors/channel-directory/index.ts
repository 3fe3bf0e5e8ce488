// The channel directory kind's door: siblings import only from here.

export { channelDirectoryBehavior } from "./behavior.ts";
export { channelDirectoryRef } from "./refs.ts";
export { GROUP_SETTINGS, TOPICS_POLICIES } from "./state.ts";
export { GROUP_DEFAULTS as CHANNEL_GROUP_DEFAULTS, NO_EVERYONE as CHANNEL_NO_EVERYONE } from "./handlers.ts";
export type { DirState, GroupValue } from "./state.ts";
export { FOLDER_DESCRIPTION_MAX, FOLDER_NAME_MAX } from "./folders.ts";
export { MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH } from "./validate.ts";
