// The realm's defaults of personal settings for new users (Zulip's
// RealmUserDefault and PATCH /realm/user_settings_defaults): the same
// names, values and checks as PATCH /settings (actors/user/settings.ts),
// minus the settings Zulip keeps out of administrators' hands. Human users
// created afterwards start with these values; existing users keep theirs.
//
// RealmState.userDefaults holds only what differs from the server's
// defaults: absent on realms that never changed one (older snapshots too).

import { formatUserSettings, SETTINGS, checkSetting, type UserState } from "../user/index.ts";
import type { Obj } from "../types.ts";
import { errors } from "../errors.ts";
import { requireAdmin } from "./admin.ts";
import type { RealmHandler } from "./handler.ts";

/**
 * Personal settings the endpoint does not accept: the language (Zulip
 * takes it from the signup request), and the security- and
 * marketing-related settings each user decides alone.
 */
const NOT_REALM_DEFAULTS = new Set([
  "default_language",
  "enable_login_emails",
  "enable_marketing_emails",
  "allow_private_data_export",
]);

/** Settings PATCH /realm/user_settings_defaults accepts. */
export function userDefaultSettings(): string[] {
  return Object.keys(SETTINGS).filter((name) => !NOT_REALM_DEFAULTS.has(name));
}

export type UserDefaultsFact = { type: "userDefaultsChanged"; values: Obj };

export function isUserDefaultsFact(fact: { type: string }): fact is UserDefaultsFact {
  return fact.type === "userDefaultsChanged";
}

export function applyUserDefaultsFact(state: { userDefaults?: Obj }, fact: UserDefaultsFact): void {
  const out: Obj = { ...(state.userDefaults ?? {}) };
  for (const [name, value] of Object.entries(fact.values)) {
    if (!Object.hasOwn(SETTINGS, name)) continue;
    if (value === SETTINGS[name]!.default) delete out[name];
    else out[name] = value;
  }
  state.userDefaults = out;
}

/** A new user's settings where they differ from the server's defaults. */
export function newUserSettings(state: { userDefaults?: Obj }): Obj {
  return { ...(state.userDefaults ?? {}) };
}

/** The effective value of one default. */
export function userDefault(state: { userDefaults?: Obj }, name: string): Obj[string] {
  const d = state.userDefaults;
  return d && Object.hasOwn(d, name) ? d[name]! : SETTINGS[name]!.default;
}

/** The realm_user_settings_defaults object of POST /register. */
export function formatUserDefaults(state: { userDefaults?: Obj }): Obj {
  const blank = { settings: newUserSettings(state), timezone: "" } as unknown as UserState;
  const out = formatUserSettings(blank);
  delete out.timezone;
  return out;
}

/** PATCH /realm/user_settings_defaults: one event per changed setting, to every active user. */
const updateUserSettingsDefaults: RealmHandler<"updateUserSettingsDefaults"> = (
  state,
  args,
  _ctx,
  caller,
) => {
  requireAdmin(state, caller);
  const accepted = new Set(userDefaultSettings());
  const checked: Obj = {};
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined || !accepted.has(name)) continue;
    checked[name] = checkSetting(name, value);
  }
  const changed: Obj = {};
  for (const [name, value] of Object.entries(checked))
    if (userDefault(state, name) !== value) changed[name] = value;
  if (Object.keys(changed).length === 0) return { reply: {} };
  return {
    facts: [{ type: "userDefaultsChanged", values: changed }],
    events: Object.entries(changed).map(([property, value]) => ({
      event: { type: "realm_user_settings_defaults", op: "update", property, value },
      userIds: [],
      everyone: true,
    })),
    reply: {},
  };
};

/** The /register key. */
const userSettingsDefaults: RealmHandler<"userSettingsDefaults"> = (state) => {
  if (!state.created) throw errors.invalidSubdomain();
  return { reply: { realm_user_settings_defaults: formatUserDefaults(state) } };
};

export const userDefaultsHandlers = {
  updateUserSettingsDefaults,
  userSettingsDefaults,
};
