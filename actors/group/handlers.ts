// Handlers of a realm's group directory (kind "group", key "directory").
//
// WHY ONE ACTOR PER REALM FOR ALL GROUPS: the graph's invariants (no
// subgroup cycles, unique names, "in use" objections for deactivation)
// span groups, and Zulip keeps them with row locks across groups. One
// actor turn serialises every graph change, so a cycle check and the
// change it guards are atomic without a distributed lock, and transitive
// membership is a local walk (memoised until the next change) instead of a
// chain of actor calls. Groups per realm number in the hundreds and change
// rarely, so this actor is not a hot spot; permission checks from other
// actors are one call each and see every committed change at once, on any
// node, because this actor has a single activation.
//
// Calls are one way: the realm actor tells us about users (syncUser) and
// forwards PATCH /realm group settings; channels report the group settings
// they hold (setExternalUse) and ask membership questions. This actor calls
// nobody.

import { errors } from "../errors.ts";
import { deactivationSettingEvents, reactivationEvents } from "./activation-events.ts";
import { type DecisionOf, type HandlerOf, type MethodOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj, OutEvent, Value } from "../types.ts";
import {
  GROUP_NAME_MAX,
  GROUP_SETTINGS,
  GROUP_SETTING_NAMES,
  INVALID_NAME_PREFIXES,
  REALM_GROUP_SETTINGS,
  REALM_GROUP_SETTING_NAMES,
  SYSTEM_GROUP_COUNT,
  SYSTEM_GROUP_ID,
} from "./config.ts";
import {
  apiValue,
  checkSettingUpdate,
  checkSettingValue,
  formatGroup,
  groupById,
  hasPermission,
  isActiveUser,
  isUserInValue,
  recursiveMembers,
  recursiveSubgroups,
  valueGroupIds,
} from "./graph.ts";
import {
  applyGroupFact,
  type GroupDirState,
  type GroupFact,
  type GroupRecord,
  type GroupSettingValue,
  hasId,
  roleSystemGroups,
} from "./state.ts";
import type { GroupProtocol } from "./protocol.ts";

type H<M extends MethodOf<GroupProtocol>> = HandlerOf<GroupDirState, GroupProtocol, M>;

function fact(f: GroupFact): Obj {
  return f as unknown as Obj;
}

function requireInternal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

/**
 * A scratch copy of the state with the facts decided so far applied, so a
 * multi-step request (add then remove, as Zulip's compose_views) checks
 * each step against the previous ones and commits all or nothing.
 */
class Draft {
  readonly facts: GroupFact[] = [];
  readonly events: Obj[] = [];
  state: GroupDirState;
  constructor(private readonly base: GroupDirState) {
    this.state = base;
    if (!base.initialized) this.push({ type: "init" });
  }
  /** Decide a fact: applied to a private copy at once, never to the actor's state. */
  push(f: GroupFact, event?: Obj): void {
    if (this.state === this.base) this.state = structuredClone(this.base);
    this.facts.push(f);
    applyGroupFact(this.state, fact(f));
    if (event) this.events.push(event);
  }
  decision(): DecisionOf<Record<string, never>>;
  decision<R>(reply: R): DecisionOf<R>;
  decision(reply: unknown = {}): DecisionOf<unknown> {
    // To every active user: user groups are realm-wide.
    const events: OutEvent[] = this.events.map((event) => ({ event, userIds: [], everyone: true }));
    return { facts: this.facts.map(fact), events, reply };
  }
}

export function draft(state: GroupDirState): Draft {
  return new Draft(state);
}

function realmValue(state: GroupDirState, name: string): GroupSettingValue {
  return state.realmSettings[name] ?? (REALM_GROUP_SETTINGS[name]!.default as number);
}

/**
 * Since Zulip 12 (feature level 496) bots may call the user group reads,
 * creation and membership endpoints; guests still may not.
 */
const BOTS_ALLOWED = true;

/** Zulip's require_member_or_admin. */
export function requireMember(caller: Caller | null, allowBots = false): Caller {
  if (!caller) throw errors.accessDenied();
  if (caller.role === 600) throw errors.notAllowedForGuests();
  if (caller.isBot && !allowBots) throw errors.botsNotAllowed();
  return caller;
}

function canManageAllGroups(state: GroupDirState, userId: number): boolean {
  return hasPermission(state, realmValue(state, "can_manage_all_groups"), userId, { allowEveryone: false });
}

/** Zulip's access_user_group_for_update. */
export function accessForUpdate(
  state: GroupDirState,
  groupId: number,
  userId: number,
  setting: string,
  allowDeactivated: boolean,
): GroupRecord {
  const g = groupById(state, groupId);
  if (!g) throw errors.invalidUserGroup();
  if (g.deactivated && !allowDeactivated) throw errors.userGroupDeactivated();
  if (g.isSystem) throw errors.insufficientPermission();
  if (canManageAllGroups(state, userId)) return g;
  if (hasPermission(state, g.settings.can_manage_group!, userId, GROUP_SETTINGS.can_manage_group!)) return g;
  if (
    setting !== "can_manage_group" &&
    hasPermission(state, g.settings[setting]!, userId, GROUP_SETTINGS[setting]!)
  )
    return g;
  throw errors.insufficientPermission();
}

/** Zulip's access_user_group_to_read_membership. */
function accessForRead(state: GroupDirState, groupId: number): GroupRecord {
  const g = groupById(state, groupId);
  if (!g) throw errors.invalidUserGroup();
  if (g.deactivated) throw errors.userGroupDeactivated();
  return g;
}

/** Zulip's user_ids_to_users(allow_deactivated=False). */
function checkUserIds(state: GroupDirState, ids: number[]): number[] {
  for (const id of ids) if (!isActiveUser(state, id)) throw errors.invalidUserId(id);
  return [...new Set(ids)];
}

function checkName(state: GroupDirState, name: string): string {
  if (name.trim() === "") throw errors.groupNameEmpty();
  if ([...name].length > GROUP_NAME_MAX) throw errors.groupNameTooLong(GROUP_NAME_MAX);
  for (const prefix of INVALID_NAME_PREFIXES)
    if (name.startsWith(prefix)) throw errors.groupNameBadPrefix(prefix);
  return name;
}

function nameTaken(state: GroupDirState, name: string): boolean {
  return Object.values(state.groups).some((g) => g.name === name);
}

// ---- user sync (from the realm) -------------------------------------------------

/**
 * The realm reports a user's role and activation (create, role change,
 * deactivation, reactivation). Idempotent. Emits the system groups'
 * add_members/remove_members events.
 */
const syncUser: H<"syncUser"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const { userId, role } = args;
  const isActive = args.isActive !== false;
  const isBot = args.isBot === true;
  const prev = state.users[String(userId)];
  if (state.initialized && prev && prev.role === role && prev.isActive === isActive && prev.isBot === isBot)
    return { reply: {} };
  const f: GroupFact = { type: "userSynced", userId, role, isActive, isBot };
  const events: Obj[] = [];
  const before = systemMemberships(state, userId);
  // Without a draft: the memberships after the fact follow from the role,
  // and copying the whole directory (every user) per new user made
  // creating a user cost O(organization).
  const after = state.initialized ? new Set<number>() : null;
  if (after) {
    // In group id order, as systemMemberships gives them: events go out in that order.
    const wanted = new Set(roleSystemGroups(role));
    for (let id = 1; id <= SYSTEM_GROUP_COUNT; id++)
      if (wanted.has(id) && groupById(state, id)) after.add(id);
  }
  if (after === null) {
    // The first fact of a realm: the draft initialises the system groups.
    const d = draft(state);
    d.push(f);
    for (const g of systemMemberships(d.state, userId)) {
      d.events.push({ type: "user_group", op: "add_members", group_id: g, user_ids: [userId] });
    }
    return d.decision();
  }
  for (const g of after) {
    if (!before.has(g))
      events.push({ type: "user_group", op: "add_members", group_id: g, user_ids: [userId] });
  }
  for (const g of before) {
    if (!after.has(g))
      events.push({ type: "user_group", op: "remove_members", group_id: g, user_ids: [userId] });
  }
  if (prev && !prev.isActive && isActive) {
    const added = new Set([...after].filter((g) => !before.has(g)));
    events.push(...reactivationEvents(state, userId, after, added));
  }
  const reply: { groupIds?: number[] } = {};
  if (prev?.isActive && !isActive) {
    events.push(...deactivationSettingEvents(state, userId));
    reply.groupIds = directGroupIds(state, userId, before);
  }
  // Every active user, the user included once active and left out once not.
  const audience: Omit<OutEvent, "event"> = isActive
    ? { userIds: [userId], everyone: true }
    : { userIds: [], everyone: true, except: [userId] };
  return { facts: [fact(f)], events: events.map((event) => ({ event, ...audience })), reply };
};

/** The groups `userId` is a direct member of, in id order (`system`: their system groups). */
function directGroupIds(state: GroupDirState, userId: number, system: Set<number>): number[] {
  return Object.keys(state.groups)
    .map(Number)
    .filter((id) =>
      id <= SYSTEM_GROUP_COUNT ? system.has(id) : hasId(state.groups[String(id)]!.members, userId),
    )
    .sort((a, b) => a - b);
}

function systemMemberships(state: GroupDirState, userId: number): Set<number> {
  const out = new Set<number>();
  for (let id = 1; id <= SYSTEM_GROUP_COUNT; id++) {
    const g = groupById(state, id);
    if (g && hasId(g.members, userId)) out.add(id);
  }
  return out;
}

// ---- reads --------------------------------------------------------------------

function listOf(state: GroupDirState, includeDeactivated: boolean): Obj[] {
  return Object.values(state.groups)
    .filter((g) => includeDeactivated || !g.deactivated)
    .sort((a, b) => a.id - b.id)
    .map((g) => formatGroup(state, g));
}

/** GET /user_groups. */
const listGroups: H<"listGroups"> = (state, args, _ctx, caller) => {
  requireMember(caller, BOTS_ALLOWED);
  const d = draft(state);
  return { reply: { user_groups: listOf(d.state, args.includeDeactivated === true) } };
};

/** POST /register: realm_user_groups and the realm's group-valued settings. */
const registerState: H<"registerState"> = (state, args, _ctx, caller) => {
  const d = draft(state);
  const realm: Obj = {};
  for (const name of REALM_GROUP_SETTING_NAMES)
    realm[`realm_${name}`] = apiValue(d.state, realmValue(d.state, name)) as Value;
  // A spectator (no caller) is shown the settings, never who is in which group.
  if (caller === null) return { reply: { realm } };
  return {
    reply: { realm_user_groups: listOf(d.state, args.includeDeactivated === true), realm },
  };
};

/** GET /user_groups/{id}/members. */
const members: H<"members"> = (state, args, _ctx, caller) => {
  requireMember(caller, BOTS_ALLOWED);
  const d = draft(state);
  const g = accessForRead(d.state, args.groupId);
  const ids =
    args.directOnly === true
      ? g.members.filter((u) => isActiveUser(d.state, u))
      : [...recursiveMembers(d.state, g.id)].sort((a, b) => a - b);
  return { reply: { members: ids } };
};

/** GET /user_groups/{id}/members/{user_id}. */
const isMember: H<"isMember"> = (state, args, _ctx, caller) => {
  requireMember(caller, BOTS_ALLOWED);
  const d = draft(state);
  const g = accessForRead(d.state, args.groupId);
  const userId = args.userId;
  const u = d.state.users[String(userId)];
  // Unknown ids are "No such user"; bots may be asked about since FL 458.
  if (!u) throw errors.noSuchUser();
  if (!u.isActive) throw errors.userDeactivated();
  const yes =
    args.directOnly === true ? g.members.includes(userId) : recursiveMembers(d.state, g.id).has(userId);
  return { reply: { is_user_group_member: yes } };
};

/** GET /user_groups/{id}/subgroups. */
const subgroups: H<"subgroups"> = (state, args, _ctx, caller) => {
  requireMember(caller, BOTS_ALLOWED);
  const d = draft(state);
  const g = accessForRead(d.state, args.groupId);
  let ids: number[];
  if (args.directOnly === true) ids = [...g.subgroups];
  else {
    const all = new Set<number>();
    for (const s of g.subgroups) for (const x of recursiveSubgroups(d.state, [s])) all.add(x);
    all.delete(g.id);
    ids = [...all].sort((a, b) => a - b);
  }
  return { reply: { subgroups: ids } };
};

/**
 * Leaf for the realm (PATCH /settings target_users group_ids): the active
 * members of each group, transitively. An unknown id is an error.
 */
const expandGroups: H<"expandGroups"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const d = draft(state);
  const out = new Set<number>();
  for (const id of args.groupIds) {
    if (!groupById(d.state, id)) throw errors.invalidUserGroupId(id);
    for (const u of recursiveMembers(d.state, id)) out.add(u);
  }
  return { reply: { userIds: [...out].sort((a, b) => a - b) } };
};

// ---- the permissions API (actors/permissions) ------------------------------------

/** {value, userId, allowEveryone?} -> boolean. The value is trusted (already stored). */
const isUserInSetting: H<"isUserInSetting"> = (state, args) => {
  const d = draft(state);
  const { value, userId } = args;
  const ok =
    args.allowEveryone === false
      ? hasPermission(d.state, value, userId, { allowEveryone: false })
      : isUserInValue(d.state, value, userId);
  return { reply: ok };
};

const checkValue: H<"checkValue"> = (state, args) => {
  const d = draft(state);
  return { reply: checkSettingValue(d.state, args.value, args.setting, args.rules) };
};

const checkUpdate: H<"checkUpdate"> = (state, args) => {
  const d = draft(state);
  const { current, setting } = args;
  const next = checkSettingUpdate(d.state, args.update, current, setting, args.rules);
  return { reply: { value: next ?? apiValue(d.state, current), changed: next !== null } };
};

/** A realm group-valued setting, e.g. can_create_public_channel_group. */
const realmSetting: H<"realmSetting"> = (state, args) => {
  const name = args.name;
  if (!REALM_GROUP_SETTINGS[name]) throw errors.internal();
  const d = draft(state);
  return { reply: apiValue(d.state, realmValue(d.state, name)) };
};

/** A channel reports its group-valued settings (or null when archived) for deactivation objections. */
const setExternalUse: H<"setExternalUse"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const { key, use } = args;
  const d = draft(state);
  d.push({ type: "externalUse", key, use });
  return d.decision();
};

// ---- changes ------------------------------------------------------------------

/** POST /user_groups/create (Zulip's add_user_group, checks in its order). */
const createGroup: H<"createGroup"> = async (state, args, ctx: ActorContext, caller) => {
  const me = requireMember(caller, BOTS_ALLOWED);
  const d = draft(state);
  if (!hasPermission(d.state, realmValue(d.state, "can_create_groups"), me.userId, { allowEveryone: false }))
    throw errors.insufficientPermission();
  const memberIds = checkUserIds(d.state, args.members);
  const name = checkName(d.state, args.name);
  const raw = args.settings ?? {};
  const settings: Record<string, GroupSettingValue> = {};
  for (const s of GROUP_SETTING_NAMES) {
    if (raw[s] !== undefined) settings[s] = checkSettingValue(d.state, raw[s], s, GROUP_SETTINGS[s]!);
    else {
      const def = GROUP_SETTINGS[s]!.default;
      settings[s] = def === "creator" ? { direct_members: [me.userId], direct_subgroups: [] } : def;
    }
  }
  if (nameTaken(d.state, name)) throw errors.groupNameInUse(name);
  const subIds = args.subgroups ?? [];
  for (const id of subIds) {
    const g = groupById(d.state, id);
    if (!g) throw errors.invalidUserGroupId(id);
    if (g.deactivated) throw errors.userGroupDeactivated();
  }
  const groupId = SYSTEM_GROUP_COUNT + (await ctx.nextId(`group.${d.state.realmId}`));
  const group: GroupRecord = {
    id: groupId,
    name,
    description: args.description,
    isSystem: false,
    deactivated: false,
    creatorId: me.userId,
    dateCreated: Math.floor(ctx.now() / 1000),
    members: [...memberIds].sort((a, b) => a - b),
    subgroups: [],
    settings,
  };
  d.push({ type: "groupCreated", group });
  d.events.push({ type: "user_group", op: "add", group: formatGroup(d.state, groupById(d.state, groupId)!) });
  const uniqueSubs = [...new Set(subIds)];
  if (uniqueSubs.length) {
    d.push(
      { type: "subgroupsAdded", groupId, subgroupIds: uniqueSubs },
      { type: "user_group", op: "add_subgroups", group_id: groupId, direct_subgroup_ids: uniqueSubs },
    );
  }
  return d.decision({ group_id: groupId });
};

/** PATCH /user_groups/{id} (Zulip's edit_user_group). */
const updateGroup: H<"updateGroup"> = (state, args, _ctx, caller) => {
  const me = requireMember(caller, true);
  const { name, description, deactivated } = args;
  const raw = args.settings ?? {};
  if (
    name === undefined &&
    description === undefined &&
    deactivated === undefined &&
    GROUP_SETTING_NAMES.every((s) => raw[s] === undefined)
  )
    throw errors.noNewDataSupplied();
  const d = draft(state);
  const g = accessForUpdate(d.state, args.groupId, me.userId, "can_manage_group", true);
  const id = g.id;
  if (name !== undefined && name !== g.name) {
    checkName(d.state, name);
    if (nameTaken(d.state, name)) throw errors.groupNameInUse(name);
    d.push(
      { type: "groupUpdated", groupId: id, name },
      { type: "user_group", op: "update", group_id: id, data: { name } },
    );
  }
  if (description !== undefined && description !== g.description) {
    d.push(
      { type: "groupUpdated", groupId: id, description },
      { type: "user_group", op: "update", group_id: id, data: { description } },
    );
  }
  if (deactivated === false && g.deactivated) {
    d.push({ type: "groupUpdated", groupId: id, deactivated: false });
    d.events.push({
      type: "user_group",
      op: "update",
      group_id: id,
      data: { deactivated: false },
      // For queues without include_deactivated_groups, which get an add (see queue/shape.ts).
      reactivation_group: formatGroup(d.state, groupById(d.state, id)!),
    });
  }
  for (const s of GROUP_SETTING_NAMES) {
    if (raw[s] === undefined) continue;
    const current = groupById(d.state, id)!.settings[s]!;
    const next = checkSettingUpdate(d.state, raw[s], current, s, GROUP_SETTINGS[s]!);
    if (next === null) continue;
    d.push(
      { type: "groupUpdated", groupId: id, settings: { [s]: next } },
      { type: "user_group", op: "update", group_id: id, data: { [s]: apiValue(d.state, next) as Value } },
    );
  }
  return d.decision();
};

function addMembersStep(d: Draft, groupId: number, me: number, ids: number[]): void {
  const self = ids.length === 1 && ids[0] === me;
  let g: GroupRecord;
  try {
    g = accessForUpdate(d.state, groupId, me, self ? "can_join_group" : "can_add_members_group", true);
  } catch (e) {
    if (!self) throw e;
    g = accessForUpdate(d.state, groupId, me, "can_add_members_group", true);
  }
  const users = checkUserIds(d.state, ids);
  for (const u of users) if (g.members.includes(u)) throw errors.alreadyGroupMember(u);
  d.push(
    { type: "membersAdded", groupId, userIds: users },
    { type: "user_group", op: "add_members", group_id: groupId, user_ids: users },
  );
}

function removeMembersStep(d: Draft, groupId: number, me: number, ids: number[]): void {
  const users = checkUserIds(d.state, ids);
  const self = ids.length === 1 && ids[0] === me;
  let g: GroupRecord;
  try {
    g = accessForUpdate(d.state, groupId, me, self ? "can_leave_group" : "can_remove_members_group", true);
  } catch (e) {
    if (!self) throw e;
    g = accessForUpdate(d.state, groupId, me, "can_remove_members_group", true);
  }
  for (const u of ids) if (!g.members.includes(u)) throw errors.notGroupMember(u);
  d.push(
    { type: "membersRemoved", groupId, userIds: users },
    { type: "user_group", op: "remove_members", group_id: groupId, user_ids: users },
  );
}

/** Zulip's lock_subgroups_with_respect_to_supergroup checks. */
function accessSubgroups(d: Draft, groupId: number, me: number, ids: number[], setting: string): GroupRecord {
  const g = accessForUpdate(d.state, groupId, me, setting, true);
  for (const id of ids) if (!groupById(d.state, id)) throw errors.invalidUserGroupId(id);
  for (const id of ids) if (groupById(d.state, id)!.deactivated) throw errors.userGroupDeactivated();
  return g;
}

function addSubgroupsStep(d: Draft, groupId: number, me: number, ids: number[]): void {
  const g = accessSubgroups(d, groupId, me, ids, "can_add_members_group");
  for (const id of ids) if (g.subgroups.includes(id)) throw errors.alreadySubgroup(id);
  // The check that keeps the graph acyclic: the new edges g -> ids close a
  // cycle exactly when g is reachable from one of ids (ids included).
  if (recursiveSubgroups(d.state, ids).has(groupId)) throw errors.subgroupCycle(groupId);
  const unique = [...new Set(ids)];
  d.push(
    { type: "subgroupsAdded", groupId, subgroupIds: unique },
    { type: "user_group", op: "add_subgroups", group_id: groupId, direct_subgroup_ids: unique },
  );
}

function removeSubgroupsStep(d: Draft, groupId: number, me: number, ids: number[]): void {
  const g = accessSubgroups(d, groupId, me, ids, "can_manage_group");
  for (const id of ids) if (!g.subgroups.includes(id)) throw errors.notSubgroup(id);
  const unique = [...new Set(ids)];
  d.push(
    { type: "subgroupsRemoved", groupId, subgroupIds: unique },
    { type: "user_group", op: "remove_subgroups", group_id: groupId, direct_subgroup_ids: unique },
  );
}

/** POST /user_groups/{id}/members: add, delete, add_subgroups, delete_subgroups, all or nothing. */
const updateMembers: H<"updateMembers"> = (state, args, _ctx, caller) => {
  const me = requireMember(caller, BOTS_ALLOWED).userId;
  const add = args.add ?? [];
  const del = args.delete ?? [];
  const addSub = args.add_subgroups ?? [];
  const delSub = args.delete_subgroups ?? [];
  if (!add.length && !del.length && !addSub.length && !delSub.length) throw errors.nothingToDoMembers();
  const groupId = args.groupId;
  const d = draft(state);
  if (add.length) addMembersStep(d, groupId, me, add);
  if (del.length) removeMembersStep(d, groupId, me, del);
  if (addSub.length) addSubgroupsStep(d, groupId, me, addSub);
  if (delSub.length) removeSubgroupsStep(d, groupId, me, delSub);
  return d.decision();
};

/** POST /user_groups/{id}/subgroups: add, delete. */
const updateSubgroups: H<"updateSubgroups"> = (state, args, _ctx, caller) => {
  const me = requireMember(caller, BOTS_ALLOWED).userId;
  const add = args.add ?? [];
  const del = args.delete ?? [];
  if (!add.length && !del.length) throw errors.nothingToDoSubgroups();
  const groupId = args.groupId;
  const d = draft(state);
  if (add.length) addSubgroupsStep(d, groupId, me, add);
  if (del.length) removeSubgroupsStep(d, groupId, me, del);
  return d.decision();
};

function usesGroup(value: GroupSettingValue, id: number): boolean {
  return valueGroupIds(value).includes(id);
}

/** POST /user_groups/{id}/deactivate (Zulip's access_user_group_for_deactivation). */
const deactivateGroup: H<"deactivateGroup"> = (state, args, _ctx, caller) => {
  if (!caller) throw errors.accessDenied();
  const d = draft(state);
  const g = accessForUpdate(d.state, args.groupId, caller.userId, "can_manage_group", false);
  const objections: Obj[] = [];
  const supergroups = Object.values(d.state.groups)
    .filter((s) => !s.deactivated && s.subgroups.includes(g.id))
    .map((s) => s.id)
    .sort((a, b) => a - b);
  if (supergroups.length) objections.push({ type: "subgroup", supergroup_ids: supergroups });
  for (const use of Object.values(d.state.external).sort((a, b) => a.channelId - b.channelId)) {
    const settings = Object.entries(use.settings)
      .filter(([, v]) => usesGroup(v, g.id))
      .map(([k]) => k);
    if (settings.length) objections.push({ type: "channel", channel_id: use.channelId, settings });
  }
  for (const other of Object.values(d.state.groups).sort((a, b) => a.id - b.id)) {
    if (other.deactivated) continue;
    const settings = GROUP_SETTING_NAMES.filter((s) => usesGroup(other.settings[s]!, g.id));
    if (settings.length) objections.push({ type: "user_group", group_id: other.id, settings });
  }
  const realmSettings = REALM_GROUP_SETTING_NAMES.filter((s) => usesGroup(realmValue(d.state, s), g.id));
  if (realmSettings.length) objections.push({ type: "realm", settings: realmSettings });
  if (objections.length) throw errors.cannotDeactivateGroupInUse(objections);
  d.push(
    { type: "groupUpdated", groupId: g.id, deactivated: true },
    { type: "user_group", op: "update", group_id: g.id, data: { deactivated: true } },
  );
  return d.decision();
};

/**
 * PATCH /realm's group-valued settings, forwarded by the realm actor after
 * its role checks: {updates: {setting: {new, old?}}} -> {data}, with one
 * realm update_dict event per changed setting.
 */
const updateRealmSettings: H<"updateRealmSettings"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const updates = args.updates;
  const d = draft(state);
  const data: Obj = {};
  for (const s of REALM_GROUP_SETTING_NAMES) {
    if (updates[s] === undefined) continue;
    const next = checkSettingUpdate(d.state, updates[s], realmValue(d.state, s), s, REALM_GROUP_SETTINGS[s]!);
    if (next === null) continue;
    const api = apiValue(d.state, next) as Value;
    data[s] = api;
    d.push(
      { type: "realmSettings", values: { [s]: next } },
      { type: "realm", op: "update_dict", property: "default", data: { [s]: api } },
    );
  }
  return d.decision({ data });
};

const systemGroupId: H<"systemGroupId"> = (_state, args) => {
  const id = SYSTEM_GROUP_ID[args.name];
  if (id === undefined) throw errors.badRequest("Invalid system group name.");
  return { reply: id };
};

/** The directory's handlers but those of invites.ts and mentions.ts (behavior.ts puts the table together). */
export const groupHandlers = {
  syncUser,
  listGroups,
  registerState,
  members,
  isMember,
  subgroups,
  expandGroups,
  isUserInSetting,
  checkValue,
  checkUpdate,
  realmSetting,
  setExternalUse,
  createGroup,
  updateGroup,
  updateMembers,
  updateSubgroups,
  deactivateGroup,
  updateRealmSettings,
  systemGroupId,
};
