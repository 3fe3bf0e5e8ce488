// peer_remove for deactivated users (Zulip 11, feature levels 377 and 428):
// when a user (and with them their bots) is deactivated, everyone who may
// see a channel's subscriber list hears that the user left it, for every
// channel they were subscribed to, archived ones included. Subscriptions
// themselves stay (a reactivated user keeps them).
//
// The realm actor deactivates and may not call the channel directory, so
// its turn journals a hand-off that calls this with the ids it
// deactivated. Only users the roster shows inactive are announced.

import { errors } from "../errors.ts";
import type { Obj, OutEvent } from "../types.ts";
import { Turn, isSubscribed, peerEvent } from "./access.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";
import { handledAlready } from "./state.ts";

/**
 * {user_ids, key}: the users the realm just deactivated, its MEMBER_GONE
 * hand-off (actors/realm/member-handoffs.ts), so internal only. The key is
 * journaled with the events: a hand-off given again tells nothing twice.
 */
const peersOfDeactivated: DirHandler<"peersOfDeactivated"> = async (state, args, ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (handledAlready(state, args.key)) return { reply: {} };
  const t = await Turn.load(ctx, state.realmId);
  const done: Obj[] = [{ type: "handled", key: args.key }];
  const gone = new Set<number>();
  for (const v of args.user_ids) {
    const u = t.users.get(v);
    if (u && !u.isActive) gone.add(v);
  }
  const events: OutEvent[] = [];
  if (!gone.size) return { facts: done, events, reply: {} };
  const channels = Object.values(state.channels).sort((a, b) => a.id - b.id);
  for (const ch of channels) {
    const left = [...gone].filter((id) => isSubscribed(state, ch, id)).sort((a, b) => a - b);
    if (!left.length) continue;
    const peer = peerEvent(t, state, ch, gone, {
      type: "subscription",
      op: "peer_remove",
      stream_ids: [ch.id],
      user_ids: left,
    });
    if (peer) events.push(peer);
  }
  return { facts: done, events, reply: {} };
};

export const deactivatedPeersDirectoryHandlers: DirHandlers<"peersOfDeactivated"> = { peersOfDeactivated };
