// Black-box HTTP tests of legacy push device registration:
// POST/DELETE /users/me/apns_device_token and /users/me/android_gcm_reg_id.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertError, assertSuccess, newUser, roleMatrix, useEmbedded } from "./support/index.ts";

const srv = useEmbedded();

const APNS = "/users/me/apns_device_token";
const FCM = "/users/me/android_gcm_reg_id";
const HEX = "c0ffee".repeat(10) + "abcd";

describe("push tokens", () => {
  test("APNs: register (idempotent), remove, remove again", async () => {
    const me = await newUser(srv);
    assertSuccess(await srv.api("POST", APNS, { token: HEX, appid: "org.zulip.Zulip" }, me));
    assertSuccess(await srv.api("POST", APNS, { token: HEX, appid: "org.zulip.Zulip" }, me));
    // Another user's token list is separate.
    const other = await newUser(srv);
    assertError(await srv.api("DELETE", APNS, { token: HEX }, other), "Token does not exist");
    assertSuccess(await srv.api("DELETE", APNS, { token: HEX }, me));
    assertError(await srv.api("DELETE", APNS, { token: HEX }, me), "Token does not exist");
  });

  test("APNs validation errors store nothing", async () => {
    const me = await newUser(srv);
    assertError(
      await srv.api("POST", APNS, { token: HEX }, me),
      "Missing 'appid' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("POST", APNS, { appid: "org.zulip.Zulip" }, me),
      "Missing 'token' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(await srv.api("POST", APNS, { token: HEX, appid: "bad app/id" }, me), "Invalid app ID");
    assertError(
      await srv.api("POST", APNS, { token: "", appid: "org.zulip.Zulip" }, me),
      "Empty or invalid length token",
    );
    assertError(
      await srv.api("POST", APNS, { token: "a".repeat(4098), appid: "org.zulip.Zulip" }, me),
      "Empty or invalid length token",
    );
    assertError(
      await srv.api("POST", APNS, { token: "xyz123", appid: "org.zulip.Zulip" }, me),
      "Invalid APNS token",
    );
    assertError(
      await srv.api("POST", APNS, { token: "abc", appid: "org.zulip.Zulip" }, me),
      "Invalid APNS token",
    );
    assertError(await srv.api("DELETE", APNS, { token: "zz" }, me), "Invalid APNS token");
    assertError(await srv.api("DELETE", APNS, { token: "" }, me), "Empty or invalid length token");
    // The valid token refused for its app id was not stored.
    assertError(await srv.api("DELETE", APNS, { token: HEX }, me), "Token does not exist");
  });

  test("Android (FCM): any non-empty token up to 4096 characters", async () => {
    const me = await newUser(srv);
    const token = "fcm:token-with_any.chars";
    assertSuccess(await srv.api("POST", FCM, { token }, me));
    assertError(await srv.api("POST", FCM, { token: "" }, me), "Empty or invalid length token");
    assertError(await srv.api("POST", FCM, { token: "x".repeat(4097) }, me), "Empty or invalid length token");
    assertError(await srv.api("POST", FCM, {}, me), "Missing 'token' argument", "REQUEST_VARIABLE_MISSING");
    // APNs and FCM tokens are separate kinds.
    assertError(await srv.api("DELETE", APNS, { token: "abcd" }, me), "Token does not exist");
    assertSuccess(await srv.api("DELETE", FCM, { token }, me));
    assertError(await srv.api("DELETE", FCM, { token }, me), "Token does not exist");
  });

  test("every human role may register; bots may not; anonymous callers get 401", async () => {
    const m = await roleMatrix(srv);
    for (const role of ["owner", "admin", "moderator", "member", "guest"]) {
      assertSuccess(await srv.api("POST", FCM, { token: `tok-${role}` }, m[role]!));
    }
    assertError(
      await srv.api("POST", FCM, { token: "tok-bot" }, m.bot!),
      "This endpoint does not accept bot requests.",
    );
    assertError(
      await srv.api("POST", APNS, { token: HEX, appid: "org.zulip.Zulip" }, m.bot!),
      "This endpoint does not accept bot requests.",
    );
    const anon = await srv.api("POST", FCM, { token: "x" }, null);
    assert.equal(anon.status, 401);
  });
});
