// Who may get a mobile push notification for a new message, decided in the
// sending conversation's turn (Zulip's get_recipient_info and
// maybe_enqueue_notifications reasons) and handed on as the durable
// hand-off "push.notify", journaled in the same append as the message. The
// push worker (cluster/push-worker.ts) asks each candidate's user actor whether its
// settings, mutes and devices want a notification and whether the user is
// on a client right now; only then does it post to the push relay.
//
// Only users with a reason are listed, never a channel's whole subscriber
// list: DM recipients, mentioned users (personally or by a group), for a
// channel-wide wildcard mention the recipients the send walks anyway to flag
// them, and the subscribers who turned the channel's push notifications on
// (listed by the channel directory).

import type { Obj } from "../types.ts";
import type { RenderEnv } from "../markdown/index.ts";

export const PUSH_NOTIFY = "push.notify";

/** Zulip's NotificationTriggers values that reach mobile push. */
export type PushTrigger =
  | "direct_message"
  | "mentioned"
  | "stream_wildcard_mentioned"
  | "topic_wildcard_mentioned"
  | "stream_push_notify";

export interface PushUser {
  isBot: boolean;
  isActive: boolean;
}

export interface PushSend {
  realmId: number;
  /** The formatted message of the message event. */
  message: Obj;
  senderId: number;
  dm: boolean;
  channelId: number | null;
  /** Users who receive the message (a DM's participants; a channel's active subscribers). */
  isRecipient: (id: number) => boolean;
  /** A DM's participants, or a channel's recipients: called only for a DM or a channel-wide wildcard. */
  recipients: () => number[];
  mentioned: Iterable<number>;
  wildcard: "channel" | "topic" | null;
  topicParticipants: Iterable<number>;
  /** Users who muted the sender: no notification (Zulip's mark_as_read_user_ids). */
  mutedBy: Set<number> | undefined;
  /** Subscribers who muted the channel: wildcard mentions do not notify them. */
  channelMutedBy: number[];
  /** Subscribers who turned the channel's push notifications on (the directory lists them). */
  channelPushOn: number[];
  /** The group whose mention reached each user not mentioned personally (expandGroupMentions). */
  groupOf: Map<number, { id: number; name: string }>;
  users: { get(id: number): PushUser | undefined };
}

/**
 * The group a push notification names for each member of a group the
 * message mentioned (not silently) who was not mentioned personally: the
 * smallest such group (Zulip's get_user_group_mentions_data). Personal
 * mentions are read off the rendered HTML (the renderer adds the members
 * of mentioned groups to the same mentioned set). One pass over each.
 */
export function groupMentionsOf(env: RenderEnv, rendered: string): Map<number, { id: number; name: string }> {
  const out = new Map<number, { id: number; name: string }>();
  if (!env.mentionedGroups?.size) return out;
  const personal = new Set<number>();
  for (const m of rendered.matchAll(/<span class="user-mention" data-user-id="(\d+)">/g))
    personal.add(Number(m[1]));
  const groups = [...env.mentionedGroups].sort(
    (a, b) => (a.members?.length ?? 0) - (b.members?.length ?? 0) || a.id - b.id,
  );
  for (const g of groups)
    for (const uid of g.members ?? [])
      if (!personal.has(uid) && !out.has(uid)) out.set(uid, { id: g.id, name: g.name });
  return out;
}

/** The hand-offs of one send: one "push.notify" naming its candidates, or none. */
export function pushHandoffs(s: PushSend): { subject: string; data: Obj }[] {
  const targets = new Map<number, PushTrigger>();
  const add = (id: number, trigger: PushTrigger) => {
    if (id === s.senderId || targets.has(id) || s.mutedBy?.has(id)) return;
    const u = s.users.get(id);
    if (!u || u.isBot || !u.isActive || !s.isRecipient(id)) return;
    targets.set(id, trigger);
  };
  if (s.dm) {
    for (const id of s.recipients()) add(id, "direct_message");
  } else {
    // Zulip's order of precedence: a personal mention over a wildcard one.
    for (const id of s.mentioned) add(id, "mentioned");
    const muted = new Set(s.channelMutedBy);
    const addWildcard = (id: number, trigger: PushTrigger) => {
      if (!muted.has(id)) add(id, trigger);
    };
    if (s.wildcard === "topic")
      for (const id of s.topicParticipants) addWildcard(id, "topic_wildcard_mentioned");
    if (s.wildcard === "channel")
      for (const id of s.recipients()) addWildcard(id, "stream_wildcard_mentioned");
    for (const id of s.channelPushOn) addWildcard(id, "stream_push_notify");
  }
  if (!targets.size) return [];
  const m = s.message;
  return [
    {
      subject: PUSH_NOTIFY,
      data: {
        realmId: s.realmId,
        message: {
          id: m.id,
          sender_id: m.sender_id,
          sender_email: m.sender_email,
          sender_full_name: m.sender_full_name,
          avatar_url: m.avatar_url ?? null,
          timestamp: m.timestamp,
          type: m.type,
          stream_id: s.channelId,
          display_recipient: m.display_recipient,
          subject: m.subject ?? "",
          rendered_content: m.rendered_content ?? m.content ?? "",
        },
        targets: [...targets].map(([id, trigger]) => {
          const g = trigger === "mentioned" ? s.groupOf.get(id) : undefined;
          return g ? [id, trigger, g.id, g.name] : [id, trigger];
        }),
      },
    },
  ];
}
