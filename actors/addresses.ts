// The addresses of the kinds with a protocol (actors/protocol.ts): each
// constructor returns a Ref typed with its kind's protocol, so a call on it
// is checked at compile time and "go to definition" on the constructor leads
// to the protocol, then to the handler of the same name.
//
// A leaf module: protocol.ts, types.ts and the kinds' protocol files only.
// The kinds' doors re-export these under their old names.

import type { BlobProtocol } from "./blob/protocol.ts";
import type { ChannelProtocol } from "./channel/protocol.ts";
import type { ChannelDirectoryProtocol } from "./channel-directory/protocol.ts";
import type { EmojiProtocol } from "./emoji/protocol.ts";
import type { GroupProtocol } from "./group/protocol.ts";
import type { QueueProtocol } from "./queue/protocol.ts";
import type { RealmProtocol } from "./realm/protocol.ts";
import type { RealmDirectoryProtocol } from "./realm-directory/protocol.ts";
import { ref, type Ref } from "./protocol.ts";
import { UPLOADS_KEY, type UploadsProtocol } from "./uploads/protocol.ts";
import type { UserProtocol } from "./user/protocol.ts";
import type { WebhookProtocol } from "./webhook/protocol.ts";
import { INDEX_KEY, type WebhookIndexProtocol } from "./webhook-index/protocol.ts";

// The keys that tell apart two kinds sharing storage ids (Behavior.ownsKey):
// the uploads kind's "uploads" among the blob kind's files, the webhook
// index kind's "~index" among the webhook kind's bots.
export { INDEX_KEY, UPLOADS_KEY };

/**
 * The realm's group directory: every named group of the realm, its
 * membership graph, and the realm's group-valued permission settings.
 */
export function groupDirectoryRef(realmId: number): Ref<GroupProtocol> {
  return ref({ kind: "group", realm: realmId, key: "directory" });
}

/** The realm's custom emoji directory (the image bytes are in blob actors). */
export function emojiDirectoryRef(realmId: number): Ref<EmojiProtocol> {
  return ref({ kind: "emoji", realm: realmId, key: "directory" });
}

/** The realm's channel directory (metadata, names, subscriptions). */
export function channelDirectoryRef(realmId: number): Ref<ChannelDirectoryProtocol> {
  return ref({ kind: "channelDirectory", realm: realmId, key: "directory" });
}

/** The messages of one channel. */
export function channelConvRef(realmId: number, channelId: number): Ref<ChannelProtocol> {
  return ref({ kind: "channel", realm: realmId, key: String(channelId) });
}

/** The messages of one direct-message conversation (its participants, sender included). */
export function dmConvRef(realmId: number, userIds: number[]): Ref<ChannelProtocol> {
  return ref({ kind: "channel", realm: realmId, key: dmKey(userIds) });
}

/**
 * A conversation by its key (a channel id, or a DM key), as the directory
 * and the user actors list them (the retention sweep, `manage migrate`).
 */
export function conversationRef(realmId: number, key: string): Ref<ChannelProtocol> {
  return ref({ kind: "channel", realm: realmId, key });
}

/** Whether a conversation key is a direct-message conversation's ("dm:<ids>"), not a channel id. */
export function isDmKey(key: string): boolean {
  return key.startsWith("dm:");
}

/** The key of a direct-message conversation: its participants' ids, sorted, without repeats. */
export function dmKey(userIds: number[]): string {
  return "dm:" + [...new Set(userIds)].sort((a, b) => a - b).join(",");
}

/** The event queues of one user (placed by the user id, so every gateway finds them). */
export function queueRef(realmId: number, userId: number): Ref<QueueProtocol> {
  return ref({ kind: "queue", realm: realmId, key: String(userId), shardKey: String(userId) });
}

/** The blob holding an emoji's image: on the directory's shard, so `put` stays local. */
export function emojiBlobRef(realmId: number, emojiId: string): Ref<BlobProtocol> {
  return ref({ kind: "blob", realm: realmId, key: `emoji.${emojiId}`, shardKey: "directory" });
}

/** The realm's uploads directory: its attachments' records. */
export function uploadsDirectoryRef(realmId: number): Ref<UploadsProtocol> {
  return ref({ kind: "uploads", realm: realmId, key: UPLOADS_KEY });
}

/** The outbox of one outgoing-webhook bot. */
export function webhookRef(realmId: number, botId: number): Ref<WebhookProtocol> {
  return ref({ kind: "webhook", realm: realmId, key: String(botId) });
}

/** The realm's index of bots that may have pending deliveries. */
export function webhookIndexRef(realmId: number): Ref<WebhookIndexProtocol> {
  return ref({ kind: "webhookIndex", realm: realmId, key: INDEX_KEY });
}

/** A user's actor: their profile, settings, message flags and personal lists (key: the user id). */
export function userRef(realmId: number, userId: number): Ref<UserProtocol> {
  return ref({ kind: "user", realm: realmId, key: String(userId) });
}

/** One organization's realm actor: its settings and members, the data every request needs. */
export function realmRef(realmId: number): Ref<RealmProtocol> {
  return ref({ kind: "realm", realm: realmId, key: "realm" });
}

/** The deployment's one realm directory (hosts -> realm ids, creating organizations). */
export function realmDirectoryRef(): Ref<RealmDirectoryProtocol> {
  return ref({ kind: "realmDirectory", realm: 0, key: "directory" });
}
