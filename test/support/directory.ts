// Channel-directory records for tests and probes that build a directory's
// state from facts (actors/channel-directory/state.ts): a channel with
// Zulip's defaults and a subscription with no personal settings.
import type { Channel, Sub } from "../../actors/channel-directory/state.ts";

export function dirChannel(id: number, name: string, over: Partial<Channel> = {}): Channel {
  return {
    id,
    name,
    description: "",
    renderedDescription: "",
    dateCreated: 0,
    creatorId: null,
    inviteOnly: false,
    isWebPublic: false,
    historyPublic: true,
    retentionDays: null,
    topicsPolicy: "inherit",
    folderId: null,
    isArchived: false,
    isDefault: false,
    defaultPushNotifications: false,
    firstMessageId: null,
    groups: {},
    ...over,
  };
}

export function dirSub(over: Partial<Sub> = {}): Sub {
  return {
    active: true,
    color: "#76ce90",
    isMuted: false,
    pinToTop: false,
    desktopNotifications: null,
    audibleNotifications: null,
    pushNotifications: null,
    emailNotifications: null,
    wildcardMentionsNotify: null,
    ...over,
  };
}
