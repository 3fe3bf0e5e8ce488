// The actors door: the behaviours the runtime hosts, and the addresses the
// gateway and the CLI send to. Only cluster/, gateway/ and the CLI import
// this; actor kinds import each other's doors.

import { realmBehavior } from "./realm/index.ts";
import type { Behavior, Kind } from "./types.ts";
import { userBehavior } from "./user/index.ts";

// Behaviours are heterogeneous in their state type; the runtime treats
// state as opaque, so `any` is the honest type here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const behaviors: Partial<Record<Kind, Behavior<any>>> = {
  realm: realmBehavior,
  user: userBehavior,
};

export { directoryRef, realmRef } from "./realm/index.ts";
export { settingTypes, userRef } from "./user/index.ts";
export { FEATURE_LEVEL, MERGE_BASE, ZULIP_VERSION } from "./version.ts";
