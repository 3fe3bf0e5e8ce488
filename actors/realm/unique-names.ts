// Zulip 8.0 (feature level 246): with the realm's require_unique_names on,
// a new or changed full name may not match any other user's, deactivated
// users and bots included, compared after Unicode NFKC normalisation and
// case folding (Zulip's check_full_name).

import { errors } from "../errors.ts";
import { realmSetting } from "./defaults.ts";
import type { RealmState } from "./state.ts";

/** The form names are compared in (kept per user in RealmState.userIndex.foldedNames). */
export function foldName(name: string): string {
  return name.normalize("NFKC").toLowerCase();
}

/**
 * Throws when `name` would duplicate another user's name; `selfId` is the
 * user renamed (null: a new user). Looks the name up in the index, so a
 * check costs the same in any size of organization.
 */
export function checkUniqueName(state: RealmState, name: string, selfId: number | null): void {
  if (realmSetting(state, "require_unique_names") !== true) return;
  for (const id of state.userIndex.foldedNames.get(foldName(name)) ?? [])
    if (id !== selfId) throw errors.uniqueNamesRequired();
}
