// Custom profile fields on the realm actor (Zulip's
// zerver/views/custom_profile_fields.py, zerver/actions/custom_profile_fields.py,
// zerver/lib/users.py validate_user_custom_profile_data). The definitions
// and every user's values live beside the user directory, so a user object
// with profile_data is still one turn.
//
// Markdown-capable values (short and long text) are rendered when they are
// set, in the handler, and the HTML travels in the fact: `apply` stays
// deterministic whatever the renderer's version does later.

import { withholdFromGuests } from "./user-access.ts";
import { renderMarkdown } from "../markdown/index.ts";
import { errors } from "../errors.ts";
import type { Caller, Obj, OutEvent, Value } from "../types.ts";
import { isAdminRole } from "../user/index.ts";
import { actorOf, memberById, requireCreated, updateEvent } from "./member-helpers.ts";
import type { RealmHandler } from "./handler.ts";
import type { DirEntry, ProfileField, ProfileValue, RealmFact, RealmState } from "./state.ts";

/** Zulip's CustomProfileField types. */
export const FIELD_TYPES = {
  SHORT_TEXT: { id: 1, name: "Text (short)" },
  LONG_TEXT: { id: 2, name: "Text (long)" },
  SELECT: { id: 3, name: "List of options" },
  DATE: { id: 4, name: "Date" },
  URL: { id: 5, name: "Link" },
  USER: { id: 6, name: "Users" },
  EXTERNAL_ACCOUNT: { id: 7, name: "External account" },
  PRONOUNS: { id: 8, name: "Pronouns" },
} as const;
const T = {
  short: 1,
  long: 2,
  select: 3,
  date: 4,
  url: 5,
  user: 6,
  external: 7,
  pronouns: 8,
} as const;
const NAME_MAX = 40;
const HINT_MAX = 80;
const SUMMARY_MAX = 2;
/** Zulip's DEFAULT_EXTERNAL_ACCOUNTS (10.x): subtype -> the field's name. */
const DEFAULT_EXTERNAL_ACCOUNTS: Record<string, string> = {
  twitter: "Twitter username",
  github: "GitHub username",
};

/** Values render as messages do, so their links pass the same href check. */
function render(source: string): string {
  return renderMarkdown(source);
}

function fact(f: RealmFact): Obj {
  return f as unknown as Obj;
}

function bad(msg: string): never {
  throw errors.badRequest(msg);
}

function isDict(v: unknown): v is Record<string, Value> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function requireAdmin(state: RealmState, caller: Caller | null): DirEntry {
  const me = actorOf(state, caller);
  if (!isAdminRole(me.role)) throw errors.mustBeAdmin();
  return me;
}

export function formatField(f: ProfileField): Obj {
  const out: Obj = {
    id: f.id,
    name: f.name,
    type: f.type,
    hint: f.hint,
    field_data: f.fieldData,
    order: f.order,
    required: f.required,
    editable_by_user: f.editableByUser,
    use_for_user_matching: f.useForUserMatching === true,
  };
  // Zulip sets the key only when true.
  if (f.displayInProfileSummary) out.display_in_profile_summary = true;
  return out;
}

function sortedFields(fields: ProfileField[]): ProfileField[] {
  return [...fields].sort((a, b) => a.order - b.order || a.id - b.id);
}

function fieldsEvent(state: RealmState, fields: ProfileField[]): OutEvent {
  return {
    event: { type: "custom_profile_fields", fields: sortedFields(fields).map(formatField) },
    userIds: [],
    everyone: true,
  };
}

// ---- field definitions ---------------------------------------------------------

/** Zulip's check_required_string. */
function requiredString(name: string, v: unknown): string {
  if (typeof v !== "string") bad(`${name} is not a string`);
  if (v.trim() === "") bad(`${name} cannot be blank.`);
  return v;
}

/** Zulip's check_dict_only keys check. */
function onlyKeys(obj: Record<string, Value>, allowed: string[]): void {
  const extra = Object.keys(obj).filter((k) => !allowed.includes(k));
  if (extra.length) bad(`Unexpected arguments: ${extra.join(", ")}`);
}

/** Zulip's check_url (Django's URLValidator schemes). */
function isUrl(s: string): boolean {
  if (/\s/.test(s) || s.length > 2048) return false;
  try {
    const u = new URL(s);
    return ["http:", "https:", "ftp:", "ftps:"].includes(u.protocol) && u.hostname !== "";
  } catch {
    return false;
  }
}

function checkSelectData(data: Record<string, Value>): void {
  if (Object.keys(data).length < 1) bad("Field must have at least one choice.");
  const texts = new Set<string>();
  for (const [key, value] of Object.entries(data)) {
    if (key.trim() === "") bad("'value' cannot be blank.");
    if (!isDict(value)) bad("field_data is not a dict");
    for (const k of ["text", "order"]) {
      if (!Object.hasOwn(value, k)) bad(`${k} key is missing from field_data`);
      requiredString(`field_data["${k}"]`, value[k]);
    }
    onlyKeys(value, ["text", "order"]);
    texts.add(value.text as string);
  }
  if (texts.size !== Object.keys(data).length) bad("Field must not have duplicate choices.");
}

function checkExternalData(data: Record<string, Value>): void {
  if (!Object.hasOwn(data, "subtype")) bad("subtype key is missing from field_data");
  requiredString('field_data["subtype"]', data.subtype);
  if (Object.hasOwn(data, "url_pattern")) {
    const pattern = data.url_pattern;
    if (typeof pattern !== "string") bad('field_data["url_pattern"] is not a string');
    if (pattern.split("%(username)s").length !== 2) bad("URL pattern must contain '%(username)s'.");
    if (!isUrl(pattern.replace("%(username)s", "username"))) bad('field_data["url_pattern"] is not a URL');
  }
  onlyKeys(data, ["subtype", "url_pattern"]);
  const subtype = data.subtype as string;
  if (!Object.hasOwn(DEFAULT_EXTERNAL_ACCOUNTS, subtype)) {
    if (subtype !== "custom") bad("Invalid external account type");
    if (!Object.hasOwn(data, "url_pattern")) bad("Custom external account must define URL pattern");
  }
}

/** Zulip's check_profile_field_data (the parameter's own type). */
function checkFieldDataShape(v: Value | undefined): Record<string, Value> | undefined {
  if (v === undefined) return undefined;
  if (!isDict(v)) bad("field_data is not a dict");
  for (const value of Object.values(v)) {
    const ok =
      typeof value === "string" ||
      (isDict(value) && Object.values(value).every((x) => typeof x === "string"));
    if (!ok) bad("field_data contains a value that is not an allowed_type");
  }
  return v;
}

function isDefaultExternal(type: number, data: Record<string, Value>): boolean {
  return type === T.external && data.subtype !== "custom";
}

/** Zulip's validate_custom_profile_field, in its order. */
function validateField(
  name: string,
  hint: string,
  type: number,
  data: Record<string, Value>,
  summary: boolean,
): void {
  if (type === T.select) checkSelectData(data);
  else if (type === T.external) checkExternalData(data);
  if (!isDefaultExternal(type, data)) {
    if (name.trim() === "") bad("Label cannot be blank.");
    if ([...hint].length > HINT_MAX) throw errors.tooLong("hint", HINT_MAX);
    if ([...name].length > NAME_MAX) throw errors.tooLong("name", NAME_MAX);
  }
  if (!Object.values(T).includes(type as 1)) bad("Invalid field type.");
  // Paragraph (long text) fields may be shown in the summary since FL 476.
  if (summary && type === T.user) {
    bad("Field type not supported for display in profile summary.");
  }
}

function summaryLimitReached(state: RealmState, exceptId?: number): boolean {
  return (
    state.profileFields.filter((f) => f.displayInProfileSummary && f.id !== exceptId).length >= SUMMARY_MAX
  );
}

function checkLabelFree(state: RealmState, name: string, exceptId?: number): void {
  if (state.profileFields.some((f) => f.name === name && f.id !== exceptId)) {
    bad("A field with that label already exists.");
  }
}

function findField(state: RealmState, fieldId: number): ProfileField {
  const f = state.profileFields.find((x) => x.id === fieldId);
  if (!f) bad(`Field id ${fieldId} not found.`);
  return f;
}

/** GET /realm/profile_fields. */
const getProfileFields: RealmHandler<"getProfileFields"> = (state, _args, _ctx, caller) => {
  requireCreated(state);
  actorOf(state, caller);
  return { reply: { custom_fields: sortedFields(state.profileFields).map(formatField) } };
};

/** /register custom_profile_fields (spectators see them too, like Zulip). */
const profileFieldsState: RealmHandler<"profileFieldsState"> = (state) => {
  requireCreated(state);
  return { reply: { fields: sortedFields(state.profileFields).map(formatField) } };
};

/** POST /realm/profile_fields. */
const createProfileField: RealmHandler<"createProfileField"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  requireAdmin(state, caller);
  let name = (args.name ?? "").trim();
  let hint = args.hint ?? "";
  const type = args.fieldType ?? 0;
  const data = checkFieldDataShape(args.fieldData) ?? {};
  const summary = args.displayInProfileSummary ?? false;
  if (summary && summaryLimitReached(state)) {
    bad("Only 2 custom profile fields can be displayed in the profile summary.");
  }
  validateField(name, hint, type, data, summary);
  let fieldData = "";
  if (isDefaultExternal(type, data)) {
    // The name and hint come from Zulip's table of known accounts.
    name = DEFAULT_EXTERNAL_ACCOUNTS[data.subtype as string]!;
    hint = "";
    fieldData = JSON.stringify({ subtype: data.subtype });
  } else if (type === T.select || type === T.external) {
    fieldData = JSON.stringify(data);
  }
  checkLabelFree(state, name);
  const id = await ctx.nextId(`profileField.${state.realmId}`);
  const field: ProfileField = {
    id,
    name,
    type,
    hint,
    fieldData,
    // Zulip gives a new field its id as its order, so it sorts last.
    order: id,
    required: args.required ?? false,
    editableByUser: args.editableByUser ?? true,
    displayInProfileSummary: summary,
    useForUserMatching: args.useForUserMatching ?? false,
  };
  const fields = [...state.profileFields, field];
  return {
    facts: [fact({ type: "profileFieldsSet", fields })],
    events: [fieldsEvent(state, fields)],
    reply: { id },
  };
};

/** PATCH /realm/profile_fields/{field_id}. */
const updateProfileField: RealmHandler<"updateProfileField"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  requireAdmin(state, caller);
  const field = findField(state, args.fieldId);
  const name = args.name?.trim();
  const hint = args.hint;
  const data = checkFieldDataShape(args.fieldData);
  const summary = args.displayInProfileSummary;
  const required = args.required;
  const editable = args.editableByUser;
  if (summary && summaryLimitReached(state, field.id)) {
    bad("Only 2 custom profile fields can be displayed in the profile summary.");
  }
  const oldData = field.fieldData === "" ? {} : (JSON.parse(field.fieldData) as Record<string, Value>);
  if (field.type === T.external && isDefaultExternal(field.type, oldData)) {
    const onlySummary =
      (name === undefined || name === field.name) &&
      (hint === undefined || hint === field.hint) &&
      (data === undefined || JSON.stringify(data) === JSON.stringify(oldData));
    if (!onlySummary) bad("Default custom field cannot be updated.");
  }
  const next: ProfileField = {
    ...field,
    name: name ?? field.name,
    hint: hint ?? field.hint,
    displayInProfileSummary: summary ?? field.displayInProfileSummary,
    required: required ?? field.required,
    editableByUser: editable ?? field.editableByUser,
    useForUserMatching: args.useForUserMatching ?? field.useForUserMatching === true,
  };
  validateField(next.name, next.hint, field.type, data ?? oldData, next.displayInProfileSummary);
  if (data !== undefined && (field.type === T.select || field.type === T.external)) {
    next.fieldData = JSON.stringify(data);
  }
  checkLabelFree(state, next.name, field.id);
  if (JSON.stringify(next) === JSON.stringify(field)) return { reply: {} };

  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  const handoffs: { subject: string; data: Obj }[] = [];
  if (field.type === T.select && data !== undefined) {
    // Values naming a choice that no longer exists are removed (Zulip's
    // try_update_realm_custom_profile_field).
    for (const u of Object.values(state.users)) {
      const v = u.profileData?.[String(field.id)];
      if (v && !Object.hasOwn(data, v.value)) {
        facts.push(fact({ type: "profileDataSet", userId: u.userId, values: { [String(field.id)]: null } }));
        const cleared: OutEvent = {
          event: updateEvent(u.userId, { custom_profile_field: { id: field.id, value: null } }),
          userIds: [],
          everyone: true,
        };
        events.push(cleared);
        // Not to guests who cannot access the user (FL 228).
        handoffs.push(...(await withholdFromGuests(state, ctx, u, [cleared])));
      }
    }
  }
  const fields = state.profileFields.map((f) => (f.id === field.id ? next : f));
  facts.unshift(fact({ type: "profileFieldsSet", fields }));
  events.unshift(fieldsEvent(state, fields));
  return { facts, events, handoffs, reply: {} };
};

/** DELETE /realm/profile_fields/{field_id}. */
const deleteProfileField: RealmHandler<"deleteProfileField"> = (state, args, _ctx, caller) => {
  requireCreated(state);
  requireAdmin(state, caller);
  const field = findField(state, args.fieldId);
  const fields = state.profileFields.filter((f) => f.id !== field.id);
  return {
    facts: [fact({ type: "profileFieldDeleted", fieldId: field.id })],
    events: [fieldsEvent(state, fields)],
    reply: {},
  };
};

/** PATCH /realm/profile_fields: `order` lists field ids in their new order. */
const reorderProfileFields: RealmHandler<"reorderProfileFields"> = (state, args, _ctx, caller) => {
  requireCreated(state);
  requireAdmin(state, caller);
  const order = args.order;
  if (!Array.isArray(order)) throw errors.notList("order");
  const position = new Map<number, number>();
  order.forEach((id, i) => {
    if (typeof id !== "number" || !Number.isInteger(id)) throw errors.notInteger(`order[${i}]`);
    position.set(id, i);
  });
  for (const f of state.profileFields) if (!position.has(f.id)) bad("Invalid order mapping.");
  const fields = state.profileFields.map((f) => ({ ...f, order: position.get(f.id)! }));
  return {
    facts: [fact({ type: "profileFieldsSet", fields })],
    events: [fieldsEvent(state, fields)],
    reply: {},
  };
};

// ---- values -----------------------------------------------------------------------

function checkCapped(name: string, v: Value, max: number): string {
  if (typeof v !== "string") bad(`${name} is not a string`);
  if ([...v].length > max) throw errors.tooLong(name, max);
  return v;
}

/** Zulip's check_date: exactly YYYY-MM-DD, a real day. */
function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return (
    d.getUTCFullYear() === Number(m[1]) &&
    d.getUTCMonth() === Number(m[2]) - 1 &&
    d.getUTCDate() === Number(m[3])
  );
}

/** Zulip's check_valid_user_ids for USER fields. */
function checkUserIds(state: RealmState, v: Value): number[] {
  if (!Array.isArray(v)) bad("User IDs is not a list");
  v.forEach((x, i) => {
    if (typeof x !== "number" || !Number.isInteger(x)) bad(`User IDs[${i}] is not an integer`);
  });
  const ids = v as number[];
  const invalid = ids.filter((id) => !memberById(state, id));
  if (invalid.length) bad(`Invalid user IDs: ${invalid.join(", ")}`);
  for (const id of ids) {
    const u = memberById(state, id)!;
    if (!u.isActive) bad(`User with ID ${id} is deactivated`);
    if (u.isBot) bad(`User with ID ${id} is a bot`);
  }
  return ids;
}

/** A checked value as stored (text), plus its rendering for the Markdown-capable types. */
function checkValue(state: RealmState, field: ProfileField, v: Value): ProfileValue {
  const name = field.name;
  switch (field.type) {
    case T.short:
      return { value: checkCapped(name, v, 50), rendered: render(v as string) };
    case T.long:
      return { value: checkCapped(name, v, 500), rendered: render(v as string) };
    case T.external:
    case T.pronouns:
      return { value: checkCapped(name, v, 50) };
    case T.date:
      if (typeof v !== "string") bad(`${name} is not a string`);
      if (!isDate(v)) bad(`${name} is not a date`);
      return { value: v };
    case T.url:
      if (typeof v !== "string") bad(`${name} is not a string`);
      if (!isUrl(v)) bad(`${name} is not a URL`);
      return { value: v };
    case T.select: {
      if (typeof v !== "string") bad(`${name} is not a string`);
      const choices = JSON.parse(field.fieldData || "{}") as Obj;
      if (!Object.hasOwn(choices, v)) bad(`'${v}' is not a valid choice for '${name}'.`);
      return { value: v };
    }
    case T.user:
      return { value: JSON.stringify(checkUserIds(state, v)) };
    default:
      throw errors.internal();
  }
}

/** The `data` parameter's shape (Zulip's check_profile_data_element_update_dict list). */
function checkDataShape(
  data: Value | undefined,
  name: string,
  allowNull: boolean,
): { id: number; value: Value }[] {
  if (!Array.isArray(data)) throw errors.notList(name);
  return data.map((item, i) => {
    const at = `${name}[${i}]`;
    if (!isDict(item)) throw errors.notDict(at);
    for (const k of ["id", "value"]) if (!Object.hasOwn(item, k)) bad(`${k} key is missing from ${at}`);
    const id = item.id;
    if (typeof id !== "number" || !Number.isInteger(id)) throw errors.notInteger(`${at}["id"]`);
    const value = item.value!;
    const okList = Array.isArray(value) && value.every((x) => typeof x === "number" && Number.isInteger(x));
    if (!(typeof value === "string" || okList || (allowNull && value === null))) {
      bad(`${at}["value"] is not an allowed_type`);
    }
    onlyKeys(item, ["id", "value"]);
    return { id, value };
  });
}

/**
 * Facts and events that set `target`'s values. With `clearEmpty` (the
 * administrator's PATCH /users/{id}), a null or empty value removes it.
 */
export function profileDataDecision(
  state: RealmState,
  target: DirEntry,
  me: DirEntry,
  rawData: Value | undefined,
  clearEmpty: boolean,
): { facts: Obj[]; events: OutEvent[] } {
  const items = checkDataShape(rawData, clearEmpty ? "profile_data" : "data", clearEmpty);
  const values: Record<string, ProfileValue | null> = {};
  for (const item of items) {
    const field = findField(state, item.id);
    if (!isAdminRole(me.role) && !field.editableByUser) {
      bad("You are not allowed to change this field. Contact an administrator to update it.");
    }
    const empty =
      item.value === null || item.value === "" || (Array.isArray(item.value) && item.value.length === 0);
    values[String(field.id)] = clearEmpty && empty ? null : checkValue(state, field, item.value);
  }
  const changed: Record<string, ProfileValue | null> = {};
  for (const [id, v] of Object.entries(values)) {
    const old = target.profileData?.[id];
    if (v === null ? old !== undefined : old?.value !== v.value) changed[id] = v;
  }
  if (Object.keys(changed).length === 0) return { facts: [], events: [] };
  const events: OutEvent[] = Object.entries(changed).map(([id, v]) => {
    const cpf: Obj = { id: Number(id), value: v === null ? null : v.value };
    if (v?.rendered !== undefined) cpf.rendered_value = v.rendered;
    return { event: updateEvent(target.userId, { custom_profile_field: cpf }), userIds: [], everyone: true };
  });
  return { facts: [fact({ type: "profileDataSet", userId: target.userId, values: changed })], events };
}

/** PATCH /users/me/profile_data. */
const updateOwnProfileData: RealmHandler<"updateOwnProfileData"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  if (me.isBot) throw errors.botsNotAllowed();
  const d = profileDataDecision(state, me, me, args.data, false);
  // Not to guests who cannot access the user (FL 228).
  const handoffs = await withholdFromGuests(state, ctx, me, d.events);
  return { ...d, handoffs, reply: {} };
};

/** DELETE /users/me/profile_data: `data` lists field ids whose values to remove. */
const removeOwnProfileData: RealmHandler<"removeOwnProfileData"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  if (me.isBot) throw errors.botsNotAllowed();
  const data = args.data;
  if (!Array.isArray(data)) throw errors.notList("data");
  data.forEach((id, i) => {
    if (typeof id !== "number" || !Number.isInteger(id)) throw errors.notInteger(`data[${i}]`);
  });
  const values: Record<string, null> = {};
  const events: OutEvent[] = [];
  for (const id of data as number[]) {
    const field = findField(state, id);
    if (!isAdminRole(me.role) && !field.editableByUser) {
      bad("You are not allowed to change this field. Contact an administrator to update it.");
    }
    // Removing a value that is not set is a no-op, as in Zulip.
    if (me.profileData?.[String(id)] === undefined || Object.hasOwn(values, String(id))) continue;
    values[String(id)] = null;
    events.push({
      event: updateEvent(me.userId, { custom_profile_field: { id, value: null } }),
      userIds: [],
      everyone: true,
    });
  }
  if (events.length === 0) return { reply: {} };
  // Not to guests who cannot access the user (FL 228).
  const handoffs = await withholdFromGuests(state, ctx, me, events);
  return {
    facts: [fact({ type: "profileDataSet", userId: me.userId, values })],
    events,
    handoffs,
    reply: {},
  };
};

export const profileFieldHandlers = {
  getProfileFields,
  profileFieldsState,
  createProfileField,
  updateProfileField,
  deleteProfileField,
  reorderProfileFields,
  updateOwnProfileData,
  removeOwnProfileData,
};
