// The checks of DELETE /users/{user_id}, without acting: the gateway runs
// them before the extra `actions` of a deactivation (deleting messages and
// the profile, in other actors), so that a refused request changes nothing.
// deactivateMember repeats them in its own turn; a change between the two
// (a role change, a concurrent deactivation) makes that final step fail,
// after idempotent deletions that a retry completes.

import { errors } from "../errors.ts";
import { ROLE_OWNER } from "../user/index.ts";
import { accessUser, actorOf, activeBotsOwnedBy, isLastOwner, requireCreated } from "./member-helpers.ts";
import type { RealmHandler } from "./handler.ts";

/**
 * {userId} -> {victims}: the active bots the user owns, then the user
 * (the order in which Zulip applies the actions), or the error that
 * deactivateMember would give.
 */
const planDeactivation: RealmHandler<"planDeactivation"> = (state, args, _ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  const target = accessUser(state, args, me, { forAdmin: true });
  if (target.role === ROLE_OWNER && me.role !== ROLE_OWNER) throw errors.mustBeOwner();
  if (isLastOwner(state, target)) throw errors.cannotDeactivateOnlyOwner();
  const bots = activeBotsOwnedBy(state, target).map((u) => u.userId);
  return { reply: { victims: [...bots, target.userId] } };
};

export const deactivationPlanHandlers = { planDeactivation };
