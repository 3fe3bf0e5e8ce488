// /register fetch types "update_global_notifications" and
// "update_display_settings": the caller's settings as top-level keys, for
// clients without the user_settings_object capability only (Zulip's rule;
// the others read the user_settings object).
import { LEGACY_DISPLAY_SETTINGS, LEGACY_NOTIFICATION_SETTINGS, userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

// The settings of each legacy event (actors/user/legacy-setting-events.ts),
// plus the lists of choices Zulip reports beside them.
const NOTIFICATION_SETTINGS = [...LEGACY_NOTIFICATION_SETTINGS, "available_notification_sounds"];
const DISPLAY_SETTINGS = [...LEGACY_DISPLAY_SETTINGS, "emojiset_choices"];

function legacyArea(fetchType: string, names: string[]): RegisterArea {
  return {
    fetchTypes: [fetchType],
    async fetch(ctx): Promise<Obj> {
      if (!ctx.caller || ctx.params.client_capabilities.user_settings_object) return {};
      const settings = await ctx.call(userRef(ctx.realmId, ctx.caller.userId), "userSettings", {});
      const out: Obj = {};
      for (const name of names) if (Object.hasOwn(settings, name)) out[name] = settings[name]!;
      return out;
    },
  };
}

export const legacySettingsAreas: RegisterArea[] = [
  legacyArea("update_global_notifications", NOTIFICATION_SETTINGS),
  legacyArea("update_display_settings", DISPLAY_SETTINGS),
];
