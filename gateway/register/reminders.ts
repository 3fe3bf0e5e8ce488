// /register fetch type "reminders": the caller's undelivered message
// reminders, by delivery time (actors/user/reminders.ts).

import { userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const remindersArea: RegisterArea = {
  fetchTypes: ["reminders"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return { reminders: [] };
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "reminders", {});
  },
};
