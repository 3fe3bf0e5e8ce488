// Custom profile fields (Zulip's zerver/views/custom_profile_fields.py):
// parse, one realm-actor call, reply.

import { realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj } from "../../actors/types.ts";
import { defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";

function fieldId(req: RouteRequest): number {
  const raw = req.path.field_id!;
  if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : 0;
}

const FIELD_ARGS: [string, string][] = [
  ["name", "name"],
  ["hint", "hint"],
  ["field_type", "fieldType"],
  ["field_data", "fieldData"],
  ["display_in_profile_summary", "displayInProfileSummary"],
  ["required", "required"],
  ["editable_by_user", "editableByUser"],
  ["use_for_user_matching", "useForUserMatching"],
];

function fieldArgs(req: RouteRequest): Obj {
  const args: Obj = {};
  for (const [from, to] of FIELD_ARGS) {
    if (req.params[from] !== undefined) args[to] = req.params[from] as Obj[string];
  }
  return args;
}

const EDIT_PARAMS = {
  name: param(p.string()),
  hint: param(p.string()),
  field_data: param(p.json()),
  display_in_profile_summary: param(p.bool()),
  required: param(p.bool()),
  editable_by_user: param(p.bool()),
  use_for_user_matching: param(p.bool()),
};

const listFields = defineRoute({
  method: "GET",
  path: "/realm/profile_fields",
  auth: "required",
  params: {},
  async handler(req) {
    return (await req.call(realmRef(req.realmId), "getProfileFields", {})) as Obj;
  },
});

const createField = defineRoute({
  method: "POST",
  path: "/realm/profile_fields",
  auth: "required",
  params: { ...EDIT_PARAMS, field_type: param(p.int(), { required: true }) },
  async handler(req) {
    return (await req.call(realmRef(req.realmId), "createProfileField", fieldArgs(req))) as Obj;
  },
});

const updateField = defineRoute({
  method: "PATCH",
  path: "/realm/profile_fields/:field_id",
  auth: "required",
  params: EDIT_PARAMS,
  async handler(req) {
    return (await req.call(realmRef(req.realmId), "updateProfileField", {
      ...fieldArgs(req),
      fieldId: fieldId(req),
    })) as Obj;
  },
});

const deleteField = defineRoute({
  method: "DELETE",
  path: "/realm/profile_fields/:field_id",
  auth: "required",
  params: {},
  async handler(req) {
    return (await req.call(realmRef(req.realmId), "deleteProfileField", { fieldId: fieldId(req) })) as Obj;
  },
});

const reorderFields = defineRoute({
  method: "PATCH",
  path: "/realm/profile_fields",
  auth: "required",
  params: { order: param(p.json(), { required: true }) },
  async handler(req) {
    return (await req.call(realmRef(req.realmId), "reorderProfileFields", {
      order: req.params.order,
    })) as Obj;
  },
});

const updateOwnData = defineRoute({
  method: "PATCH",
  path: "/users/me/profile_data",
  auth: "required",
  params: { data: param(p.json(), { required: true }) },
  async handler(req) {
    return (await req.call(realmRef(req.realmId), "updateOwnProfileData", {
      data: req.params.data,
    })) as Obj;
  },
});

const removeOwnData = defineRoute({
  method: "DELETE",
  path: "/users/me/profile_data",
  auth: "required",
  params: { data: param(p.json(), { required: true }) },
  async handler(req) {
    return (await req.call(realmRef(req.realmId), "removeOwnProfileData", {
      data: req.params.data,
    })) as Obj;
  },
});

export const profileFieldRoutes: RouteDef[] = [
  listFields,
  createField,
  updateField,
  deleteField,
  reorderFields,
  updateOwnData,
  removeOwnData,
];
