// The realm's index of users who have scheduled messages waiting
// (actors/user/scheduled-messages.ts; docs/scheduled-messages.md). Timers
// live on one node's wheel and die with it: a node that takes over a shard
// reads this index and pokes the listed users of that shard, whose actors
// then re-arm their timers and deliver what is due.
//
// Only a user's own actor marks and clears its entry, inside its turns, so
// a user's mark and clear never race. A mark is awaited before the user's
// turn that journals the first waiting message, so a waiting message always
// has its mark; a stale mark costs one poke. These handlers call nobody.

import type { RealmHandler } from "./handler.ts";

/** RealmState.scheduledUsers (absent until the first mark): user ids, ascending. */
export type ScheduledIndexFact =
  { type: "scheduledMarked"; userId: number } | { type: "scheduledCleared"; userId: number };

export function isScheduledIndexFact(fact: { type: string }): fact is ScheduledIndexFact {
  return fact.type === "scheduledMarked" || fact.type === "scheduledCleared";
}

export function applyScheduledIndexFact(
  state: { scheduledUsers?: number[] },
  fact: ScheduledIndexFact,
): void {
  const ids = (state.scheduledUsers ??= []).filter((id) => id !== fact.userId);
  if (fact.type === "scheduledMarked") {
    ids.push(fact.userId);
    ids.sort((a, b) => a - b);
  }
  state.scheduledUsers = ids;
}

/** Internal: from the user's own actor. */
const markScheduled: RealmHandler<"markScheduled"> = (state, args) => {
  const userId = args.userId;
  if (userId < 0 || state.scheduledUsers?.includes(userId)) return { reply: {} };
  return { facts: [{ type: "scheduledMarked", userId }], reply: {} };
};

/** Internal: from the user's own actor, in a turn that found nothing waiting. */
const clearScheduled: RealmHandler<"clearScheduled"> = (state, args) => {
  const userId = args.userId;
  if (!state.scheduledUsers?.includes(userId)) return { reply: {} };
  return { facts: [{ type: "scheduledCleared", userId }], reply: {} };
};

/** Internal: for the sweep of a node that took over shards. */
const scheduledUsers: RealmHandler<"scheduledUsers"> = (state) => ({
  reply: { userIds: [...(state.scheduledUsers ?? [])] },
});

export const scheduledIndexHandlers = {
  markScheduled,
  clearScheduled,
  scheduledUsers,
};
