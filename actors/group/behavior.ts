// The group kind: one directory actor per realm (see handlers.ts for why).

import type { Behavior } from "../types.ts";
import { groupHandlers } from "./handlers.ts";
import {
  applyGroupFact,
  groupFromSnapshot,
  groupToSnapshot,
  initialGroupDir,
  type GroupDirState,
} from "./state.ts";

export const groupBehavior: Behavior<GroupDirState> = {
  kind: "group",
  initial: initialGroupDir,
  apply: (state, fact) => applyGroupFact(state, fact),
  toSnapshot: groupToSnapshot,
  fromSnapshot: groupFromSnapshot,
  handlers: groupHandlers,
  // Spectators' /register reads the realm's group settings (registerState).
  external: {
    registerState: "anonymous",
    listGroups: "caller",
    members: "caller",
    isMember: "caller",
    subgroups: "caller",
    createGroup: "caller",
    updateGroup: "caller",
    updateMembers: "caller",
    updateSubgroups: "caller",
    deactivateGroup: "caller",
    checkInviteGroups: "caller",
  },
};
