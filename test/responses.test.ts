// How thrown errors become wire responses: store outages are 503 with
// Retry-After (the client may retry), other unexpected errors are 500.

import assert from "node:assert/strict";
import { test } from "node:test";
import { errorToResponse } from "../cluster/responses.ts";
import { isStoreUnavailable } from "../cluster/runtime-errors.ts";
import { captureLogs } from "./support/logs.ts";

function errWithCode(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

class SocketClosedUnexpectedlyError extends Error {}

test("store outages answer 503 with Retry-After; bugs answer 500", async () => {
  const outages = [
    new Error("LOADING Redis is loading the dataset in memory"),
    new Error("CLUSTERDOWN The cluster is down"),
    errWithCode("read ECONNRESET", "ECONNRESET"),
    errWithCode("connect ECONNREFUSED 127.0.0.1:6379", "ECONNREFUSED"),
    new SocketClosedUnexpectedlyError("Socket closed unexpectedly"),
  ];
  for (const e of outages) {
    assert.equal(isStoreUnavailable(e), true, e.message);
    const r = errorToResponse(e);
    assert.equal(r.ok, false);
    if (r.ok) continue;
    assert.equal(r.status, 503);
    assert.equal(r.kind, "unavailable");
    assert.equal(r.headers?.["Retry-After"], "1");
  }
  const { lines } = await captureLogs(() => {
    for (const e of [new TypeError("x is undefined"), new Error("ERR wrong number of arguments"), "boom"]) {
      assert.equal(isStoreUnavailable(e), false);
      const r = errorToResponse(e);
      assert.equal(!r.ok && r.status, 500);
    }
  });
  assert.equal(lines.length, 3, "each unexpected error is logged");
});
