// /register state of features this server has no store for, or serves
// from constants: each value says what this server does (an empty list
// where the feature has nothing to list).
import { channelDirectoryRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

const ROLE_ADMINISTRATOR = 200;
const ROLE_GUEST = 600;

function constantArea(fetchType: string, state: () => Obj, authOnly = true): RegisterArea {
  return {
    fetchTypes: [fetchType],
    fetch(ctx) {
      return Promise.resolve(authOnly && !ctx.caller ? {} : state());
    },
  };
}

export const serverStateAreas: RegisterArea[] = [
  // No realm domains, embedded bots, incoming webhook
  // integrations, default channel groups or onboarding steps exist here.
  constantArea("realm_domains", () => ({ realm_domains: [] })),
  constantArea("realm_embedded_bots", () => ({ realm_embedded_bots: [] })),
  constantArea("realm_incoming_webhook_bots", () => ({ realm_incoming_webhook_bots: [] })),
  constantArea("default_stream_groups", () => ({ realm_default_stream_groups: [] })),
  constantArea("onboarding_steps", () => ({ onboarding_steps: [], navigation_tour_video_url: null })),
  // Search matches every word: no stop word is ignored.
  constantArea("stop_words", () => ({ stop_words: [] })),
  // No Zoom integration, no GIPHY, Tenor (FL 442) or KLIPY (FL 486) API key.
  constantArea("video_calls", () => ({ has_zoom_token: false })),
  constantArea("giphy", () => ({ giphy_api_key: "", tenor_api_key: "", klipy_api_key: "" })),
  {
    // Self-hosted without billing: no sponsorship can be pending; only
    // those who may manage billing (administrators by default) hear so.
    fetchTypes: ["realm_billing"],
    fetch(ctx) {
      if (!ctx.caller) return Promise.resolve({});
      const billing = ctx.caller.role <= ROLE_ADMINISTRATOR ? { has_pending_sponsorship_request: false } : {};
      return Promise.resolve({ realm_billing: billing });
    },
  },
  {
    // Zulip gives guests no default channels.
    fetchTypes: ["default_streams"],
    async fetch(ctx): Promise<Obj> {
      if (!ctx.caller) return {};
      if (ctx.caller.role >= ROLE_GUEST) return { realm_default_streams: [] };
      const { ids } = await ctx.call(channelDirectoryRef(ctx.realmId), "defaultChannelIds", {});
      return { realm_default_streams: ids };
    },
  },
];
