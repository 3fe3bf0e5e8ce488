// Automatic topic visibility (Zulip 8.0, feature levels 214, 218 and 235):
// sending to a channel topic (or, for "participation", reacting in it) may
// follow it, or unmute it in a muted channel,
// as the sender's automatically_follow_topics_policy and
// automatically_unmute_topics_in_muted_streams_policy say; a personal
// mention follows the topic for users with
// automatically_follow_topics_where_mentioned. A send's policies are set by
// the delivery of its rows (receiveMessages, in the send's durable hand-off)
// in the same turn that stores the row, and the send replies only after
// that; a mention follows only where the delivered row says "mentioned".

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj, OutEvent } from "../types.ts";
import { settingValue } from "./format.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";
import { autoSentOf, keyOf, participatedOf, setDecision, topicsOf } from "./topics.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "autoTopicOutcome" | "autoTopicOnParticipation">;

/** Zulip's UserTopic.VisibilityPolicy. */
const INHERIT = 0;
const MUTED = 1;
const UNMUTED = 2;
const FOLLOWED = 3;

/** Zulip's AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_* values of the two policies. */
const ON_PARTICIPATION = 1;
const ON_SEND = 2;
const ON_INITIATION = 3;

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

/** A channel message just delivered to this user (receiveMessages), for its automatic policies. */
export interface ReceivedRow {
  id: number;
  streamId: number;
  topic: string;
  /** The row's "mentioned" flag. */
  mentioned: boolean;
  /** The user's own send: whether it started the topic, and the user's mute of the channel. */
  own?: { initiated: boolean; channel_muted: boolean };
  /** A human's send that may follow the topic for those it personally mentions. */
  mentionFollows?: boolean;
}

/**
 * The automatic topic policies of newly delivered channel messages, in the
 * delivery's own turn (the send's hand-off, actors/channel/delivery.ts), so
 * a crash cannot store the row without them: the user's own send may follow
 * or unmute its topic (Zulip's visibility_policy_for_send_message; the
 * change is recorded for POST /messages' automatic_new_visibility_policy,
 * `autoTopicOutcome`), and a personal mention follows it with
 * automatically_follow_topics_where_mentioned unless the user muted or
 * already follows it.
 */
export async function autoTopicsOnReceive(
  state: UserState,
  ctx: ActorContext,
  rows: ReceivedRow[],
): Promise<{ facts: Obj[]; events: OutEvent[] }> {
  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  if (state.isBot) return { facts, events };
  // Earlier rows of this delivery may have changed a topic already.
  const changed = new Map<string, number>();
  const currentOf = (m: ReceivedRow) =>
    changed.get(keyOf(m.streamId, m.topic)) ??
    topicsOf(state)[keyOf(m.streamId, m.topic)]?.visibility_policy ??
    INHERIT;
  const set = async (m: ReceivedRow, policy: number, sent?: number) => {
    const d = await setPolicy(state, ctx, m, policy);
    changed.set(keyOf(m.streamId, m.topic), policy);
    for (const f of d.facts) facts.push(sent === undefined ? f : { ...f, sent });
    events.push(...d.events);
  };
  for (const m of rows) {
    const current = currentOf(m);
    if (m.own) {
      const next = policyForSend(
        Number(settingValue(state, "automatically_follow_topics_policy")),
        Number(settingValue(state, "automatically_unmute_topics_in_muted_streams_policy")),
        current,
        m.own.channel_muted,
        m.own.initiated,
      );
      if (next !== null && next !== current) await set(m, next, m.id);
    } else if (
      m.mentionFollows &&
      m.mentioned &&
      settingValue(state, "automatically_follow_topics_where_mentioned") === true &&
      current !== MUTED &&
      current !== FOLLOWED
    )
      await set(m, FOLLOWED);
  }
  return { facts, events };
}

/**
 * After the caller's own channel send: {message_id}. Replies
 * {visibility_policy} when the send's delivery changed the topic's policy
 * (POST /messages' automatic_new_visibility_policy), else {}.
 */
const autoTopicOutcome: Handlers["autoTopicOutcome"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const hit = autoSentOf(state).find(([id]) => id === args.message_id);
  return { reply: hit ? { visibility_policy: hit[1] } : {} };
};

/**
 * The user's reaction to a channel message (participation): {stream_id,
 * topic, channel_muted, key}, the hand-off of the conversation that took
 * the reaction (actors/channel/participation.ts), so internal only. Zulip's
 * visibility_policy_for_participation and should_change_visibility_policy.
 * The change is journaled with the reaction's key: a hand-off given again
 * after it changed the policy changes nothing (one that changed nothing
 * decides again, on the same rules).
 */
const autoTopicOnParticipation: Handlers["autoTopicOnParticipation"] = async (state, args, ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created) throw errors.noSuchUser();
  if (state.isBot || participatedOf(state).includes(args.key)) return { reply: {} };
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
  return { ...d, facts: d.facts.map((f) => ({ ...f, participation: args.key })), reply: {} };
};

export const autoTopicHandlers: Handlers = {
  autoTopicOutcome,
  autoTopicOnParticipation,
};
