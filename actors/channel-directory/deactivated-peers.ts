// peer_remove for deactivated users (Zulip 11, feature levels 377 and 428):
// when a user (and with them their bots) is deactivated, everyone who may
// see a channel's subscriber list hears that the user left it, for every
// channel they were subscribed to, archived ones included. Subscriptions
// themselves stay (a reactivated user keeps them).
//
// The realm actor deactivates and may not call the channel directory, so
// the gateway route calls this right after with the ids the realm
// deactivated. Only users the roster shows inactive are announced: a
// caller cannot make the server claim that an active user left.

import { errors } from "../errors.ts";
import type { OutEvent } from "../types.ts";
import { Turn, isSubscribed, peerAudience } from "./access.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";

const peersOfDeactivated: DirHandler<"peersOfDeactivated"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId);
  // The caller may be the user who just deactivated themselves (DELETE /users/me).
  if (!caller || !t.users.has(caller.userId)) throw errors.accessDenied();
  const gone = new Set<number>();
  for (const v of args.user_ids) {
    const u = t.users.get(v);
    if (u && !u.isActive) gone.add(v);
  }
  const events: OutEvent[] = [];
  if (!gone.size) return { events, reply: {} };
  const channels = Object.values(state.channels).sort((a, b) => a.id - b.id);
  for (const ch of channels) {
    const left = [...gone].filter((id) => isSubscribed(state, ch, id)).sort((a, b) => a - b);
    if (!left.length) continue;
    const audience = peerAudience(t, state, ch, gone);
    if (!audience.length) continue;
    events.push({
      event: { type: "subscription", op: "peer_remove", stream_ids: [ch.id], user_ids: left },
      userIds: audience,
    });
  }
  return { events, reply: {} };
};

export const deactivatedPeersDirectoryHandlers: DirHandlers<"peersOfDeactivated"> = { peersOfDeactivated };
