// DELETE /users/{user_id} with actions.delete_profile: the account's data is
// removed, and its user object says so with Zulip's is_deleted (FL 490).
// The gateway calls this before the deactivation, for the user and each of
// their bots (the planDeactivation victims).

import type { Obj, OutEvent } from "../types.ts";
import { accessUser, actorOf, requireCreated, updateEvent } from "./member-helpers.ts";
import type { RealmHandler } from "./handler.ts";
import type { RealmFact } from "./state.ts";

const markProfileDeleted: RealmHandler<"markProfileDeleted"> = (state, args, _ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  const target = accessUser(state, args, me, { allowBots: true, allowDeactivated: true, forAdmin: true });
  if (target.isDeleted === true) return { reply: {} };
  const f: RealmFact = { type: "memberUpdated", userId: target.userId, changes: { isDeleted: true } };
  const events: OutEvent[] = [
    { event: updateEvent(target.userId, { is_deleted: true }), userIds: [], everyone: true },
  ];
  return { facts: [f as unknown as Obj], events, reply: {} };
};

export const deletedUserHandlers = { markProfileDeleted };
