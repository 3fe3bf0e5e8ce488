// /register fetch type "user_status": user id -> the non-default parts of
// that user's status; users with none are left out (as Zulip's POST /register).

import { realmRef, userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";
import { accessArgs } from "../user-access.ts";

export const userStatusArea: RegisterArea = {
  fetchTypes: ["user_status"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    const { members } = await ctx.call(realmRef(ctx.realmId), "getMembers", {
      ...(await accessArgs(ctx)),
    });
    const ids = members.filter((m) => m.is_active !== false).map((m) => m.user_id as number);
    const statuses = await Promise.all(ids.map((id) => ctx.call(userRef(ctx.realmId, id), "userStatus", {})));
    const out: Obj = {};
    ids.forEach((id, i) => {
      if (Object.keys(statuses[i]!).length) out[String(id)] = statuses[i]!;
    });
    return { user_status: out };
  },
};
