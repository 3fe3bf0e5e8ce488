// Code playgrounds (Zulip's RealmPlayground): for a code block's language,
// a site that opens the code. POST /realm/playgrounds and DELETE
// /realm/playgrounds/{id}, administrators only; every change sends
// realm_playgrounds (the whole list) to all active users.
//
// The URL template is RFC 6570 with "code" as its only variable, and must
// produce http(s) or relative URLs only: the same rule linkifier templates
// pass (linkifiers.ts), since clients turn it into a link.

import { errors } from "../errors.ts";
import type { DecisionOf } from "../protocol.ts";
import type { Obj } from "../types.ts";
import { requireAdmin } from "./admin.ts";
import { parseUrlTemplate, templateSchemeOk } from "../linkify.ts";
import type { RealmHandler } from "./handler.ts";
import type { Playground, PlaygroundState, RealmState } from "./state.ts";

export type PlaygroundFact =
  { type: "playgroundAdded"; playground: Playground } | { type: "playgroundRemoved"; id: number };

export function isPlaygroundFact(fact: { type: string }): fact is PlaygroundFact {
  return fact.type === "playgroundAdded" || fact.type === "playgroundRemoved";
}

export function applyPlaygroundFact(state: { playgrounds?: PlaygroundState }, fact: PlaygroundFact): void {
  const ps = (state.playgrounds ??= { items: [] });
  if (fact.type === "playgroundAdded") ps.items.push({ ...fact.playground });
  else ps.items = ps.items.filter((p) => p.id !== fact.id);
}

export function formatPlaygrounds(state: { playgrounds?: PlaygroundState }): Obj[] {
  return (state.playgrounds?.items ?? []).map((p) => ({ ...p }));
}

/** Zulip's MAX_PYGMENTS_LANGUAGE_LENGTH. */
export const MAX_PYGMENTS_LANGUAGE_LENGTH = 40;
const PYGMENTS_LANGUAGE = /^[ a-zA-Z0-9_+\-./#]*$/;
/**
 * Zulip's name column has no limit; ours keeps one realm's list (sent whole
 * in every event and /register) bounded.
 */
export const MAX_PLAYGROUND_NAME_LENGTH = 100;

const BLANK = "This field cannot be blank.";

/**
 * The parameter checks of Zulip's view (pygments_language: length, then
 * characters, before stripping), then the model's full_clean: field errors
 * in field order (url_template, name, pygments_language), the template's
 * variables, and uniqueness of (language, name). The first error is the
 * message; all of them go in `errors` by field, as Zulip's
 * ValidationFailureError.
 */
export function checkPlayground(
  raw: { name: string; pygments_language: string; url_template: string },
  existing: Playground[],
): Omit<Playground, "id"> {
  if (raw.pygments_language.length > MAX_PYGMENTS_LANGUAGE_LENGTH)
    throw errors.badRequest(
      `pygments_language is too long (limit: ${MAX_PYGMENTS_LANGUAGE_LENGTH} characters)`,
    );
  if (!PYGMENTS_LANGUAGE.test(raw.pygments_language))
    throw errors.badRequest("Invalid characters in pygments language");
  if (raw.name.length > MAX_PLAYGROUND_NAME_LENGTH)
    throw errors.badRequest(`name is too long (limit: ${MAX_PLAYGROUND_NAME_LENGTH} characters)`);
  const name = raw.name.trim();
  const language = raw.pygments_language.trim();
  const urlTemplate = raw.url_template.trim();

  const byField: Record<string, string[]> = {};
  const add = (field: string, msg: string): void => {
    (byField[field] ??= []).push(msg);
  };
  const template = parseUrlTemplate(urlTemplate);
  if (!template || !templateSchemeOk(template)) add("url_template", "Invalid URL template.");
  if (name === "") add("name", BLANK);
  if (language === "") add("pygments_language", BLANK);
  if (template) {
    if (!template.variables.has("code"))
      add("__all__", 'Missing the required variable "code" in the URL template');
    else if (template.variables.size !== 1)
      add("__all__", '"code" should be the only variable present in the URL template');
  }
  if (
    name !== "" &&
    language !== "" &&
    existing.some((p) => p.name === name && p.pygments_language === language)
  )
    add("__all__", "Realm playground with this Realm, Pygments language and Name already exists.");
  const first = Object.values(byField)[0]?.[0];
  if (first !== undefined) throw errors.validationFailed(first, byField);
  return { name, pygments_language: language, url_template: urlTemplate };
}

function change(state: RealmState, f: PlaygroundFact): DecisionOf<Record<string, never>>;
function change<R>(state: RealmState, f: PlaygroundFact, reply: R): DecisionOf<R>;
function change(state: RealmState, f: PlaygroundFact, reply: unknown = {}): DecisionOf<unknown> {
  const after = { playgrounds: structuredClone(state.playgrounds ?? { items: [] }) };
  applyPlaygroundFact(after, f);
  return {
    facts: [f as unknown as Obj],
    events: [
      {
        event: { type: "realm_playgrounds", realm_playgrounds: formatPlaygrounds(after) },
        userIds: [],
        everyone: true,
      },
    ],
    reply,
  };
}

/** POST /realm/playgrounds -> {id}. */
const addPlayground: RealmHandler<"addPlayground"> = async (state, args, ctx, caller) => {
  requireAdmin(state, caller);
  const checked = checkPlayground(
    { name: args.name, pygments_language: args.pygments_language, url_template: args.url_template },
    state.playgrounds?.items ?? [],
  );
  const id = await ctx.nextId(`playground.${state.realmId}`);
  return change(state, { type: "playgroundAdded", playground: { id, ...checked } }, { id });
};

/** DELETE /realm/playgrounds/{id}. */
const removePlayground: RealmHandler<"removePlayground"> = (state, args, _ctx, caller) => {
  requireAdmin(state, caller);
  const id = args.id;
  if (!(state.playgrounds?.items ?? []).some((p) => p.id === id))
    throw errors.badRequest("Invalid playground");
  return change(state, { type: "playgroundRemoved", id });
};

/** The /register key (spectators too, as Zulip). */
const listPlaygrounds: RealmHandler<"listPlaygrounds"> = (state) => {
  if (!state.created) throw errors.invalidSubdomain();
  return { reply: { realm_playgrounds: formatPlaygrounds(state) } };
};

export const playgroundHandlers = {
  addPlayground,
  removePlayground,
  listPlaygrounds,
};
