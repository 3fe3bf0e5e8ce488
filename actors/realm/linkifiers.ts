// Linkifiers (Zulip's RealmFilter): the realm's ordered list of
// pattern -> URL template rules, their validation, and the pure function
// that applies them to text for the markdown renderer.
//
// Patterns are written for re2 with Python syntax ((?P<name>...)); we
// translate them to JavaScript and refuse what re2 refuses (lookaround,
// backreferences) so a pattern accepted here behaves as in Zulip. URL
// templates are RFC 6570, parsed by the `uri-template` package.

import { parse as parseUriTemplate } from "uri-template";
import { dict } from "../dict.ts";
import { errors } from "../errors.ts";
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

// ---- patterns -------------------------------------------------------------------

/** Zulip's ValidationFailureError: the first message, and every message by field. */
function invalid(field: string, msg: string): never {
  throw errors.validationFailed(msg, { [field]: [msg] });
}

/**
 * A re2/Python pattern as a JavaScript RegExp, or a "Bad regular
 * expression" error. Translates (?P<n>...) and (?P=n), a leading (?flags),
 * and refuses the constructs re2 lacks.
 */
export function compilePattern(pattern: string, flags = ""): RegExp {
  let src = pattern;
  let f = flags;
  const lead = /^\(\?([ims]+)\)/.exec(src);
  if (lead) {
    for (const ch of lead[1]!) if (!f.includes(ch)) f += ch;
    src = src.slice(lead[0].length);
  }
  let out = "";
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const ch = src[i]!;
    if (ch === "\\") {
      const next = src[i + 1];
      if (next !== undefined && /[1-9]/.test(next) && !inClass)
        throw errors.badRequest(`Bad regular expression: invalid escape sequence: \\${next}`);
      out += ch + (next ?? "");
      i++;
      continue;
    }
    if (inClass) {
      if (ch === "]") inClass = false;
      out += ch;
      continue;
    }
    if (ch === "[") {
      inClass = true;
      out += ch;
      if (src[i + 1] === "^") out += src[++i];
      if (src[i + 1] === "]") out += src[++i];
      continue;
    }
    if (ch === "(" && src[i + 1] === "?") {
      const rest = src.slice(i + 2);
      if (rest.startsWith("P<")) {
        out += "(?<";
        i += 3;
        continue;
      }
      if (rest.startsWith("P=")) {
        throw errors.badRequest("Bad regular expression: invalid named capture group");
      }
      for (const op of ["=", "!", "<=", "<!"]) {
        if (rest.startsWith(op))
          throw errors.badRequest(`Bad regular expression: invalid perl operator: (?${op[0]}`);
      }
    }
    out += ch;
  }
  try {
    return new RegExp(out, f);
  } catch (e) {
    const detail = e instanceof Error ? e.message.replace(/^Invalid regular expression: /, "") : "";
    throw errors.badRequest(`Bad regular expression: ${detail}`);
  }
}

function groupNames(re: RegExp): Set<string> {
  // A match of the empty alternative exposes every named group as a key.
  const probe = new RegExp(`${re.source}|`, re.flags).exec("");
  return new Set(Object.keys(probe?.groups ?? {}));
}

// ---- URL templates ----------------------------------------------------------------

interface ParsedTemplate {
  variables: Set<string>;
  expand(values: Record<string, string>): string;
}

/** RFC 6570, strictly: no braces in literals, no non-standard variable extensions. */
export function parseUrlTemplate(template: string): ParsedTemplate | null {
  let parsed: ReturnType<typeof parseUriTemplate>;
  try {
    parsed = parseUriTemplate(template);
  } catch {
    return null;
  }
  const variables = new Set<string>();
  for (const part of parsed.ast.parts) {
    if (part.type === "literal") {
      if (/[{}]/.test(part.value)) return null;
      continue;
    }
    for (const v of part.variables) {
      if (v.extension !== null) return null;
      variables.add(v.name);
    }
  }
  return { variables, expand: (values) => parsed.expand(values) };
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
  if (!template) invalid("url_template", "Invalid URL template.");
  const alternatives = input.alternative_url_templates ?? [];
  for (const alt of alternatives)
    if (!parseUrlTemplate(alt)) invalid("alternative_url_templates", "Invalid URL template.");
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

// ---- application (for the markdown renderer) --------------------------------------

export type LinkifiedSegment = { text: string } | { text: string; url: string };

/**
 * Split `text` into plain and linked segments. Linkifiers apply in order;
 * a later one never links text an earlier one already linked. As Zulip's
 * markdown, a match must not follow a word character or most punctuation
 * and must not be followed by a word character. Invalid linkifiers (there
 * are none once stored) are skipped.
 */
export function applyLinkifiers(
  text: string,
  linkifiers: Pick<Linkifier, "pattern" | "url_template">[],
): LinkifiedSegment[] {
  const claimed: { start: number; end: number; url: string }[] = [];
  for (const l of linkifiers) {
    let re: RegExp;
    const template = parseUrlTemplate(l.url_template);
    if (!template) continue;
    try {
      re = compilePattern(l.pattern, "g");
    } catch {
      continue;
    }
    for (const m of text.matchAll(re)) {
      const start = m.index;
      const end = start + m[0].length;
      if (end === start) continue;
      if (start > 0 && !/[\s'"(,:<]/.test(text[start - 1]!)) continue;
      if (end < text.length && /\w/.test(text[end]!)) continue;
      if (claimed.some((c) => start < c.end && c.start < end)) continue;
      // A group may be named __proto__ or constructor (see dict.ts).
      const values: Record<string, string> = dict();
      for (const [k, v] of Object.entries(m.groups ?? {})) if (v !== undefined) values[k] = v;
      claimed.push({ start, end, url: template.expand(values) });
    }
  }
  claimed.sort((a, b) => a.start - b.start);
  const out: LinkifiedSegment[] = [];
  let at = 0;
  for (const c of claimed) {
    if (c.start > at) out.push({ text: text.slice(at, c.start) });
    out.push({ text: text.slice(c.start, c.end), url: c.url });
    at = c.end;
  }
  if (at < text.length) out.push({ text: text.slice(at) });
  return out;
}

export function linkifiersEventValue(state: { linkifiers?: LinkifierState }): Value {
  return formatLinkifiers(state) as Value;
}
