// Addresses of the channel kind's actors.

import type { ActorRef } from "../types.ts";
import { dmKey } from "./conversation-state.ts";

/** The realm's channel directory (metadata, names, subscriptions). */
export function channelDirectoryRef(realmId: number): ActorRef {
  return { kind: "channel", realm: realmId, key: "directory" };
}

/** The messages of one channel. */
export function channelConvRef(realmId: number, channelId: number): ActorRef {
  return { kind: "channel", realm: realmId, key: String(channelId) };
}

/** The messages of one direct-message conversation (its participants, sender included). */
export function dmConvRef(realmId: number, userIds: number[]): ActorRef {
  return { kind: "channel", realm: realmId, key: dmKey(userIds) };
}
