// The linkifier engine (Zulip's RealmFilter patterns and URL templates):
// compiling a pattern, parsing a template, and the pure function that
// applies a realm's linkifiers to text. A leaf: the realm validates its
// linkifiers with it (actors/realm/linkifiers.ts) and the markdown renderer
// applies them, without either entering the other's door.
//
// Patterns are re2 with Python syntax ((?P<name>...)), run by re2js, a
// linear-time engine: an admin's pattern cannot stall rendering, and what
// re2 refuses (lookaround, backreferences) is refused here as in Zulip.
// URL templates are RFC 6570, parsed by the `uri-template` package, and
// may only produce http(s) or relative URLs.

import { createRequire } from "node:module";
import type * as Re2js from "re2js";
import type * as UriTemplate from "uri-template";
import { dict } from "./dict.ts";
import { errors } from "./errors.ts";
import { LINKIFIER_SCHEMES, urlScheme } from "./href.ts";

// Both libraries load at their first use (a linkifier or playground being
// compiled or applied), not at every process start.
const load = createRequire(import.meta.url);
let re2js: typeof Re2js | null = null;
let uriTemplate: typeof UriTemplate | null = null;
const parseUriTemplate = (template: string) =>
  (uriTemplate ??= load("uri-template") as typeof UriTemplate).parse(template);

// ---- patterns -------------------------------------------------------------------

/** re2js's (Go's) parser texts -> the texts of C++ RE2, which Zulip shows. */
const RE2_ERROR_TEXTS: Record<string, string> = {
  "invalid named capture": "invalid named capture group",
  "invalid or unsupported Perl syntax": "invalid perl operator",
  "invalid nested repetition operator": "bad repetition operator",
  "invalid repeat count": "invalid repetition size",
  "missing closing ]": "missing ]",
  "missing closing )": "missing )",
  "missing argument to repetition operator": "no argument for repetition operator",
  "trailing backslash at end of expression": "trailing \\",
  "expression too large": "pattern too large - compile failed",
  "expression nests too deeply": "pattern too large - compile failed",
};

/**
 * Above this many instructions a pattern is refused, as C++ RE2 refuses a
 * program over its memory budget, but lower: matching is linear in the
 * text and also proportional to the program (re2js's NFA, with captures,
 * costs about 40 ms per 100 instructions over a 10000-character message),
 * and linkifiers run on every message. Real linkifiers use a few dozen.
 */
const MAX_PROGRAM_SIZE = 1000;
/** Longer patterns are refused before parsing: parsing alone would take a while. */
const MAX_PATTERN_LENGTH = 10_000;

function badRegex(detail: string): never {
  throw errors.badRequest(`Bad regular expression: ${detail}`);
}

/** What the rest of the code uses of a compiled re2js pattern, typed as RegExp's results. */
export interface Pattern {
  exec(input: string): RegExpExecArray | null;
  test(input: string): boolean;
  matchAll(input: string): IterableIterator<RegExpMatchArray>;
  namedGroups(): Record<string, number>;
}

const compiled = new Map<string, Pattern>();

/**
 * A re2 pattern (Python syntax: (?P<name>...), leading (?flags)) compiled
 * by re2js, a linear-time engine, as Zulip compiles linkifiers with re2:
 * no lookaround, no backreferences, no catastrophic backtracking. Refusals
 * carry Zulip's "Bad regular expression: <re2 error>" text. Compiled
 * patterns are remembered: the renderer asks for them on every message.
 */
export function compilePattern(pattern: string): Pattern {
  const hit = compiled.get(pattern);
  if (hit) return hit;
  if (pattern.length > MAX_PATTERN_LENGTH) badRegex("pattern too large - compile failed");
  const lib = (re2js ??= load("re2js") as typeof Re2js);
  let re: Re2js.RE2JS;
  try {
    re = lib.RE2JS.compile(pattern);
  } catch (e) {
    if (e instanceof lib.RE2JSSyntaxException) {
      const text = RE2_ERROR_TEXTS[e.error] ?? e.error;
      badRegex(e.input && !text.endsWith("\\") ? `${text}: ${e.input}` : text);
    }
    badRegex("pattern too large - compile failed");
  }
  if (re.programSize() > MAX_PROGRAM_SIZE) badRegex("pattern too large - compile failed");
  if (compiled.size >= 1000) compiled.clear();
  const p = re as unknown as Pattern;
  compiled.set(pattern, p);
  return p;
}

// ---- URL templates ----------------------------------------------------------------

interface ParsedTemplate {
  variables: Set<string>;
  expand(values: Record<string, string>): string;
  /** The literal text before the first expression. */
  literalPrefix: string;
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
  let literalPrefix = "";
  let inPrefix = true;
  for (const part of parsed.ast.parts) {
    if (part.type === "literal") {
      if (part.value.includes("{") || part.value.includes("}")) return null;
      if (inPrefix) literalPrefix += part.value;
      continue;
    }
    inPrefix = false;
    for (const v of part.variables) {
      if (v.extension !== null) return null;
      variables.add(v.name);
    }
  }
  return { variables, expand: (values) => parsed.expand(values), literalPrefix };
}

/**
 * Whether every expansion of the template is an http(s) or relative URL:
 * its literal text before the first expression must already decide that,
 * since a group's text (a "{+x}" keeps ":") could otherwise spell the scheme.
 */
export function templateSchemeOk(t: ParsedTemplate): boolean {
  const scheme = urlScheme(t.literalPrefix);
  return scheme === "" || (typeof scheme === "string" && LINKIFIER_SCHEMES.has(scheme));
}

// ---- application (for the markdown renderer) --------------------------------------

const templates = new Map<string, ParsedTemplate | null>();

function cachedTemplate(template: string): ParsedTemplate | null {
  let t = templates.get(template);
  if (t === undefined) {
    if (templates.size >= 1000) templates.clear();
    t = parseUrlTemplate(template);
    templates.set(template, t);
  }
  return t;
}

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
  linkifiers: { pattern: string; url_template: string }[],
): LinkifiedSegment[] {
  const claimed: { start: number; end: number; url: string }[] = [];
  // Positions already linked: checking a match is then proportional to its
  // length, not to the number of earlier matches.
  let taken: Uint8Array | null = null;
  for (const l of linkifiers) {
    let re: Pattern;
    const template = cachedTemplate(l.url_template);
    if (!template) continue;
    try {
      re = compilePattern(l.pattern);
    } catch {
      continue;
    }
    for (const m of re.matchAll(text)) {
      const start = m.index!;
      const end = start + m[0].length;
      if (end === start) continue;
      if (start > 0 && !/[\s'"(,:<]/.test(text[start - 1]!)) continue;
      if (end < text.length && /\w/.test(text[end]!)) continue;
      taken ??= new Uint8Array(text.length);
      if (taken.subarray(start, end).includes(1)) continue;
      taken.fill(1, start, end);
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
