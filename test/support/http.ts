// Assertions and fixtures for black-box HTTP tests, after Zulip's test
// helpers (assert_json_success, assert_json_error, fixture users).
import assert from "node:assert/strict";
import type { ApiResult, Creds, EmbeddedHandle } from "./embedded.ts";

export function assertSuccess(res: ApiResult): void {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.result, "success");
  assert.equal(res.body.msg, "");
}

/** Exact Zulip error: msg, code and HTTP status. */
export function assertError(res: ApiResult, msg: string, code = "BAD_REQUEST", status = 400): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.result, "error");
  assert.equal(res.body.msg, msg);
  assert.equal(res.body.code, code);
}

export interface TestUser extends Creds {
  userId: number;
}

let seq = 0;

/** A fresh user with the given role (the owner creates and promotes them over HTTP). */
export async function newUser(srv: EmbeddedHandle, role = 400, name = "Test User"): Promise<TestUser> {
  const n = ++seq;
  const email = `user-${process.pid}-${n}@example.com`;
  const password = `pw-${n}-secret`;
  const created = await srv.api("POST", "/users", { email, password, full_name: name });
  assertSuccess(created);
  const key = await srv.api("POST", "/fetch_api_key", { username: email, password }, null);
  assertSuccess(key);
  const userId = created.body.user_id as number;
  if (role !== 400) assertSuccess(await srv.api("PATCH", `/users/${userId}`, { role }));
  return { email, apiKey: key.body.api_key as string, userId };
}
