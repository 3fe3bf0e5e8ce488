// The realm directory kind: one actor for the whole deployment (realm 0,
// key "directory"), split out of the realm kind, whose storage id it keeps.

import { defineBehavior } from "../protocol.ts";
import { realmDirectoryHandlers } from "./handlers.ts";
import { realmDirectoryProtocol } from "./protocol.ts";
import {
  applyDirectoryFact,
  directoryFromSnapshot,
  directoryToSnapshot,
  initialDirectory,
  type DirectoryState,
} from "./state.ts";

export const realmDirectoryBehavior = defineBehavior<DirectoryState, typeof realmDirectoryProtocol>({
  kind: "realmDirectory",
  // Written as the realm kind's "directory" role before the split: `realm.0.directory`.
  storedAs: "realm",
  ownsKey: (key) => key === "directory",
  protocol: realmDirectoryProtocol,
  initial: initialDirectory,
  apply: applyDirectoryFact,
  toSnapshot: directoryToSnapshot,
  fromSnapshot: directoryFromSnapshot,
  handlers: realmDirectoryHandlers,
});
