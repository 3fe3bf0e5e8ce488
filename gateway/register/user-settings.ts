// /register fetch type "user_settings": the caller's settings object.

import { userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const userSettingsArea: RegisterArea = {
  fetchTypes: ["user_settings"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    const settings = await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "userSettings", {});
    return { user_settings: settings };
  },
};
