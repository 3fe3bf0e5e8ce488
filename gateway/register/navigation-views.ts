// /register fetch type "navigation_views" (FL 390): the caller's navigation views.

import { userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const navigationViewsArea: RegisterArea = {
  fetchTypes: ["navigation_views"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "navigationViews", {});
  },
};
