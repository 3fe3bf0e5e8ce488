// PATCH /realm's boolean settings, and what enable_spectator_access opens to
// unauthenticated clients (GET /users, spectator POST /register).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  openQueue,
  roleMatrix,
  useEmbedded,
} from "./support/index.ts";

const srv = useEmbedded();

async function realmSetting(name: string): Promise<unknown> {
  const r = await srv.api("POST", "/register", { fetch_event_types: JSON.stringify(["realm"]) });
  assertSuccess(r);
  await srv.api("DELETE", "/events", { queue_id: r.body.queue_id });
  return r.body[`realm_${name}`];
}

describe("PATCH /realm boolean settings", () => {
  test("an administrator changes a setting; everyone gets the realm update event; the reply echoes it", async () => {
    const watcher = await newUser(srv);
    const q = await openQueue(srv, watcher, ["realm"]);
    const r = await srv.api("PATCH", "/realm", { require_unique_names: true });
    assertSuccess(r);
    assert.equal(r.body.require_unique_names, true);
    assert.equal(await realmSetting("require_unique_names"), true);
    const events = await eventsUntil(srv, q, (evs) => evs.length > 0);
    assert.deepEqual(
      events.map((e) => ({ type: e.type, op: e.op, property: e.property, value: e.value })),
      [{ type: "realm", op: "update", property: "require_unique_names", value: true }],
    );
    // Unchanged: success, nothing echoed, no event.
    const again = await srv.api("PATCH", "/realm", { require_unique_names: true });
    assertSuccess(again);
    assert.equal(again.body.require_unique_names, undefined);
    assert.deepEqual(await drain(srv, q), []);
    assertSuccess(await srv.api("PATCH", "/realm", { require_unique_names: false }));
  });

  test("only administrators; bad values are refused and change nothing", async () => {
    const roles = await roleMatrix(srv);
    for (const who of ["moderator", "member", "guest", "bot"]) {
      assertError(
        await srv.api("PATCH", "/realm", { presence_disabled: true }, roles[who]),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      );
    }
    assertSuccess(await srv.api("PATCH", "/realm", { presence_disabled: false }, roles.admin));
    assertError(
      await srv.api("PATCH", "/realm", { presence_disabled: "yes" }),
      "presence_disabled is not valid JSON",
    );
    for (const bad of ["1", "{}", "[true]", "null"]) {
      assertError(
        await srv.api("PATCH", "/realm", { presence_disabled: bad }),
        "presence_disabled is not a boolean",
      );
    }
    assert.equal(await realmSetting("presence_disabled"), false);
  });
});

describe("enable_spectator_access", () => {
  test("anonymous GET /users and spectator register work only while the realm allows public access", async () => {
    const anonymous = () => srv.api("GET", "/users", {}, null);
    assertError(
      await anonymous(),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );
    assertError(
      await srv.api("POST", "/register", {}, null),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );

    assertSuccess(await srv.api("PATCH", "/realm", { enable_spectator_access: true }));
    const settings = await srv.api("GET", "/server_settings", {}, null);
    assert.equal(settings.body.realm_web_public_access_enabled, true);

    const users = await anonymous();
    assertSuccess(users);
    assert.ok(Array.isArray(users.body.members) && users.body.members.length > 0);

    const reg = await srv.api("POST", "/register", {}, null);
    assertSuccess(reg);
    assert.equal(reg.body.queue_id, null);
    assert.equal(reg.body.last_event_id, -1);
    assert.equal(typeof reg.body.zulip_feature_level, "number");
    assertError(
      await srv.api("POST", "/register", { client_gravatar: true }, null),
      "Invalid 'client_gravatar' parameter for anonymous request",
    );
    assertError(
      await srv.api("POST", "/register", { include_subscribers: true }, null),
      "Invalid 'include_subscribers' parameter for anonymous request",
    );

    assertSuccess(await srv.api("PATCH", "/realm", { enable_spectator_access: false }));
    assertError(
      await anonymous(),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );
  });
});
