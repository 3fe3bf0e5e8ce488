// /register: realm_linkifiers (fetch type "realm_linkifiers"). Clients
// without the linkifier_url_template capability get an empty list (Zulip's
// rule: they cannot read url_template); realm_filters is always empty.

import { realmRef } from "../../actors/index.ts";
import type { RegisterArea } from "./types.ts";

export const linkifiersArea: RegisterArea = {
  fetchTypes: ["realm_linkifiers", "realm_filters"],
  async fetch(ctx) {
    if (!ctx.params.client_capabilities.linkifier_url_template)
      return { realm_linkifiers: [], realm_filters: [] };
    const r = await ctx.call(realmRef(ctx.realmId), "listLinkifiers", {});
    return { realm_linkifiers: r.linkifiers, realm_filters: [] };
  },
};
