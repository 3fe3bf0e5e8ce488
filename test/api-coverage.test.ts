// docs/api-coverage.md is generated (scripts/api-coverage.ts) from Zulip's
// schema and the route table: it must say what the server routes today.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { COVERAGE_FILE, coverage, render } from "../scripts/api-coverage.ts";

test("api coverage - docs/api-coverage.md is what npm run api-coverage writes", () => {
  const ops = coverage();
  assert.equal(ops.length, 121, "Zulip 10.2's schema has 121 operations");
  assert.equal(
    readFileSync(COVERAGE_FILE, "utf8"),
    render(ops),
    "docs/api-coverage.md is out of date: run npm run api-coverage",
  );
});

test("api coverage - a routed operation is matched whatever its parameters are called", () => {
  const ops = new Map(coverage().map((o) => [o.key, o]));
  assert.equal(ops.get("GET /users/{user_id}")?.routed, true);
  assert.equal(ops.get("POST /realm/emoji/{emoji_name}")?.routed, true);
  assert.equal(ops.get("POST /real-time")?.routed, false);
});
