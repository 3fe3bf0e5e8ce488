// Address of the group kind's one role: the per-realm group directory.

import type { ActorRef } from "../types.ts";

/**
 * The realm's group directory: every named group of the realm, its
 * membership graph, and the realm's group-valued permission settings.
 */
export function groupDirectoryRef(realmId: number): ActorRef {
  return { kind: "group", realm: realmId, key: "directory" };
}
