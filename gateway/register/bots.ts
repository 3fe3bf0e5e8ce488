// /register fetch type "realm_bot": realm_bots, the bots the caller may
// administer (every bot for administrators, else their own), with API keys.

import { realmRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const botsArea: RegisterArea = {
  fetchTypes: ["realm_bot"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    const { bots } = await ctx.call(realmRef(ctx.realmId), "administeredBots", {});
    return { realm_bots: bots };
  },
};
