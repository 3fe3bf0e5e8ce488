// Parameter parsers (raw request string -> typed value) and checkers (JSON
// value -> typed value), with Zulip's error texts (https://zulip.com/api/rest-error-handling).
//
// Zulip parses most parameters as Json[...] with pydantic in strict mode and
// reports the first failure as "<var_name> <problem>", where var_name is the
// parameter's canonical name followed by JSON-quoted path parts:
// `subscriptions[0]["name"] is not a string`. Strict means "5" is an int but
// "5.0", "\"5\"" and true are not; JSON.parse cannot tell 5.0 from 5, so
// parseJson re-checks documents that contain integral float literals.

import { errors } from "../actors/errors.ts";
import type { Obj, Value } from "../actors/types.ts";
import type { ParamSpec, Parser } from "./route-types.ts";

export type { ParamSpec, Parser };

/** Validates a decoded JSON value; `name` is the path used in error texts. */
export type Checker<T> = (v: unknown, name: string) => T;

/**
 * A parameter declaration. The overloads keep `required: true` and a
 * default in the spec's type, so a handler sees such a parameter as `T`
 * rather than `T | undefined` (route-types.ts, ParamValue).
 */
export function param<T>(
  parse: Parser<T>,
  opts: { required: true; aliases?: string[] },
): ParamSpec<T> & { required: true };
export function param<T>(
  parse: Parser<T>,
  opts: { required?: boolean; aliases?: string[]; default: T },
): ParamSpec<T> & { default: T };
export function param<T>(
  parse: Parser<T>,
  opts?: { required?: boolean; aliases?: string[]; default?: T },
): ParamSpec<T>;
export function param<T>(
  parse: Parser<T>,
  opts: { required?: boolean; aliases?: string[]; default?: T } = {},
): ParamSpec<T> {
  const spec: ParamSpec<T> = { parse };
  if (opts.required) spec.required = true;
  if (opts.aliases && opts.aliases.length > 0) spec.aliases = [...opts.aliases];
  if (opts.default !== undefined) spec.default = opts.default;
  return spec;
}

// ---- Checkers ---------------------------------------------------------------

function checkInt(v: unknown, name: string, min: number | undefined, max: number | undefined): number {
  // typeof excludes booleans, which pydantic's strict int also rejects.
  if (typeof v !== "number" || !Number.isInteger(v)) throw errors.notInteger(name);
  // Python ints are unbounded; ours must stay exact, so anything past 2^53
  // counts as out of range.
  if ((min !== undefined && v < min) || v < Number.MIN_SAFE_INTEGER) throw errors.tooSmall(name);
  if ((max !== undefined && v > max) || v > Number.MAX_SAFE_INTEGER) throw errors.tooLarge(name);
  return v === 0 ? 0 : v; // -0 -> 0
}

const checkBool: Checker<boolean> = (v, name) => {
  if (typeof v !== "boolean") throw errors.notBoolean(name);
  return v;
};

const checkString: Checker<string> = (v, name) => {
  if (typeof v !== "string") throw errors.notString(name);
  return v;
};

function isDict(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export const c = {
  int(opts: { min?: number; max?: number } = {}): Checker<number> {
    const { min, max } = opts;
    return (v, name) => checkInt(v, name, min, max);
  },

  bool(): Checker<boolean> {
    return checkBool;
  },

  string(): Checker<string> {
    return checkString;
  },

  list<T>(item: Checker<T>): Checker<T[]> {
    return (v, name) => {
      if (!Array.isArray(v)) throw errors.notList(name);
      const out = new Array<T>(v.length);
      for (let i = 0; i < v.length; i++) out[i] = item(v[i], `${name}[${i}]`);
      return out;
    };
  },

  /**
   * A JSON object with declared keys. Missing required keys, then bad
   * values, are reported in declaration order; then undeclared keys, unless
   * allowExtra (undeclared keys are dropped from the result either way).
   */
  dict<S extends Record<string, unknown>>(
    fields: { [K in keyof S]: { check: Checker<S[K]>; required?: boolean } },
    opts: { allowExtra?: boolean } = {},
  ): Checker<Partial<S>> {
    const keys = Object.keys(fields) as (keyof S & string)[];
    const known = new Set<string>(keys);
    const allowExtra = opts.allowExtra === true;
    return (v, name) => {
      if (!isDict(v)) throw errors.notDict(name);
      const out: Partial<S> = {};
      for (const k of keys) {
        const f = fields[k];
        if (!Object.hasOwn(v, k)) {
          if (f.required) throw errors.fieldMissing(name, k);
          continue;
        }
        out[k] = f.check(v[k], `${name}[${JSON.stringify(k)}]`);
      }
      if (!allowExtra) {
        for (const k of Object.keys(v)) {
          // pydantic's loc for an extra key includes the key itself.
          if (!known.has(k)) throw errors.unexpectedKey(k, `${name}[${JSON.stringify(k)}]`);
        }
      }
      return out;
    };
  },

  nullable<T>(inner: Checker<T>): Checker<T | null> {
    return (v, name) => (v === null ? null : inner(v, name));
  },

  oneOf<T>(values: readonly T[]): Checker<T> {
    return (v, name) => {
      if (!values.includes(v as T)) throw errors.invalid(name);
      return v as T;
    };
  },
};

// ---- JSON ------------------------------------------------------------------

/** JSON.parse with Zulip's error text, then the checker (strict about 5.0). */
function parseJson<T>(raw: string, name: string, check: Checker<T> | undefined): T {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw errors.notJson(name);
  }
  if (check === undefined) return v as T;
  const out = check(v, name);
  // 5.0 and 1e2 parse to integers in JavaScript but are floats to Zulip.
  // Rare, so only then: replace those literals by a fraction and check
  // again; a checker that wanted an integer now fails at the right path.
  const strict = fractionalizeIntegralFloats(raw);
  if (strict !== null) check(JSON.parse(strict), name);
  return out;
}

const ZERO = 48;
const NINE = 57;
const MINUS = 45;
const QUOTE = 34;
const BACKSLASH = 92;

function isNumberChar(ch: number): boolean {
  // digits, '-', '+', '.', 'e', 'E'
  return (ch >= ZERO && ch <= NINE) || ch === MINUS || ch === 43 || ch === 46 || ch === 101 || ch === 69;
}

/**
 * The JSON text with every float literal that has an integral value (5.0,
 * 1e2, -0.0) replaced by 0.5, or null when there is none. Input must be
 * valid JSON.
 */
function fractionalizeIntegralFloats(raw: string): string | null {
  if (raw.indexOf(".") < 0 && raw.indexOf("e") < 0 && raw.indexOf("E") < 0) return null;
  let out: string[] | null = null;
  let last = 0;
  const n = raw.length;
  let i = 0;
  while (i < n) {
    const ch = raw.charCodeAt(i);
    if (ch === QUOTE) {
      i++;
      while (i < n) {
        const s = raw.charCodeAt(i);
        if (s === BACKSLASH) i += 2;
        else if (s === QUOTE) break;
        else i++;
      }
      i++;
      continue;
    }
    if (ch === MINUS || (ch >= ZERO && ch <= NINE)) {
      const start = i;
      let float = false;
      while (i < n && isNumberChar(raw.charCodeAt(i))) {
        const d = raw.charCodeAt(i);
        if (d === 46 || d === 101 || d === 69) float = true;
        i++;
      }
      if (float && Number.isInteger(Number(raw.slice(start, i)))) {
        (out ??= []).push(raw.slice(last, start), "0.5");
        last = i;
      }
      continue;
    }
    i++;
  }
  if (out === null) return null;
  out.push(raw.slice(last));
  return out.join("");
}

/**
 * A JSON integer literal: optional '-', then 0 or a digit string without a
 * leading zero; at most 15 digits so Number() stays exact. Lets the common
 * case skip JSON.parse.
 */
function isPlainInt(s: string): boolean {
  const n = s.length;
  let i = 0;
  if (n > 0 && s.charCodeAt(0) === MINUS) i = 1;
  const digits = n - i;
  if (digits < 1 || digits > 15) return false;
  const first = s.charCodeAt(i);
  if (first < ZERO || first > NINE || (first === ZERO && digits > 1)) return false;
  for (i++; i < n; i++) {
    const ch = s.charCodeAt(i);
    if (ch < ZERO || ch > NINE) return false;
  }
  return true;
}

/** Python's len(): code points, not UTF-16 units. */
function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    if (ch >= 0xd800 && ch <= 0xdbff && i + 1 < s.length) {
      const lo = s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

const intItem = c.int();
const intListChecker = c.list(intItem);
const stringListChecker = c.list(checkString);

/**
 * zulip-js puts arrays in PATCH/DELETE/GET query strings with
 * URLSearchParams, which writes [1,2,3] as "1,2,3", [5] as "5" and [] as "".
 */
function parseCommaInts(raw: string): number[] | null {
  const trimmed = raw.trim();
  if (trimmed === "") return [];
  const parts = trimmed.split(",");
  const out = new Array<number>(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const s = parts[i]!.trim();
    if (!isPlainInt(s)) return null;
    out[i] = Number(s) + 0; // -0 -> 0
  }
  return out;
}

// ---- Parsers ---------------------------------------------------------------

// Overloaded (so a standalone function): without a checker the value is any
// JSON Value, with one what the checker returns.
function json(): Parser<Value>;
function json<T>(check: Checker<T>): Parser<T>;
function json<T>(check?: Checker<T>): Parser<T> {
  return (raw, name) => parseJson(raw, name, check);
}

export const p = {
  /** Raw text, never JSON-decoded. maxLength counts code points, as Python does. */
  string(opts: { maxLength?: number } = {}): Parser<string> {
    const max = opts.maxLength;
    if (max === undefined) return (raw) => raw;
    return (raw, name) => {
      if (raw.length > max && codePointLength(raw) > max) throw errors.tooLong(name, max);
      return raw;
    };
  },

  /** A JSON integer: "5"; not "5.0", "\"5\"" or "true". */
  int(opts: { min?: number; max?: number } = {}): Parser<number> {
    const { min, max } = opts;
    return (raw, name) => {
      if (isPlainInt(raw)) return checkInt(Number(raw), name, min, max);
      let v: unknown;
      try {
        v = JSON.parse(raw);
      } catch {
        throw errors.notJson(name);
      }
      // A top-level number token with '.', 'e' or 'E' is a float to Zulip.
      if (typeof v === "number" && /[.eE]/.test(raw)) throw errors.notInteger(name);
      return checkInt(v, name, min, max);
    };
  },

  /** A JSON boolean: "true"/"false"; "True" is not valid JSON, "1" is not a boolean. */
  bool(): Parser<boolean> {
    return (raw, name) => {
      if (raw === "true") return true;
      if (raw === "false") return false;
      let v: unknown;
      try {
        v = JSON.parse(raw);
      } catch {
        throw errors.notJson(name);
      }
      return checkBool(v, name);
    };
  },

  /** Any JSON text (a Value), then the checker when given. */
  json,

  /** A JSON list of integers, or the comma-joined form zulip-js sends in query strings. */
  intList(): Parser<number[]> {
    return (raw, name) => {
      const commas = parseCommaInts(raw);
      if (commas !== null) return commas;
      return parseJson(raw, name, intListChecker);
    };
  },

  /** A JSON list of strings. */
  stringList(): Parser<string[]> {
    return (raw, name) => parseJson(raw, name, stringListChecker);
  },

  /**
   * The base parser's value, which must be one of `values` ("Invalid <name>");
   * typed as their union when they are literals (["add", "remove"]).
   */
  oneOf<T, const U extends T>(values: readonly U[], base: Parser<T>): Parser<U> {
    const allowed: readonly T[] = values;
    return (raw, name) => {
      const v = base(raw, name);
      if (!allowed.includes(v)) throw errors.invalid(name);
      // includes() just found v among values.
      return v as U;
    };
  },
};

/** The named parameters the client actually sent, for passing on to an actor. */
export function sentParams(params: Record<string, unknown>, names: readonly string[]): Obj {
  const out: Obj = {};
  for (const n of names) if (params[n] !== undefined) out[n] = params[n] as Value;
  return out;
}
