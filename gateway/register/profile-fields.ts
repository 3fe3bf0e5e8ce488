// /register fetch type "custom_profile_fields": the realm's fields and the
// field types this server supports.

import { realmRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

/** Zulip's CustomProfileField types, keyed as /register names them. */
const FIELD_TYPES: Obj = {
  SHORT_TEXT: { id: 1, name: "Text (short)" },
  LONG_TEXT: { id: 2, name: "Text (long)" },
  SELECT: { id: 3, name: "List of options" },
  DATE: { id: 4, name: "Date" },
  URL: { id: 5, name: "Link" },
  USER: { id: 6, name: "Users" },
  EXTERNAL_ACCOUNT: { id: 7, name: "External account" },
  PRONOUNS: { id: 8, name: "Pronouns" },
};

export const profileFieldsArea: RegisterArea = {
  fetchTypes: ["custom_profile_fields"],
  async fetch(ctx): Promise<Obj> {
    const { fields } = (await ctx.call(realmRef(ctx.realmId), "profileFieldsState", {})) as { fields: Obj[] };
    return { custom_profile_fields: fields, custom_profile_field_types: FIELD_TYPES };
  },
};
