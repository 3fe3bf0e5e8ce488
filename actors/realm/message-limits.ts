// The realm's message editing, deletion, moving and retention settings
// (PATCH /realm): allow_message_editing, the four time limits (seconds, or
// null for none) and message_retention_days (-1 keeps messages forever;
// actors/channel/retention.ts applies it). Conversations read them through
// `messageLimits`, a leaf, when they check an edit, a move or a deletion.

import { errors } from "../errors.ts";
import type { Obj, OutEvent, Value } from "../types.ts";
import { requireAdmin } from "./admin.ts";
import { realmSetting } from "./defaults.ts";
import type { RealmHandler } from "./handler.ts";
import type { MessageLimits } from "./protocol.ts";

const ROLE_OWNER = 100;

/** The time limits: a positive number of seconds, or "unlimited" (stored and sent as null). */
export const MESSAGE_TIME_LIMIT_SETTINGS = [
  "message_content_edit_limit_seconds",
  "message_content_delete_limit_seconds",
  "move_messages_within_stream_limit_seconds",
  "move_messages_between_streams_limit_seconds",
] as const;

/** Every setting this module sets; the route passes these on as sent. */
export const MESSAGE_LIMIT_PARAMS = [
  "allow_message_editing",
  ...MESSAGE_TIME_LIMIT_SETTINGS,
  "message_retention_days",
] as const;

/** Zulip sends these two as realm update_dict (their history: they were one setting pair). */
const UPDATE_DICT_SETTINGS: ReadonlySet<string> = new Set([
  "allow_message_editing",
  "message_content_edit_limit_seconds",
]);

/** Zulip's columns are 32-bit; a larger value is a bad value, not a silent overflow. */
const MAX_SECONDS = 2 ** 31 - 1;

/** Zulip's parse_message_time_limit_setting: "unlimited" -> null, else a positive integer. */
export function parseTimeLimit(name: string, v: Value): number | null {
  if (v === "unlimited") return null;
  if (typeof v !== "number" || !Number.isInteger(v) || v <= 0 || v > MAX_SECONDS)
    throw errors.badValue(name, String(v));
  return v;
}

/** Zulip's parse_message_retention_days for the realm: "unlimited" -> -1, else a positive integer. */
export function parseRetentionDays(v: Value): number {
  if (v === "unlimited") return -1;
  if (typeof v !== "number" || !Number.isInteger(v) || v <= 0 || v > MAX_SECONDS)
    throw errors.badValue("message_retention_days", String(v));
  return v;
}

/**
 * {updates: {setting: raw value}} -> the changed settings. Administrators;
 * message_retention_days owners only (Zulip also needs a plan that allows
 * it: every organization here may). Every value is checked before anything
 * changes; each changed setting emits its own event, as Zulip's
 * do_set_realm_property does (FL 150), and only those are echoed.
 */
const updateMessageLimits: RealmHandler<"updateMessageLimits"> = (state, args, _ctx, caller) => {
  const me = requireAdmin(state, caller);
  const updates = args.updates;
  const parsed: Obj = {};
  for (const name of MESSAGE_LIMIT_PARAMS) {
    const v = updates[name];
    if (v === undefined) continue;
    if (name === "allow_message_editing") {
      if (typeof v !== "boolean") throw errors.notBoolean(name);
      parsed[name] = v;
    } else if (name === "message_retention_days") {
      if (me.role !== ROLE_OWNER) throw errors.mustBeOwner();
      parsed[name] = parseRetentionDays(v);
    } else {
      parsed[name] = parseTimeLimit(name, v);
    }
  }
  const values: Obj = {};
  for (const [name, v] of Object.entries(parsed)) if (realmSetting(state, name) !== v) values[name] = v;
  if (!Object.keys(values).length) return { reply: {} };
  const events: OutEvent[] = Object.entries(values).map(([property, value]) => {
    const event: Obj = UPDATE_DICT_SETTINGS.has(property)
      ? { type: "realm", op: "update_dict", property: "default", data: { [property]: value } }
      : { type: "realm", op: "update", property, value };
    return { event, userIds: [], everyone: true };
  });
  return { facts: [{ type: "settingsChanged", values }], events, reply: values };
};

/** Internal leaf for conversations: the settings their edit, move and delete checks apply. */
const messageLimits: RealmHandler<"messageLimits"> = (state) => {
  if (!state.created) throw errors.invalidSubdomain();
  const n = (name: string) => realmSetting(state, name) as number | null;
  const limits: MessageLimits = {
    allowEditing: realmSetting(state, "allow_message_editing") !== false,
    editSeconds: n("message_content_edit_limit_seconds"),
    deleteSeconds: n("message_content_delete_limit_seconds"),
    moveWithinSeconds: n("move_messages_within_stream_limit_seconds"),
    moveBetweenSeconds: n("move_messages_between_streams_limit_seconds"),
    retentionDays: n("message_retention_days") ?? -1,
  };
  return { reply: limits };
};

export const messageLimitHandlers = {
  updateMessageLimits,
  messageLimits,
};
