// /register: realm_user_groups (fetch type "realm_user_groups") and the
// realm's group-valued settings realm_can_*_group ("realm"), from the
// realm's group directory. Deactivated groups only with the
// include_deactivated_groups client capability.

import { groupDirectoryRef } from "../../actors/index.ts";
import type { RegisterArea } from "./types.ts";

export const userGroupsArea: RegisterArea = {
  fetchTypes: ["realm_user_groups", "realm"],
  async fetch(ctx) {
    const r = await ctx.call(groupDirectoryRef(ctx.realmId), "registerState", {
      includeDeactivated: ctx.params.client_capabilities.include_deactivated_groups === true,
    });
    // Spectators see no groups; realm settings are public to them too in Zulip.
    return ctx.caller ? { realm_user_groups: r.realm_user_groups ?? [], ...r.realm } : { ...r.realm };
  },
};
