// Black-box HTTP tests of POST /mobile_push/test_notification: the test
// notification to the caller's legacy push tokens through a real local push
// relay (push/notify), as Zulip's send_test_push_notification_api.

import assert from "node:assert/strict";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, afterEach, before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  newUser,
  roleMatrix,
  startEmbedded,
  type EmbeddedHandle,
} from "./support/index.ts";

interface RelayRequest {
  path: string;
  body: string;
}

let relay: Server;
let relayUrl: string;
let answer: (res: ServerResponse) => void = ok;
const received: RelayRequest[] = [];
let srv: EmbeddedHandle;

function ok(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ result: "success", msg: "" }));
}

before(async () => {
  relay = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ path: req.url ?? "", body: Buffer.concat(chunks).toString() });
      answer(res);
    });
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
  process.env.PUSH_BOUNCER_URL = relayUrl;
  process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS = "127.0.0.0/8";
  srv = await startEmbedded();
});

after(async () => {
  delete process.env.PUSH_BOUNCER_URL;
  delete process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS;
  await srv?.stop();
  relay.closeAllConnections();
  await new Promise((resolve) => relay.close(resolve));
});

afterEach(() => {
  answer = ok;
  received.length = 0;
  process.env.PUSH_BOUNCER_URL = relayUrl;
});

const PATH = "/mobile_push/test_notification";
const HEX = "c0ffee".repeat(10) + "abcd";

describe("mobile push test notification", () => {
  test("to every token, or the one named; the relay gets Zulip's test payloads", async () => {
    const me = await newUser(srv);
    assertSuccess(await srv.api("POST", "/users/me/android_gcm_reg_id", { token: "fcm-token-1" }, me));
    assertSuccess(
      await srv.api("POST", "/users/me/apns_device_token", { token: HEX, appid: "org.zulip.Zulip" }, me),
    );

    assertSuccess(await srv.api("POST", PATH, {}, me));
    assert.equal(received.length, 1);
    assert.equal(received[0]!.path, "/api/v1/remotes/push/notify");
    const body = JSON.parse(received[0]!.body);
    assert.equal(body.user_id, me.userId);
    assert.match(body.user_uuid, /^[0-9a-f-]{36}$/);
    assert.match(body.realm_uuid, /^[0-9a-f-]{36}$/);
    assert.deepEqual(body.android_devices, ["fcm-token-1"]);
    assert.deepEqual(body.apple_devices, [HEX]);
    assert.equal(body.gcm_payload.event, "test");
    assert.equal(body.gcm_payload.user_id, me.userId);
    assert.equal(typeof body.gcm_payload.time, "number");
    assert.equal(body.gcm_payload.realm_name, "Test Org");
    assert.deepEqual(body.gcm_options, { priority: "high" });
    assert.equal(body.apns_payload.alert.title, "Test notification");
    assert.equal(body.apns_payload.custom.zulip.event, "test");

    received.length = 0;
    assertSuccess(await srv.api("POST", PATH, { token: "fcm-token-1" }, me));
    const one = JSON.parse(received[0]!.body);
    assert.deepEqual([one.android_devices, one.apple_devices], [["fcm-token-1"], []]);
  });

  test("errors: unknown token, relay refusals, no relay; nothing sent for no tokens", async () => {
    const me = await newUser(srv);
    // Without tokens there is nothing to send: success, no relay call.
    assertSuccess(await srv.api("POST", PATH, {}, me));
    assert.equal(received.length, 0);
    assertError(
      await srv.api("POST", PATH, { token: "never-registered" }, me),
      "Device not recognized",
      "INVALID_PUSH_DEVICE_TOKEN",
    );
    // Another user's token is not the caller's.
    const other = await newUser(srv);
    assertSuccess(await srv.api("POST", "/users/me/android_gcm_reg_id", { token: "others-token" }, other));
    assertError(
      await srv.api("POST", PATH, { token: "others-token" }, me),
      "Device not recognized",
      "INVALID_PUSH_DEVICE_TOKEN",
    );
    assert.equal(received.length, 0);

    assertSuccess(await srv.api("POST", "/users/me/android_gcm_reg_id", { token: "mine" }, me));
    answer = (res) => {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          result: "error",
          code: "INVALID_REMOTE_PUSH_DEVICE_TOKEN",
          msg: "Device not recognized by the push bouncer",
        }),
      );
    };
    assertError(
      await srv.api("POST", PATH, { token: "mine" }, me),
      "Device not recognized by the push bouncer",
      "INVALID_REMOTE_PUSH_DEVICE_TOKEN",
    );
    answer = (res) => {
      res.writeHead(502);
      res.end("bad gateway");
    };
    assertError(
      await srv.api("POST", PATH, {}, me),
      "Internal server error on the push notification service, retry later.",
      "INTERNAL_SERVER_ERROR_ON_BOUNCER",
      502,
    );
    answer = ok;
    delete process.env.PUSH_BOUNCER_URL;
    assertError(
      await srv.api("POST", PATH, {}, me),
      "Server is not configured to use push notification service.",
      "PUSH_SERVICE_NOT_CONFIGURED",
    );
  });

  test("bots may not; anonymous callers get 401", async () => {
    const m = await roleMatrix(srv);
    assertError(await srv.api("POST", PATH, {}, m.bot!), "This endpoint does not accept bot requests.");
    assert.equal((await srv.api("POST", PATH, {}, null)).status, 401);
  });
});
