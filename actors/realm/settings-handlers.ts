// PATCH /realm handlers of the realm actor. The realm's group-valued
// settings (can_create_groups, can_manage_all_groups...) are held by the
// group directory, which validates them against the group graph and emits
// the realm update_dict events; this actor checks the caller's role (its
// user directory is authoritative for roles) and forwards, keeping calls
// one-way (realm -> group).

import { errors } from "../errors.ts";
import { REALM_GROUP_SETTINGS, groupDirectoryRef } from "../group/index.ts";
import type { Handler, Obj } from "../types.ts";
import { isAdminRole } from "../user/index.ts";
import type { RealmState } from "./state.ts";

const ROLE_OWNER = 100;

/** {updates: {setting: {new, old?}}} -> the changed settings in API form (Zulip's update_realm data). */
const updateRealmGroupSettings: Handler<RealmState> = async (state, args, ctx, caller) => {
  if (!state.created) throw errors.invalidSubdomain();
  if (!caller) throw errors.accessDenied();
  const key = state.emailById[String(caller.userId)];
  const me = key === undefined ? undefined : state.users[key];
  if (!me || !isAdminRole(me.role)) throw errors.mustBeAdmin();
  const updates = (args.updates ?? {}) as Obj;
  for (const name of Object.keys(updates)) {
    if (!REALM_GROUP_SETTINGS[name]) throw errors.internal();
    if (REALM_GROUP_SETTINGS[name].ownerOnly && me.role !== ROLE_OWNER) throw errors.mustBeOwner();
  }
  const r = (await ctx.call(groupDirectoryRef(state.realmId), "updateRealmSettings", { updates })) as {
    data: Obj;
  };
  return { reply: r.data };
};

export const realmSettingsHandlers: Record<string, Handler<RealmState>> = { updateRealmGroupSettings };
