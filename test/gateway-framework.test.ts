// Unit tests of the HTTP layer (gateway/app.ts, params.ts, auth.ts,
// realm-resolver.ts) with a fake actor side: an in-memory ActorClient that
// answers resolveHost, authVerify and a few test methods, and a tiny bus.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { ZulipError } from "../actors/errors.ts";
import type { Obj } from "../actors/types.ts";
import type {
  ActorClient,
  ActorRequest,
  ActorResponse,
  Bus,
  Subscription,
} from "../cluster/transport/contract.ts";
import { buildApp, c, p, param, uploadedFiles, type RouteDef } from "../gateway/index.ts";
import { pb, toPbMap } from "../proto/codec.ts";
import { captureLogs } from "./support/logs.ts";

// ---- Fakes ---------------------------------------------------------------------

const KEY = "abcdefghijklmnopqrstuvwxyz012345";
const KEY2 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ543210";

interface FakeUser {
  userId: number;
  apiKey: string;
  role: number;
  isBot: boolean;
  botType: number | null;
  isActive: boolean;
  realmDeactivated: boolean;
}

class FakeClient implements ActorClient {
  readonly hosts = new Map<string, number>([
    ["localhost", 1],
    ["chat.example.com", 2],
  ]);
  /** `${realm}:${email}` -> user */
  readonly users = new Map<string, FakeUser>();
  readonly requests: ActorRequest[] = [];
  lookups = 0;
  resolves = 0;

  async request(req: ActorRequest): Promise<ActorResponse> {
    this.requests.push(req);
    switch (req.method) {
      case "resolveHost": {
        this.resolves++;
        const realmId = this.hosts.get(req.args.host as string);
        if (realmId === undefined) {
          return {
            ok: false,
            kind: "zulip",
            code: "NONEXISTENT_SUBDOMAIN",
            msg: "Invalid subdomain",
            status: 404,
          };
        }
        return { ok: true, value: { realmId } };
      }
      case "authVerify": {
        // As the realm actor: the key is compared here and never answered.
        this.lookups++;
        const u = this.users.get(`${req.ref.realm}:${req.args.email as string}`);
        if (!u || u.apiKey !== req.args.apiKey) return { ok: true, value: null };
        const { apiKey: _key, ...rec } = u;
        return { ok: true, value: rec };
      }
      case "echo":
        return { ok: true, value: { args: req.args, shard: req.shard, method: req.method } };
      case "fail":
        return {
          ok: false,
          kind: "zulip",
          code: "BAD_EVENT_QUEUE_ID",
          msg: "Bad event queue ID: abc",
          status: 400,
          extra: { queue_id: "abc" },
        };
      case "moved":
        return { ok: false, kind: "moved", code: "MOVED", msg: "moved", status: 503 };
      default:
        return { ok: false, kind: "zulip", code: "BAD_REQUEST", msg: `no method ${req.method}`, status: 400 };
    }
  }
}

class TinyBus implements Bus {
  private readonly subs = new Map<string, Set<(data: Uint8Array, subject: string) => void>>();
  publish(subject: string, data: Uint8Array): void {
    for (const f of this.subs.get(subject) ?? []) f(data, subject);
  }
  subscribe(subject: string, onMessage: (data: Uint8Array, subject: string) => void): Subscription {
    let set = this.subs.get(subject);
    if (!set) this.subs.set(subject, (set = new Set()));
    set.add(onMessage);
    return { unsubscribe: () => set.delete(onMessage) };
  }
  count(): number {
    let n = 0;
    for (const s of this.subs.values()) n += s.size;
    return n;
  }
}

// ---- Test routes ----------------------------------------------------------------

const echoParams = {
  n: param(p.int({ min: 0, max: 100 }), { required: true }),
  flag: param(p.bool(), { default: false }),
  data: param(p.json(c.dict({ a: { check: c.int(), required: true }, b: { check: c.list(c.string()) } }))),
  ids: param(p.intList()),
  names: param(p.stringList()),
  topic: param(p.string({ maxLength: 10 }), { aliases: ["subject"] }),
  mode: param(p.oneOf(["x", "y"] as const, p.string())),
  anything: param(p.json()),
};

const echo: RouteDef["handler"] = async (req) => ({
  params: req.params as Obj,
  path: req.path,
  caller: req.caller as unknown as Obj,
  realm_id: req.realmId,
  host: req.host,
  scheme: req.scheme,
  files: uploadedFiles(req).map((f) => ({ name: f.fieldname, filename: f.filename, size: f.data.length })),
});

const routes: RouteDef[] = [
  { method: "POST", path: "/test/echo", auth: "required", params: echoParams, handler: echo },
  { method: "PATCH", path: "/test/echo", auth: "required", params: echoParams, handler: echo },
  { method: "DELETE", path: "/test/echo", auth: "required", params: echoParams, handler: echo },
  { method: "PUT", path: "/test/echo", auth: "required", params: echoParams, handler: echo },
  { method: "GET", path: "/test/echo", auth: "required", params: echoParams, handler: echo },
  { method: "GET", path: "/test/public", auth: "optional", params: {}, handler: echo },
  { method: "GET", path: "/test/open", auth: "none", params: {}, handler: echo },
  { method: "GET", path: "/test/items/:item_id", auth: "required", params: {}, handler: echo },
  { method: "PATCH", path: "/test/items/:item_id", auth: "required", params: {}, handler: echo },
  {
    method: "POST",
    path: "/test/call",
    auth: "required",
    params: { what: param(p.string(), { required: true }) },
    handler: async ({ call, params }) => {
      const value = await call({ kind: "user", realm: 1, key: "7" }, params.what as string, { x: 1 });
      return { value };
    },
  },
  {
    method: "POST",
    path: "/test/order",
    auth: "required",
    params: { a: param(p.int()), b: param(p.int(), { required: true }) },
    handler: echo,
  },
  {
    method: "POST",
    path: "/test/boom",
    auth: "none",
    params: {},
    handler: async () => {
      throw new Error("boom");
    },
  },
  {
    method: "POST",
    path: "/test/teapot",
    auth: "none",
    params: {},
    handler: async () => {
      throw new ZulipError("I'm a teapot", "TEAPOT", 418, { spout: 1 }, { "X-Tea": "yes" });
    },
  },
];

// ---- Helpers -----------------------------------------------------------------------

function basic(email: string, key: string): string {
  return "Basic " + Buffer.from(`${email}:${key}`).toString("base64");
}
const IAGO = basic("iago@example.com", KEY);

function form(o: Record<string, string>): string {
  return new URLSearchParams(o).toString();
}

function multipartBody(
  fields: [string, string][],
  files: { name: string; filename: string; data: string }[] = [],
): { body: Buffer; type: string } {
  const boundary = "----zulipTestBoundary7MA4YWxkTrZu0gW";
  const chunks: string[] = [];
  for (const [k, v] of fields) {
    chunks.push(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
  }
  for (const f of files) {
    chunks.push(
      `--${boundary}\r\nContent-Disposition: form-data; name="${f.name}"; filename="${f.filename}"\r\n` +
        `Content-Type: application/octet-stream\r\n\r\n${f.data}\r\n`,
    );
  }
  chunks.push(`--${boundary}--\r\n`);
  return { body: Buffer.from(chunks.join(""), "utf8"), type: `multipart/form-data; boundary=${boundary}` };
}

interface Res {
  status: number;
  headers: Record<string, unknown>;
  json: Record<string, unknown>;
  raw: string;
}

async function call(
  app: FastifyInstance,
  method: string,
  url: string,
  o: {
    form?: Record<string, string>;
    body?: string | Buffer;
    type?: string;
    auth?: string | null;
    headers?: Record<string, string>;
  } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...o.headers };
  const auth = o.auth === undefined ? IAGO : o.auth;
  if (auth !== null) headers.authorization = auth;
  let payload: string | Buffer | undefined;
  if (o.form) {
    payload = form(o.form);
    headers["content-type"] = "application/x-www-form-urlencoded";
  } else if (o.body !== undefined) {
    payload = o.body;
    if (o.type) headers["content-type"] = o.type;
  }
  const res = await app.inject({
    method: method as "GET",
    url,
    headers,
    ...(payload !== undefined ? { payload } : {}),
  });
  let json: Record<string, unknown> = {};
  if (res.body.length > 0 && String(res.headers["content-type"] ?? "").includes("json")) json = res.json();
  return { status: res.statusCode, headers: res.headers, json, raw: res.body };
}

function assertError(res: Res, status: number, msg: string, code?: string): void {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json.result, "error");
  assert.equal(res.json.msg, msg);
  if (code === undefined) assert.ok(!("code" in res.json), `unexpected code ${String(res.json.code)}`);
  else assert.equal(res.json.code, code);
  assert.ok(!("ignored_parameters_unsupported" in res.json));
}

function params(res: Res): Record<string, unknown> {
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.equal(res.json.result, "success");
  assert.equal(res.json.msg, "");
  return res.json.params as Record<string, unknown>;
}

/** Deterministic PRNG (mulberry32) so a fuzz failure reproduces. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- Setup ---------------------------------------------------------------------------

let client: FakeClient;
let bus: TinyBus;
let app: FastifyInstance;

function addUser(email: string, u: Partial<FakeUser> = {}, realm = 1): void {
  client.users.set(`${realm}:${email}`, {
    userId: 10,
    apiKey: KEY,
    role: 200,
    isBot: false,
    botType: null,
    isActive: true,
    realmDeactivated: false,
    ...u,
  });
}

before(async () => {
  client = new FakeClient();
  bus = new TinyBus();
  addUser("iago@example.com", { userId: 10, role: 200 });
  addUser("off@example.com", { userId: 11, isActive: false });
  addUser("gone@example.com", { userId: 12, realmDeactivated: true });
  addUser("hook-bot@example.com", { userId: 13, isBot: true, botType: 2 });
  addUser("bot@example.com", { userId: 14, isBot: true, botType: 1 });
  addUser("iago@example.com", { userId: 99, apiKey: KEY2 }, 2);
  app = await buildApp({ client, bus, shards: 16, routes, requestTimeoutMs: 5000 });
  await app.ready();
});

after(async () => {
  await app.close();
  assert.equal(bus.count(), 0, "gateway left a bus subscription behind");
});

// ---- Parsers and checkers, directly --------------------------------------------------

function failsWith(f: () => unknown, msg: string): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof ZulipError, String(e));
    assert.equal(e.message, msg);
    assert.equal(e.status, 400);
    assert.equal(e.code, "BAD_REQUEST");
    return true;
  });
}

describe("gateway params", () => {
  test("params - int: strict JSON integers with range", () => {
    const int = p.int({ min: 1, max: 10 });
    assert.equal(int("5", "n"), 5);
    assert.equal(int(" 7 ", "n"), 7);
    assert.equal(p.int()("-0", "n"), 0);
    assert.equal(p.int()("-12", "n"), -12);
    failsWith(() => int("5.0", "n"), "n is not an integer");
    failsWith(() => int("1e1", "n"), "n is not an integer");
    failsWith(() => int('"5"', "n"), "n is not an integer");
    failsWith(() => int("true", "n"), "n is not an integer");
    failsWith(() => int("[5]", "n"), "n is not an integer");
    failsWith(() => int("abc", "n"), "n is not valid JSON");
    failsWith(() => int("05", "n"), "n is not valid JSON");
    failsWith(() => int("", "n"), "n is not valid JSON");
    failsWith(() => int("0", "n"), "n is too small");
    failsWith(() => int("11", "n"), "n is too large");
    failsWith(() => p.int()("123456789012345678901234", "n"), "n is too large");
    failsWith(() => p.int()("-123456789012345678901234", "n"), "n is too small");
  });

  test("params - bool: JSON booleans only", () => {
    const b = p.bool();
    assert.equal(b("true", "f"), true);
    assert.equal(b("false", "f"), false);
    assert.equal(b(" true", "f"), true);
    failsWith(() => b("True", "f"), "f is not valid JSON");
    failsWith(() => b("yes", "f"), "f is not valid JSON");
    failsWith(() => b("1", "f"), "f is not a boolean");
    failsWith(() => b('"true"', "f"), "f is not a boolean");
    failsWith(() => b("null", "f"), "f is not a boolean");
  });

  test("params - string: raw, length in code points", () => {
    const s = p.string({ maxLength: 3 });
    assert.equal(s('"x"', "t"), '"x"');
    assert.equal(s("🌍🌍🌍", "t"), "🌍🌍🌍"); // 6 UTF-16 units, 3 code points
    failsWith(() => s("abcd", "t"), "t is too long (limit: 3 characters)");
    assert.equal(p.string()("", "t"), "");
  });

  test("params - json with checkers: paths and texts", () => {
    const target = p.json(
      c.dict({
        user_ids: { check: c.list(c.int()), required: true },
        kind: { check: c.oneOf(["a", "b"]) },
        note: { check: c.nullable(c.string()) },
        on: { check: c.bool() },
      }),
    );
    assert.deepEqual(target('{"user_ids":[1,2],"kind":"a","note":null,"on":true}', "target_users"), {
      user_ids: [1, 2],
      kind: "a",
      note: null,
      on: true,
    });
    failsWith(() => target("{", "target_users"), "target_users is not valid JSON");
    failsWith(() => target("[]", "target_users"), "target_users is not a dict");
    failsWith(() => target("{}", "target_users"), "target_users field is missing: user_ids");
    failsWith(() => target('{"user_ids":{}}', "target_users"), 'target_users["user_ids"] is not a list');
    failsWith(
      () => target('{"user_ids":[1,"2"]}', "target_users"),
      'target_users["user_ids"][1] is not an integer',
    );
    failsWith(
      () => target('{"user_ids":[1,2.0]}', "target_users"),
      'target_users["user_ids"][1] is not an integer',
    );
    failsWith(
      () => target('{"user_ids":[1e2]}', "target_users"),
      'target_users["user_ids"][0] is not an integer',
    );
    failsWith(
      () => target('{"user_ids":[true]}', "target_users"),
      'target_users["user_ids"][0] is not an integer',
    );
    failsWith(() => target('{"user_ids":[],"kind":"c"}', "target_users"), 'Invalid target_users["kind"]');
    failsWith(
      () => target('{"user_ids":[],"note":5}', "target_users"),
      'target_users["note"] is not a string',
    );
    failsWith(() => target('{"user_ids":[],"on":1}', "target_users"), 'target_users["on"] is not a boolean');
    failsWith(
      () => target('{"user_ids":[],"zz":1}', "target_users"),
      'Argument "zz" at target_users["zz"] is unexpected',
    );
    // A float inside a string is not a number token.
    assert.deepEqual(p.json(c.dict({ s: { check: c.string() } }))('{"s":"5.0 1e2"}', "x"), { s: "5.0 1e2" });
    // allowExtra keeps going and drops the extra key.
    assert.deepEqual(p.json(c.dict({ a: { check: c.int() } }, { allowExtra: true }))('{"a":1,"b":2}', "x"), {
      a: 1,
    });
    // Without a checker, any JSON value.
    assert.deepEqual(p.json()('{"a":[1,null,"x"]}', "x"), { a: [1, null, "x"] });
  });

  test("params - intList: JSON list, or comma-joined as zulip-js sends it", () => {
    const l = p.intList();
    assert.deepEqual(l("[1,2,3]", "ids"), [1, 2, 3]);
    assert.deepEqual(l("1,2,3", "ids"), [1, 2, 3]);
    assert.deepEqual(l("1, 2", "ids"), [1, 2]);
    assert.deepEqual(l("5", "ids"), [5]);
    assert.deepEqual(l("", "ids"), []);
    assert.deepEqual(l("[]", "ids"), []);
    failsWith(() => l("[1,", "ids"), "ids is not valid JSON");
    failsWith(() => l("1,x", "ids"), "ids is not valid JSON");
    failsWith(() => l('{"a":1}', "ids"), "ids is not a list");
    failsWith(() => l('[1,"a"]', "ids"), "ids[1] is not an integer");
    failsWith(() => l("[1.5]", "ids"), "ids[0] is not an integer");
    failsWith(() => l("[1.0]", "ids"), "ids[0] is not an integer");
  });

  test("params - stringList and oneOf", () => {
    assert.deepEqual(p.stringList()('["a","b"]', "s"), ["a", "b"]);
    failsWith(() => p.stringList()('["a",1]', "s"), "s[1] is not a string");
    failsWith(() => p.stringList()('"a"', "s"), "s is not a list");
    const o = p.oneOf([1, 2], p.int());
    assert.equal(o("2", "o"), 2);
    failsWith(() => o("3", "o"), "Invalid o");
    failsWith(() => o("x", "o"), "o is not valid JSON");
  });

  test("params - param() keeps only what was given", () => {
    const parse = p.int();
    assert.deepEqual(param(parse), { parse });
    assert.deepEqual(param(parse, { required: true, aliases: ["b"], default: 3 }), {
      parse,
      required: true,
      aliases: ["b"],
      default: 3,
    });
  });
});

// ---- HTTP: parameters -----------------------------------------------------------------

describe("gateway http parameters", () => {
  test("gateway - urlencoded POST: types, defaults, success envelope", async () => {
    const res = await call(app, "POST", "/api/v1/test/echo", {
      form: { n: "5", flag: "true", data: '{"a":1,"b":["x"]}', ids: "[3,4]", names: '["q"]', mode: "y" },
    });
    assert.deepEqual(params(res), {
      n: 5,
      flag: true,
      data: { a: 1, b: ["x"] },
      ids: [3, 4],
      names: ["q"],
      mode: "y",
    });
    assert.ok(!("ignored_parameters_unsupported" in res.json));
    assert.equal(res.headers["content-type"], "application/json; charset=utf-8");
    assert.ok(res.raw.endsWith("}\n"));
    assert.deepEqual(res.json.caller, { realmId: 1, userId: 10, role: 200, isBot: false });
    assert.equal(res.json.realm_id, 1);
    assert.equal(res.json.host, "localhost");
    assert.equal(res.json.scheme, "http");
    // Default applies when absent.
    assert.deepEqual(params(await call(app, "POST", "/api/v1/test/echo", { form: { n: "0" } })), {
      n: 0,
      flag: false,
    });
  });

  test("gateway - multipart POST (zulip-js) with unicode and a file", async () => {
    const mp = multipartBody(
      [
        ["n", "7"],
        ["topic", "héllo 🌍"],
        ["ids", "[1,2]"],
        ["extra", "x"],
      ],
      [{ name: "file", filename: "a.txt", data: "hello" }],
    );
    const res = await call(app, "POST", "/api/v1/test/echo", { body: mp.body, type: mp.type });
    assert.deepEqual(params(res), { n: 7, flag: false, topic: "héllo 🌍", ids: [1, 2] });
    assert.deepEqual(res.json.ignored_parameters_unsupported, ["extra"]);
    assert.deepEqual(res.json.files, [{ name: "file", filename: "a.txt", size: 5 }]);
    // Multipart on PATCH too, with a repeated key: the last one counts.
    const mp2 = multipartBody([
      ["n", "1"],
      ["n", "2"],
    ]);
    assert.equal(
      params(await call(app, "PATCH", "/api/v1/test/echo", { body: mp2.body, type: mp2.type })).n,
      2,
    );
    // Errors inside a multipart body are still Zulip errors.
    const bad = multipartBody([["n", "x"]]);
    assertError(
      await call(app, "POST", "/api/v1/test/echo", { body: bad.body, type: bad.type }),
      400,
      "n is not valid JSON",
      "BAD_REQUEST",
    );
    const broken = {
      body: Buffer.from("--zz\r\nContent-Disposition: form-da"),
      type: "multipart/form-data; boundary=zz",
    };
    const r = await call(app, "POST", "/api/v1/test/echo", broken);
    assert.equal(r.status, 400);
    assert.equal(r.json.result, "error");
  });

  test("gateway - PATCH, DELETE and PUT read the query string (zulip-js) and the body", async () => {
    for (const method of ["PATCH", "DELETE", "PUT"]) {
      const q = await call(app, method, "/api/v1/test/echo?n=3&ids=1,2,3&topic=caf%C3%A9");
      assert.deepEqual(params(q), { n: 3, flag: false, ids: [1, 2, 3], topic: "café" }, method);
      const b = await call(app, method, "/api/v1/test/echo", { form: { n: "4", flag: "false" } });
      assert.deepEqual(params(b), { n: 4, flag: false }, method);
    }
  });

  test("gateway - body wins over query string; GET reads only the query string", async () => {
    const res = await call(app, "POST", "/api/v1/test/echo?n=1&zzz=1&both=1", {
      form: { n: "2", aaa: "1", both: "2" },
    });
    assert.equal(params(res).n, 2);
    assert.deepEqual(res.json.ignored_parameters_unsupported, ["aaa", "both", "zzz"]);
    const get = await call(app, "GET", "/api/v1/test/echo?n=9&ids=4,5&flag=true");
    assert.deepEqual(params(get), { n: 9, flag: true, ids: [4, 5] });
    // A repeated query key: the last one counts.
    assert.equal(params(await call(app, "GET", "/api/v1/test/echo?n=1&n=8")).n, 8);
  });

  test("gateway - application/json bodies are not parameters", async () => {
    const res = await call(app, "POST", "/api/v1/test/echo", { body: '{"n":5}', type: "application/json" });
    assertError(res, 400, "Missing 'n' argument", "REQUEST_VARIABLE_MISSING");
    assert.equal(res.json.var_name, "n");
    const broken = await call(app, "POST", "/api/v1/test/echo?n=5", {
      body: "{not json",
      type: "application/json",
    });
    assert.equal(params(broken).n, 5);
    const other = await call(app, "POST", "/api/v1/test/echo?n=6", { body: "n=1", type: "text/plain" });
    assert.equal(params(other).n, 6);
  });

  test("gateway - every type error text through HTTP", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ n: "x" }, "n is not valid JSON"],
      [{ n: "5.0" }, "n is not an integer"],
      [{ n: '"5"' }, "n is not an integer"],
      [{ n: "-1" }, "n is too small"],
      [{ n: "101" }, "n is too large"],
      [{ n: "1", flag: "True" }, "flag is not valid JSON"],
      [{ n: "1", flag: "1" }, "flag is not a boolean"],
      [{ n: "1", data: "{" }, "data is not valid JSON"],
      [{ n: "1", data: "[]" }, "data is not a dict"],
      [{ n: "1", data: "{}" }, "data field is missing: a"],
      [{ n: "1", data: '{"a":1,"b":[1]}' }, 'data["b"][0] is not a string'],
      [{ n: "1", data: '{"a":1,"c":1}' }, 'Argument "c" at data["c"] is unexpected'],
      [{ n: "1", ids: "[1,true]" }, "ids[1] is not an integer"],
      [{ n: "1", ids: "{}" }, "ids is not a list"],
      [{ n: "1", names: "[1]" }, "names[0] is not a string"],
      [{ n: "1", topic: "12345678901" }, "topic is too long (limit: 10 characters)"],
      [{ n: "1", subject: "12345678901" }, "topic is too long (limit: 10 characters)"],
      [{ n: "1", mode: "z" }, "Invalid mode"],
    ];
    for (const [f, msg] of cases) {
      assertError(
        await call(app, "POST", "/api/v1/test/echo?ignored=1", { form: f }),
        400,
        msg,
        "BAD_REQUEST",
      );
    }
  });

  test("gateway - missing and confusing parameters", async () => {
    const missing = await call(app, "POST", "/api/v1/test/echo", { form: { flag: "true", other: "1" } });
    assertError(missing, 400, "Missing 'n' argument", "REQUEST_VARIABLE_MISSING");
    assert.equal(missing.json.var_name, "n");
    const confusing = await call(app, "POST", "/api/v1/test/echo?subject=b", {
      form: { n: "1", topic: "a" },
    });
    assertError(
      confusing,
      400,
      "Can't decide between 'topic' and 'subject' arguments",
      "REQUEST_CONFUSING_VAR",
    );
    assert.equal(confusing.json.var_name1, "topic");
    assert.equal(confusing.json.var_name2, "subject");
    // The alias alone is fine and lands under the canonical name.
    assert.equal(
      params(await call(app, "POST", "/api/v1/test/echo", { form: { n: "1", subject: "s" } })).topic,
      "s",
    );
    // Declaration order: an earlier bad value wins over a later missing one (typed_endpoint parses in its loop).
    assertError(
      await call(app, "POST", "/api/v1/test/order", { form: { a: "x" } }),
      400,
      "a is not valid JSON",
      "BAD_REQUEST",
    );
    assertError(
      await call(app, "POST", "/api/v1/test/order", { form: { a: "1" } }),
      400,
      "Missing 'b' argument",
      "REQUEST_VARIABLE_MISSING",
    );
  });

  test("gateway - ignored_parameters_unsupported: sorted, absent when empty", async () => {
    const res = await call(app, "POST", "/api/v1/test/echo?b_q=1", {
      form: { n: "1", z: "1", a: "1", subject: "x" },
    });
    assert.deepEqual(res.json.ignored_parameters_unsupported, ["a", "b_q", "z"]);
    const none = await call(app, "POST", "/api/v1/test/echo", { form: { n: "1" } });
    assert.ok(!("ignored_parameters_unsupported" in none.json));
    const proto = await call(app, "GET", "/api/v1/test/echo?n=1&__proto__=1&constructor=2");
    assert.deepEqual(proto.json.ignored_parameters_unsupported, ["__proto__", "constructor"]);
  });
});

// ---- HTTP: authentication -------------------------------------------------------------

describe("gateway http auth", () => {
  const WWW = 'Basic realm="zulip"';
  const url = "/api/v1/test/echo?n=1";

  test("auth - every failure with its status, code and header", async () => {
    const cases: [string | null, number, string, string | undefined, boolean][] = [
      [null, 401, "Not logged in: API authentication or user session required", "UNAUTHORIZED", true],
      ["", 401, "Invalid authorization header for basic auth", "UNAUTHORIZED", true],
      ["Basic", 401, "Invalid authorization header for basic auth", "UNAUTHORIZED", true],
      ["Basic a b", 401, "Invalid authorization header for basic auth", "UNAUTHORIZED", true],
      ["Basic !!!!", 401, "Invalid authorization header for basic auth", "UNAUTHORIZED", true],
      [
        "Basic " + Buffer.from("no-colon").toString("base64"),
        401,
        "Invalid authorization header for basic auth",
        "UNAUTHORIZED",
        true,
      ],
      [
        "Basic " + Buffer.from("a:b:c").toString("base64"),
        401,
        "Invalid authorization header for basic auth",
        "UNAUTHORIZED",
        true,
      ],
      [
        "Basic " + Buffer.from([0xff, 0x3a, 0x61]).toString("base64"),
        401,
        "Invalid authorization header for basic auth",
        "UNAUTHORIZED",
        true,
      ],
      ["Bearer abc", 400, "This endpoint requires HTTP basic authentication.", "BAD_REQUEST", false],
      [basic("iago@example.com", "short"), 401, "Malformed API key", "UNAUTHORIZED", true],
      [basic("iago@example.com", KEY.slice(0, 31) + "-"), 401, "Malformed API key", "UNAUTHORIZED", true],
      [basic("nobody@example.com", KEY), 401, "Invalid API key", "UNAUTHORIZED", true],
      [basic("iago@example.com", KEY2), 401, "Invalid API key", "UNAUTHORIZED", true],
      [basic("off@example.com", KEY), 401, "Account is deactivated", "UNAUTHORIZED", true],
      [basic("gone@example.com", KEY), 401, "This organization has been deactivated", "UNAUTHORIZED", true],
      [
        basic("hook-bot@example.com", KEY),
        401,
        "This API is not available to incoming webhook bots.",
        "UNAUTHORIZED",
        true,
      ],
    ];
    for (const [auth, status, msg, code, www] of cases) {
      const res = await call(app, "GET", url, { auth });
      assertError(res, status, msg, code);
      assert.equal(res.headers["www-authenticate"], www ? WWW : undefined, `${auth}: WWW-Authenticate`);
    }
  });

  test("auth - accepted forms: scheme case, whitespace, email case, bots", async () => {
    for (const auth of [
      IAGO,
      "basic " + IAGO.slice(6),
      `  Basic   ${IAGO.slice(6)}  `,
      basic("IAGO@Example.COM", KEY),
      basic(" iago@example.com ", ` ${KEY} `),
    ]) {
      const res = await call(app, "GET", url, { auth });
      assert.equal(res.status, 200, `${auth}: ${JSON.stringify(res.json)}`);
      assert.equal((res.json.caller as { userId: number }).userId, 10);
    }
    const bot = await call(app, "GET", url, { auth: basic("bot@example.com", KEY) });
    assert.deepEqual(bot.json.caller, { realmId: 1, userId: 14, role: 200, isBot: true });
  });

  test("auth - optional and none", async () => {
    const anon = await call(app, "GET", "/api/v1/test/public", { auth: null });
    assert.equal(anon.status, 200);
    assert.equal(anon.json.caller, null);
    const named = await call(app, "GET", "/api/v1/test/public");
    assert.equal((named.json.caller as { userId: number }).userId, 10);
    const bad = await call(app, "GET", "/api/v1/test/public", { auth: basic("iago@example.com", KEY2) });
    assertError(bad, 401, "Invalid API key", "UNAUTHORIZED");
    const open = await call(app, "GET", "/api/v1/test/open", { auth: "Bearer whatever" });
    assert.equal(open.status, 200);
    assert.equal(open.json.caller, null);
  });

  test("auth - realm from Host: per-realm users, unknown host, cached", async () => {
    const other = await call(app, "GET", url, {
      auth: basic("iago@example.com", KEY2),
      headers: { host: "Chat.Example.com:8443" },
    });
    assert.equal(other.status, 200, JSON.stringify(other.json));
    assert.equal(other.json.realm_id, 2);
    assert.equal(other.json.host, "chat.example.com");
    assert.deepEqual(other.json.caller, { realmId: 2, userId: 99, role: 200, isBot: false });
    const before = client.resolves;
    await call(app, "GET", url, {
      auth: basic("iago@example.com", KEY2),
      headers: { host: "Chat.Example.com:8443" },
    });
    assert.equal(client.resolves, before, "host resolution is cached");
    const unknown = await call(app, "GET", url, { headers: { host: "nowhere.test" } });
    assertError(unknown, 404, "Invalid subdomain", "NONEXISTENT_SUBDOMAIN");
  });

  test("auth - lookups cached, dropped by notice.auth.invalidate", async () => {
    const email = "cache@example.com";
    addUser(email, { userId: 20 });
    const auth = basic(email, KEY);
    const start = client.lookups;
    assert.equal((await call(app, "GET", url, { auth })).status, 200);
    assert.equal((await call(app, "GET", url, { auth })).status, 200);
    assert.equal(client.lookups, start + 1, "second request served from the cache");

    // The key changes; until the notice, the gateway still has the old record.
    addUser(email, { userId: 20, apiKey: KEY2 });
    assert.equal((await call(app, "GET", url, { auth })).status, 200);
    const notice = (o: Obj) =>
      bus.publish("notice.auth.invalidate", pb().MapValue.encode(toPbMap(o)).finish());
    notice({ realmId: 1, email });
    assertError(await call(app, "GET", url, { auth }), 401, "Invalid API key", "UNAUTHORIZED");
    assert.equal((await call(app, "GET", url, { auth: basic(email, KEY2) })).status, 200);

    // "*" drops the whole realm; other realms keep theirs.
    const lookups = client.lookups;
    notice({ realmId: 1, email: "*" });
    assert.equal((await call(app, "GET", url, { auth: basic(email, KEY2) })).status, 200);
    assert.equal(client.lookups, lookups + 1);
    // Garbage on the subject is logged and ignored.
    const { lines: logged } = await captureLogs(() =>
      bus.publish("notice.auth.invalidate", new Uint8Array([0xff, 0xff, 0xff])),
    );
    assert.equal(logged.length, 1);
    assert.equal(logged[0]!.msg, "bad auth invalidation notice");
    assert.equal((await call(app, "GET", url, { auth: basic(email, KEY2) })).status, 200);

    // Unknown emails are not cached: creating the user works at once.
    const newcomer = basic("new@example.com", KEY);
    assertError(await call(app, "GET", url, { auth: newcomer }), 401, "Invalid API key", "UNAUTHORIZED");
    addUser("new@example.com", { userId: 21 });
    assert.equal((await call(app, "GET", url, { auth: newcomer })).status, 200);
  });
});

// ---- HTTP: shape ---------------------------------------------------------------------------

describe("gateway http shape", () => {
  test("shape - unknown path is a JSON 404", async () => {
    for (const u of [
      "/api/v1/nope",
      "/api/v1/test/echo/extra",
      "/api/v1/test/items/",
      "/elsewhere",
      "/api/v2/test/echo",
    ]) {
      assertError(await call(app, "GET", u), 404, "Not Found", "NOT_FOUND");
    }
    assertError(await call(app, "POST", "/api/v1/nope", { form: { a: "1" } }), 404, "Not Found", "NOT_FOUND");
    assertError(await call(app, "GET", "/api/v1/test/items/%E0%A4%A"), 404, "Not Found", "NOT_FOUND");
  });

  test("shape - wrong method is 405 with allowed_methods and Allow", async () => {
    const res = await call(app, "POST", "/api/v1/test/items/12");
    assertError(res, 405, "Method Not Allowed");
    assert.deepEqual(res.json.allowed_methods, ["GET", "PATCH", "HEAD"]);
    assert.equal(res.headers.allow, "GET, PATCH, HEAD");
    const del = await call(app, "DELETE", "/api/v1/test/call");
    assertError(del, 405, "Method Not Allowed");
    assert.deepEqual(del.json.allowed_methods, ["POST"]);
    const head = await call(app, "HEAD", "/api/v1/test/call");
    assert.equal(head.status, 405);
    assert.equal(head.headers.allow, "POST");
  });

  test("shape - HEAD works like GET; OPTIONS is 204 with Allow", async () => {
    const head = await call(app, "HEAD", "/api/v1/test/items/5");
    assert.equal(head.status, 200);
    assert.equal(head.raw, "");
    const opt = await call(app, "OPTIONS", "/api/v1/test/items/5");
    assert.equal(opt.status, 204);
    assert.equal(opt.raw, "");
    assert.equal(opt.headers.allow, "GET, HEAD, PATCH");
    assertError(await call(app, "OPTIONS", "/api/v1/nope"), 404, "Not Found", "NOT_FOUND");
    const path = await call(app, "GET", "/api/v1/test/items/a%40b.com");
    assert.deepEqual(path.json.path, { item_id: "a@b.com" });
  });

  test("shape - errors: handler ZulipError, actor errors, unexpected exceptions", async () => {
    const tea = await call(app, "POST", "/api/v1/test/teapot?x=1");
    assertError(tea, 418, "I'm a teapot", "TEAPOT");
    assert.equal(tea.json.spout, 1);
    assert.equal(tea.headers["x-tea"], "yes");

    const fail = await call(app, "POST", "/api/v1/test/call", { form: { what: "fail" } });
    assertError(fail, 400, "Bad event queue ID: abc", "BAD_EVENT_QUEUE_ID");
    assert.equal(fail.json.queue_id, "abc");

    const moved = await call(app, "POST", "/api/v1/test/call", { form: { what: "moved" } });
    assertError(moved, 503, "Service temporarily unavailable, retry later.", "SERVICE_UNAVAILABLE");
    assert.equal(moved.headers["retry-after"], "1");

    const { lines: logged } = await captureLogs(async () => {
      const boom = await call(app, "POST", "/api/v1/test/boom");
      assert.equal(boom.status, 500);
      assert.deepEqual(boom.json, { result: "error", msg: "Internal server error" });
    });
    assert.equal(logged.length, 1, "the unexpected error was logged");
    assert.equal(logged[0]!.msg, "unhandled error");
    assert.equal(typeof logged[0]!.req_id, "string", "with the request's id");
  });

  test("shape - RouteRequest.call builds the ActorRequest", async () => {
    const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const t0 = Date.now();
    const res = await call(app, "POST", "/api/v1/test/call", {
      form: { what: "echo" },
      headers: { traceparent: tp },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.value, {
      args: { x: 1 },
      shard: (res.json.value as Obj).shard,
      method: "echo",
    });
    const sent = client.requests.findLast((r) => r.method === "echo")!;
    assert.deepEqual(sent.ref, { kind: "user", realm: 1, key: "7" });
    assert.equal(sent.traceparent, tp);
    assert.deepEqual(sent.caller, { realmId: 1, userId: 10, role: 200, isBot: false });
    assert.ok(
      sent.deadline >= t0 + 5000 && sent.deadline <= Date.now() + 5000,
      "deadline = start + requestTimeoutMs",
    );
    assert.ok(Number.isInteger(sent.shard) && sent.shard >= 0 && sent.shard < 16);
    await call(app, "POST", "/api/v1/test/call", { form: { what: "echo" } });
    assert.equal(client.requests.findLast((r) => r.method === "echo")!.traceparent, undefined);
  });

  test("shape - oversized bodies get a Zulip-style 413", async () => {
    const small = await buildApp({ client, bus, shards: 16, routes, bodyLimit: 1024 });
    try {
      const big = "x".repeat(2000);
      assertError(
        await call(small, "POST", "/api/v1/test/echo", { form: { n: "1", topic: big } }),
        413,
        "Request body too large",
        "BAD_REQUEST",
      );
      assertError(
        await call(small, "POST", "/api/v1/test/echo", { body: `{"a":"${big}"}`, type: "application/json" }),
        413,
        "Request body too large",
        "BAD_REQUEST",
      );
      const mp = multipartBody([
        ["n", "1"],
        ["topic", big],
      ]);
      assertError(
        await call(small, "POST", "/api/v1/test/echo", { body: mp.body, type: mp.type }),
        413,
        "Request body too large",
        "BAD_REQUEST",
      );
      // Under the limit everything still works.
      assert.equal((await call(small, "POST", "/api/v1/test/echo", { form: { n: "1" } })).status, 200);
    } finally {
      await small.close();
    }
  });
});

// ---- Fuzz ------------------------------------------------------------------------------------

describe("gateway fuzz", () => {
  const alphabet = [
    ...'0123456789-+.eE,[]{}":ntrufalsx ',
    "\\",
    "%",
    "&",
    "=",
    "é",
    "🌍",
    "\u0000",
    "\ud800",
    "null",
    "true",
    "1e400",
    "[[[[",
    "]]]]",
    '{"a":',
    "9007199254740993",
  ];
  function randomText(r: () => number): string {
    const n = Math.floor(r() * 12);
    let s = "";
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)];
    return s;
  }

  test("fuzz - parsers throw only ZulipError 400s", () => {
    const r = rng(42);
    const parsers = [
      p.int(),
      p.int({ min: 0, max: 10 }),
      p.bool(),
      p.json(),
      p.json(
        c.dict({ a: { check: c.list(c.nullable(c.int())), required: true }, b: { check: c.oneOf(["x"]) } }),
      ),
      p.intList(),
      p.stringList(),
      p.string({ maxLength: 3 }),
      p.oneOf(["a", "b"], p.string()),
    ];
    for (let i = 0; i < 4_000; i++) {
      const raw = randomText(r);
      for (const parse of parsers) {
        try {
          parse(raw, "v");
        } catch (e) {
          assert.ok(e instanceof ZulipError && e.status === 400, `${JSON.stringify(raw)}: ${String(e)}`);
        }
      }
    }
    // Deep nesting must not blow up either.
    for (const parse of parsers) {
      try {
        parse("[".repeat(100_000) + "]".repeat(100_000), "v");
      } catch (e) {
        assert.ok(e instanceof ZulipError, String(e));
      }
    }
  });

  test("fuzz - random requests never give a 5xx", async () => {
    const r = rng(7);
    const names = [
      "n",
      "flag",
      "data",
      "ids",
      "names",
      "topic",
      "subject",
      "mode",
      "anything",
      "x",
      "__proto__",
    ];
    const methods = ["GET", "POST", "PATCH", "DELETE"];
    for (let i = 0; i < 400; i++) {
      const f: Record<string, string> = {};
      for (const name of names) if (r() < 0.5) f[name] = randomText(r);
      const method = methods[Math.floor(r() * methods.length)]!;
      let res: Res;
      if (method === "GET") {
        res = await call(app, method, `/api/v1/test/echo?${form(f)}`);
      } else if (r() < 0.5) {
        res = await call(app, method, "/api/v1/test/echo", { form: f });
      } else {
        const mp = multipartBody(Object.entries(f).filter(([k]) => k !== "__proto__"));
        res = await call(app, method, "/api/v1/test/echo", { body: mp.body, type: mp.type });
      }
      assert.ok(res.status < 500, `${method} ${JSON.stringify(f)} -> ${res.status} ${res.raw}`);
      assert.ok(typeof res.json.result === "string", res.raw);
    }
    // Random Authorization headers and raw bodies.
    for (let i = 0; i < 200; i++) {
      const auth = r() < 0.5 ? `Basic ${randomText(r)}` : randomText(r);
      const res = await call(app, "POST", "/api/v1/test/echo", {
        auth,
        body: randomText(r),
        type: ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"][i % 3]!,
      });
      assert.ok(res.status < 500, `${JSON.stringify(auth)} -> ${res.status} ${res.raw}`);
    }
  });
});
