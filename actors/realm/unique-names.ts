// Zulip 8.0 (feature level 246): with the realm's require_unique_names on,
// a new or changed full name may not match any other user's, deactivated
// users and bots included, compared after Unicode NFKC normalisation and
// case folding (Zulip's check_full_name).

import { errors } from "../errors.ts";
import { realmSetting } from "./defaults.ts";
import type { RealmState } from "./state.ts";

function fold(name: string): string {
  return name.normalize("NFKC").toLowerCase();
}

/** Throws when `name` would duplicate another user's name; `selfId` is the user renamed (null: a new user). */
export function checkUniqueName(state: RealmState, name: string, selfId: number | null): void {
  if (realmSetting(state, "require_unique_names") !== true) return;
  const wanted = fold(name);
  for (const u of Object.values(state.users)) {
    if (u.userId !== selfId && fold(u.fullName) === wanted) throw errors.uniqueNamesRequired();
  }
}
