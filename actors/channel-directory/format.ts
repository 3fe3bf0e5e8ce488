// Channel and subscription objects as Zulip's API shows them (Zulip's API
// documentation: the channel object, the subscription add event, https://zulip.com/api/get-subscriptions).

import type { Obj, Value } from "../types.ts";
import { renderMarkdown } from "../markdown/index.ts";
import { activeSubscriberIds, type Channel, type DirState, type GroupValue, type Sub } from "./state.ts";

/** System group ids by name ("role:everyone"...), resolved once per turn. */
export type SystemGroups = Record<string, number>;

/** Rendered HTML of a channel description (Zulip keeps no trailing newline). */
export function renderDescription(source: string): string {
  return renderMarkdown(source);
}

function groupValueWire(v: GroupValue): Value {
  return typeof v === "number"
    ? v
    : { direct_members: [...v.direct_members], direct_subgroups: [...v.direct_subgroups] };
}

/** As in Zulip: the deprecated stream_post_policy derives from can_send_message_group. */
function streamPostPolicy(ch: Channel, sys: SystemGroups): number {
  const v = ch.groups.can_send_message_group;
  if (v === sys["role:administrators"]) return 2;
  if (v === sys["role:fullmembers"]) return 3;
  if (v === sys["role:moderators"]) return 4;
  return 1;
}

export function formatChannel(state: DirState, ch: Channel, sys: SystemGroups): Obj {
  const out: Obj = {
    stream_id: ch.id,
    name: ch.name,
    is_archived: ch.isArchived,
    description: ch.description,
    rendered_description: ch.renderedDescription,
    date_created: ch.dateCreated,
    creator_id: ch.creatorId,
    invite_only: ch.inviteOnly,
    is_web_public: ch.isWebPublic,
    stream_post_policy: streamPostPolicy(ch, sys),
    is_announcement_only: streamPostPolicy(ch, sys) === 2,
    message_retention_days: ch.retentionDays,
    history_public_to_subscribers: ch.historyPublic,
    topics_policy: ch.topicsPolicy,
    first_message_id: ch.firstMessageId,
    folder_id: ch.folderId,
    is_recently_active: ch.isRecentlyActive ?? true,
    is_default: ch.isDefault,
    default_push_notifications: ch.defaultPushNotifications,
    subscriber_count: activeSubscriberIds(state, ch.id).length,
    stream_weekly_traffic: null,
  };
  for (const [name, v] of Object.entries(ch.groups)) out[name] = groupValueWire(v);
  return out;
}

/** include_subscribers: none, all, or "partial" (FL 412). */
export type SubscriberMode = boolean | "partial";

/** The request's include_subscribers (a boolean, or "true"/"false"/"partial" as register passes it). */
export function subscriberMode(v: unknown): SubscriberMode {
  if (v === "partial") return "partial";
  return v === true || v === "true";
}

/** Zulip's MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE: smaller channels always list every subscriber. */
export const MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE = 1000;

/**
 * `subscribers`, or for a large channel under "partial" `partial_subscribers`:
 * Zulip's bots and users who are not long-term idle. This server keeps no
 * long-term-idle state (every user counts as recently active), so the
 * partial list holds every subscriber; only the key tells clients it may be partial.
 */
export function subscriberFields(state: DirState, ch: Channel, mode: SubscriberMode): Obj {
  if (mode === false) return {};
  const ids = activeSubscriberIds(state, ch.id);
  if (mode === "partial" && ids.length >= MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE)
    return { partial_subscribers: ids };
  return { subscribers: ids };
}

/** The subscription object: the channel fields plus the user's properties. */
export function formatSub(
  state: DirState,
  ch: Channel,
  sub: Sub,
  sys: SystemGroups,
  subscribers: SubscriberMode,
): Obj {
  const out = formatChannel(state, ch, sys);
  delete out.is_default;
  Object.assign(out, {
    color: sub.color,
    is_muted: sub.isMuted,
    in_home_view: !sub.isMuted,
    pin_to_top: sub.pinToTop,
    desktop_notifications: sub.desktopNotifications,
    audible_notifications: sub.audibleNotifications,
    push_notifications: sub.pushNotifications,
    email_notifications: sub.emailNotifications,
    wildcard_mentions_notify: sub.wildcardMentionsNotify,
  });
  Object.assign(out, subscriberFields(state, ch, subscribers));
  return out;
}

/** Zulip's STREAM_ASSIGNMENT_COLORS: a new subscription takes the first colour the user does not use yet. */
export const STREAM_COLORS = [
  "#76ce90",
  "#fae589",
  "#a6c7e5",
  "#e79ab5",
  "#bfd56f",
  "#f4ae55",
  "#b0a5fd",
  "#addfe5",
  "#f5ce6e",
  "#c2726a",
  "#94c849",
  "#bd86e5",
  "#ee7e4a",
  "#a6dcbf",
  "#95a5fd",
  "#53a063",
  "#9987e1",
  "#e4523d",
  "#c2c2c2",
  "#4f8de4",
  "#c6a8ad",
  "#e7cc4d",
  "#c8bebf",
  "#a47462",
];

export function pickColor(state: DirState, userId: number): string {
  const used = new Set<string>();
  for (const subs of Object.values(state.subs)) {
    const s = subs[String(userId)];
    if (s) used.add(s.color);
  }
  const free = STREAM_COLORS.find((c) => !used.has(c));
  return free ?? STREAM_COLORS[used.size % STREAM_COLORS.length]!;
}
