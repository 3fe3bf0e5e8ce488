// Address of the realm kind: one organization's realm actor.

import type { ActorRef } from "../types.ts";

/** One organization's realm actor. */
export function realmRef(realmId: number): ActorRef {
  return { kind: "realm", realm: realmId, key: "realm" };
}
