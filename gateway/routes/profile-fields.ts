// Custom profile fields (Zulip's zerver/views/custom_profile_fields.py):
// parse, one realm-actor call, reply.

import { realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { ArgsOf } from "../../actors/protocol.ts";
import type { RealmProtocol } from "../../actors/realm/index.ts";
import { defineRoute, p, param, type ParamValues, type RouteDef, type RouteRequest } from "../index.ts";

function fieldId(req: RouteRequest): number {
  const raw = req.path.field_id!;
  if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : 0;
}

/** The definition's parameters sent (those not sent stay undefined). */
function fieldArgs(
  req: RouteRequest<ParamValues<typeof EDIT_PARAMS> & { field_type?: number }>,
): ArgsOf<RealmProtocol, "createProfileField"> {
  const sent = req.params;
  return {
    name: sent.name,
    hint: sent.hint,
    fieldType: sent.field_type,
    fieldData: sent.field_data,
    displayInProfileSummary: sent.display_in_profile_summary,
    required: sent.required,
    editableByUser: sent.editable_by_user,
    useForUserMatching: sent.use_for_user_matching,
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

const listFields = defineRoute({
  method: "GET",
  path: "/realm/profile_fields",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "getProfileFields", {});
  },
});

const createField = defineRoute({
  method: "POST",
  path: "/realm/profile_fields",
  auth: "required",
  params: { ...EDIT_PARAMS, field_type: param(p.int(), { required: true }) },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "createProfileField", fieldArgs(req));
  },
});

const updateField = defineRoute({
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
});

const deleteField = defineRoute({
  method: "DELETE",
  path: "/realm/profile_fields/:field_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "deleteProfileField", { fieldId: fieldId(req) });
  },
});

const reorderFields = defineRoute({
  method: "PATCH",
  path: "/realm/profile_fields",
  auth: "required",
  params: { order: param(p.json(), { required: true }) },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "reorderProfileFields", {
      order: req.params.order,
    });
  },
});

const updateOwnData = defineRoute({
  method: "PATCH",
  path: "/users/me/profile_data",
  auth: "required",
  params: { data: param(p.json(), { required: true }) },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "updateOwnProfileData", { data: req.params.data });
  },
});

const removeOwnData = defineRoute({
  method: "DELETE",
  path: "/users/me/profile_data",
  auth: "required",
  params: { data: param(p.json(), { required: true }) },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "removeOwnProfileData", { data: req.params.data });
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
