// Restricted user access (Zulip's can_access_all_users_group, feature
// levels 225, 228, 314): which users a guest may know about. The channel
// directory holds every subscription, so the sets are computed here; the
// realm actor, which formats users, may not call this actor (the directory
// calls the realm inside its turns), so the gateway asks here first and
// hands the answer to the realm (gateway/user-access.ts).

import { errors } from "../errors.ts";
import { SYSTEM_GROUP_ID } from "../group/index.ts";
import { realmGroupSetting } from "../permissions/index.ts";
import type { Handler, Obj } from "../types.ts";
import { activeSubscriberIds } from "./format.ts";
import type { DirState } from "./state.ts";

const ROLE_GUEST = 600;

/**
 * Whether the realm restricts guests at all: the setting allows only
 * role:everyone and role:members, and guests are in the first only.
 */
export async function guestsRestricted(ctx: Parameters<Handler<DirState>>[2], realmId: number) {
  const value = await realmGroupSetting(ctx, realmId, "can_access_all_users_group");
  return value !== SYSTEM_GROUP_ID["role:everyone"];
}

/**
 * The users who share a channel subscription with `userId` (Zulip's
 * get_subscribers_of_target_user_subscriptions for channels), ascending.
 * Costs the subscriber lists of that user's channels only.
 */
export function channelPeers(state: DirState, userId: number): number[] {
  const key = String(userId);
  const out = new Set<number>();
  for (const [channelId, subs] of Object.entries(state.subs)) {
    if (subs[key]?.active !== true) continue;
    for (const id of activeSubscriberIds(state, Number(channelId))) out.add(id);
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * The caller's access: `{all: true}` when they may see every user, else
 * `{all: false, channel_peers}`. A non-guest answers at once, without any
 * call (the common case).
 */
const accessibleUsers: Handler<DirState> = async (state, _args, ctx, caller) => {
  if (!caller || caller.realmId !== state.realmId) throw errors.accessDenied();
  const reply: Obj = { all: true };
  if (caller.role === ROLE_GUEST && (await guestsRestricted(ctx, state.realmId))) {
    reply.all = false;
    reply.channel_peers = channelPeers(state, caller.userId);
  }
  return { reply };
};

export const userAccessDirectoryHandlers: Record<string, Handler<DirState>> = { accessibleUsers };
