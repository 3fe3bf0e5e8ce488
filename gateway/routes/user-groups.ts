// User groups (Zulip's zerver/views/user_groups.py) and PATCH /realm's
// group-valued settings. Parse, call the realm's group directory (or the
// realm actor for PATCH /realm), shape the reply; rules live in the actors.

import {
  GROUP_SETTING_NAMES,
  REALM_BOOL_PROPERTIES,
  REALM_CHOICE_PROPERTIES,
  REALM_GROUP_SETTING_NAMES,
  groupDirectoryRef,
  realmRef,
} from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj } from "../../actors/types.ts";
import { defineRoute, p, param, type ParamSpec, type RouteDef, type RouteRequest } from "../index.ts";
import { announcementSettingParams, checkAnnouncementSettings } from "./notification-bot.ts";
import {
  REALM_DESCRIPTION_MAX,
  REALM_INT_PROPERTIES,
  REALM_NAME_MAX,
  REALM_STRING_PROPERTIES,
} from "../../actors/realm/realm-properties.ts";
import { MESSAGE_LIMIT_PARAMS, MESSAGE_TIME_LIMIT_SETTINGS } from "../../actors/realm/message-limits.ts";

/** Zulip's URL patterns accept digits only here, so anything else matches no route. */
function pathId(req: RouteRequest, name: string): number {
  const raw = req.path[name] ?? "";
  if (!/^\d{1,15}$/.test(raw)) throw errors.noSuchRoute();
  return Number(raw);
}

/** Json[int | str] settings ("unlimited" or seconds/days); a bare word is taken as the string. */
const intOrWord = (raw: string): Obj[string] => {
  try {
    const v = JSON.parse(raw) as unknown;
    if (typeof v === "string" || typeof v === "number") return v;
  } catch {
    // not JSON: the raw word
  }
  return raw;
};

function dir(req: RouteRequest) {
  return groupDirectoryRef(req.realmId);
}

function settingParams(names: string[]): Record<string, ParamSpec> {
  return Object.fromEntries(names.map((n) => [n, param(p.json())]));
}

function sentSettings(req: RouteRequest, names: string[]): Obj {
  const out: Obj = {};
  for (const n of names) if (req.params[n] !== undefined) out[n] = req.params[n] as Obj[string];
  return out;
}

const listGroups = defineRoute({
  method: "GET",
  path: "/user_groups",
  auth: "required",
  params: { include_deactivated_groups: param(p.bool(), { default: false }) },
  async handler(req) {
    return await req.call(dir(req), "listGroups", {
      includeDeactivated: req.params.include_deactivated_groups,
    });
  },
});

const createGroup = defineRoute({
  method: "POST",
  path: "/user_groups/create",
  auth: "required",
  params: {
    name: param(p.string(), { required: true }),
    description: param(p.string(), { required: true }),
    members: param(p.intList(), { required: true }),
    subgroups: param(p.intList()),
    ...settingParams(GROUP_SETTING_NAMES),
  },
  async handler(req) {
    return await req.call(dir(req), "createGroup", {
      name: req.params.name,
      description: req.params.description,
      members: req.params.members,
      settings: sentSettings(req, GROUP_SETTING_NAMES),
      subgroups: req.params.subgroups,
    });
  },
});

const updateGroup = defineRoute({
  method: "PATCH",
  path: "/user_groups/:user_group_id",
  auth: "required",
  params: {
    name: param(p.string()),
    description: param(p.string()),
    deactivated: param(p.bool()),
    ...settingParams(GROUP_SETTING_NAMES),
  },
  async handler(req) {
    await req.call(dir(req), "updateGroup", {
      groupId: pathId(req, "user_group_id"),
      settings: sentSettings(req, GROUP_SETTING_NAMES),
      name: req.params.name,
      description: req.params.description,
      deactivated: req.params.deactivated,
    });
    return {};
  },
});

const updateMembers = defineRoute({
  method: "POST",
  path: "/user_groups/:user_group_id/members",
  auth: "required",
  params: {
    add: param(p.intList()),
    delete: param(p.intList()),
    add_subgroups: param(p.intList()),
    delete_subgroups: param(p.intList()),
  },
  async handler(req) {
    await req.call(dir(req), "updateMembers", {
      groupId: pathId(req, "user_group_id"),
      add: req.params.add,
      delete: req.params.delete,
      add_subgroups: req.params.add_subgroups,
      delete_subgroups: req.params.delete_subgroups,
    });
    return {};
  },
});

const updateSubgroups = defineRoute({
  method: "POST",
  path: "/user_groups/:user_group_id/subgroups",
  auth: "required",
  params: { add: param(p.intList()), delete: param(p.intList()) },
  async handler(req) {
    await req.call(dir(req), "updateSubgroups", {
      groupId: pathId(req, "user_group_id"),
      add: req.params.add,
      delete: req.params.delete,
    });
    return {};
  },
});

const getMembers = defineRoute({
  method: "GET",
  path: "/user_groups/:user_group_id/members",
  auth: "required",
  params: { direct_member_only: param(p.bool(), { default: false }) },
  async handler(req) {
    return await req.call(dir(req), "members", {
      groupId: pathId(req, "user_group_id"),
      directOnly: req.params.direct_member_only,
    });
  },
});

const getMembership = defineRoute({
  method: "GET",
  path: "/user_groups/:user_group_id/members/:user_id",
  auth: "required",
  params: { direct_member_only: param(p.bool(), { default: false }) },
  async handler(req) {
    return await req.call(dir(req), "isMember", {
      groupId: pathId(req, "user_group_id"),
      userId: pathId(req, "user_id"),
      directOnly: req.params.direct_member_only,
    });
  },
});

const getSubgroups = defineRoute({
  method: "GET",
  path: "/user_groups/:user_group_id/subgroups",
  auth: "required",
  params: { direct_subgroup_only: param(p.bool(), { default: false }) },
  async handler(req) {
    return await req.call(dir(req), "subgroups", {
      groupId: pathId(req, "user_group_id"),
      directOnly: req.params.direct_subgroup_only,
    });
  },
});

const deactivateGroup = defineRoute({
  method: "POST",
  path: "/user_groups/:user_group_id/deactivate",
  auth: "required",
  params: {},
  async handler(req) {
    await req.call(dir(req), "deactivateGroup", { groupId: pathId(req, "user_group_id") });
    return {};
  },
});

/** PATCH /realm, the group-valued settings; the reply carries the changed values as Zulip's does. */
const updateRealm = defineRoute({
  method: "PATCH",
  path: "/realm",
  auth: "required",
  params: {
    ...settingParams(REALM_GROUP_SETTING_NAMES),
    ...announcementSettingParams,
    ...Object.fromEntries(REALM_BOOL_PROPERTIES.map((n) => [n, param(p.bool())])),
    ...Object.fromEntries(
      Object.entries(REALM_CHOICE_PROPERTIES).map(([n, v]) => [n, param(p.oneOf(v, p.string()))]),
    ),
    ...Object.fromEntries(Object.keys(REALM_INT_PROPERTIES).map((n) => [n, param(p.int())])),
    ...Object.fromEntries(REALM_STRING_PROPERTIES.map((n) => [n, param(p.string())])),
    name: param(p.string({ maxLength: REALM_NAME_MAX })),
    description: param(p.string({ maxLength: REALM_DESCRIPTION_MAX })),
    allow_message_editing: param(p.bool()),
    ...Object.fromEntries(
      [...MESSAGE_TIME_LIMIT_SETTINGS, "message_retention_days"].map((n) => [n, param(intOrWord)]),
    ),
  },
  async handler(req) {
    // Channel-valued settings (notification-bot.ts): checked first, applied after the group ones.
    const applyAnnouncements = await checkAnnouncementSettings(req);
    // Message limits first: they check every value (and the owner-only one) before changing any.
    const limits = sentSettings(req, [...MESSAGE_LIMIT_PARAMS]);
    const limitsChanged = Object.keys(limits).length
      ? await req.call(realmRef(req.realmId), "updateMessageLimits", { updates: limits })
      : {};
    const data = await req.call(realmRef(req.realmId), "updateRealmGroupSettings", {
      updates: sentSettings(req, REALM_GROUP_SETTING_NAMES),
    });
    const props = sentSettings(req, [
      ...REALM_BOOL_PROPERTIES,
      ...Object.keys(REALM_CHOICE_PROPERTIES),
      ...Object.keys(REALM_INT_PROPERTIES),
      ...REALM_STRING_PROPERTIES,
      "name",
      "description",
    ]);
    const changed = Object.keys(props).length
      ? await req.call(realmRef(req.realmId), "updateRealmProperties", { updates: props })
      : {};
    return { ...limitsChanged, ...data, ...changed, ...(await applyAnnouncements()) };
  },
});

export const userGroupRoutes: RouteDef[] = [
  listGroups,
  createGroup,
  updateGroup,
  updateMembers,
  updateSubgroups,
  getMembers,
  getMembership,
  getSubgroups,
  deactivateGroup,
  updateRealm,
];
