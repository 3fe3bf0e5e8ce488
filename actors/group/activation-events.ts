// Group events around a user's (de)activation (Zulip 10, feature level 303).
//
// user_group add_members on reactivation:
// deactivated users are no group's members (graph.ts leaves them out), so
// when one comes back every client hears that they rejoined each group
// they are a direct member of. Their stored memberships never changed.

import type { Obj, Value } from "../types.ts";
import { GROUP_SETTING_NAMES, REALM_GROUP_SETTING_NAMES, SYSTEM_GROUP_COUNT } from "./config.ts";
import { apiValue } from "./graph.ts";
import { hasId, type GroupDirState, type GroupSettingValue } from "./state.ts";

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

/**
 * realm/update_dict and user_group/update for `userId`'s deactivation:
 * every setting held by an anonymous group that lists the user among its
 * direct members changes its API value (deactivated users are left out of
 * direct_members), so clients get the new value. Zulip 10.0 (FL 303)
 * introduced these events; later Zulip (changelog, after 10.2's OpenAPI)
 * sends them to everyone on deactivation and no longer on reactivation,
 * which this server follows. `state` is before the deactivation fact.
 */
export function deactivationSettingEvents(state: GroupDirState, userId: number): Obj[] {
  const newValue = (v: GroupSettingValue): Value | null => {
    if (typeof v === "number" || !v.direct_members.includes(userId)) return null;
    const api = apiValue(state, v) as { direct_members: number[]; direct_subgroups: number[] };
    return { ...api, direct_members: api.direct_members.filter((u) => u !== userId) };
  };
  const out: Obj[] = [];
  const realmData: Obj = {};
  for (const name of REALM_GROUP_SETTING_NAMES) {
    const v = state.realmSettings[name];
    const next = v === undefined ? null : newValue(v);
    if (next !== null) realmData[name] = next;
  }
  if (Object.keys(realmData).length)
    out.push({ type: "realm", op: "update_dict", property: "default", data: realmData });
  const ids = Object.keys(state.groups)
    .map(Number)
    .sort((a, b) => a - b);
  for (const id of ids) {
    const g = state.groups[String(id)]!;
    const data: Obj = {};
    for (const name of GROUP_SETTING_NAMES) {
      const v = g.settings[name];
      const next = v === undefined ? null : newValue(v);
      if (next !== null) data[name] = next;
    }
    if (Object.keys(data).length) out.push({ type: "user_group", op: "update", group_id: id, data });
  }
  return out;
}
