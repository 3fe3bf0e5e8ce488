// The actors door: the behaviours the runtime hosts, and the addresses the
// gateway and the CLI send to. Only cluster/, gateway/ and the CLI import
// this; actor kinds import each other's doors.

import { blobBehavior } from "./blob/index.ts";
import { channelBehavior } from "./channel/index.ts";
import { channelDirectoryBehavior } from "./channel-directory/index.ts";
import { emojiBehavior } from "./emoji/index.ts";
import { groupBehavior } from "./group/index.ts";
import { queueBehavior } from "./queue/index.ts";
import { realmBehavior } from "./realm/index.ts";
import { realmDirectoryBehavior } from "./realm-directory/index.ts";
import type { Behavior, Kind } from "./types.ts";
import { uploadsBehavior } from "./uploads/index.ts";
import { userBehavior } from "./user/index.ts";
import { webhookBehavior } from "./webhook/index.ts";
import { webhookIndexBehavior } from "./webhook-index/index.ts";

// Behaviours are heterogeneous in their state type; the runtime treats
// state as opaque, so `any` is the honest type here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const behaviors: Partial<Record<Kind, Behavior<any>>> = {
  realm: realmBehavior,
  realmDirectory: realmDirectoryBehavior,
  user: userBehavior,
  queue: queueBehavior,
  group: groupBehavior,
  channel: channelBehavior,
  channelDirectory: channelDirectoryBehavior,
  emoji: emojiBehavior,
  blob: blobBehavior,
  uploads: uploadsBehavior,
  webhook: webhookBehavior,
  webhookIndex: webhookIndexBehavior,
};

export {
  EMPTY_TOPIC_NAME,
  LARGER_THAN_MAX_MESSAGE_ID,
  MAX_MESSAGES_PER_FETCH,
  channelConvRef,
  conversationRef,
  dmConvRef,
  windowIds,
} from "./channel/index.ts";
export { channelDirectoryRef } from "./channel-directory/index.ts";
export {
  INVITE_ACCEPTED,
  INVITE_AS,
  INVITE_EMAIL,
  REALM_BOOL_PROPERTIES,
  REALM_CHOICE_PROPERTIES,
  realmRef,
  userDefaultSettings,
} from "./realm/index.ts";
export {
  LEGACY_DISPLAY_SETTINGS,
  LEGACY_NOTIFICATION_SETTINGS,
  settingTypes,
  userRef,
} from "./user/index.ts";
export { realmDirectoryRef } from "./realm-directory/index.ts";
export { FEATURE_LEVEL, MERGE_BASE, ZULIP_VERSION } from "./version.ts";
export {
  DEFAULT_QUEUE_TIMEOUT_SECS,
  EMPTY_TOPIC_DISPLAY_NAME,
  MAX_QUEUE_TIMEOUT_SECS,
  MOBILE_QUEUE_TIMEOUT_SECS,
  isSupportedNarrowTerm,
  queueOwner,
  queueRef,
} from "./queue/index.ts";
export { GROUP_SETTING_NAMES, REALM_GROUP_SETTING_NAMES, groupDirectoryRef } from "./group/index.ts";
export { emojiBlobRef } from "./blob/index.ts";
export { linkedPathIds, uploadsDirectoryRef } from "./uploads/index.ts";
export { MAX_EMOJI_FILE_SIZE, emojiDirectoryRef } from "./emoji/index.ts";
export { IDLE_NOTICE, READY_NOTICE, TRIGGER_NOTICE, webhookRef } from "./webhook/index.ts";
export { webhookIndexRef } from "./webhook-index/index.ts";
