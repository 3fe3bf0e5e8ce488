// Deleting a topic in batches (POST /streams/{id}/delete_topic, Zulip's
// zerver/views/streams.py): the batch runs in the conversation and calls
// leaves only (sendContext, user actors), like the single-message `remove`.
// The directory's channel endpoints are channel-directory/channel-extras.ts.

import { errors } from "../errors.ts";
import type { Caller } from "../types.ts";
import { historyProtected, isAdmin } from "../channel-directory/index.ts";
import { removeMany } from "./bulk-delete-handlers.ts";
import { channelInfo, EMPTY_TOPIC_NAME, canRead, me } from "./conversation-handlers.ts";
import { allIds } from "./conversation-state.ts";
import type { ConvHandler, ConvHandlers } from "./protocol.ts";
import { accessibleIds } from "./received.ts";

/** Zulip's RETENTION_STREAM_MESSAGE_BATCH_SIZE: messages deleted per batch. */
export const TOPIC_DELETE_BATCH = 100;

/**
 * POST /streams/{id}/delete_topic, one batch: {topic_name} -> {deleted,
 * more}. The newest TOPIC_DELETE_BATCH messages of the topic (matched
 * case-insensitively) that the administrator may read, deleted through
 * `removeMany`; in a channel with protected history only those they
 * received, and the delete_message events go only to users who held them.
 * The gateway repeats batches until none is left or its time is up.
 */
const deleteTopicBatch: ConvHandler<"deleteTopicBatch"> = async (state, args, ctx, caller) => {
  const c: Caller = me(caller);
  if (!isAdmin(c.role)) throw errors.mustBeAdmin();
  const ch = await channelInfo(ctx, state);
  // access_stream_by_id: a live channel whose content the administrator may read.
  if (ch.is_archived || !canRead(ch, c)) throw errors.invalidChannelId();
  let topic = args.topic_name;
  if (topic === EMPTY_TOPIC_NAME) topic = "";
  if (!state.topics.has(topic.toLowerCase())) return { reply: { deleted: 0, more: false } };
  const isProtected = historyProtected(ch);
  const topicIds = await allIds(ctx, state, topic);
  const all = await accessibleIds(ctx, state.realmId, c.userId, state.key, isProtected, topicIds);
  const batch = all.slice(-TOPIC_DELETE_BATCH);
  if (!batch.length) return { reply: { deleted: 0, more: false } };
  // removeMany tells each user of the ids they received (protected history).
  const d = await removeMany(state, { ids: batch }, ctx, caller);
  return {
    facts: d.facts,
    writes: d.writes,
    events: d.events ?? [],
    reply: { deleted: batch.length, more: all.length > batch.length },
  };
};

export const channelExtrasConversationHandlers: ConvHandlers<"deleteTopicBatch"> = { deleteTopicBatch };
