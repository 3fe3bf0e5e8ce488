// Property-based fuzzing of every route (issue 10): request generators built
// with fast-check from the route list itself (gateway/routes/index.ts), a raw
// HTTP sender that can repeat keys, send lone surrogates and choose the
// transport, and the observable-state fingerprint the suite compares around
// every batch of rejected requests.
//
// The parsers declared by each route are the oracle: a value that
// `spec.parse` rejects locally must be rejected by the server, so every
// "forced" request carries at least one fault that makes it a 4xx by
// construction (anonymous on an authenticated route, a bad API key, a
// missing required parameter, both names of an alias pair, a value its
// parser rejects, or a path id that does not exist). "Free" requests send
// random values and may succeed.

import fc from "fast-check";
import type { ParamSpec, RouteDef } from "../../gateway/route-types.ts";
import { basicAuth, type Creds } from "./embedded.ts";

export type AuthKind = "owner" | "member" | "guest" | "anon" | "badkey";
export type Transport = "query" | "form" | "multipart" | "split";

export type FaultKind = "anon" | "badkey" | "missing" | "alias-both" | "bad-value" | "junk-path" | "none";

export interface FuzzRequest {
  route: string;
  method: RouteDef["method"];
  /** Path under the route's prefix, path parameters already substituted (raw, not yet encoded). */
  pathParts: { text: string; param: boolean }[];
  prefix: string;
  auth: AuthKind;
  /** Key/value pairs in order; a key may repeat (the last one counts). */
  pairs: [string, string][];
  transport: Transport;
  fault: FaultKind;
  /** What the fault is about (parameter name, path parameter), for the report. */
  detail: string;
}

// ---- Values -----------------------------------------------------------------------

const BIG_STRING = "x".repeat(100_000);
const DEEP_LIST = "[".repeat(3000) + "]".repeat(3000);
const DEEP_DICT = '{"a":'.repeat(2000) + "1" + "}".repeat(2000);
const UNCLOSED = "[".repeat(5000);
const LONG_INT_LIST = JSON.stringify(Array.from({ length: 10_000 }, (_, i) => i));

/** Hand-picked raw values: wrong types, boundaries, unicode, nested and invalid JSON. */
export const POOL: readonly string[] = [
  "",
  " ",
  "0",
  "1",
  "-1",
  "2",
  "100",
  "1.5",
  "5.0",
  "1e3",
  "-0",
  "2147483648",
  "9007199254740991",
  "9007199254740993",
  "1" + "0".repeat(40),
  "-" + "9".repeat(40),
  "NaN",
  "Infinity",
  "0x10",
  "true",
  "false",
  "True",
  "null",
  '"5"',
  '"text"',
  "[]",
  "{}",
  "[1,2]",
  '["a"]',
  '[1,"a",null]',
  "[1.5]",
  "[-1]",
  "[9007199254740993]",
  '{"a":1}',
  '[{"name":"fuzz"}]',
  '[{"operator":"channel","operand":"fuzz"}]',
  '[{"operator":"is","operand":"starred","negated":"yes"}]',
  '[["stream","x"]]',
  '{"a":{"b":{"c":[1,{"d":null}]}}}',
  "[",
  "{",
  "[1,]",
  "{'a':1}",
  "abc",
  "newest",
  "oldest",
  "first_unread",
  "add",
  "remove",
  "read",
  "starred",
  "stream",
  "private",
  "direct",
  "channel",
  "unicode_emoji",
  "smile",
  "1f642",
  "😀",
  "\u202Eevil\u202C",
  "\u0000",
  "a\u0000b",
  "\uFEFF",
  "e\u0301",
  "\uD800",
  "x\uDC00y",
  '"\\u0000"',
  '["\\ud800"]',
  '{"\\u0000":1}',
  BIG_STRING,
  DEEP_LIST,
  DEEP_DICT,
  UNCLOSED,
  LONG_INT_LIST,
  "owner@example.com",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "../../etc/passwd",
  "%00",
  "%ZZ",
  "__proto__",
];

/** Random raw values on top of the pool. */
const randomValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...POOL) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? "null") },
  { weight: 1, arbitrary: fc.integer().map(String) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String) },
  { weight: 1, arbitrary: fc.double().map(String) },
  {
    weight: 1,
    arbitrary: fc.array(fc.integer({ min: -5, max: 2000 }), { maxLength: 5 }).map((a) => JSON.stringify(a)),
  },
);

/** Path ids that name nothing: unknown, huge, negative, not numbers, unicode, overlong. */
export const JUNK_PATH: readonly string[] = [
  "0",
  "-1",
  "987654321",
  "9007199254740993",
  "99999999999999999999999999",
  "1.5",
  "1e3",
  "abc",
  "null",
  "[1]",
  "\u0000",
  "\u202E1",
  "🙂",
  "\uD800",
  "x".repeat(2000),
];

/** Parameter names no route declares, including prototype keys. */
const EXTRA_KEYS: readonly string[] = [
  "zz_unknown",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "",
  "a[b]",
  "😀",
];

/** No lone surrogates (String.prototype.isWellFormed, missing from this TS lib). */
function wellFormed(s: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

function parses(spec: ParamSpec, name: string, raw: string): boolean {
  try {
    spec.parse(raw, name);
    return true;
  } catch {
    return false;
  }
}

/** Values the parser accepts / rejects, found by running the route's own parser on the pool. */
interface ParamInfo {
  name: string;
  names: string[];
  required: boolean;
  good: string[];
  bad: string[];
}

function paramInfo(name: string, spec: ParamSpec): ParamInfo {
  const good: string[] = [];
  const bad: string[] = [];
  for (const v of POOL) {
    // The server sees lone surrogates after percent-decoding of invalid
    // UTF-8 (U+FFFD or raw bytes), so they are no oracle either way.
    if (!wellFormed(v)) continue;
    (parses(spec, name, v) ? good : bad).push(v);
  }
  return { name, names: [name, ...(spec.aliases ?? [])], required: spec.required === true, good, bad };
}

// ---- Routes --------------------------------------------------------------------------

export interface RouteModel {
  def: RouteDef;
  key: string;
  params: ParamInfo[];
  /** Path segments; a parameter segment has its name (":x" -> "x", "*" -> "*"). */
  segments: { text: string; param: boolean }[];
  /** Free (unforced) requests are not sent: their success is destructive for the run itself. */
  noFree: boolean;
}

/**
 * Routes whose success would wreck the run's own fixtures (the callers'
 * credentials, the owner's role, the fixtures' existence): they get forced
 * faults only, never free requests.
 */
export const NO_FREE: ReadonlySet<string> = new Set([
  "DELETE /api/v1/users/me",
  "DELETE /api/v1/users/:user_id",
  "PATCH /api/v1/users/:user_id",
  "POST /api/v1/bots/:bot_id/api_key/regenerate",
  "POST /api/v1/users/me/api_key/regenerate",
  "DELETE /api/v1/bots/:bot_id",
  "PATCH /api/v1/bots/:bot_id",
  "PATCH /api/v1/settings",
  "PATCH /api/v1/settings/display",
  "PATCH /api/v1/settings/notifications",
  "DELETE /api/v1/streams/:stream_id",
  "PATCH /api/v1/streams/:stream_id",
  "DELETE /api/v1/messages/:message_id",
  "POST /api/v1/user_groups/:user_group_id/deactivate",
  "PATCH /api/v1/user_groups/:user_group_id",
  "DELETE /api/v1/realm/filters/:filter_id",
  "DELETE /api/v1/realm/profile_fields/:field_id",
  "DELETE /api/v1/saved_snippets/:saved_snippet_id",
  "DELETE /api/v1/drafts/:draft_id",
  "DELETE /api/v1/users/me/subscriptions",
  "PATCH /api/v1/realm",
  "DELETE /api/v1/realm/emoji/*",
  "PATCH /api/v1/users/me/subscriptions",
  "POST /api/v1/streams/:stream_id/delete_topic",
  // A view made by a free request could be named like a junk path value, which then exists.
  "POST /api/v1/navigation_views",
]);

export function routeKey(def: RouteDef): string {
  return `${def.method} ${def.prefix ?? "/api/v1"}${def.path}`;
}

export function modelRoutes(defs: readonly RouteDef[]): RouteModel[] {
  return defs.map((def) => ({
    def,
    key: routeKey(def),
    params: Object.entries(def.params).map(([n, s]) => paramInfo(n, s)),
    segments: def.path
      .split("/")
      .slice(1)
      .map((s) => (s.startsWith(":") ? { text: s.slice(1), param: true } : { text: s, param: s === "*" })),
    noFree: NO_FREE.has(routeKey(def)),
  }));
}

// ---- Generators ------------------------------------------------------------------------

/** Valid ids of the run's fixtures, by path parameter name ("*" is the emoji name). */
export type Fixtures = Record<string, string>;

function transportFor(def: RouteDef): fc.Arbitrary<Transport> {
  return def.method === "GET" ? fc.constant("query") : fc.constantFrom("query", "form", "multipart", "split");
}

/** Random noise added to every request: other parameters, repeats, unknown keys. */
function noise(rm: RouteModel, exclude: Set<string>): fc.Arbitrary<[string, string][]> {
  const names = rm.params.map((p) => p.name).filter((n) => !exclude.has(n));
  const some =
    names.length === 0
      ? fc.constant([] as [string, string][])
      : fc
          .array(fc.tuple(fc.constantFrom(...names), fc.boolean(), randomValue, fc.boolean()), {
            maxLength: 4,
          })
          .map((xs) => {
            const out: [string, string][] = [];
            for (const [n, useGood, v, dup] of xs) {
              const info = rm.params.find((p) => p.name === n)!;
              const value = useGood && info.good.length > 0 ? info.good[v.length % info.good.length]! : v;
              // A duplicated key: some other value first, this one last (it counts).
              if (dup) out.push([n, v === value ? "1" : v]);
              out.push([n, value]);
            }
            return out;
          });
  const extra = fc.array(fc.tuple(fc.constantFrom(...EXTRA_KEYS), randomValue), { maxLength: 2 });
  return fc.tuple(some, extra).map(([a, b]) => [...a, ...b]);
}

/** Every required parameter with a value its parser accepts (so a later fault is the one that counts). */
function requiredGood(rm: RouteModel, skip: Set<string>): fc.Arbitrary<[string, string][]> {
  const req = rm.params.filter((p) => p.required && !skip.has(p.name));
  if (req.length === 0) return fc.constant([]);
  return fc.tuple(
    ...req.map((p) =>
      (p.good.length > 0 ? fc.constantFrom(...p.good) : randomValue).map(
        (v) => [p.name, v] as [string, string],
      ),
    ),
  );
}

function pathWith(
  rm: RouteModel,
  fixtures: Fixtures,
  junk?: { index: number; value: string },
): FuzzRequest["pathParts"] {
  let k = -1;
  return rm.segments.map((s) => {
    if (!s.param) return { text: s.text, param: false };
    k++;
    if (junk && junk.index === k) return { text: junk.value, param: true };
    return { text: fixtures[s.text] ?? "1", param: true };
  });
}

function base(rm: RouteModel): Pick<FuzzRequest, "route" | "method" | "prefix"> {
  return { route: rm.key, method: rm.def.method, prefix: rm.def.prefix ?? "/api/v1" };
}

const callerAuth: fc.Arbitrary<AuthKind> = fc.constantFrom("owner", "owner", "member", "guest");

/** Rejected values that fit the route's transport (a GET's query string). */
function badFor(rm: RouteModel, p: ParamInfo): string[] {
  return rm.def.method === "GET" ? p.bad.filter((v) => encodeRaw(v).length <= QUERY_LIMIT) : p.bad;
}

/** The faults this route can be given. */
function faultKinds(rm: RouteModel): FaultKind[] {
  const kinds: FaultKind[] = [];
  if (rm.def.auth === "required") kinds.push("anon");
  if (rm.def.auth !== "none") kinds.push("badkey");
  if (rm.params.some((p) => p.required)) kinds.push("missing");
  if (rm.params.some((p) => p.names.length > 1)) kinds.push("alias-both");
  if (rm.params.some((p) => badFor(rm, p).length > 0)) kinds.push("bad-value", "bad-value");
  if (rm.segments.some((s) => s.param)) kinds.push("junk-path", "junk-path");
  return kinds;
}

/** A request that must be rejected: one fault by construction, plus noise. */
export function forcedRequest(rm: RouteModel, fixtures: Fixtures): fc.Arbitrary<FuzzRequest> | null {
  const kinds = faultKinds(rm);
  if (kinds.length === 0) return null;
  return fc.constantFrom(...kinds).chain((kind): fc.Arbitrary<FuzzRequest> => {
    const b = base(rm);
    const plain = (auth: fc.Arbitrary<AuthKind>, fault: FaultKind, detail: string) =>
      fc
        .record({
          auth,
          req: requiredGood(rm, new Set()),
          extra: noise(rm, new Set()),
          transport: transportFor(rm.def),
        })
        .map(({ auth: a, req, extra, transport }) => ({
          ...b,
          pathParts: pathWith(rm, fixtures),
          auth: a,
          pairs: [...req, ...extra],
          transport,
          fault,
          detail,
        }));
    switch (kind) {
      case "anon":
        return plain(fc.constant("anon"), "anon", "");
      case "badkey":
        return plain(fc.constant("badkey"), "badkey", "");
      case "missing": {
        const required = rm.params.filter((p) => p.required);
        return fc.constantFrom(...required).chain((p) => {
          const skip = new Set([p.name]);
          return fc
            .record({
              auth: callerAuth,
              req: requiredGood(rm, skip),
              extra: noise(rm, skip),
              transport: transportFor(rm.def),
            })
            .map(({ auth, req, extra, transport }) => ({
              ...b,
              pathParts: pathWith(rm, fixtures),
              auth,
              pairs: [...req, ...extra],
              transport,
              fault: "missing" as const,
              detail: p.name,
            }));
        });
      }
      case "alias-both": {
        const aliased = rm.params.filter((p) => p.names.length > 1);
        return fc.constantFrom(...aliased).chain((p) =>
          fc
            .record({
              auth: callerAuth,
              req: requiredGood(rm, new Set([p.name])),
              extra: noise(rm, new Set([p.name])),
              v1: randomValue,
              v2: randomValue,
              alias: fc.constantFrom(...p.names.slice(1)),
              transport: transportFor(rm.def),
            })
            .map(({ auth, req, extra, v1, v2, alias, transport }) => ({
              ...b,
              pathParts: pathWith(rm, fixtures),
              auth,
              pairs: [...req, [p.name, v1], [alias, v2], ...extra] as [string, string][],
              transport,
              fault: "alias-both" as const,
              detail: `${p.name}+${alias}`,
            })),
        );
      }
      case "bad-value": {
        const breakable = rm.params.filter((p) => badFor(rm, p).length > 0);
        return fc.constantFrom(...breakable).chain((p) =>
          fc
            .record({
              auth: callerAuth,
              req: requiredGood(rm, new Set([p.name])),
              extra: noise(rm, new Set([p.name])),
              bad: fc.constantFrom(...badFor(rm, p)),
              name: fc.constantFrom(...p.names),
              transport: transportFor(rm.def),
            })
            .map(({ auth, req, extra, bad, name, transport }) => ({
              ...b,
              pathParts: pathWith(rm, fixtures),
              auth,
              // The fault last: a repeated key's last value is the one read.
              pairs: [...req, ...extra, [name, bad]] as [string, string][],
              transport,
              fault: "bad-value" as const,
              detail: `${name}=${preview(bad)}`,
            })),
        );
      }
      case "junk-path": {
        const n = rm.segments.filter((s) => s.param).length;
        return fc
          .record({
            auth: callerAuth,
            req: requiredGood(rm, new Set()),
            extra: noise(rm, new Set()),
            index: fc.integer({ min: 0, max: n - 1 }),
            junk: fc.constantFrom(...JUNK_PATH),
            transport: transportFor(rm.def),
          })
          .map(({ auth, req, extra, index, junk, transport }) => ({
            ...b,
            pathParts: pathWith(rm, fixtures, { index, value: junk }),
            auth,
            pairs: [...req, ...extra],
            transport,
            fault: "junk-path" as const,
            detail: preview(junk),
          }));
      }
      default:
        throw new Error(kind);
    }
  });
}

/** A request with random values and no deliberate fault: it may succeed. */
export function freeRequest(rm: RouteModel, fixtures: Fixtures): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      auth: callerAuth,
      req: requiredGood(rm, new Set()),
      extra: noise(rm, new Set()),
      transport: transportFor(rm.def),
    })
    .map(({ auth, req, extra, transport }) => ({
      ...base(rm),
      pathParts: pathWith(rm, fixtures),
      auth,
      pairs: [...req, ...extra],
      transport,
      fault: "none" as const,
      detail: "",
    }));
}

// ---- Sending -----------------------------------------------------------------------

/**
 * Percent-encoding that keeps what the client meant: well-formed text as
 * UTF-8, a lone surrogate as the (invalid) UTF-8 bytes of its code unit.
 */
export function encodeRaw(s: string): string {
  let out = "";
  let chunk = "";
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    if (ch >= 0xd800 && ch <= 0xdbff && i + 1 < s.length) {
      const lo = s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        chunk += s[i]! + s[i + 1]!;
        i++;
        continue;
      }
    }
    if (ch >= 0xd800 && ch <= 0xdfff) {
      out += encodeURIComponent(chunk);
      chunk = "";
      out +=
        `%${(0xe0 | (ch >> 12)).toString(16)}%${(0x80 | ((ch >> 6) & 0x3f)).toString(16)}%${(0x80 | (ch & 0x3f)).toString(16)}`.toUpperCase();
      continue;
    }
    chunk += s[i]!;
  }
  return out + encodeURIComponent(chunk);
}

function encodePairs(pairs: [string, string][]): string {
  return pairs.map(([k, v]) => `${encodeRaw(k)}=${encodeRaw(v)}`).join("&");
}

export interface Callers {
  owner: Creds;
  member: Creds;
  guest: Creds;
}

export interface Sent {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  text: string;
}

/**
 * Large values never travel in a query string: Node's 16 kB header limit
 * answers 431 before the app (Zulip's nginx: 414), which is not what is
 * fuzzed here.
 */
export const QUERY_LIMIT = 8000;
const GET_NOISE_LIMIT = 300;

export async function send(baseUrl: string, callers: Callers, r: FuzzRequest): Promise<Sent> {
  const headers: Record<string, string> = {};
  if (r.auth === "owner" || r.auth === "member" || r.auth === "guest")
    headers.authorization = basicAuth(callers[r.auth]);
  if (r.auth === "badkey")
    headers.authorization = basicAuth({ email: callers.owner.email, apiKey: "0".repeat(32) });
  const path = r.pathParts.map((p) => (p.param ? encodeRaw(p.text) : p.text)).join("/");
  let url = `${baseUrl}${r.prefix}/${path}`;
  let query: [string, string][] = [];
  let bodyPairs: [string, string][] = [];
  const transport = r.transport;
  if (transport === "query") query = r.pairs;
  else if (transport === "split") r.pairs.forEach((p, i) => (i % 2 === 0 ? query : bodyPairs).push(p));
  else bodyPairs = r.pairs;
  if (r.method === "GET") {
    // Noise values are cut so the query string fits; a forced bad value
    // (the last pair) was chosen to fit already.
    const keep = r.fault === "bad-value" ? query.length - 1 : query.length;
    query = query.map(([k, v], i) => [
      k,
      i < keep && v.length > GET_NOISE_LIMIT ? v.slice(0, GET_NOISE_LIMIT) : v,
    ]);
  } else if (encodePairs(query).length > QUERY_LIMIT) {
    bodyPairs = r.pairs;
    query = [];
  }
  if (query.length > 0) url += `?${encodePairs(query)}`;
  let body: string | FormData | undefined;
  if (r.method !== "GET") {
    if (transport === "multipart") {
      const fd = new FormData();
      for (const [k, v] of bodyPairs) fd.append(k, v);
      body = fd;
    } else {
      headers["content-type"] = "application/x-www-form-urlencoded";
      body = encodePairs(bodyPairs);
    }
  }
  const res = await fetch(url, { method: r.method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Left undefined: the envelope check reports the text.
  }
  return { status: res.status, body: parsed, text };
}

export function preview(s: string, n = 60): string {
  const j = JSON.stringify(s);
  return j.length > n ? `${j.slice(0, n)}…(${s.length} chars)` : j;
}

/** One line that reproduces the request (values shortened). */
export function describeRequest(r: FuzzRequest): string {
  const path = r.prefix + "/" + r.pathParts.map((p) => (p.param ? preview(p.text, 30) : p.text)).join("/");
  const pairs = r.pairs.map(([k, v]) => `${k}=${preview(v, 40)}`).join(" ");
  return `${r.method} ${path} as ${r.auth} via ${r.transport} [${r.fault}${r.detail ? ` ${r.detail}` : ""}] ${pairs}`;
}

/** Problems with a non-2xx answer's body, or null when it is Zulip's error envelope. */
export function envelopeProblem(s: Sent): string | null {
  const b = s.body;
  if (b === null || typeof b !== "object") return `not JSON: ${s.text.slice(0, 200)}`;
  if (b.result !== "error") return `result is ${JSON.stringify(b.result)}`;
  if (typeof b.msg !== "string" || b.msg === "") return `msg is ${JSON.stringify(b.msg)}`;
  if (typeof b.code !== "string" || b.code === "") return `code is ${JSON.stringify(b.code)}`;
  return null;
}

// ---- State ----------------------------------------------------------------------------

/** Fields of POST /register that change without any state change. */
const VOLATILE = new Set([
  "queue_id",
  "last_event_id",
  "presences",
  "server_timestamp",
  "presence_last_update_id",
]);

/**
 * What the callers can observe: POST /register (every fetch type) as the
 * owner, a member and a guest, plus the newest 1000 messages the owner and
 * the member see, minus the volatile fields.
 */
export async function fingerprint(baseUrl: string, callers: Callers): Promise<Record<string, unknown>> {
  const call = async (method: string, path: string, params: string, who: Creds) => {
    const isGet = method === "GET";
    const res = await fetch(`${baseUrl}/api/v1${path}${isGet && params ? `?${params}` : ""}`, {
      method,
      headers: { authorization: basicAuth(who), "content-type": "application/x-www-form-urlencoded" },
      body: isGet ? undefined : params,
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const body = (await res.json()) as any;
    if (res.status !== 200)
      throw new Error(`fingerprint ${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  const out: Record<string, unknown> = {};
  for (const who of ["owner", "member", "guest"] as const) {
    const reg = await call("POST", "/register", "", callers[who]);
    await call("DELETE", "/events", `queue_id=${encodeURIComponent(reg.queue_id)}`, callers[who]);
    for (const k of Object.keys(reg)) if (!VOLATILE.has(k)) out[`${who}.register.${k}`] = reg[k];
  }
  for (const who of ["owner", "member"] as const) {
    const m = await call(
      "GET",
      "/messages",
      "anchor=newest&num_before=1000&num_after=0&narrow=%5B%5D",
      callers[who],
    );
    out[`${who}.messages`] = m.messages;
  }
  return out;
}

/** The keys whose values differ, for the report. */
export function diffKeys(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}
