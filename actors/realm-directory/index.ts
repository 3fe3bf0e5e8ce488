// The realm directory kind's door: siblings import only from here.

export { realmDirectoryBehavior } from "./behavior.ts";
export { realmDirectoryRef } from "../addresses.ts";
export type { RealmDirectoryProtocol } from "./protocol.ts";
export type { DirectoryState } from "./state.ts";
