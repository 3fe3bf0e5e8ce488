// Automatic topic visibility (Zulip 8.0, feature levels 214, 218 and 235):
// sending to a channel topic (or, for "participation", reacting in it) may
// follow it, or unmute it in a muted channel,
// as the sender's automatically_follow_topics_policy and
// automatically_unmute_topics_in_muted_streams_policy say; a personal
// mention follows the topic for users with
// automatically_follow_topics_where_mentioned. The gateway asks after the
// send (whose reply comes once the message is in every recipient's index):
// each handler checks the message in the user's own index, so a caller can
// only make a user follow a topic they were really mentioned in.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { ActorContext, Caller } from "../types.ts";
import { FLAG_BITS, msgsOf } from "./flags.ts";
import { settingValue } from "./format.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";
import { keyOf, setDecision, topicsOf } from "./topics.ts";

type Handlers = SomeHandlersOf<
  UserState,
  UserProtocol,
  "autoTopicOnSend" | "followWhereMentioned" | "autoTopicOnParticipation"
>;

/** Zulip's UserTopic.VisibilityPolicy. */
const INHERIT = 0;
const MUTED = 1;
const UNMUTED = 2;
const FOLLOWED = 3;

/** Zulip's AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_* values of the two policies. */
const ON_PARTICIPATION = 1;
const ON_SEND = 2;
const ON_INITIATION = 3;

/** The channel message `id` of the user's index: [stream id, topic], or null. */
function channelMessage(
  state: UserState,
  id: number,
): { streamId: number; topic: string; bits: number } | null {
  const e = msgsOf(state).entries[String(id)];
  if (!e || e[0].startsWith("dm:")) return null;
  return { streamId: Number(e[0]), topic: e[2], bits: e[1] };
}

/**
 * Zulip's visibility_policy_for_send_message: FOLLOWED wins over UNMUTED;
 * a send is participation too; initiation only counts for a topic with
 * no earlier message. null: no change.
 */
export function policyForSend(
  follow: number,
  unmute: number,
  current: number,
  channelMuted: boolean,
  initiated: boolean,
): number | null {
  if (current === FOLLOWED) return null;
  if (follow === ON_PARTICIPATION || follow === ON_SEND) return FOLLOWED;
  let next: number | null = null;
  if (channelMuted && (unmute === ON_PARTICIPATION || unmute === ON_SEND)) next = UNMUTED;
  if (current !== INHERIT) return next !== null && next === current ? null : next;
  if (initiated && follow === ON_INITIATION) return FOLLOWED;
  if (initiated && channelMuted && unmute === ON_INITIATION) next = UNMUTED;
  return next;
}

function requireSelf(state: UserState, caller: Caller | null): void {
  if (!state.created || !caller || caller.userId !== state.userId || caller.realmId !== state.realmId) {
    throw errors.accessDenied();
  }
}

async function setPolicy(
  state: UserState,
  ctx: ActorContext,
  m: { streamId: number; topic: string },
  policy: number,
) {
  const existing = topicsOf(state)[keyOf(m.streamId, m.topic)];
  return setDecision(ctx, state, {
    stream_id: m.streamId,
    topic_name: existing?.topic_name ?? m.topic,
    last_updated: Math.floor(ctx.now() / 1000),
    visibility_policy: policy,
  });
}

/**
 * After the caller's own channel send: {message_id, initiated, channel_muted}.
 * Replies {visibility_policy} when it changed it (POST /messages'
 * automatic_new_visibility_policy), else {}.
 */
const autoTopicOnSend: Handlers["autoTopicOnSend"] = async (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const m = channelMessage(state, args.message_id);
  if (!m || state.isBot) return { reply: {} };
  const current = topicsOf(state)[keyOf(m.streamId, m.topic)]?.visibility_policy ?? INHERIT;
  const next = policyForSend(
    Number(settingValue(state, "automatically_follow_topics_policy")),
    Number(settingValue(state, "automatically_unmute_topics_in_muted_streams_policy")),
    current,
    args.channel_muted,
    args.initiated,
  );
  if (next === null || next === current) return { reply: {} };
  const d = await setPolicy(state, ctx, m, next);
  return { ...d, reply: { visibility_policy: next } };
};

/**
 * {message_id}: a message that personally mentions this user follows its
 * topic when automatically_follow_topics_where_mentioned is on, unless the
 * user muted or already follows the topic. Any caller may ask: the mention
 * is read from the user's own index.
 */
const followWhereMentioned: Handlers["followWhereMentioned"] = async (state, args, ctx) => {
  const m = channelMessage(state, args.message_id);
  if (!m || state.isBot || !(m.bits & FLAG_BITS.mentioned!)) return { reply: {} };
  if (settingValue(state, "automatically_follow_topics_where_mentioned") !== true) return { reply: {} };
  const current = topicsOf(state)[keyOf(m.streamId, m.topic)]?.visibility_policy ?? INHERIT;
  if (current === MUTED || current === FOLLOWED) return { reply: {} };
  const d = await setPolicy(state, ctx, m, FOLLOWED);
  return { ...d, reply: {} };
};

/**
 * After the caller's own reaction to a channel message (participation):
 * {stream_id, topic, channel_muted}, from the conversation that took the
 * reaction. Zulip's visibility_policy_for_participation and
 * should_change_visibility_policy.
 */
const autoTopicOnParticipation: Handlers["autoTopicOnParticipation"] = async (state, args, ctx, caller) => {
  requireSelf(state, caller);
  if (state.isBot) return { reply: {} };
  let next: number | null = null;
  if (Number(settingValue(state, "automatically_follow_topics_policy")) === ON_PARTICIPATION) next = FOLLOWED;
  else if (
    args.channel_muted === true &&
    Number(settingValue(state, "automatically_unmute_topics_in_muted_streams_policy")) === ON_PARTICIPATION
  )
    next = UNMUTED;
  const m = { streamId: args.stream_id, topic: args.topic };
  const current = topicsOf(state)[keyOf(m.streamId, m.topic)]?.visibility_policy ?? INHERIT;
  if (next === null || next === current || current === FOLLOWED) return { reply: {} };
  const d = await setPolicy(state, ctx, m, next);
  return { ...d, reply: {} };
};

export const autoTopicHandlers: Handlers = {
  autoTopicOnSend,
  followWhereMentioned,
  autoTopicOnParticipation,
};
