// The channel directory's part in invitations (actors/realm/invites.ts):
// checking an invitation's channels before it is made, and subscribing the
// user who accepted it.

import { errors } from "../errors.ts";
import { realmGroupSetting } from "../permissions/index.ts";
import type { Obj } from "../types.ts";
import { Turn, canAccessContent, isGuest, isSubscribed } from "./access.ts";
import { subscribeFact, subscriptionEvents } from "./handlers.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";
import { cloneDir } from "./state.ts";

/**
 * POST /invites and /invites/multiuse: Zulip's access_streams_for_invite.
 * Every channel must be one the inviter can access ("Invalid channel ID
 * ... No invites were sent."), and the inviter must be allowed to add
 * subscribers to those that are not default channels.
 */
const checkInviteChannels: DirHandler<"checkInviteChannels"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId);
  const me = t.me(caller);
  const ids = [...new Set(args.stream_ids)];
  const channels = ids.map((id) => {
    const ch = state.channels[String(id)];
    if (!ch || ch.isArchived || !canAccessContent(state, ch, me)) throw errors.inviteInvalidChannel(id);
    return ch;
  });
  const others = channels.filter((ch) => !ch.isDefault);
  if (others.length) {
    const realmValue = await realmGroupSetting(ctx, state.realmId, "can_add_subscribers_group");
    const realmWide = !isGuest(me.role) && (await t.inGroup(realmValue, me.userId));
    for (const ch of others) {
      if (realmWide || (await t.inGroup(ch.groups.can_add_subscribers_group!, me.userId))) continue;
      throw errors.inviteCannotSubscribe();
    }
  }
  return { reply: {} };
};

/**
 * The invite worker, once an invitation was accepted: subscribe the new
 * user to its channels (those still there) and, when it says so, the
 * realm's default channels. Idempotent: a channel already joined is skipped.
 */
const joinInvitedChannels: DirHandler<"joinInvitedChannels"> = async (state, args, ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const t = await Turn.load(ctx, state.realmId);
  const target = t.users.get(args.user_id);
  if (!target || !target.isActive || target.isBot) return { reply: { stream_ids: [] } };
  const wanted = new Set(args.stream_ids);
  if (args.include_defaults === true)
    for (const ch of Object.values(state.channels)) if (ch.isDefault) wanted.add(ch.id);
  let s = cloneDir(state);
  const facts: Obj[] = [];
  const added: { channelId: number; userId: number }[] = [];
  for (const id of [...wanted].sort((a, b) => a - b)) {
    const ch = state.channels[String(id)];
    if (!ch || ch.isArchived || isSubscribed(s, ch, target.userId)) continue;
    s = subscribeFact(s, facts, ch, target.userId);
    added.push({ channelId: ch.id, userId: target.userId });
  }
  return {
    facts,
    events: subscriptionEvents(t, s, [], added),
    replyAfterEvents: true,
    reply: { stream_ids: added.map((a) => a.channelId) },
  };
};

export const inviteDirectoryHandlers: DirHandlers<"checkInviteChannels" | "joinInvitedChannels"> = {
  checkInviteChannels,
  joinInvitedChannels,
};
