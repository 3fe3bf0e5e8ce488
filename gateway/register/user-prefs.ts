// /register fetch types "alert_words" and "muted_users": the caller's own lists.

import { userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const alertWordsArea: RegisterArea = {
  fetchTypes: ["alert_words"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "alertWords", {});
  },
};

export const mutedUsersArea: RegisterArea = {
  fetchTypes: ["muted_users"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "mutedUsers", {});
  },
};
