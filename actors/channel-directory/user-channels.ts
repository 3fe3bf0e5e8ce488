// GET /users/{user_id}/channels (Zulip 12, feature level 440): the ids of
// the channels a user (human or bot, FL 458) is subscribed to, limited to
// those whose metadata the acting user may see (administrators see all).

import { errors } from "../errors.ts";
import { Turn, canSeeMetadata } from "./access.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";

/** {user_id} -> {subscribed_channel_ids}, ascending. Deactivated users answer too (their subscriptions remain). */
const userChannels: DirHandler<"userChannels"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const target = t.users.get(args.user_id);
  if (!target) throw errors.noSuchUser();
  const key = String(target.userId);
  const ids: number[] = [];
  for (const [chId, subs] of Object.entries(state.subs)) {
    if (subs[key]?.active !== true) continue;
    const ch = state.channels[chId];
    if (ch && canSeeMetadata(state, ch, me, t)) ids.push(ch.id);
  }
  return { reply: { subscribed_channel_ids: ids.sort((a, b) => a - b) } };
};

export const userChannelsDirectoryHandlers: DirHandlers<"userChannels"> = { userChannels };
