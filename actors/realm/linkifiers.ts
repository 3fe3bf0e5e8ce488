// Linkifiers (Zulip's RealmFilter): the realm's ordered list of
// pattern -> URL template rules and their validation. The engine that
// compiles patterns and templates and applies them to text for the
// markdown renderer is the leaf actors/linkify.ts.

import { errors } from "../errors.ts";
import { compilePattern, parseUrlTemplate, templateSchemeOk, type Pattern } from "../linkify.ts";
import type { Obj, Value } from "../types.ts";

export interface Linkifier {
  id: number;
  pattern: string;
  url_template: string;
  example_input: string | null;
  reverse_template: string | null;
  alternative_url_templates: string[];
}

/** RealmState.linkifiers (absent on realms that never had one). In order of application. */
export interface LinkifierState {
  items: Linkifier[];
}

export type LinkifierFact =
  | { type: "linkifierAdded"; linkifier: Linkifier }
  | { type: "linkifierUpdated"; linkifier: Linkifier }
  | { type: "linkifierRemoved"; id: number }
  | { type: "linkifiersReordered"; ids: number[] };

const FACT_TYPES = new Set(["linkifierAdded", "linkifierUpdated", "linkifierRemoved", "linkifiersReordered"]);

export function isLinkifierFact(fact: { type: string }): fact is LinkifierFact {
  return FACT_TYPES.has(fact.type);
}

export function applyLinkifierFact(state: { linkifiers?: LinkifierState }, fact: LinkifierFact): void {
  const ls = (state.linkifiers ??= { items: [] });
  switch (fact.type) {
    case "linkifierAdded":
      ls.items.push(structuredClone(fact.linkifier));
      break;
    case "linkifierUpdated": {
      const i = ls.items.findIndex((l) => l.id === fact.linkifier.id);
      if (i >= 0) ls.items[i] = structuredClone(fact.linkifier);
      break;
    }
    case "linkifierRemoved":
      ls.items = ls.items.filter((l) => l.id !== fact.id);
      break;
    case "linkifiersReordered": {
      const byId = new Map(ls.items.map((l) => [l.id, l]));
      ls.items = fact.ids.map((id) => byId.get(id)).filter((l): l is Linkifier => l !== undefined);
      break;
    }
  }
}

export function formatLinkifiers(state: { linkifiers?: LinkifierState }): Obj[] {
  return (state.linkifiers?.items ?? []).map((l) => ({
    ...l,
    alternative_url_templates: [...l.alternative_url_templates],
  }));
}

// ---- validation -----------------------------------------------------------------

/** Zulip's ValidationFailureError: the first message, and every message by field. */
function invalid(field: string, msg: string): never {
  throw errors.validationFailed(msg, { [field]: [msg] });
}

function groupNames(re: Pattern): Set<string> {
  return new Set(Object.keys(re.namedGroups()));
}

// ---- the reverse template ------------------------------------------------------

function expandReverseTemplate(
  template: string,
  groups: Record<string, string | undefined>,
  names: Set<string>,
): string {
  let out = "";
  let i = 0;
  while (i < template.length) {
    if (template.startsWith("{{", i)) {
      out += "{";
      i += 2;
    } else if (template.startsWith("}}", i)) {
      out += "}";
      i += 2;
    } else if (template[i] === "{") {
      const end = template.indexOf("}", i + 1);
      if (end < 0) invalid("__all__", "Invalid auto-conversion field: missing '}' character.");
      const name = template.slice(i + 1, end);
      if (!name) invalid("__all__", "Invalid auto-conversion field: empty field name.");
      if (!names.has(name))
        invalid("__all__", `Group '${name}' in auto-conversion field is not present in linkifier pattern.`);
      out += groups[name] ?? "";
      i = end + 1;
    } else {
      out += template[i];
      i++;
    }
  }
  return out;
}

function normalizeOptional(v: string | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  const t = v.trim();
  return t === "" ? null : t;
}

export interface LinkifierInput {
  pattern: string;
  url_template: string;
  example_input?: string | null;
  reverse_template?: string | null;
  alternative_url_templates?: string[];
}

/**
 * Zulip's RealmFilter.full_clean: the url_template field first, then the
 * model's clean (pattern, example and reverse template, variables). The
 * first error wins.
 */
export function checkLinkifier(input: LinkifierInput, others: Linkifier[]): Omit<Linkifier, "id"> {
  const template = parseUrlTemplate(input.url_template);
  if (!template || !templateSchemeOk(template)) invalid("url_template", "Invalid URL template.");
  const alternatives = input.alternative_url_templates ?? [];
  for (const alt of alternatives) {
    const parsed = parseUrlTemplate(alt);
    if (!parsed || !templateSchemeOk(parsed)) invalid("alternative_url_templates", "Invalid URL template.");
  }
  const re = compilePattern(input.pattern);
  const names = groupNames(re);
  const example = normalizeOptional(input.example_input);
  const reverse = normalizeOptional(input.reverse_template);
  if (reverse !== null && example === null)
    throw errors.missingDependentParameter("Example text", "auto-conversion field");
  if (example !== null) {
    const m = re.exec(example);
    if (!m) invalid("__all__", "Example input does not match the linkifier pattern.");
    if (reverse !== null && expandReverseTemplate(reverse, m.groups ?? {}, names) !== example)
      invalid("__all__", "Example text does not match auto-conversion field.");
  }
  const missingInPattern = [...template.variables].filter((v) => !names.has(v)).sort();
  if (missingInPattern.length)
    invalid("__all__", `Group '${missingInPattern[0]}' in URL template is not present in linkifier pattern.`);
  const missingInUrl = [...names].filter((n) => !template.variables.has(n)).sort();
  if (missingInUrl.length)
    invalid("__all__", `Group '${missingInUrl[0]}' in linkifier pattern is not present in URL template.`);
  if (others.some((o) => o.pattern === input.pattern))
    invalid("__all__", "Realm filter with this Realm and Pattern already exists.");
  return {
    pattern: input.pattern,
    url_template: input.url_template,
    example_input: example,
    reverse_template: reverse,
    alternative_url_templates: [...alternatives],
  };
}

export function linkifiersEventValue(state: { linkifiers?: LinkifierState }): Value {
  return formatLinkifiers(state) as Value;
}
