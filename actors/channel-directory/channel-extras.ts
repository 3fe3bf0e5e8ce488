// Channel endpoints beside the directory's core (Zulip's
// zerver/views/streams.py): the default channels and their application to
// new users, a user's subscription status, and the combined subscribe and
// unsubscribe of PATCH /users/me/subscriptions. The handlers only read the
// roster (a leaf). Deleting a topic runs in the conversation
// (actors/channel/channel-extras.ts).

import { accessChangeHandoffs } from "./user-access.ts";
import { errors } from "../errors.ts";
import type { Obj } from "../types.ts";
import { Turn, canSeeMetadata, isAdmin, isSubscribed } from "./access.ts";
import {
  defaultStreamsEvent,
  subscribeFact,
  spanBound,
  subscribe,
  subscriptionEvents,
  unsubscribe,
} from "./handlers.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";
import { applyDirFact, cloneDir, handledAlready, type Channel, type DirState } from "./state.ts";

function channelOf(state: DirState, id: number): Channel | undefined {
  return state.channels[String(id)];
}

/**
 * POST / DELETE /default_streams {stream_id, is_default}. Zulip checks the
 * role first, then channel access as the admin (a private channel they are
 * not subscribed to is an invalid id); adding needs a live channel, removing
 * takes an archived one too. Both announce the list, changed or not.
 */
const setDefaultChannel: DirHandler<"setDefaultChannel"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const u = t.me(caller);
  if (!isAdmin(u.role)) throw errors.mustBeAdmin();
  const wanted = args.is_default;
  const ch = channelOf(state, args.stream_id);
  if (!ch || (ch.inviteOnly && !isSubscribed(state, ch, u.userId))) throw errors.invalidChannelId();
  if (wanted && ch.isArchived) throw errors.invalidChannelId();
  if (wanted && ch.inviteOnly) throw errors.privateCannotBeDefault();
  const facts: Obj[] = [];
  if (ch.isDefault !== wanted) {
    facts.push({ type: "channelChanged", channelId: ch.id, changes: { isDefault: wanted } });
  }
  // Zulip's do_add_default_stream tells clients only when it adds a row.
  if (wanted && !facts.length) return { reply: {} };
  let s = cloneDir(state);
  for (const f of facts) s = applyDirFact(s, f);
  return { facts, events: [defaultStreamsEvent(t, s)], reply: {} };
};

/**
 * {user_id}: subscribe a just-created human user to the realm's default
 * channels (Zulip's process_new_human_user; bots get none): the realm's
 * hand-off after POST /users (actors/realm/member-handoffs.ts), the CLI
 * after create-user; internal only. A user joins them once: the user id
 * is journaled as done, so a hand-off given again (after the user left a
 * default channel, say) does nothing.
 */
const joinDefaultChannels: DirHandler<"joinDefaultChannels"> = async (state, args, ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const key = `defaults:${args.user_id}`;
  if (handledAlready(state, key)) return { reply: { stream_ids: [] } };
  const t = await Turn.load(ctx, state.realmId, state);
  const target = t.users.get(args.user_id);
  if (!target || !target.isActive || target.isBot) throw errors.noSuchUser();
  let s = cloneDir(state);
  const facts: Obj[] = [{ type: "handled", key }];
  const added: { channelId: number; userId: number }[] = [];
  let from: number | undefined;
  for (const ch of Object.values(state.channels)) {
    if (!ch.isDefault || ch.isArchived || isSubscribed(s, ch, target.userId)) continue;
    from ??= await spanBound(ctx, state.realmId);
    s = subscribeFact(s, facts, ch, target.userId, from);
    added.push({ channelId: ch.id, userId: target.userId });
  }
  const events = subscriptionEvents(t, s, [], added);
  // Guests sharing a default channel may now access the new user (FL 228).
  const handoffs = await accessChangeHandoffs(
    t,
    state,
    s,
    added.map((a) => a.channelId),
  );
  return {
    facts,
    events,
    handoffs,
    replyAfterEvents: true,
    reply: { stream_ids: added.map((a) => a.channelId) },
  };
};

/**
 * GET /users/{user_id}/subscriptions/{stream_id}: the user first ("No such
 * user" for unknown ids; bots are answered for since FL 458), then the
 * channel as the caller may see it (administrators see private ones).
 */
const subscriptionStatus: DirHandler<"subscriptionStatus"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const u = t.me(caller);
  const target = t.users.get(args.user_id);
  if (!target) throw errors.noSuchUser();
  if (!target.isActive) throw errors.userDeactivated();
  const ch = channelOf(state, args.stream_id);
  if (!ch || ch.isArchived || !canSeeMetadata(state, ch, u, t)) throw errors.invalidChannelId();
  return { reply: { is_subscribed: isSubscribed(state, ch, target.userId) } };
};

/**
 * PATCH /users/me/subscriptions {add, delete}: the legacy subscribe, then
 * the unsubscribe on its outcome, in one turn, so a failure of either
 * changes nothing (Zulip's compose_views runs both in one transaction).
 */
const updateSubscriptions: DirHandler<"updateSubscriptions"> = async (state, args, ctx, caller) => {
  const add = args.add ?? [];
  const del = args.delete ?? [];
  if (!add.length && !del.length) throw errors.nothingToDoSubgroups();
  const first = await subscribe(state, { subscriptions: add }, ctx, caller);
  let s = cloneDir(state);
  for (const f of first.facts ?? []) s = applyDirFact(s, f);
  const second = await unsubscribe(s, { subscriptions: del }, ctx, caller);
  const a = first.reply;
  const b = second.reply;
  return {
    facts: [...(first.facts ?? []), ...(second.facts ?? [])],
    events: [...(first.events ?? []), ...(second.events ?? [])],
    replyAfterEvents: true,
    reply: {
      subscribed: a?.subscribed ?? {},
      already_subscribed: a?.already_subscribed ?? {},
      removed: b?.removed ?? [],
      not_removed: b?.not_removed ?? [],
      created: a?.created ?? [],
    },
  };
};

export const channelExtrasDirectoryHandlers: DirHandlers<
  "setDefaultChannel" | "joinDefaultChannels" | "subscriptionStatus" | "updateSubscriptions"
> = {
  setDefaultChannel,
  joinDefaultChannels,
  subscriptionStatus,
  updateSubscriptions,
};
