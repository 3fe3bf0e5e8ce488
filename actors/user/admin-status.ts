// POST /users/{user_id}/status: an administrator (or, since feature level
// 473, an administrator's bot) sets another user's status. The realm has
// already vetted the target (adminStatusTarget); this repeats the role
// check so that no other caller reaches it.

import { errors } from "../errors.ts";
import type { Handler } from "../types.ts";
import { statusDecision } from "./behavior.ts";
import type { UserState } from "./state.ts";
import { isAdminRole } from "./validate.ts";

const updateStatusByAdmin: Handler<UserState> = (state, args, ctx, caller) => {
  if (!state.created) throw errors.noSuchUser();
  if (!caller || caller.realmId !== state.realmId || !isAdminRole(caller.role)) throw errors.mustBeAdmin();
  if (state.isBot) throw errors.noSuchUser();
  // Zulip's admin form has no `away` (that is the user's presence setting).
  const { away: _away, ...rest } = args;
  return statusDecision(state, rest, ctx);
};

export const adminStatusHandlers: Record<string, Handler<UserState>> = { updateStatusByAdmin };
