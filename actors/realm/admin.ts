// Checks and recipient lists shared by the realm actor's administrator-only
// handlers (PATCH /realm, linkifiers).

import { errors } from "../errors.ts";
import type { Caller } from "../types.ts";
import { isAdminRole } from "../user/index.ts";
import type { DirEntry, RealmState } from "./state.ts";

/** The calling administrator's directory entry, or Zulip's refusal. */
export function requireAdmin(state: RealmState, caller: Caller | null): DirEntry {
  if (!state.created) throw errors.invalidSubdomain();
  if (!caller) throw errors.accessDenied();
  const key = state.emailById[String(caller.userId)];
  const me = key === undefined ? undefined : state.users[key];
  if (!me || !isAdminRole(me.role)) throw errors.mustBeAdmin();
  return me;
}
