// /register state read from the caller's message flag index and topic
// policies: starred_messages ("starred_messages"),
// recent_private_conversations ("recent_private_conversations") and the
// legacy muted_topics ("muted_topics"). Update message flags, message and
// user_topic events keep them current.
import { EMPTY_TOPIC_DISPLAY_NAME, channelDirectoryRef, userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

/** Zulip's UserTopic.VisibilityPolicy.MUTED. */
const MUTED = 1;

const starredArea: RegisterArea = {
  fetchTypes: ["starred_messages"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "starredMessages", {});
  },
};

const recentDmsArea: RegisterArea = {
  fetchTypes: ["recent_private_conversations"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "recentPrivateConversations", {});
  },
};

/** [channel name, topic, muted-at timestamp] per muted topic, as Zulip's get_topic_mutes. */
const mutedTopicsArea: RegisterArea = {
  fetchTypes: ["muted_topics"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    const { user_topics } = await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "userTopics", {});
    const muted = user_topics.filter((t) => t.visibility_policy === MUTED);
    if (!muted.length) return { muted_topics: [] };
    const names = await ctx.call(channelDirectoryRef(ctx.realmId), "channelNamesByIds", {
      ids: [...new Set(muted.map((t) => t.stream_id))],
    });
    // Without empty_topic_name, the empty topic reads as realm_empty_topic_display_name.
    const emptyName = ctx.params.client_capabilities.empty_topic_name ? "" : EMPTY_TOPIC_DISPLAY_NAME;
    const out = muted
      .filter((t) => Object.hasOwn(names, String(t.stream_id)))
      .map((t) => [
        names[String(t.stream_id)]!,
        t.topic_name === "" ? emptyName : t.topic_name,
        t.last_updated,
      ]);
    return { muted_topics: out };
  },
};

export const userMessageAreas: RegisterArea[] = [starredArea, recentDmsArea, mutedTopicsArea];
