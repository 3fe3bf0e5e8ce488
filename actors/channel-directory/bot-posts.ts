// The Notification Bot's posts that follow channel creation and new
// subscriptions (Zulip's zerver/views/streams.py: the `announce` of new
// channels, send_messages_for_new_subscribers), decided by the directory's
// createChannel or subscribe turn and journaled with it as one BOT_POSTS
// hand-off. The node posts them (actors/channel/breadcrumbs.ts
// `runBotPosts`), each a conversation's `send` with a `send_key`, so a
// hand-off given again after a crash posts nothing twice; the request
// answers once they are posted (replyAfterHandoffs).

import { randomBytes } from "node:crypto";
import { realmRef } from "../addresses.ts";
import type { ActorContext, Caller, Obj } from "../types.ts";
import type { RosterEntry } from "./roster-view.ts";
import type { DirState } from "./state.ts";

export const BOT_POSTS = "notification.posts";

/** Zulip's Realm.STREAM_EVENTS_NOTIFICATION_TOPIC_NAME. */
export const NEW_CHANNELS_TOPIC = "new channels";

/** Zulip's settings.MAX_BULK_NEW_SUBSCRIPTION_MESSAGES (POST /register max_bulk_new_subscription_messages). */
export const MAX_BULK_NEW_SUBSCRIPTION_MESSAGES = 100;

/** One Notification Bot message: to a channel topic, or a direct message to one user. */
export type BotPost = (
  | { stream_id: number; topic: string; user_id?: undefined }
  | { user_id: number; stream_id?: undefined; topic?: undefined }
) & {
  content: string;
  /** Marked read for the acting user (Zulip's mark_as_read=[acting user]). */
  read_by_actor: boolean;
  /** Its idempotency key: the deciding turn's key and the post's place. */
  key: string;
};

/** A BOT_POSTS hand-off: posts made on behalf of `caller`, in order. */
export interface BotPostOrder {
  caller: Caller;
  posts: BotPost[];
}

/** Zulip's silent_mention_syntax_for_user. */
function silentMention(u: RosterEntry): string {
  return `@_**${u.fullName}|${u.userId}**`;
}

/** The new-subscription notice: one channel inline, several as a list (sorted by name, as Zulip does). */
export function subscribedNoticeText(actor: string, names: string[]): string {
  const sorted = [...names].sort();
  if (sorted.length === 1) return `${actor} subscribed you to the channel #**${sorted[0]}**.`;
  return `${actor} subscribed you to these channels:\n\n${sorted.map((n) => `* #**${n}**\n`).join("")}`;
}

/** What a createChannel or subscribe turn asks the bot to post. */
export interface BotPostRequest {
  /** The acting user. */
  me: RosterEntry;
  /** The channels the request created, in order. */
  created: { id: number; name: string }[];
  /** `announce` was asked. */
  announce: boolean;
  /** Users someone else subscribed to channels that existed before (no bots, not the actor). */
  notices: { user: RosterEntry; streamIds: number[] }[];
}

/**
 * Decide the request's posts on the state after its facts, in Zulip's
 * order: one DM per notice, unread; then the announcement of the created
 * channels in the realm's new-channel announcements channel
 * (topic "new channels"), unless that setting is disabled or its channel is
 * gone or archived; like Zulip's server every created channel is listed,
 * private ones included (Zulip's clients offer `announce` only for public
 * channels), marked read for the creator. Every key starts with one key drawn for the turn.
 */
export async function botPostsHandoff(
  ctx: ActorContext,
  realmId: number,
  s: DirState,
  caller: Caller,
  r: BotPostRequest,
): Promise<{ subject: string; data: Obj }[]> {
  const turn = randomBytes(8).toString("hex");
  const posts: BotPost[] = [];
  for (const n of r.notices) {
    const names = n.streamIds.map((id) => s.channels[String(id)]!.name);
    posts.push({
      user_id: n.user.userId,
      content: subscribedNoticeText(silentMention(r.me), names),
      read_by_actor: false,
      key: `${turn}:subscribed:${n.user.userId}`,
    });
  }
  if (r.announce && r.created.length) {
    const target = (await ctx.call(realmRef(realmId), "notificationContext", {}))
      .newStreamAnnouncementsStreamId;
    const ch = typeof target === "number" && target >= 0 ? s.channels[String(target)] : undefined;
    if (ch && !ch.isArchived) {
      const links = r.created.map((c) => `#**${c.name}**`).join(", ");
      const content =
        r.created.length > 1
          ? `${silentMention(r.me)} created the following channels: ${links}.`
          : `${silentMention(r.me)} created a new channel ${links}.`;
      posts.push({
        stream_id: ch.id,
        topic: NEW_CHANNELS_TOPIC,
        content,
        read_by_actor: true,
        key: `${turn}:new-channels:${r.created[0]!.id}`,
      });
    }
  }
  if (!posts.length) return [];
  const order: BotPostOrder = { caller, posts };
  return [{ subject: BOT_POSTS, data: order as unknown as Obj }];
}
