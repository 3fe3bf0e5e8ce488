// State of a realm's group directory and the facts that change it.
//
// SNAPSHOT NOTE: a field added to GroupDirState needs a default in
// `groupFromSnapshot`, because snapshots written before it lack it.

import { insertId, lowerBound, removeId } from "../sorted-ids.ts";
import type { ActorRef, Obj } from "../types.ts";
import { FULL_MEMBERS, GROUP_SETTING_NAMES, NOBODY, ROLE_GROUP, SYSTEM_GROUPS } from "./config.ts";

/** Zulip's group-setting value: a named group id, or an anonymous group. */
export type GroupSettingValue = number | { direct_members: number[]; direct_subgroups: number[] };

export interface GroupRecord {
  id: number;
  name: string;
  description: string;
  isSystem: boolean;
  deactivated: boolean;
  creatorId: number | null;
  /** Seconds since the epoch, or null (system groups). */
  dateCreated: number | null;
  /** Direct user members, deactivated users included (they are filtered when read). */
  members: number[];
  subgroups: number[];
  settings: Record<string, GroupSettingValue>;
}

/** What the realm told us about a user (realm -> group, never the other way). */
export interface UserRecord {
  role: number;
  isActive: boolean;
  isBot: boolean;
}

/** Group-valued settings of something outside this actor (a channel), for deactivation objections. */
export interface ExternalUse {
  type: "channel";
  channelId: number;
  settings: Record<string, GroupSettingValue>;
}

export interface GroupDirState {
  realmId: number;
  initialized: boolean;
  groups: Record<string, GroupRecord>;
  users: Record<string, UserRecord>;
  /** The realm's group-valued settings that differ from their defaults (config.ts). */
  realmSettings: Record<string, GroupSettingValue>;
  external: Record<string, ExternalUse>;
}

export type GroupFact =
  | { type: "init" }
  | { type: "userSynced"; userId: number; role: number; isActive: boolean; isBot: boolean }
  | { type: "groupCreated"; group: GroupRecord }
  | {
      type: "groupUpdated";
      groupId: number;
      name?: string;
      description?: string;
      deactivated?: boolean;
      settings?: Record<string, GroupSettingValue>;
    }
  | { type: "membersAdded" | "membersRemoved"; groupId: number; userIds: number[] }
  | { type: "subgroupsAdded" | "subgroupsRemoved"; groupId: number; subgroupIds: number[] }
  | { type: "realmSettings"; values: Record<string, GroupSettingValue> }
  | { type: "externalUse"; key: string; use: ExternalUse | null };

export function initialGroupDir(ref: ActorRef): GroupDirState {
  return { realmId: ref.realm, initialized: false, groups: {}, users: {}, realmSettings: {}, external: {} };
}

function systemGroups(): Record<string, GroupRecord> {
  const out: Record<string, GroupRecord> = {};
  const settings = Object.fromEntries(GROUP_SETTING_NAMES.map((n) => [n, NOBODY]));
  for (const g of SYSTEM_GROUPS) {
    out[String(g.id)] = {
      id: g.id,
      name: g.name,
      description: g.description,
      isSystem: true,
      deactivated: false,
      creatorId: null,
      dateCreated: null,
      members: [],
      // owners ⊂ administrators ⊂ ... ⊂ internet; nobody is nobody's subgroup.
      subgroups: g.id > 2 ? [g.id - 1] : [],
      settings: { ...settings },
    };
  }
  return out;
}

/** The system groups `role` puts a user in directly (userSynced). */
export function roleSystemGroups(role: number): Set<number> {
  const target = new Set<number>();
  const roleGroup = ROLE_GROUP[role];
  if (roleGroup !== undefined) target.add(roleGroup);
  // Every member is a full member while waiting_period_threshold is 0
  // (the default); promotion after a waiting period is not modelled.
  if (role === 400) target.add(FULL_MEMBERS);
  return target;
}

/** Whether ascending `ids` holds `id`. */
export function hasId(ids: readonly number[], id: number): boolean {
  return ids[lowerBound(ids, id)] === id;
}

function sortedUnion(a: number[], b: number[]): number[] {
  return [...new Set([...a, ...b])].sort((x, y) => x - y);
}

function without(a: number[], b: number[]): number[] {
  const drop = new Set(b);
  return a.filter((x) => !drop.has(x));
}

/** Memoised transitive membership, dropped on every applied fact (see graph.ts). */
export const closureCache = new WeakMap<GroupDirState, Map<number, Set<number>>>();

export function applyGroupFact(state: GroupDirState, raw: Obj): GroupDirState {
  const fact = raw as unknown as GroupFact;
  closureCache.delete(state);
  switch (fact.type) {
    case "init":
      state.initialized = true;
      state.groups = { ...systemGroups(), ...state.groups };
      break;
    case "userSynced": {
      state.users[String(fact.userId)] = { role: fact.role, isActive: fact.isActive, isBot: fact.isBot };
      const target = roleSystemGroups(fact.role);
      // In place and by binary search: members lists are ascending, and a
      // new user (always the largest id) must not cost a copy of the
      // organization-wide groups.
      for (const g of SYSTEM_GROUPS) {
        const rec = state.groups[String(g.id)];
        if (!rec) continue;
        if (target.has(g.id)) insertId(rec.members, fact.userId);
        else removeId(rec.members, fact.userId);
      }
      break;
    }
    case "groupCreated":
      state.groups[String(fact.group.id)] = structuredClone(fact.group);
      break;
    case "groupUpdated": {
      const g = state.groups[String(fact.groupId)];
      if (!g) break;
      if (fact.name !== undefined) g.name = fact.name;
      if (fact.description !== undefined) g.description = fact.description;
      if (fact.deactivated !== undefined) g.deactivated = fact.deactivated;
      if (fact.settings) Object.assign(g.settings, structuredClone(fact.settings));
      break;
    }
    case "membersAdded":
    case "membersRemoved": {
      const g = state.groups[String(fact.groupId)];
      if (!g) break;
      g.members =
        fact.type === "membersAdded"
          ? sortedUnion(g.members, fact.userIds)
          : without(g.members, fact.userIds);
      break;
    }
    case "subgroupsAdded":
    case "subgroupsRemoved": {
      const g = state.groups[String(fact.groupId)];
      if (!g) break;
      g.subgroups =
        fact.type === "subgroupsAdded"
          ? sortedUnion(g.subgroups, fact.subgroupIds)
          : without(g.subgroups, fact.subgroupIds);
      break;
    }
    case "realmSettings":
      Object.assign(state.realmSettings, structuredClone(fact.values));
      break;
    case "externalUse":
      if (fact.use) state.external[fact.key] = structuredClone(fact.use);
      else delete state.external[fact.key];
      break;
    default:
      break; // a fact from a newer version: ignore, never throw
  }
  return state;
}

export function groupToSnapshot(state: GroupDirState): string {
  return JSON.stringify(state);
}

export function groupFromSnapshot(data: string, ref: ActorRef): GroupDirState {
  return { ...initialGroupDir(ref), ...(JSON.parse(data) as Partial<GroupDirState>) };
}
