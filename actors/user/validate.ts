// Checks shared by the realm and user actors: argument readers for actor
// messages, and Zulip's rules for emails, names and passwords.

import { createHash, randomBytes } from "node:crypto";
import { errors } from "../errors.ts";
import type { Obj, Value } from "../types.ts";

// ---- Reading actor arguments ----------------------------------------------
// Arguments arrive as plain Values from the gateway (already parsed) or from
// other actors; a wrong type here is a caller bug, reported with Zulip's
// generic texts rather than a 500.

export function argString(args: Obj, name: string): string {
  const v = args[name];
  if (typeof v !== "string") throw v === undefined ? errors.missingArgument(name) : errors.notString(name);
  return v;
}

export function optString(args: Obj, name: string): string | undefined {
  const v = args[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw errors.notString(name);
  return v;
}

export function optBool(args: Obj, name: string): boolean | undefined {
  const v = args[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw errors.notBoolean(name);
  return v;
}

export function optInt(args: Obj, name: string): number | undefined {
  const v = args[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v)) throw errors.notInteger(name);
  return v;
}

export function optIntList(args: Obj, name: string): number[] | undefined {
  const v = args[name];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw errors.notList(name);
  return v.map((x, i) => {
    if (typeof x !== "number" || !Number.isInteger(x)) throw errors.notInteger(`${name}[${i}]`);
    return x;
  });
}

export function optObj(args: Obj, name: string): Obj | undefined {
  const v: Value | undefined = args[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw errors.notDict(name);
  return v;
}

// ---- Roles -----------------------------------------------------------------

export const ROLE_OWNER = 100;
export const ROLE_ADMINISTRATOR = 200;
export const ROLE_MODERATOR = 300;
export const ROLE_MEMBER = 400;
export const ROLE_GUEST = 600;
export const ROLES = [ROLE_OWNER, ROLE_ADMINISTRATOR, ROLE_MODERATOR, ROLE_MEMBER, ROLE_GUEST];

export function isAdminRole(role: number): boolean {
  return role === ROLE_OWNER || role === ROLE_ADMINISTRATOR;
}

// ---- Emails ----------------------------------------------------------------

// Django's EmailValidator, which Zulip uses everywhere: a dot-atom or quoted
// local part; a domain of dot-separated labels ending in a 2-63 character
// TLD, "localhost", or a bracketed IP literal.
const LOCAL_DOT_ATOM = /^[-!#$%&'*+/=?^_`{}|~0-9a-z]+(\.[-!#$%&'*+/=?^_`{}|~0-9a-z]+)*$/i;
// Django's quoted-string pattern names control characters on purpose.
// eslint-disable-next-line no-control-regex
const LOCAL_QUOTED = /^"([\x01-\x08\x0b\x0c\x0e-\x1f!#-[\]-\x7f]|\\[\x01-\x09\x0b\x0c\x0d-\x7f])*"$/i;
const DOMAIN = /^((?!-)[a-z0-9-]{1,63}(?<!-)\.)+(?!-)([a-z]{2,63}|xn--[a-z0-9]{1,59})(?<!-)\.?$/i;
const IP_LITERAL = /^\[(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|IPv6:[0-9a-f:.]+)\]$/i;

export function isValidEmail(email: string): boolean {
  if (email.length === 0 || email.length > 320 || /\s/.test(email) || email.includes("\u0000")) return false;
  const at = email.lastIndexOf("@");
  if (at <= 0 || at === email.length - 1) return false;
  const local = email.slice(0, at);
  const domain = email.slice(at + 1);
  if (!LOCAL_DOT_ATOM.test(local) && !LOCAL_QUOTED.test(local)) return false;
  if (domain.toLowerCase() === "localhost") return true;
  return DOMAIN.test(domain) || IP_LITERAL.test(domain);
}

/** Key of the realm's email index: Zulip matches emails case-insensitively. */
export function emailKey(email: string): string {
  return email.trim().toLowerCase();
}

// ---- Names (zerver/lib/users.py check_full_name) ---------------------------

export const MAX_NAME_LENGTH = 100;
export const MIN_NAME_LENGTH = 2;
const NAME_INVALID_CHARS = ["*", "`", "\\", ">", '"', "@"];
// Zulip's check_string_is_printable: control characters (Cc) and lone
// surrogates (Cs) are refused; other categories (e.g. the zero-width joiner
// in emoji sequences) are allowed.
const NOT_PRINTABLE = /[\p{Cc}\p{Cs}]/u;

/** Validates and returns the stripped name, with Zulip's error texts. */
export function checkFullName(raw: string): string {
  const name = raw.trim();
  const length = [...name].length;
  if (length > MAX_NAME_LENGTH) throw errors.nameTooLong();
  if (length < MIN_NAME_LENGTH) throw errors.nameTooShort();
  if (NOT_PRINTABLE.test(name) || NAME_INVALID_CHARS.some((c) => name.includes(c))) {
    throw errors.nameInvalidCharacters();
  }
  // Names ending in "|15" would be ambiguous in mention syntax.
  if (/\|\d+$/.test(raw)) throw errors.nameInvalidFormat();
  return name;
}

// ---- Passwords (zproject/backends.py check_password_strength) -------------

/** Zulip's PASSWORD_MIN_LENGTH default. Zulip also runs zxcvbn; we do not. */
export const PASSWORD_MIN_LENGTH = 6;

export function isStrongPassword(password: string): boolean {
  return password !== "" && [...password].length >= PASSWORD_MIN_LENGTH;
}

// ---- Keys and avatars -------------------------------------------------------

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Zulip's API key shape: 32 alphanumeric characters, from a CSPRNG. */
export function generateApiKey(): string {
  let out = "";
  while (out.length < 32) {
    for (const b of randomBytes(48)) {
      // 248 = 4 * 62: rejecting larger bytes keeps the draw uniform.
      if (b < 248 && out.length < 32) out += ALNUM[b % 62];
    }
  }
  return out;
}

/** Zulip's get_gravatar_url (not medium) for a user's email. */
export function gravatarUrl(email: string, avatarVersion: number): string {
  const hash = createHash("md5").update(email.toLowerCase()).digest("hex");
  return `https://secure.gravatar.com/avatar/${hash}?d=identicon&version=${avatarVersion}`;
}

/** Python's datetime.isoformat(timespec="minutes") in UTC. */
export function isoMinutes(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16)}+00:00`;
}
