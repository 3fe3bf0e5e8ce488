// Custom profile fields (Zulip's zerver/views/custom_profile_fields.py):
// parse, one realm-actor call, reply.

import { realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { ArgsOf } from "../../actors/protocol.ts";
import type { RealmProtocol } from "../../actors/realm/index.ts";
import type { Value } from "../../actors/types.ts";
import { p, param, type RouteDef, type RouteRequest } from "../index.ts";

function fieldId(req: RouteRequest): number {
  const raw = req.path.field_id!;
  if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : 0;
}

/** The definition's parameters sent (those not sent stay undefined). */
function fieldArgs(req: RouteRequest): ArgsOf<RealmProtocol, "createProfileField"> {
  const sent = req.params;
  return {
    name: sent.name as string | undefined,
    hint: sent.hint as string | undefined,
    fieldType: sent.field_type as number | undefined,
    fieldData: sent.field_data as Value | undefined,
    displayInProfileSummary: sent.display_in_profile_summary as boolean | undefined,
    required: sent.required as boolean | undefined,
    editableByUser: sent.editable_by_user as boolean | undefined,
    useForUserMatching: sent.use_for_user_matching as boolean | undefined,
  };
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

const listFields: RouteDef = {
  method: "GET",
  path: "/realm/profile_fields",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "getProfileFields", {});
  },
};

const createField: RouteDef = {
  method: "POST",
  path: "/realm/profile_fields",
  auth: "required",
  params: { ...EDIT_PARAMS, field_type: param(p.int(), { required: true }) },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "createProfileField", fieldArgs(req));
  },
};

const updateField: RouteDef = {
  method: "PATCH",
  path: "/realm/profile_fields/:field_id",
  auth: "required",
  params: EDIT_PARAMS,
  async handler(req) {
    return await req.call(realmRef(req.realmId), "updateProfileField", {
      ...fieldArgs(req),
      fieldId: fieldId(req),
    });
  },
};

const deleteField: RouteDef = {
  method: "DELETE",
  path: "/realm/profile_fields/:field_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "deleteProfileField", { fieldId: fieldId(req) });
  },
};

const reorderFields: RouteDef = {
  method: "PATCH",
  path: "/realm/profile_fields",
  auth: "required",
  params: { order: param(p.json(), { required: true }) },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "reorderProfileFields", {
      order: req.params.order as Value,
    });
  },
};

const updateOwnData: RouteDef = {
  method: "PATCH",
  path: "/users/me/profile_data",
  auth: "required",
  params: { data: param(p.json(), { required: true }) },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "updateOwnProfileData", { data: req.params.data as Value });
  },
};

const removeOwnData: RouteDef = {
  method: "DELETE",
  path: "/users/me/profile_data",
  auth: "required",
  params: { data: param(p.json(), { required: true }) },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "removeOwnProfileData", { data: req.params.data as Value });
  },
};

export const profileFieldRoutes: RouteDef[] = [
  listFields,
  createField,
  updateField,
  deleteField,
  reorderFields,
  updateOwnData,
  removeOwnData,
];
