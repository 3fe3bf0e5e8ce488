// /register fetch type "saved_snippets": the caller's saved snippets.

import { userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const savedSnippetsArea: RegisterArea = {
  fetchTypes: ["saved_snippets"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "savedSnippets", {});
  },
};
