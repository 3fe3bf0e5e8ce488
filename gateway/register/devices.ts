// /register fetch type "device": the caller's logged-in devices
// (Zulip 12's `devices` dictionary, keyed by device id).

import { userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const devicesArea: RegisterArea = {
  fetchTypes: ["device"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    return await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "devices", {});
  },
};
