// THE module for group-setting values: every permission check in the
// system that reads a can_*_group setting goes through here.
//
// The realm's group directory actor answers each question in one call. It
// memoises transitive membership until its next change, and it has a
// single activation, so a group change is seen by the very next check on
// any node: nothing is cached on the caller's side, on purpose (a cache
// here would need cluster-wide invalidation to stay correct).

import { errors } from "../errors.ts";
import {
  SYSTEM_GROUP_ID,
  groupDirectoryRef,
  type GroupSettingValue,
  type SettingRules,
} from "../group/index.ts";
import type { ActorContext } from "../types.ts";

export type { GroupSettingValue } from "../group/index.ts";

export interface GroupSettingOpts {
  allowEveryone: boolean;
  allowInternet?: boolean;
  allowNobody?: boolean;
  systemGroupsOnly?: boolean;
  /** Zulip's allow_owners_group=False. */
  allowOwners?: boolean;
}

function rules(opts: GroupSettingOpts): SettingRules {
  const r: SettingRules = { allowEveryone: opts.allowEveryone };
  if (opts.allowInternet !== undefined) r.allowInternet = opts.allowInternet;
  if (opts.allowNobody !== undefined) r.allowNobody = opts.allowNobody;
  if (opts.systemGroupsOnly !== undefined) r.systemGroupsOnly = opts.systemGroupsOnly;
  if (opts.allowOwners !== undefined) r.allowOwners = opts.allowOwners;
  return r;
}

/**
 * Whether a user holds a group-setting value: a member of the group or one
 * of its subgroups (transitively), or a direct member of an anonymous
 * value. Deactivated users never do. With `opts.allowEveryone === false`
 * guests never do either (Zulip's user_has_permission_for_group_setting
 * for settings that cannot be role:everyone).
 */
export async function isUserInGroupSetting(
  ctx: ActorContext,
  realmId: number,
  value: GroupSettingValue,
  userId: number,
  opts?: { allowEveryone?: boolean },
): Promise<boolean> {
  const args = opts?.allowEveryone === false ? { value, userId, allowEveryone: false } : { value, userId };
  return (await ctx.call(groupDirectoryRef(realmId), "isUserInSetting", args)) === true;
}

/** The id of a system group by name ("role:everyone"...). Fixed in every realm. */
export async function systemGroupId(_ctx: ActorContext, _realmId: number, name: string): Promise<number> {
  const id = SYSTEM_GROUP_ID[name];
  if (id === undefined) throw errors.badRequest("Invalid system group name.");
  return id;
}

/**
 * Validate a client's group-setting value (a creation parameter) and
 * return its canonical form: an object with no members and one subgroup
 * becomes that id, an empty object role:nobody. Zulip's error texts.
 */
export async function checkGroupSettingValue(
  ctx: ActorContext,
  realmId: number,
  value: unknown,
  settingName: string,
  opts: GroupSettingOpts,
): Promise<GroupSettingValue> {
  return await ctx.call(groupDirectoryRef(realmId), "checkValue", {
    value,
    setting: settingName,
    rules: rules(opts),
  });
}

/**
 * Validate an update {new, old?} against the current value: `old`, when
 * given, must equal the current value (EXPECTATION_MISMATCH otherwise).
 * Returns the new canonical value, or the current one (in API form) when
 * `new` equals it.
 */
export async function checkGroupSettingUpdate(
  ctx: ActorContext,
  realmId: number,
  update: unknown,
  current: GroupSettingValue,
  settingName: string,
  opts: GroupSettingOpts,
): Promise<GroupSettingValue> {
  const r = await ctx.call(groupDirectoryRef(realmId), "checkUpdate", {
    update,
    current,
    setting: settingName,
    rules: rules(opts),
  });
  return r.value;
}

/** The current value of one of the realm's group-valued settings (e.g. "can_create_public_channel_group"). */
export async function realmGroupSetting(
  ctx: ActorContext,
  realmId: number,
  name: string,
): Promise<GroupSettingValue> {
  return await ctx.call(groupDirectoryRef(realmId), "realmSetting", { name });
}

/**
 * A channel reports which groups its settings use (null once it is
 * deleted), so deactivating a group it uses is refused with a "channel"
 * objection. Call after every change of a channel's can_*_group settings.
 */
export async function recordChannelGroupSettings(
  ctx: ActorContext,
  realmId: number,
  channelId: number,
  settings: Record<string, GroupSettingValue> | null,
): Promise<void> {
  await ctx.call(groupDirectoryRef(realmId), "setExternalUse", {
    key: `channel:${channelId}`,
    use: settings ? { type: "channel", channelId, settings } : null,
  });
}
