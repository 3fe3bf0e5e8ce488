// The realm's rules for editing, moving, resolving and deleting messages
// (Zulip's zerver/actions/message_edit.py check_update_message and
// zerver/views/message_edit.py validate_can_delete_message), with the
// realm's settings read from the realm actor (`messageLimits`, a leaf).

import { errors } from "../errors.ts";
import { isUserInGroupSetting, realmGroupSetting } from "../permissions/index.ts";
import { realmRef } from "../addresses.ts";
import type { MessageLimits } from "../realm/index.ts";
import type { ActorContext, Caller } from "../types.ts";
import type { ChannelInfo } from "../channel-directory/index.ts";
import type { Msg } from "./conversation-state.ts";

/** Zulip's edit_limit_buffer / message_move_limit_buffer: 20 s past an edit or move limit. */
const LIMIT_BUFFER_SECONDS = 20;

/** Zulip's RESOLVED_TOPIC_PREFIX. */
const RESOLVED_PREFIX = "✔ ";

/** Moderators and above (Zulip's is_moderator) are exempt from the move limits. */
const isModerator = (role: number) => role <= 300;

export async function messageLimits(ctx: ActorContext, realmId: number): Promise<MessageLimits> {
  return await ctx.call(realmRef(realmId), "messageLimits", {});
}

/** Zulip's validate_user_can_edit_message: a content edit (edit typing passes no grace). */
export function checkContentEdit(
  limits: MessageLimits,
  c: Caller,
  m: Msg,
  now: number,
  grace = LIMIT_BUFFER_SECONDS,
): void {
  if (!limits.allowEditing) throw errors.messageEditingDisabled();
  if (m.senderId !== c.userId) throw errors.cannotEditMessage();
  if (limits.editSeconds !== null && now - m.timestamp > limits.editSeconds + grace)
    throw errors.editTimeLimit();
}

/**
 * Whether renaming `oldTopic` to `newTopic` only resolves or unresolves it
 * (Zulip's topic_resolved / topic_unresolved of build_message_edit_request).
 */
export function isResolveToggle(oldTopic: string, newTopic: string): boolean {
  const resolved =
    newTopic.startsWith(RESOLVED_PREFIX) &&
    !oldTopic.startsWith(RESOLVED_PREFIX) &&
    newTopic.slice(RESOLVED_PREFIX.length) === oldTopic;
  const unresolved =
    oldTopic.startsWith(RESOLVED_PREFIX) &&
    !newTopic.startsWith(RESOLVED_PREFIX) &&
    oldTopic.replace(/^[✔ ]+/u, "") === newTopic;
  return resolved || unresolved;
}

async function inRealmGroup(ctx: ActorContext, realmId: number, name: string, userId: number) {
  return isUserInGroupSetting(ctx, realmId, await realmGroupSetting(ctx, realmId, name), userId);
}

async function inChannelGroup(
  ctx: ActorContext,
  realmId: number,
  ch: ChannelInfo,
  name: string,
  userId: number,
) {
  const value = ch.groups[name];
  return value !== undefined && (await isUserInGroupSetting(ctx, realmId, value, userId));
}

/**
 * A topic change of a channel message (within its channel or along a move
 * to `target`): a resolve or unresolve needs can_resolve_topics_group (the
 * realm's, or either channel's; FL 367), any other rename
 * can_move_messages_between_topics_group (the realm's, FL 316) or either
 * channel's can_move_messages_within_channel_group, and for users below
 * moderator the message must be within move_messages_within_stream_limit_seconds.
 */
export async function checkTopicChange(
  ctx: ActorContext,
  realmId: number,
  limits: MessageLimits,
  c: Caller,
  m: Msg,
  newTopic: string,
  ch: ChannelInfo,
  target: ChannelInfo,
  now: number,
): Promise<void> {
  const channels = ch.stream_id === target.stream_id ? [ch] : [ch, target];
  if (isResolveToggle(m.topic, newTopic)) {
    if (await inRealmGroup(ctx, realmId, "can_resolve_topics_group", c.userId)) return;
    for (const x of channels)
      if (await inChannelGroup(ctx, realmId, x, "can_resolve_topics_group", c.userId)) return;
    throw errors.cannotResolveTopics();
  }
  let allowed = await inRealmGroup(ctx, realmId, "can_move_messages_between_topics_group", c.userId);
  for (const x of channels)
    allowed ||= await inChannelGroup(ctx, realmId, x, "can_move_messages_within_channel_group", c.userId);
  if (!allowed) throw errors.cannotEditMessage();
  const limit = limits.moveWithinSeconds;
  if (limit !== null && !isModerator(c.role) && now - m.timestamp > limit + LIMIT_BUFFER_SECONDS)
    throw errors.topicEditTimeLimit();
}

/** Zulip's move_messages_between_streams_limit_seconds check of the target message. */
export function checkChannelMoveLimit(limits: MessageLimits, c: Caller, m: Msg, now: number): void {
  const limit = limits.moveBetweenSeconds;
  if (limit !== null && !isModerator(c.role) && now - m.timestamp > limit + LIMIT_BUFFER_SECONDS)
    throw errors.moveChannelTimeLimit();
}

/**
 * Zulip's check_time_limit_for_change_all_propagate_mode (FL 172): a
 * `change_all` move (not a resolve) by a user below moderator must not take
 * messages older than the stricter of the applicable move limits. `topic`
 * holds the messages of the topic the caller may access, as loaded for the
 * move. Fails with MOVE_MESSAGES_TIME_LIMIT_EXCEEDED and the counts.
 */
export function checkChangeAllLimit(
  limits: MessageLimits,
  c: Caller,
  topic: readonly Msg[],
  opts: { topicChanged: boolean; channelChanged: boolean },
  now: number,
): void {
  if (isModerator(c.role)) return;
  const deadlines: number[] = [];
  if (opts.topicChanged && limits.moveWithinSeconds !== null)
    deadlines.push(limits.moveWithinSeconds + LIMIT_BUFFER_SECONDS);
  if (opts.channelChanged && limits.moveBetweenSeconds !== null)
    deadlines.push(limits.moveBetweenSeconds + LIMIT_BUFFER_SECONDS);
  if (!deadlines.length) return;
  const oldest = now - Math.min(...deadlines);
  const allowed = topic.filter((x) => x.timestamp > oldest);
  if (allowed.length === topic.length) return;
  allowed.sort((a, b) => a.timestamp - b.timestamp || a.id - b.id);
  throw errors.moveMessagesTimeLimitExceeded(allowed[0]?.id ?? null, topic.length, allowed.length);
}

/** Zulip's message_content_delete_limit_seconds, for those deleting their own message. */
export function checkDeleteLimit(limits: MessageLimits, m: Msg, now: number): void {
  if (limits.deleteSeconds !== null && now - m.timestamp > limits.deleteSeconds)
    throw errors.deleteTimeLimit();
}
