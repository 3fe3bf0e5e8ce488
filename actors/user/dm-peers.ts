// The users a guest shares a direct-message conversation with: with
// channel co-subscribers, whom a guest restricted by the realm's
// can_access_all_users_group may see (actors/channel-directory/user-access.ts).
// Walks only the caller's own message index.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import { msgsOf } from "./flags.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "dmPeers">;

const dmPeers: Handlers["dmPeers"] = (state, _args, _ctx, caller) => {
  if (!state.created) throw errors.noSuchUser();
  // The user themself (the gateway's reads), or the node's access hand-offs (no caller).
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId))
    throw errors.accessDenied();
  const convs = new Set<string>();
  for (const e of Object.values(msgsOf(state).entries)) if (e[0].startsWith("dm:")) convs.add(e[0]);
  const peers = new Set<number>();
  for (const conv of convs) {
    for (const part of conv.slice(3).split(",")) {
      const id = Number(part);
      if (Number.isSafeInteger(id) && id !== state.userId) peers.add(id);
    }
  }
  return { reply: { dm_peers: [...peers].sort((a, b) => a - b) } };
};

export const dmPeerHandlers: Handlers = { dmPeers };
