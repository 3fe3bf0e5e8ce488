// The group kind: one directory actor per realm (see handlers.ts for why).

import { defineBehavior, handlersOf } from "../protocol.ts";
import { groupHandlers } from "./handlers.ts";
import { inviteGroupHandlers } from "./invites.ts";
import { mentionGroupHandlers } from "./mentions.ts";
import { groupProtocol, type GroupProtocol } from "./protocol.ts";
import {
  applyGroupFact,
  groupFromSnapshot,
  groupToSnapshot,
  initialGroupDir,
  type GroupDirState,
} from "./state.ts";

// Spectators' /register reads the realm's group settings (registerState is "anonymous").
export const groupBehavior = defineBehavior<GroupDirState, typeof groupProtocol>({
  kind: "group",
  protocol: groupProtocol,
  initial: initialGroupDir,
  apply: (state, fact) => applyGroupFact(state, fact),
  toSnapshot: groupToSnapshot,
  fromSnapshot: groupFromSnapshot,
  handlers: handlersOf<GroupDirState, GroupProtocol>()({
    ...groupHandlers,
    ...inviteGroupHandlers,
    ...mentionGroupHandlers,
  }),
});
