// /register: subscriptions, unsubscribed, never_subscribed (fetch type
// "subscription") and streams ("stream"), from the channel directory.

import { channelDirectoryRef } from "../../actors/index.ts";
import type { RegisterArea } from "./types.ts";

export const channelsArea: RegisterArea = {
  fetchTypes: ["subscription", "stream"],
  async fetch(ctx) {
    if (!ctx.caller) return {};
    return await ctx.call(channelDirectoryRef(ctx.realmId), "registerState", {
      include_subscribers: ctx.params.include_subscribers,
      archived_channels: ctx.params.client_capabilities.archived_channels === true,
    });
  },
};
