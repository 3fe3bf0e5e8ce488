// PATCH /realm handlers of the realm actor. The realm's group-valued
// settings (can_create_groups, can_manage_all_groups...) are held by the
// group directory, which validates them against the group graph and emits
// the realm update_dict events; this actor checks the caller's role (its
// user directory is authoritative for roles) and forwards, keeping calls
// one-way (realm -> group).

import { errors } from "../errors.ts";
import { REALM_GROUP_SETTINGS, groupDirectoryRef } from "../group/index.ts";
import type { Obj } from "../types.ts";
import {
  ANNOUNCEMENT_STREAM_SETTINGS,
  REALM_BOOL_PROPERTIES,
  REALM_CHOICE_PROPERTIES,
  realmSetting,
} from "./defaults.ts";
import { requireAdmin } from "./admin.ts";
import {
  OWNER_ONLY_PROPERTIES,
  REALM_INT_PROPERTIES,
  REALM_STRING_PROPERTIES,
  checkRealmProperty,
} from "./realm-properties.ts";
import type { RealmHandler } from "./handler.ts";
import { renderDescription } from "./realm-handlers.ts";
import {
  NOTIFICATION_BOT_ID,
  WELCOME_BOT_ENTRY,
  formatNotificationBot,
  formatSystemBot,
} from "./system-bot.ts";

const ROLE_OWNER = 100;

/** {updates: {setting: {new, old?}}} -> the changed settings in API form (Zulip's update_realm data). */
const updateRealmGroupSettings: RealmHandler<"updateRealmGroupSettings"> = async (
  state,
  args,
  ctx,
  caller,
) => {
  const me = requireAdmin(state, caller);
  const updates = args.updates;
  for (const name of Object.keys(updates)) {
    if (!REALM_GROUP_SETTINGS[name]) throw errors.internal();
    if (REALM_GROUP_SETTINGS[name].ownerOnly && me.role !== ROLE_OWNER) throw errors.mustBeOwner();
  }
  const r = await ctx.call(groupDirectoryRef(state.realmId), "updateRealmSettings", { updates });
  return { reply: r.data };
};

/**
 * PATCH /realm's channel-valued settings (Zulip's update_realm blocks for
 * new_stream_announcements_stream_id and its two siblings): {updates:
 * {setting: channel id}}. The gateway has already checked that each id >= 0
 * names a live channel (this actor never calls the channel directory, which
 * calls it). As in Zulip, a setting is (re)applied when it is unset or
 * differs, a negative id disables it, and each applied one emits realm
 * update {property, value} to every active user and is echoed in the reply.
 */
const updateAnnouncementStreams: RealmHandler<"updateAnnouncementStreams"> = (state, args, _ctx, caller) => {
  requireAdmin(state, caller);
  const updates = args.updates;
  const data: Obj = {};
  const values: Obj = {};
  for (const name of ANNOUNCEMENT_STREAM_SETTINGS) {
    const v = updates[name];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isInteger(v)) throw errors.notInteger(name);
    const current = realmSetting(state, name) as number;
    if (current >= 0 && current === v) continue;
    values[name] = v < 0 ? -1 : v;
    data[name] = v;
  }
  if (!Object.keys(data).length) return { reply: {} };
  return {
    facts: [{ type: "settingsChanged", values }],
    events: Object.entries(data).map(([property, value]) => ({
      event: { type: "realm", op: "update", property, value },
      userIds: [],
      everyone: true,
    })),
    reply: data,
  };
};

/**
 * PATCH /realm's boolean, choice, integer and string settings: {updates:
 * {setting: value}}, administrators only (some owners only). As Zulip's do_set_realm_property, a setting whose value does not
 * change is left out; each changed one emits realm update {property, value}
 * to every active user and is echoed in the reply.
 */
const updateRealmProperties: RealmHandler<"updateRealmProperties"> = (state, args, _ctx, caller) => {
  const me = requireAdmin(state, caller);
  const updates = args.updates;
  if (me.role !== ROLE_OWNER && Object.keys(updates).some((n) => OWNER_ONLY_PROPERTIES.has(n)))
    throw errors.mustBeOwner();
  const values: Obj = {};
  for (const name of [...Object.keys(REALM_INT_PROPERTIES), ...REALM_STRING_PROPERTIES]) {
    const v = updates[name];
    if (v === undefined) continue;
    checkRealmProperty(name, v);
    if (realmSetting(state, name) !== v) values[name] = v;
  }
  for (const name of REALM_BOOL_PROPERTIES) {
    const v = updates[name];
    if (v === undefined) continue;
    if (typeof v !== "boolean") throw errors.notBoolean(name);
    if (realmSetting(state, name) !== v) values[name] = v;
  }
  for (const [name, choices] of Object.entries(REALM_CHOICE_PROPERTIES)) {
    const v = updates[name];
    if (v === undefined) continue;
    if (typeof v !== "string" || !choices.includes(v)) throw errors.invalid(name);
    if (realmSetting(state, name) !== v) values[name] = v;
  }
  // The name and description are the realm's own fields, not settings.
  const identity: Obj = {};
  for (const name of ["name", "description"] as const) {
    const v = updates[name];
    if (v === undefined) continue;
    if (typeof v !== "string") throw errors.invalid(name);
    if (state[name] !== v) identity[name] = v;
  }
  const changed = { ...values, ...identity };
  if (!Object.keys(changed).length) return { reply: {} };
  const facts: Obj[] = [];
  if (Object.keys(values).length) facts.push({ type: "settingsChanged", values });
  if (Object.keys(identity).length) facts.push({ type: "identityChanged", ...identity });
  return {
    facts,
    events: Object.entries(changed).map(([property, value]) => ({
      // FL 464: a description change is an update_dict carrying its rendering too.
      event: realmUpdateEvent(property, value),
      userIds: [],
      everyone: true,
    })),
    reply: changed,
  };
};

/** Zulip's realm event for one changed property; FL 464: the description as update_dict with its rendering. */
function realmUpdateEvent(property: string, value: Obj[string]): Obj {
  if (property !== "description") return { type: "realm", op: "update", property, value };
  const data: Obj = { description: value, rendered_description: renderDescription(String(value)) };
  return { type: "realm", op: "update_dict", property: "default", data };
}

/** What the gateway needs to post an automated message: the bot and the announcements channel. */
const notificationContext: RealmHandler<"notificationContext"> = (state) => {
  if (!state.created) throw errors.invalidSubdomain();
  return {
    reply: {
      botId: NOTIFICATION_BOT_ID,
      newStreamAnnouncementsStreamId: realmSetting(state, "new_stream_announcements_stream_id"),
      moderationRequestChannelId: realmSetting(state, "moderation_request_channel_id"),
    },
  };
};

/** POST /register's cross_realm_bots: the realm's system bots (system-bot.ts). */
const crossRealmBots: RealmHandler<"crossRealmBots"> = (state, _args, _ctx, caller) => {
  if (!state.created) throw errors.invalidSubdomain();
  const spectator = caller === null;
  return {
    reply: {
      bots: [formatNotificationBot(state, spectator), formatSystemBot(state, WELCOME_BOT_ENTRY, spectator)],
    },
  };
};

export const realmSettingsHandlers = {
  updateRealmGroupSettings,
  updateRealmProperties,
  updateAnnouncementStreams,
  notificationContext,
  crossRealmBots,
};
