// /register fetch type "custom_profile_fields": the realm's fields and the
// field types this server supports.

import { realmRef } from "../../actors/index.ts";
import { FIELD_TYPES } from "../../actors/realm/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const profileFieldsArea: RegisterArea = {
  fetchTypes: ["custom_profile_fields"],
  async fetch(ctx): Promise<Obj> {
    const { fields } = await ctx.call(realmRef(ctx.realmId), "profileFieldsState", {});
    return { custom_profile_fields: fields, custom_profile_field_types: FIELD_TYPES };
  },
};
