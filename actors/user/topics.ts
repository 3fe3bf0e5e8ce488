// A user's topic visibility policies (Zulip's UserTopic rows): POST
// /user_topics, the legacy PATCH /users/me/subscriptions/muted_topics, and
// /register's user_topics. Kept with the user actor.
//
// These handlers call the channel directory (a leaf for them: it never
// calls user actors), so they are not leaves themselves; conversation
// actors never call them.
//
// SNAPSHOT NOTE: the state lives in `UserState.userTopics`; old snapshots
// lack it and `topicsOf` supplies the empty default.

import { channelDirectoryRef } from "../addresses.ts";
import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj } from "../types.ts";
import type { UserProtocol, UserTopic } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "setUserTopic" | "muteTopicLegacy" | "userTopics">;

export const TOPIC_MAX_LENGTH = 60;
const EMPTY_TOPIC_NAME = "general chat";
const MUTED = 1;

interface TopicHolder {
  userTopics?: Record<string, UserTopic>;
  /** The latest AUTO_SENT_KEPT policy changes of the user's own sends: [message id, policy]. */
  autoSent?: [number, number][];
  /** The keys of the latest AUTO_SENT_KEPT reactions that changed a policy (auto-topics.ts). */
  participated?: string[];
}

const AUTO_SENT_KEPT = 100;

/** The policy changes the user's own latest sends made (auto-topics.ts). */
export function autoSentOf(state: UserState): [number, number][] {
  return (state as UserState & TopicHolder).autoSent ?? [];
}

/** The keys of the user's latest reactions that changed a topic's policy (auto-topics.ts). */
export function participatedOf(state: UserState): string[] {
  return (state as UserState & TopicHolder).participated ?? [];
}

export function keyOf(streamId: number, topic: string): string {
  return `${streamId}:${topic.toLowerCase()}`;
}

export function topicsOf(state: UserState): Record<string, UserTopic> {
  return (state as UserState & TopicHolder).userTopics ?? {};
}

export function applyTopicFact(state: UserState, raw: Obj): UserState {
  if (raw.type !== "userTopicSet") return state;
  const t = raw.topic as unknown as UserTopic;
  const holder = state as UserState & TopicHolder;
  const map = (holder.userTopics ??= {});
  if (t.visibility_policy === 0) delete map[keyOf(t.stream_id, t.topic_name)];
  else map[keyOf(t.stream_id, t.topic_name)] = { ...t };
  // Set by the user's own send (`sent`: its message id), for the send's reply.
  if (typeof raw.sent === "number") {
    const sent = (holder.autoSent ??= []);
    sent.push([raw.sent, t.visibility_policy]);
    if (sent.length > AUTO_SENT_KEPT) sent.shift();
  }
  // Set by a reaction's participation (`participation`: its key), so a repeat of it is a no-op.
  if (typeof raw.participation === "string") {
    const keys = (holder.participated ??= []);
    keys.push(raw.participation);
    if (keys.length > AUTO_SENT_KEPT) keys.shift();
  }
  return state;
}

function requireSelf(state: UserState, caller: Caller | null): Caller {
  if (!state.created || !caller || caller.userId !== state.userId || caller.realmId !== state.realmId) {
    throw errors.accessDenied();
  }
  return caller;
}

async function checkChannel(
  ctx: ActorContext,
  state: UserState,
  caller: Caller,
  streamId: number,
): Promise<string> {
  const r = await ctx.call(channelDirectoryRef(state.realmId), "contentAccess", {
    stream_id: streamId,
    userId: caller.userId,
    role: caller.role,
  });
  if (!r.ok) throw errors.invalidChannelId();
  return r.name!;
}

function normalizeTopicName(raw: string): string {
  const t = raw.trim();
  if ([...t].length > TOPIC_MAX_LENGTH) throw errors.tooLong("topic", TOPIC_MAX_LENGTH);
  return t === EMPTY_TOPIC_NAME || t === "(no topic)" ? "" : t;
}

/**
 * The legacy muted_topics event Zulip still sends beside user_topic on every
 * policy change: [channel name, topic, muted-at] per muted topic after the
 * change (channels the directory no longer knows are left out, as in
 * /register). The queue drops it for clients that asked for user_topic.
 */
async function mutedTopicsEvent(ctx: ActorContext, state: UserState, t: UserTopic): Promise<Obj> {
  const after = { ...topicsOf(state), [keyOf(t.stream_id, t.topic_name)]: t };
  const muted = Object.values(after).filter((u) => u.visibility_policy === MUTED);
  const names = muted.length
    ? await ctx.call(channelDirectoryRef(state.realmId), "channelNamesByIds", {
        ids: [...new Set(muted.map((u) => u.stream_id))],
      })
    : {};
  const rows = muted
    .filter((u) => Object.hasOwn(names, String(u.stream_id)))
    .map((u) => [names[String(u.stream_id)]!, u.topic_name, u.last_updated]);
  return { type: "muted_topics", muted_topics: rows as unknown as Obj[] };
}

export async function setDecision(ctx: ActorContext, state: UserState, t: UserTopic) {
  const legacy = await mutedTopicsEvent(ctx, state, t);
  return {
    facts: [{ type: "userTopicSet", topic: t as unknown as Obj }],
    events: [
      { event: legacy, userIds: [state.userId] },
      { event: { type: "user_topic", ...t }, userIds: [state.userId] },
    ],
    reply: {},
  };
}

/** POST /user_topics: {stream_id, topic, visibility_policy 0-3}; works for topics with no messages. */
const setUserTopic: Handlers["setUserTopic"] = async (state, args, ctx, caller) => {
  const c = requireSelf(state, caller);
  const policy = args.visibility_policy;
  if (![0, 1, 2, 3].includes(policy)) throw errors.invalid("visibility_policy");
  const topic = normalizeTopicName(args.topic);
  const streamId = args.stream_id;
  await checkChannel(ctx, state, c, streamId);
  const existing = topicsOf(state)[keyOf(streamId, topic)];
  return setDecision(ctx, state, {
    stream_id: streamId,
    topic_name: existing?.topic_name ?? topic,
    last_updated: Math.floor(ctx.now() / 1000),
    visibility_policy: policy,
  });
};

/** Legacy PATCH /users/me/subscriptions/muted_topics: {stream_id, topic, op add|remove}. */
const muteTopicLegacy: Handlers["muteTopicLegacy"] = async (state, args, ctx, caller) => {
  const c = requireSelf(state, caller);
  const topic = normalizeTopicName(args.topic);
  const streamId = args.stream_id;
  await checkChannel(ctx, state, c, streamId);
  const existing = topicsOf(state)[keyOf(streamId, topic)];
  const muted = existing?.visibility_policy === MUTED;
  // Since Zulip 7.0 (feature level 169) muting a muted topic, or unmuting one
  // that is not muted, succeeds and changes nothing.
  if ((args.op === "add") === muted) return { reply: {} };
  return setDecision(ctx, state, {
    stream_id: streamId,
    topic_name: existing?.topic_name ?? topic,
    last_updated: Math.floor(ctx.now() / 1000),
    visibility_policy: args.op === "add" ? MUTED : 0,
  });
};

/** /register user_topics. */
const userTopics: Handlers["userTopics"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: { user_topics: Object.values(topicsOf(state)).map((t) => ({ ...t })) } };
};

export const topicHandlers: Handlers = {
  setUserTopic,
  muteTopicLegacy,
  userTopics,
};
