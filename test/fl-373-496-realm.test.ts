// Black-box tests of realm settings and register keys Zulip added after
// 10.2 (docs/feature-levels/373-496.md): require_e2ee_push_notifications
// (409), send_channel_events_messages (434), realm_owner_full_content_access
// (438), tenor_api_key (442), klipy_api_key (486).

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  useEmbedded,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();
let member: Member;

before(async () => {
  member = await newUser(srv);
});

async function registerRealm(): Promise<Record<string, unknown>> {
  const r = await srv.api("POST", "/register", { fetch_event_types: ["realm"] }, member);
  assertSuccess(r);
  return r.body;
}

describe("register: keys added after 10.2", () => {
  test("defaults of the new realm settings and the constant keys", async () => {
    const reg = await registerRealm();
    assert.equal(reg.realm_send_channel_events_messages, true);
    assert.equal(reg.realm_require_e2ee_push_notifications, false);
    assert.equal(reg.realm_owner_full_content_access, false);
    const all = await srv.api("POST", "/register", {}, member);
    assertSuccess(all);
    assert.equal(all.body.tenor_api_key, "");
    assert.equal(all.body.klipy_api_key, "");
  });
});

describe("PATCH /realm: send_channel_events_messages and require_e2ee_push_notifications", () => {
  test("an administrator sets them; members hear realm/update; register follows", async () => {
    const q = await openQueue(srv, member, ["realm"]);
    const r = await srv.api("PATCH", "/realm", {
      send_channel_events_messages: false,
      require_e2ee_push_notifications: true,
    });
    assertSuccess(r);
    const evs = await eventsUntil(srv, q, (e) => e.filter((x) => x.type === "realm").length >= 2);
    const got = evs
      .filter((e) => e.type === "realm" && e.op === "update")
      .map((e) => [e.property, e.value])
      .sort();
    assert.deepEqual(got, [
      ["require_e2ee_push_notifications", true],
      ["send_channel_events_messages", false],
    ]);
    const reg = await registerRealm();
    assert.equal(reg.realm_send_channel_events_messages, false);
    assert.equal(reg.realm_require_e2ee_push_notifications, true);
    assertSuccess(
      await srv.api("PATCH", "/realm", {
        send_channel_events_messages: true,
        require_e2ee_push_notifications: false,
      }),
    );
  });

  test("members are refused, bad values are refused, and nothing changes", async () => {
    assertError(
      await srv.api("PATCH", "/realm", { send_channel_events_messages: false }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
      400,
    );
    const bad = await srv.api("PATCH", "/realm", { send_channel_events_messages: "maybe" });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.result, "error");
    assert.equal((await registerRealm()).realm_send_channel_events_messages, true);
  });
});
