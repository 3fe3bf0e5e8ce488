// user_group add_members on reactivation (Zulip 10, feature level 303):
// deactivated users are no group's members (graph.ts leaves them out), so
// when one comes back every client hears that they rejoined each group
// they are a direct member of. Their stored memberships never changed.

import type { Obj } from "../types.ts";
import { SYSTEM_GROUP_COUNT } from "./config.ts";
import { hasId, type GroupDirState } from "./state.ts";

/**
 * The add_members events for `userId`'s reactivation, in group id order:
 * system groups from `systemAfter` (what the role gives), the others from
 * their stored members, leaving out `already` (the role change's own events).
 */
export function reactivationEvents(
  state: GroupDirState,
  userId: number,
  systemAfter: Set<number>,
  already: Set<number>,
): Obj[] {
  const out: Obj[] = [];
  const ids = Object.keys(state.groups)
    .map(Number)
    .sort((a, b) => a - b);
  for (const id of ids) {
    const member =
      id <= SYSTEM_GROUP_COUNT ? systemAfter.has(id) : hasId(state.groups[String(id)]!.members, userId);
    if (member && !already.has(id))
      out.push({ type: "user_group", op: "add_members", group_id: id, user_ids: [userId] });
  }
  return out;
}
