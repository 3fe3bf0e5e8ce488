// Addresses of the realm kind's two roles.

import type { ActorRef } from "../types.ts";

/** One organization's realm actor. */
export function realmRef(realmId: number): ActorRef {
  return { kind: "realm", realm: realmId, key: "realm" };
}

/** The global realm directory (hosts -> realm ids). */
export function directoryRef(): ActorRef {
  return { kind: "realm", realm: 0, key: "directory" };
}
