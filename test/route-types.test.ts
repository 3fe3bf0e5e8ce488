// Type-level tests of the route contract (gateway/route-types.ts): a
// handler's req.params and req.path are typed from the route's declaration.
// The checks are in the types: this file compiles (npx tsc) only when the
// inference is right; at run time it only checks defineRoute's identity.
import assert from "node:assert/strict";
import { test } from "node:test";
import { c, defineRoute, p, param, type PathParams, type RouteDef } from "../gateway/index.ts";

type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
function expectType<_T extends true>(): void {}

const typed = defineRoute({
  method: "POST",
  path: "/users/:user_id/subscriptions/:stream_id",
  auth: "required",
  params: {
    name: param(p.string(), { required: true }),
    limit: param(p.int(), { default: 50 }),
    flag: param(p.bool(), { aliases: ["old_flag"] }),
    ids: param(p.intList()),
    op: param(p.oneOf(["add", "remove"], p.string()), { required: true }),
    data: param(p.json(c.list(c.string()))),
  },
  async handler(req) {
    expectType<Equal<typeof req.params.name, string>>();
    expectType<Equal<typeof req.params.limit, number>>();
    expectType<Equal<typeof req.params.flag, boolean | undefined>>();
    expectType<Equal<typeof req.params.ids, number[] | undefined>>();
    expectType<Equal<typeof req.params.op, "add" | "remove">>();
    expectType<Equal<typeof req.params.data, string[] | undefined>>();
    expectType<Equal<typeof req.path, { user_id: string; stream_id: string }>>();
    // @ts-expect-error: an undeclared parameter is not there.
    void req.params.nonexistent;
    // @ts-expect-error: nor an undeclared path parameter.
    void req.path.message_id;
    // @ts-expect-error: an optional parameter may be absent.
    const flag: boolean = req.params.flag;
    // @ts-expect-error: a number is not a string.
    const name: number = req.params.name;
    return { flag, name };
  },
});

// A wildcard is named "*"; a path without parameters has none.
expectType<Equal<PathParams<"/thumbnail/status/:realm_id_str/*">, { realm_id_str: string; "*": string }>>();
expectType<Equal<PathParams<"/join/:key/">, { key: string }>>();
expectType<Equal<keyof PathParams<"/messages">, never>>();
// The erased form, as the framework's tables hold routes.
expectType<Equal<PathParams<string>, Record<string, string>>>();
const table: RouteDef[] = [typed];

defineRoute({
  method: "GET",
  path: "/x",
  auth: "none",
  params: { n: param(p.int()) },
  // @ts-expect-error: the handler must accept what the declaration gives (number | undefined).
  async handler(req: { params: { n: string } }) {
    return { n: req.params.n };
  },
});

test("defineRoute returns the route unchanged, for the erased tables", () => {
  assert.equal(table[0], typed);
  assert.deepEqual(Object.keys(typed.params), ["name", "limit", "flag", "ids", "op", "data"]);
});
