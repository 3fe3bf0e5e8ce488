// /register: realm_emoji (fetch type "realm_emoji"): every custom emoji of
// the realm, deactivated ones too, as GET /realm/emoji lists them
// (spectators of a web-public realm get them as well, as in Zulip).

import { emojiDirectoryRef } from "../../actors/index.ts";
import type { RegisterArea } from "./types.ts";

export const emojiArea: RegisterArea = {
  fetchTypes: ["realm_emoji"],
  async fetch(ctx) {
    return { realm_emoji: (await ctx.call(emojiDirectoryRef(ctx.realmId), "list", {})).emoji };
  },
};
