// The message id a topic link points `/with/` (feature levels 347, 400):
// Zulip's latest message of the topic the writer may read. Rendering asks
// only for the topics the content links, each a bounded read:
//
// - the channel directory (`topicLinkTargets`) names the linked channels
//   the writer has content access to, with the writer's received spans
//   where history is protected;
// - each such channel's conversation (`topicLatest`, a reader: it runs
//   beside the conversation's turns, so a send in one channel may ask
//   another, or the directory may ask while rendering a preview) reads the
//   newest ids of each linked topic from its index.
//
// Internal methods: actors call them, the gateway never does.

import { userRef } from "../user/index.ts";
import { dict, own } from "../dict.ts";
import type { ActorContext, Handler, Obj } from "../types.ts";
import { historyProtected, isGuest, isSubscribed } from "./access.ts";
import { idsRange, type ConvState } from "./conversation-state.ts";
import { splitMessageId, topicKey } from "./markdown.ts";
import { channelConvRef, channelDirectoryRef } from "./refs.ts";
import { inSpans, spansOf, type DirState, type Span } from "./state.ts";

/** Topics a message may link with `with` ids: more are left plain. */
const MAX_LINKED_TOPICS = 20;
/** Newest ids of a protected topic searched for one the writer received. */
const PROTECTED_WINDOW = 50;

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

interface Target {
  id: number;
  /** The writer's received spans, when the channel's history is protected. */
  spans?: Span[];
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
  { local, dir }: { local?: ConvState; dir?: DirState } = {},
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const links = linkedTopics(content);
  if (!links.length) return out;
  const ask: Obj = { names: [...new Set(links.map(([c]) => c))], userId: writer.userId, role: writer.role };
  const targets = (dir
    ? targetsOf(dir, ask)
    : await ctx.call(channelDirectoryRef(realmId), "topicLinkTargets", ask)) as unknown as Record<
    string,
    Target
  >;
  const byChannel = new Map<number, { target: Target; topics: string[] }>();
  for (const [channel, topic] of links) {
    const target = own(targets, channel);
    if (!target) continue;
    let entry = byChannel.get(target.id);
    if (!entry) byChannel.set(target.id, (entry = { target, topics: [] }));
    entry.topics.push(topic);
  }
  await Promise.all(
    [...byChannel].map(async ([id, { target, topics }]) => {
      const args: Obj = { topics, userId: writer.userId, ...(target.spans ? { spans: target.spans } : {}) };
      const latest =
        local && local.key === String(id)
          ? await latestOf(ctx, local, args)
          : ((await ctx.call(channelConvRef(realmId, id), "topicLatest", args)) as unknown as Record<
              string,
              number
            >);
      for (const topic of topics) {
        const found = own(latest, topic.toLowerCase());
        if (found) out.set(topicKey(id, topic), found);
      }
    }),
  );
  return out;
}

/** {lowercased topic: latest id the user may read} for `args.topics` of this conversation. */
async function latestOf(ctx: ActorContext, state: ConvState, args: Obj): Promise<Record<string, number>> {
  const out = dict<number>();
  const topics = Array.isArray(args.topics) ? args.topics.slice(0, MAX_LINKED_TOPICS) : [];
  const spans = Array.isArray(args.spans) ? (args.spans as Span[]) : null;
  const userId = Number(args.userId);
  for (const raw of topics) {
    if (typeof raw !== "string") continue;
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

/** Conversation reader ({topics, userId, spans?} -> {topic: id}); see latestOf. */
const topicLatest: Handler<ConvState> = async (state, args, ctx) => ({
  reply: await latestOf(ctx, state, args),
});

/**
 * Directory ({names, userId, role} -> {name: {id, spans?}}): the live
 * channels of those (lowercased) names whose content the user may access.
 */
function targetsOf(state: DirState, args: Obj): Obj {
  const out = dict<Obj>();
  const userId = Number(args.userId);
  const guest = isGuest(Number(args.role));
  for (const raw of Array.isArray(args.names) ? args.names.slice(0, MAX_LINKED_TOPICS) : []) {
    if (typeof raw !== "string") continue;
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

const topicLinkTargets: Handler<DirState> = (state, args) => ({ reply: targetsOf(state, args) });

export const markdownLinksConversationHandlers: Record<string, Handler<ConvState>> = { topicLatest };
export const markdownLinksDirectoryHandlers: Record<string, Handler<DirState>> = { topicLinkTargets };
