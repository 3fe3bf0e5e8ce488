// /register fetch type "scheduled_messages": the caller's undelivered
// scheduled messages, by delivery time (actors/user/scheduled-messages.ts).

import { userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const scheduledMessagesArea: RegisterArea = {
  fetchTypes: ["scheduled_messages"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return { scheduled_messages: [] };
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "scheduledMessages", {});
  },
};
