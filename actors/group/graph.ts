// Pure reads of the group graph: transitive membership, setting values in
// their API form, and validation of new values with Zulip's error texts.
// The directory's handlers and the unit tests use these directly; other
// actors reach them through actors/permissions.

import { errors } from "../errors.ts";
import type { Obj, Value } from "../types.ts";
import { EVERYONE, INTERNET, NOBODY, OWNERS, type SettingRules } from "./config.ts";
import { closureCache, type GroupDirState, type GroupRecord, type GroupSettingValue } from "./state.ts";

export function groupById(state: GroupDirState, id: number): GroupRecord | undefined {
  return state.groups[String(id)];
}

export function isActiveUser(state: GroupDirState, userId: number): boolean {
  return state.users[String(userId)]?.isActive === true;
}

/** The groups reachable from `ids` through subgroup edges, `ids` included. Cycle-safe. */
export function recursiveSubgroups(state: GroupDirState, ids: number[]): Set<number> {
  const seen = new Set<number>();
  const stack = [...ids];
  while (stack.length) {
    const id = stack.pop()!;
    if (seen.has(id)) continue;
    const g = groupById(state, id);
    if (!g) continue;
    seen.add(id);
    for (const s of g.subgroups) if (!seen.has(s)) stack.push(s);
  }
  return seen;
}

/**
 * Active users in a group, directly or through subgroups. Memoised per
 * state object until the next applied fact, so permission checks cost a
 * set lookup after the first one.
 */
export function recursiveMembers(state: GroupDirState, groupId: number): Set<number> {
  let cache = closureCache.get(state);
  if (!cache) closureCache.set(state, (cache = new Map()));
  const hit = cache.get(groupId);
  if (hit) return hit;
  const out = new Set<number>();
  for (const id of recursiveSubgroups(state, [groupId])) {
    for (const u of groupById(state, id)!.members) if (isActiveUser(state, u)) out.add(u);
  }
  cache.set(groupId, out);
  return out;
}

export function isUserInValue(state: GroupDirState, value: GroupSettingValue, userId: number): boolean {
  if (!isActiveUser(state, userId)) return false;
  if (typeof value === "number") return recursiveMembers(state, value).has(userId);
  if (value.direct_members.includes(userId)) return true;
  return value.direct_subgroups.some((g) => recursiveMembers(state, g).has(userId));
}

/** Zulip's user_has_permission_for_group_setting: guests never hold a setting closed to role:everyone. */
export function hasPermission(
  state: GroupDirState,
  value: GroupSettingValue,
  userId: number,
  rules: { allowEveryone: boolean },
): boolean {
  if (!rules.allowEveryone && state.users[String(userId)]?.role === 600) return false;
  return isUserInValue(state, value, userId);
}

/** The API form: deactivated users left out of direct_members (FL 303), ids sorted. */
export function apiValue(state: GroupDirState, value: GroupSettingValue): GroupSettingValue {
  if (typeof value === "number") return value;
  return {
    direct_members: value.direct_members.filter((u) => isActiveUser(state, u)).sort((a, b) => a - b),
    direct_subgroups: [...value.direct_subgroups].sort((a, b) => a - b),
  };
}

export function formatGroup(state: GroupDirState, g: GroupRecord): Obj {
  const out: Obj = {
    id: g.id,
    name: g.name,
    description: g.description,
    members: g.members.filter((u) => isActiveUser(state, u)),
    direct_subgroup_ids: [...g.subgroups],
    is_system_group: g.isSystem,
    date_created: g.dateCreated,
    creator_id: g.creatorId,
    deactivated: g.deactivated,
  };
  for (const [name, v] of Object.entries(g.settings)) out[name] = apiValue(state, v) as Value;
  return out;
}

// ---- parsing and validation --------------------------------------------------

function isDict(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function checkIntList(v: unknown, name: string): number[] {
  if (!Array.isArray(v)) throw errors.notList(name);
  return v.map((x, i) => {
    if (typeof x !== "number" || !Number.isSafeInteger(x)) throw errors.notInteger(`${name}[${i}]`);
    return x;
  });
}

/**
 * Type check and canonical form (Zulip's parse_group_setting_value): an
 * object with no members and one subgroup is that subgroup's id; an empty
 * object is role:nobody. No existence checks.
 */
export function parseSettingValue(raw: unknown, name: string): GroupSettingValue {
  if (isDict(raw)) {
    if (!Object.hasOwn(raw, "direct_members")) throw errors.fieldMissing(name, "direct_members");
    if (!Object.hasOwn(raw, "direct_subgroups")) throw errors.fieldMissing(name, "direct_subgroups");
    const members = [...new Set(checkIntList(raw.direct_members, `${name}["direct_members"]`))];
    const subgroups = [...new Set(checkIntList(raw.direct_subgroups, `${name}["direct_subgroups"]`))];
    if (members.length === 0 && subgroups.length === 1) return subgroups[0]!;
    if (members.length === 0 && subgroups.length === 0) return NOBODY;
    return {
      direct_members: members.sort((a, b) => a - b),
      direct_subgroups: subgroups.sort((a, b) => a - b),
    };
  }
  if (typeof raw !== "number" || !Number.isSafeInteger(raw)) throw errors.notInteger(name);
  return raw;
}

/** Existence and per-setting rules of a parsed value (Zulip's access_user_group_api_value_for_setting). */
export function checkParsedValue(
  state: GroupDirState,
  value: GroupSettingValue,
  setting: string,
  rules: SettingRules,
): GroupSettingValue {
  if (typeof value === "number") {
    const g = groupById(state, value);
    if (!g) throw errors.invalidUserGroup();
    if (g.deactivated) throw errors.userGroupDeactivated();
    if (rules.systemGroupsOnly && !g.isSystem) throw errors.systemGroupRequired(setting);
    if (!rules.allowInternet && value === INTERNET) throw errors.settingCannotBeGroup(setting, g.name);
    if (rules.allowNobody === false && value === NOBODY) throw errors.settingCannotBeGroup(setting, g.name);
    if (!rules.allowEveryone && value === EVERYONE) throw errors.settingCannotBeGroup(setting, g.name);
    if (rules.allowOwners === false && value === OWNERS) throw errors.settingCannotBeGroup(setting, g.name);
    if (rules.allowedSystemGroups && g.isSystem && !rules.allowedSystemGroups.includes(g.name))
      throw errors.settingCannotBeGroup(setting, g.name);
    return value;
  }
  if (rules.systemGroupsOnly) throw errors.systemGroupRequired(setting);
  for (const u of value.direct_members) if (!isActiveUser(state, u)) throw errors.invalidUserId(u);
  for (const id of value.direct_subgroups) {
    const g = groupById(state, id);
    if (!g) throw errors.invalidUserGroupId(id);
    if (g.deactivated) throw errors.userGroupDeactivated();
  }
  return value;
}

export function checkSettingValue(
  state: GroupDirState,
  raw: unknown,
  setting: string,
  rules: SettingRules,
): GroupSettingValue {
  return checkParsedValue(state, parseSettingValue(raw, setting), setting, rules);
}

export function sameValue(a: GroupSettingValue, b: GroupSettingValue): boolean {
  if (typeof a === "number" || typeof b === "number") return a === b;
  const eq = (x: number[], y: number[]) => {
    const sx = new Set(x);
    const sy = new Set(y);
    return sx.size === sy.size && [...sx].every((v) => sy.has(v));
  };
  return eq(a.direct_members, b.direct_members) && eq(a.direct_subgroups, b.direct_subgroups);
}

/**
 * A {new, old} update against the current value (Zulip's
 * validate_group_setting_value_change then access_user_group_for_setting).
 * Returns null when `new` equals the current value (nothing to change).
 */
export function checkSettingUpdate(
  state: GroupDirState,
  update: unknown,
  current: GroupSettingValue,
  setting: string,
  rules: SettingRules,
): GroupSettingValue | null {
  if (!isDict(update)) throw errors.notDict(setting);
  if (!Object.hasOwn(update, "new")) throw errors.fieldMissing(setting, "new");
  for (const k of Object.keys(update)) {
    if (k !== "new" && k !== "old") throw errors.unexpectedKey(k, `${setting}[${JSON.stringify(k)}]`);
  }
  const next = parseSettingValue(update.new, `${setting}["new"]`);
  const currentApi = apiValue(state, current);
  if (update.old !== undefined && update.old !== null) {
    const old = parseSettingValue(update.old, `${setting}["old"]`);
    if (!sameValue(old, currentApi)) throw errors.expectationMismatch();
  }
  if (sameValue(currentApi, next)) return null;
  return checkParsedValue(state, next, setting, rules);
}

/** Every group id a value refers to directly. */
export function valueGroupIds(value: GroupSettingValue): number[] {
  return typeof value === "number" ? [value] : value.direct_subgroups;
}
