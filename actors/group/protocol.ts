// The group directory's methods (see handlers.ts): their arguments, replies
// and which a gateway may call. How to add one: docs/architecture.md,
// "Actor protocols".

import { Type } from "typebox";
import { AnyObj, SafeInt, SafeIntList, reply, trusted } from "../protocol.ts";
import type { Obj } from "../types.ts";
import type { SettingRules } from "./config.ts";
import type { ExternalUse, GroupSettingValue } from "./state.ts";

const GroupId = Type.Object({ groupId: SafeInt });

export const groupProtocol = {
  // ---- the realm's reports and the realm-wide reads (internal)
  syncUser: {
    // isActive defaults to true, isBot to false.
    args: Type.Object({
      userId: SafeInt,
      role: SafeInt,
      isActive: Type.Optional(Type.Boolean()),
      isBot: Type.Optional(Type.Boolean()),
    }),
    // On deactivation: the groups the user was a direct member of (FL 303 remove_members).
    reply: reply<{ groupIds?: number[] }>(),
  },
  expandGroups: { args: Type.Object({ groupIds: SafeIntList }), reply: reply<{ userIds: number[] }>() },
  updateRealmSettings: {
    args: Type.Object({ updates: AnyObj }),
    reply: reply<{ data: Obj }>(),
  },
  systemGroupId: { args: Type.Object({ name: Type.String() }), reply: reply<number>() },

  // ---- the permissions API (actors/permissions, internal)
  isUserInSetting: {
    args: Type.Object({
      value: trusted<GroupSettingValue>(),
      userId: SafeInt,
      allowEveryone: Type.Optional(Type.Boolean()),
    }),
    reply: reply<boolean>(),
  },
  checkValue: {
    args: Type.Object({ value: Type.Unknown(), setting: Type.String(), rules: trusted<SettingRules>() }),
    reply: reply<GroupSettingValue>(),
  },
  checkUpdate: {
    args: Type.Object({
      update: Type.Unknown(),
      current: trusted<GroupSettingValue>(),
      setting: Type.String(),
      rules: trusted<SettingRules>(),
    }),
    reply: reply<{ value: GroupSettingValue; changed: boolean }>(),
  },
  realmSetting: { args: Type.Object({ name: Type.String() }), reply: reply<GroupSettingValue>() },
  setExternalUse: {
    args: Type.Object({ key: Type.String(), use: trusted<ExternalUse | null>() }),
    reply: reply(),
  },

  // ---- the API (gateway)
  registerState: {
    args: Type.Object({ includeDeactivated: Type.Optional(Type.Boolean()) }),
    reply: reply<{ realm_user_groups?: Obj[]; realm: Obj }>(),
    external: "anonymous",
  },
  listGroups: {
    args: Type.Object({ includeDeactivated: Type.Optional(Type.Boolean()) }),
    reply: reply<{ user_groups: Obj[] }>(),
    external: "caller",
  },
  members: {
    args: Type.Object({ groupId: SafeInt, directOnly: Type.Optional(Type.Boolean()) }),
    reply: reply<{ members: number[] }>(),
    external: "caller",
  },
  isMember: {
    args: Type.Object({ groupId: SafeInt, userId: SafeInt, directOnly: Type.Optional(Type.Boolean()) }),
    reply: reply<{ is_user_group_member: boolean }>(),
    external: "caller",
  },
  subgroups: {
    args: Type.Object({ groupId: SafeInt, directOnly: Type.Optional(Type.Boolean()) }),
    reply: reply<{ subgroups: number[] }>(),
    external: "caller",
  },
  createGroup: {
    // Settings are raw JSON values: the handler checks them with Zulip's errors.
    args: Type.Object({
      name: Type.String(),
      description: Type.String(),
      members: SafeIntList,
      subgroups: Type.Optional(SafeIntList),
      settings: Type.Optional(AnyObj),
    }),
    reply: reply<{ group_id: number }>(),
    external: "caller",
  },
  updateGroup: {
    args: Type.Object({
      groupId: SafeInt,
      settings: Type.Optional(AnyObj),
      name: Type.Optional(Type.String()),
      description: Type.Optional(Type.String()),
      deactivated: Type.Optional(Type.Boolean()),
    }),
    reply: reply(),
    external: "caller",
  },
  updateMembers: {
    args: Type.Object({
      groupId: SafeInt,
      add: Type.Optional(SafeIntList),
      delete: Type.Optional(SafeIntList),
      add_subgroups: Type.Optional(SafeIntList),
      delete_subgroups: Type.Optional(SafeIntList),
    }),
    reply: reply(),
    external: "caller",
  },
  updateSubgroups: {
    args: Type.Object({
      groupId: SafeInt,
      add: Type.Optional(SafeIntList),
      delete: Type.Optional(SafeIntList),
    }),
    reply: reply(),
    external: "caller",
  },
  deactivateGroup: { args: GroupId, reply: reply(), external: "caller" },

  // ---- invitations (invites.ts)
  checkInviteGroups: { args: Type.Object({ group_ids: SafeIntList }), reply: reply(), external: "caller" },
  joinInvitedGroups: { args: Type.Object({ user_id: SafeInt, group_ids: SafeIntList }), reply: reply() },

  // ---- user group mentions (mentions.ts, internal)
  mentionGroups: {
    args: Type.Object({
      names: Type.Array(Type.String()),
      writerId: SafeInt,
      withMembers: Type.Array(Type.String()),
    }),
    reply: reply<{ groups: [string, Obj][] }>(),
  },
} as const;

export type GroupProtocol = typeof groupProtocol;
