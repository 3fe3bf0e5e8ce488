// /register: realm_user_settings_defaults (the realm's defaults for new
// users) and realm_playgrounds (spectators get them too, as in Zulip).

import { realmRef } from "../../actors/index.ts";
import type { RegisterArea } from "./types.ts";

export const userSettingsDefaultsArea: RegisterArea = {
  fetchTypes: ["realm_user_settings_defaults"],
  async fetch(ctx) {
    if (!ctx.caller) return {};
    return await ctx.call(realmRef(ctx.realmId), "userSettingsDefaults", {});
  },
};

export const playgroundsArea: RegisterArea = {
  fetchTypes: ["realm_playgrounds"],
  async fetch(ctx) {
    return await ctx.call(realmRef(ctx.realmId), "listPlaygrounds", {});
  },
};
