// A conversation's answer for topic links (the design is in
// channel-directory/markdown-links.ts): the newest ids of the topics a
// message being rendered links to, as one writer may read them.

import { dict } from "../dict.ts";
import { MAX_LINKED_TOPICS, type LocalLatest } from "../channel-directory/index.ts";
import { inSpans } from "../spans.ts";
import type { ArgsOf } from "../protocol.ts";
import type { ActorContext } from "../types.ts";
import { userRef } from "../user/index.ts";
import { idsRange, type ConvState } from "./conversation-state.ts";
import type { ChannelProtocol, ConvHandler, ConvHandlers } from "./protocol.ts";

/** Newest ids of a protected topic searched for one the writer received. */
const PROTECTED_WINDOW = 50;

/** {lowercased topic: latest id the user may read} for `args.topics` of this conversation. */
async function latestOf(
  ctx: ActorContext,
  state: ConvState,
  args: ArgsOf<ChannelProtocol, "topicLatest">,
): Promise<Record<string, number>> {
  const out = dict<number>();
  const spans = args.spans ?? null;
  const { userId } = args;
  for (const raw of args.topics.slice(0, MAX_LINKED_TOPICS)) {
    const key = raw.toLowerCase();
    if (!state.topics.has(key)) continue;
    // The newest ids of the topic, ascending.
    const ids = await idsRange(ctx, state, key, { limit: spans ? PROTECTED_WINDOW : 1, reverse: true });
    if (!spans) {
      if (ids.length) out[key] = ids[ids.length - 1]!;
      continue;
    }
    // Protected history: the newest of these the user received.
    const flags = await ctx.call(userRef(state.realmId, userId), "messageFlags", { conv: state.key, ids });
    const got = ids.findLast((id) => Object.hasOwn(flags, String(id)) || inSpans(spans, id));
    if (got) out[key] = got;
  }
  return out;
}

/** This conversation as `topicLatestFor`'s `local`: a send or edit here cannot call itself. */
export function localLatest(ctx: ActorContext, state: ConvState): LocalLatest {
  return { key: state.key, latest: (args) => latestOf(ctx, state, args) };
}

/** Conversation reader ({topics, userId, spans?} -> {topic: id}); see latestOf. */
const topicLatest: ConvHandler<"topicLatest"> = async (state, args, ctx) => ({
  reply: await latestOf(ctx, state, args),
});

export const markdownLinksConversationHandlers: ConvHandlers<"topicLatest"> = { topicLatest };
