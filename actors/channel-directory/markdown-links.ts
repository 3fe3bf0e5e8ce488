// The message id a topic link points `/with/` (feature levels 347, 400):
// Zulip's latest message of the topic the writer may read. Rendering asks
// only for the topics the content links, each a bounded read:
//
// - the channel directory (`topicLinkTargets`, here) names the linked
//   channels the writer has content access to, with the writer's received
//   spans where history is protected;
// - each such channel's conversation (`topicLatest`, a reader in
//   actors/channel/markdown-links.ts: it runs beside the conversation's
//   turns, so a send in one channel may ask another, or the directory may
//   ask while rendering a preview) reads the newest ids of each linked
//   topic from its index.
//
// `topicLatestFor` puts the two together for a send or edit (in a
// conversation) and for a preview (in the directory). Internal methods:
// actors call them, the gateway never does.

import { channelConvRef, channelDirectoryRef } from "../addresses.ts";
import { dict, own } from "../dict.ts";
import { topicKey, splitMessageId } from "../markdown/index.ts";
import type { ArgsOf } from "../protocol.ts";
import type { Span } from "../spans.ts";
import type { ActorContext } from "../types.ts";
import { historyProtected, isGuest, isSubscribed } from "./access.ts";
import type { ChannelDirectoryProtocol, DirHandler, DirHandlers, TopicLinkTarget } from "./protocol.ts";
import { spansOf, type DirState } from "./state.ts";

/** Topics a message may link with `with` ids: more are left plain. */
export const MAX_LINKED_TOPICS = 20;

/**
 * The [channel, topic] of each `#**channel>topic**` in the content (not
 * message links), channel lowercased; a superset (code spans count too).
 * One pass: every search starts where the last one ended.
 */
export function linkedTopics(content: string): [string, string][] {
  const out = new Map<string, [string, string]>();
  let i = content.indexOf("#**");
  while (i >= 0 && out.size < MAX_LINKED_TOPICS) {
    const end = content.indexOf("**", i + 3);
    if (end < 0) break;
    const body = content.slice(i + 3, end);
    const gt = body.indexOf(">");
    if (gt > 0 && !body.includes("\n") && splitMessageId(body.slice(gt + 1))[1] === null) {
      const channel = body.slice(0, gt).toLowerCase();
      const topic = body.slice(gt + 1);
      out.set(`${channel}\u0000${topic.toLowerCase()}`, [channel, topic]);
    }
    i = content.indexOf("#**", end + 2);
  }
  return [...out.values()];
}

/** A conversation's own answer to `topicLatest`, for a send or edit in that conversation. */
export interface LocalLatest {
  key: string;
  /** The conversation's `topicLatest` (actors/channel/markdown-links.ts), asked without a call. */
  latest(args: { topics: string[]; userId: number; spans?: Span[] }): Promise<Record<string, number>>;
}

/**
 * For `RenderEnv.topicLatest`: the latest message id the writer may read
 * of each topic the content links. The actor running the caller's turn
 * cannot call itself: `local` is the conversation of a send or edit, `dir`
 * the directory rendering a preview.
 */
export async function topicLatestFor(
  ctx: ActorContext,
  realmId: number,
  content: string,
  writer: { userId: number; role: number },
  { local, dir }: { local?: LocalLatest; dir?: DirState } = {},
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const links = linkedTopics(content);
  if (!links.length) return out;
  const ask = { names: [...new Set(links.map(([c]) => c))], userId: writer.userId, role: writer.role };
  const targets = dir
    ? targetsOf(dir, ask)
    : await ctx.call(channelDirectoryRef(realmId), "topicLinkTargets", ask);
  const byChannel = new Map<number, { target: TopicLinkTarget; topics: string[] }>();
  for (const [channel, topic] of links) {
    const target = own(targets, channel);
    if (!target) continue;
    let entry = byChannel.get(target.id);
    if (!entry) byChannel.set(target.id, (entry = { target, topics: [] }));
    entry.topics.push(topic);
  }
  await Promise.all(
    [...byChannel].map(async ([id, { target, topics }]) => {
      const args = { topics, userId: writer.userId, ...(target.spans ? { spans: target.spans } : {}) };
      const latest =
        local && local.key === String(id)
          ? await local.latest(args)
          : await ctx.call(channelConvRef(realmId, id), "topicLatest", args);
      for (const topic of topics) {
        const found = own(latest, topic.toLowerCase());
        if (found) out.set(topicKey(id, topic), found);
      }
    }),
  );
  return out;
}

/**
 * Directory ({names, userId, role} -> {name: {id, spans?}}): the live
 * channels of those (lowercased) names whose content the user may access.
 */
function targetsOf(
  state: DirState,
  args: ArgsOf<ChannelDirectoryProtocol, "topicLinkTargets">,
): Record<string, TopicLinkTarget> {
  const out = dict<TopicLinkTarget>();
  const { userId } = args;
  const guest = isGuest(args.role);
  for (const raw of args.names.slice(0, MAX_LINKED_TOPICS)) {
    const id = own(state.byName, raw);
    const ch = id === undefined ? undefined : state.channels[String(id)];
    if (!ch || ch.isArchived) continue;
    // Content access (access.ts canAccessContent), from the id and role the caller gives.
    if (!isSubscribed(state, ch, userId) && !ch.isWebPublic && (ch.inviteOnly || guest)) continue;
    const isProtected = historyProtected({
      invite_only: ch.inviteOnly,
      history_public_to_subscribers: ch.historyPublic,
    });
    const sub = state.subs[String(ch.id)]?.[String(userId)];
    out[raw] = { id: ch.id, ...(isProtected ? { spans: sub ? spansOf(ch, sub) : [] } : {}) };
  }
  return out;
}

const topicLinkTargets: DirHandler<"topicLinkTargets"> = (state, args) => ({ reply: targetsOf(state, args) });

export const markdownLinksDirectoryHandlers: DirHandlers<"topicLinkTargets"> = { topicLinkTargets };
