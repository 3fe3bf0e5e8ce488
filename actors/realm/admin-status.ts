// POST /users/{user_id}/status: Zulip's require_realm_admin, then
// access_user_by_id(for_admin) on the target (no bots, no deactivated
// users). The status change itself is the target's user actor's.

import { errors } from "../errors.ts";
import { isAdminRole } from "../user/index.ts";
import { accessUser, actorOf } from "./member-helpers.ts";
import type { RealmHandler } from "./handler.ts";

const adminStatusTarget: RealmHandler<"adminStatusTarget"> = (state, args, _ctx, caller) => {
  if (!state.created) throw errors.invalidSubdomain();
  const me = actorOf(state, caller);
  if (!isAdminRole(me.role)) throw errors.mustBeAdmin();
  accessUser(state, { userId: args.userId }, me, { forAdmin: true });
  return { reply: {} };
};

export const adminStatusRealmHandlers = { adminStatusTarget };
