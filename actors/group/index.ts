// The group kind's door: siblings import only from here.

import type { ActorContext } from "../types.ts";
import { groupDirectoryRef } from "./refs.ts";

export { groupBehavior } from "./behavior.ts";
export {
  GROUP_SETTINGS,
  GROUP_SETTING_NAMES,
  REALM_GROUP_SETTINGS,
  REALM_GROUP_SETTING_NAMES,
  SYSTEM_GROUPS,
  SYSTEM_GROUP_ID,
} from "./config.ts";
export type { SettingRules } from "./config.ts";
export { groupDirectoryRef } from "./refs.ts";
export type { GroupSettingValue } from "./state.ts";

/**
 * Tell the groups about a user's role or activation. The realm actor calls
 * this after every change of a user's role, is_active or creation (one-way:
 * the group directory never calls the realm). Idempotent.
 */
export async function syncGroupMember(
  ctx: ActorContext,
  realmId: number,
  user: { userId: number; role: number; isActive: boolean; isBot: boolean },
): Promise<{ groupIds?: number[] }> {
  return (await ctx.call(groupDirectoryRef(realmId), "syncUser", { ...user })) as { groupIds?: number[] };
}
