// /register fetch type "presence": presences, presence_last_update_id and
// server_timestamp from the realm's in-memory presence map. Slim clients
// (slim_presence, or the simplified_presence_events capability, whose
// events carry the same modern shape) get the modern format keyed by user
// id; others the legacy one keyed by email.
import { realmRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const presenceArea: RegisterArea = {
  fetchTypes: ["presence"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    const slim =
      ctx.params.slim_presence || ctx.params.client_capabilities.simplified_presence_events === true;
    const days = ctx.params.presence_history_limit_days;
    return await ctx.call(realmRef(ctx.realmId), "presenceState", {
      slimPresence: slim,
      ...(days !== null ? { historyLimitDays: days } : {}),
    });
  },
};
