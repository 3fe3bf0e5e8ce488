// /register fetch type "drafts": the caller's synchronized drafts, newest
// edit first (at most 1000, Zulip's MAX_DRAFTS_IN_REGISTER_RESPONSE).

import { userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const draftsArea: RegisterArea = {
  fetchTypes: ["drafts"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return { drafts: [] };
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "draftsState", {});
  },
};
