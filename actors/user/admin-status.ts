// POST /users/{user_id}/status: an administrator (or, since feature level
// 473, an administrator's bot) sets another user's status. The realm has
// already vetted the target (adminStatusTarget); this repeats the role
// check so that no other caller reaches it.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import { statusDecision } from "./behavior.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";
import { isAdminRole } from "./validate.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "updateStatusByAdmin">;

const updateStatusByAdmin: Handlers["updateStatusByAdmin"] = (state, args, ctx, caller) => {
  if (!state.created) throw errors.noSuchUser();
  if (!caller || caller.realmId !== state.realmId || !isAdminRole(caller.role)) throw errors.mustBeAdmin();
  if (state.isBot) throw errors.noSuchUser();
  // Zulip's admin form has no `away` (that is the user's presence setting): the args have none.
  const { status_text, emoji_name, emoji_code, reaction_type } = args;
  return statusDecision(state, { status_text, emoji_name, emoji_code, reaction_type }, ctx);
};

export const adminStatusHandlers: Handlers = { updateStatusByAdmin };
