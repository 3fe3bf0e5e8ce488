// Black-box HTTP tests of logged-in devices and E2EE push:
// POST /register_client_device, POST /remove_client_device,
// POST /mobile_push/register, POST /mobile_push/e2ee/test_notification,
// and the `devices` key of POST /register. The push relay is a real local
// HTTP server whose answers each test chooses.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, afterEach, before, describe, test } from "node:test";
import nacl from "tweetnacl";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  roleMatrix,
  startEmbedded,
  type Creds,
  type EmbeddedHandle,
} from "./support/index.ts";

// ---- a local push relay -------------------------------------------------------

interface RelayRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

type RelayAnswer = (req: RelayRequest, res: ServerResponse) => void;

const ok: RelayAnswer = (_req, res) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ result: "success", msg: "" }));
};

function jsonAnswer(status: number, body: unknown): RelayAnswer {
  return (_req, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
}

let relay: Server;
let relayUrl: string;
let answer: RelayAnswer = ok;
const received: RelayRequest[] = [];

let srv: EmbeddedHandle;

before(async () => {
  relay = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const r = { path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString() };
      received.push(r);
      answer(r, res);
    });
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
  process.env.PUSH_BOUNCER_URL = relayUrl;
  // The relay runs on loopback, which outbound requests may reach only when allowed.
  process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS = "127.0.0.0/8";
  srv = await startEmbedded();
});

after(async () => {
  delete process.env.PUSH_BOUNCER_URL;
  delete process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS;
  delete process.env.PUSH_BOUNCER_TIMEOUT_MS;
  await srv?.stop();
  relay.closeAllConnections();
  await new Promise((resolve) => relay.close(resolve));
});

afterEach(() => {
  answer = ok;
  received.length = 0;
  process.env.PUSH_BOUNCER_URL = relayUrl;
  process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS = "127.0.0.0/8";
  delete process.env.PUSH_BOUNCER_TIMEOUT_MS;
  delete process.env.PUSH_BOUNCER_SERVER_UUID;
  delete process.env.PUSH_BOUNCER_SERVER_KEY;
});

// ---- helpers ------------------------------------------------------------------

const REGISTER = "/mobile_push/register";
const TEST_NOTIFY = "/mobile_push/e2ee/test_notification";

function pushKey(byte = 7): { b64: string; key: Uint8Array } {
  const key = new Uint8Array(32).fill(byte);
  return { b64: Buffer.concat([Buffer.from([0x31]), Buffer.from(key)]).toString("base64"), key };
}

/** Zulip's token_id: the first 8 bytes of the token's SHA-256, base64. */
function tokenId(token: string): string {
  return createHash("sha256").update(token).digest().subarray(0, 8).toString("base64");
}

function fullRegistration(deviceId: number, token = "c0ffee", kind = "fcm", keyByte = 7) {
  return {
    device_id: deviceId,
    token_kind: kind,
    push_key: pushKey(keyByte).b64,
    push_key_id: 2408,
    bouncer_public_key: "bouncer-public-key",
    encrypted_push_registration: "encrypted-push-registration-data",
    token_id: tokenId(token),
  };
}

async function newDevice(auth: Creds): Promise<number> {
  const r = await srv.api("POST", "/register_client_device", {}, auth);
  assertSuccess(r);
  return r.body.device_id as number;
}

async function devicesOf(auth: Creds): Promise<Record<string, Record<string, unknown>>> {
  const r = await srv.api("POST", "/register", { fetch_event_types: ["device"] }, auth);
  assertSuccess(r);
  return r.body.devices;
}

/** A device registered with the relay's success: active for push. */
async function activeDevice(auth: Creds, token = "c0ffee", kind = "fcm", keyByte = 7): Promise<number> {
  const id = await newDevice(auth);
  assertSuccess(await srv.api("POST", REGISTER, fullRegistration(id, token, kind, keyByte), auth));
  const d = (await devicesOf(auth))[String(id)]!;
  assert.equal(d.push_token_id, tokenId(token));
  return id;
}

function decrypt(b64: string, key: Uint8Array): Record<string, unknown> {
  const bytes = Buffer.from(b64, "base64");
  const nonce = new Uint8Array(bytes.subarray(0, nacl.secretbox.nonceLength));
  const box = new Uint8Array(bytes.subarray(nacl.secretbox.nonceLength));
  const plain = nacl.secretbox.open(box, nonce, key);
  assert.ok(plain, "encrypted_data opens with the device's push key");
  return JSON.parse(Buffer.from(plain).toString()) as Record<string, unknown>;
}

// ---- POST /register_client_device, /remove_client_device ----------------------

describe("client devices", () => {
  test("register: device_id, a device add event, and the devices key", async () => {
    const me = await newUser(srv);
    const q = await openQueue(srv, me, ["device"]);
    const r = await srv.api("POST", "/register_client_device", {}, me);
    assertSuccess(r);
    assert.equal(typeof r.body.device_id, "number");
    const second = await newDevice(me);
    assert.notEqual(second, r.body.device_id);
    const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.deepEqual(
      evs.map((e) => ({ type: e.type, op: e.op, device_id: e.device_id })),
      [
        { type: "device", op: "add", device_id: r.body.device_id },
        { type: "device", op: "add", device_id: second },
      ],
    );
    const devices = await devicesOf(me);
    assert.deepEqual(devices[String(r.body.device_id)], {
      push_key_id: null,
      push_token_id: null,
      pending_push_token_id: null,
      push_token_last_updated_timestamp: null,
      push_registration_error_code: null,
    });
    assert.deepEqual(Object.keys(devices).sort(), [String(r.body.device_id), String(second)].sort());
    // Another user sees none of them.
    assert.deepEqual(await devicesOf(await newUser(srv)), {});
  });

  test("remove: a device remove event; unknown and other users' ids change nothing", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const mine = await newDevice(me);
    const theirs = await newDevice(other);
    const q = await openQueue(srv, me, ["device"]);
    assertError(
      await srv.api("POST", "/remove_client_device", { device_id: theirs }, me),
      "Invalid `device_id`",
    );
    assertError(
      await srv.api("POST", "/remove_client_device", { device_id: 999999 }, me),
      "Invalid `device_id`",
    );
    assertError(
      await srv.api("POST", "/remove_client_device", {}, me),
      "Missing 'device_id' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("POST", "/remove_client_device", { device_id: "1.5" }, me),
      "device_id is not an integer",
    );
    assert.ok((await devicesOf(other))[String(theirs)]);
    assert.ok((await devicesOf(me))[String(mine)]);

    assertSuccess(await srv.api("POST", "/remove_client_device", { device_id: mine }, me));
    const evs = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.deepEqual(
      evs.map((e) => ({ type: e.type, op: e.op, device_id: e.device_id })),
      [{ type: "device", op: "remove", device_id: mine }],
    );
    assert.deepEqual(await devicesOf(me), {});
    assertError(
      await srv.api("POST", "/remove_client_device", { device_id: mine }, me),
      "Invalid `device_id`",
    );
  });

  test("anonymous callers get 401; bots may register devices (no human-only check in Zulip)", async () => {
    const m = await roleMatrix(srv);
    const anon = await srv.api("POST", "/register_client_device", {}, null);
    assert.equal(anon.status, 401);
    assertSuccess(await srv.api("POST", "/register_client_device", {}, m.bot!));
  });
});

// ---- POST /mobile_push/register -------------------------------------------------

describe("E2EE push registration", () => {
  test("without a relay: PUSH_SERVICE_NOT_CONFIGURED, nothing stored", async () => {
    const me = await newUser(srv);
    const id = await newDevice(me);
    delete process.env.PUSH_BOUNCER_URL;
    assertError(
      await srv.api("POST", REGISTER, fullRegistration(id), me),
      "Server is not configured to use push notification service.",
      "PUSH_SERVICE_NOT_CONFIGURED",
    );
    assert.equal((await devicesOf(me))[String(id)]!.push_key_id, null);
    assert.equal(received.length, 0);
  });

  test("full registration: pending then active, the relay's request, idempotent repeat", async () => {
    const me = await newUser(srv);
    const id = await newDevice(me);
    const q = await openQueue(srv, me, ["device"]);
    const payload = fullRegistration(id, "c0ffee", "apns");
    const before = Math.floor(Date.now() / 1000);
    assertSuccess(await srv.api("POST", REGISTER, payload, me));

    // The relay got the client's encrypted registration, form-encoded.
    assert.equal(received.length, 1);
    assert.equal(received[0]!.path, "/api/v1/remotes/push/e2ee/register");
    assert.match(String(received[0]!.headers["content-type"]), /application\/x-www-form-urlencoded/);
    const form = Object.fromEntries(new URLSearchParams(received[0]!.body));
    assert.deepEqual(Object.keys(form).sort(), [
      "bouncer_public_key",
      "encrypted_push_registration",
      "realm_uuid",
      "token_id",
    ]);
    assert.equal(form.token_id, payload.token_id);
    assert.equal(form.bouncer_public_key, payload.bouncer_public_key);
    assert.equal(form.encrypted_push_registration, payload.encrypted_push_registration);
    assert.match(form.realm_uuid!, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.equal(evs.length, 2);
    const { id: _a, ...first } = evs[0];
    assert.ok(first.push_token_last_updated_timestamp >= before);
    assert.deepEqual(first, {
      type: "device",
      op: "update",
      device_id: id,
      push_key_id: 2408,
      pending_push_token_id: payload.token_id,
      push_token_last_updated_timestamp: first.push_token_last_updated_timestamp,
      push_registration_error_code: null,
    });
    const { id: _b, ...second } = evs[1];
    assert.deepEqual(second, {
      type: "device",
      op: "update",
      device_id: id,
      push_token_id: payload.token_id,
      pending_push_token_id: null,
    });
    assert.deepEqual((await devicesOf(me))[String(id)], {
      push_key_id: 2408,
      push_token_id: payload.token_id,
      pending_push_token_id: null,
      push_token_last_updated_timestamp: first.push_token_last_updated_timestamp,
      push_registration_error_code: null,
    });

    // The same registration again: success, no relay call, no event.
    assertSuccess(await srv.api("POST", REGISTER, payload, me));
    assert.equal(received.length, 1);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await eventsUntil(srv, q, () => true), []);
  });

  test("key rotation and token rotation", async () => {
    const me = await newUser(srv);
    const id = await newDevice(me);
    const rotateKey = { device_id: id, push_key: pushKey(9).b64, push_key_id: 1144 };
    assertError(
      await srv.api("POST", REGISTER, rotateKey, me),
      "No push registration exists to rotate key for.",
    );
    const { push_key: _k, push_key_id: _i, ...tokenOnly } = fullRegistration(id, "t2");
    assertError(
      await srv.api("POST", REGISTER, tokenOnly, me),
      "No push registration exists to rotate token for.",
    );
    assert.equal(received.length, 0);

    assertSuccess(await srv.api("POST", REGISTER, fullRegistration(id), me));
    const q = await openQueue(srv, me, ["device"]);
    assertSuccess(await srv.api("POST", REGISTER, rotateKey, me));
    let evs = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.deepEqual(
      evs.map(({ id: _x, ...e }) => e),
      [{ type: "device", op: "update", device_id: id, push_key_id: 1144 }],
    );
    assert.equal(received.length, 1, "a key rotation does not call the relay");
    // Rotating to the same key again changes nothing.
    assertSuccess(await srv.api("POST", REGISTER, rotateKey, me));

    assertSuccess(await srv.api("POST", REGISTER, tokenOnly, me));
    assert.equal(received.length, 2);
    evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.deepEqual(
      evs.map(({ id: _x, push_token_last_updated_timestamp: _t, ...e }) => e),
      [
        {
          type: "device",
          op: "update",
          device_id: id,
          pending_push_token_id: tokenOnly.token_id,
          push_registration_error_code: null,
        },
        {
          type: "device",
          op: "update",
          device_id: id,
          push_token_id: tokenOnly.token_id,
          pending_push_token_id: null,
        },
      ],
    );
    const d = (await devicesOf(me))[String(id)]!;
    assert.equal(d.push_key_id, 1144);
    assert.equal(d.push_token_id, tokenOnly.token_id);
    // The same token again: nothing to do.
    assertSuccess(await srv.api("POST", REGISTER, tokenOnly, me));
    assert.equal(received.length, 2);
  });

  test("relay refusals are recorded; relay outages leave the registration pending", async () => {
    const me = await newUser(srv);
    const id = await newDevice(me);
    const q = await openQueue(srv, me, ["device"]);
    answer = jsonAnswer(400, {
      result: "error",
      msg: "Invalid bouncer_public_key",
      code: "INVALID_BOUNCER_PUBLIC_KEY",
    });
    assertSuccess(await srv.api("POST", REGISTER, fullRegistration(id), me));
    const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.deepEqual(
      evs.slice(1).map(({ id: _x, ...e }) => e),
      [
        {
          type: "device",
          op: "update",
          device_id: id,
          push_registration_error_code: "INVALID_BOUNCER_PUBLIC_KEY",
        },
      ],
    );
    let d = (await devicesOf(me))[String(id)]!;
    assert.equal(d.push_registration_error_code, "INVALID_BOUNCER_PUBLIC_KEY");
    assert.equal(d.push_token_id, null);
    assertError(
      await srv.api("POST", TEST_NOTIFY, {}, me),
      "No active registered push device",
      "NO_ACTIVE_PUSH_DEVICE",
    );

    // Any other refusal is recorded under Zulip's generic code.
    answer = jsonAnswer(400, {
      result: "error",
      msg: "Invalid encrypted_push_registration",
      code: "BAD_REQUEST",
    });
    assertSuccess(await srv.api("POST", REGISTER, fullRegistration(id, "other"), me));
    d = (await devicesOf(me))[String(id)]!;
    assert.equal(d.push_registration_error_code, "BAD_REQUEST");

    // A 5xx: still pending, and a second registration is refused meanwhile.
    answer = jsonAnswer(503, { result: "error", msg: "down" });
    assertSuccess(await srv.api("POST", REGISTER, fullRegistration(id, "third"), me));
    d = (await devicesOf(me))[String(id)]!;
    assert.equal(d.pending_push_token_id, tokenId("third"));
    assert.equal(d.push_registration_error_code, null);
    assertError(
      await srv.api("POST", REGISTER, fullRegistration(id, "fourth"), me),
      "A registration for the device already in progress.",
    );
  });

  test("bad input is refused and changes nothing", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const id = await newDevice(me);
    const theirs = await newDevice(other);
    const good = fullRegistration(id);
    const cases: [Record<string, unknown>, string, string?][] = [
      [{ ...good, device_id: theirs }, "Invalid `device_id`"],
      [{ ...good, device_id: 987654 }, "Invalid `device_id`"],
      [{ ...good, device_id: "x1" }, "device_id is not valid JSON"],
      [{ ...good, push_key_id: -1 }, "Invalid push_key_id: Value error, Not a valid unsigned 32-bit integer"],
      [
        { ...good, push_key_id: 2 ** 32 },
        "Invalid push_key_id: Value error, Not a valid unsigned 32-bit integer",
      ],
      [{ ...good, push_key_id: "1.5" }, "push_key_id is not an integer"],
      [{ ...good, token_kind: "xyz" }, "Invalid token_kind: Value error, Not in the list of possible values"],
      [{ ...good, push_key: "@abcdefg" }, "Invalid `push_key`"],
      [{ ...good, push_key: "abcd" }, "Invalid `push_key`"],
      [
        {
          ...good,
          push_key: Buffer.concat([Buffer.from([0x32]), Buffer.alloc(32, 1)]).toString("base64"),
        },
        "Invalid `push_key`",
      ],
      [{ ...good, token_id: "@abcdefg" }, "`token_id` is not Base64 encoded"],
      [
        { device_id: id, token_kind: "fcm", push_key: good.push_key, token_id: good.token_id },
        "Missing parameters: must provide either all push key fields, all token fields, or both.",
      ],
      [{}, "Missing 'device_id' argument", "REQUEST_VARIABLE_MISSING"],
    ];
    for (const [params, msg, code] of cases) {
      assertError(await srv.api("POST", REGISTER, params, me), msg, code);
    }
    assert.equal(received.length, 0);
    assert.deepEqual((await devicesOf(me))[String(id)], {
      push_key_id: null,
      push_token_id: null,
      pending_push_token_id: null,
      push_token_last_updated_timestamp: null,
      push_registration_error_code: null,
    });
    assert.equal((await devicesOf(other))[String(theirs)]!.push_key_id, null);
  });

  test("bots may not register push devices", async () => {
    const m = await roleMatrix(srv);
    const id = await newDevice(m.bot!);
    assertError(
      await srv.api("POST", REGISTER, fullRegistration(id), m.bot!),
      "This endpoint does not accept bot requests.",
    );
  });
});

// ---- POST /mobile_push/e2ee/test_notification -----------------------------------

describe("E2EE test notification", () => {
  test("no active device: NO_ACTIVE_PUSH_DEVICE (none, pending only, another user's, unknown id)", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const noActive = ["No active registered push device", "NO_ACTIVE_PUSH_DEVICE", 400] as const;
    assertError(await srv.api("POST", TEST_NOTIFY, {}, me), ...noActive);
    const pending = await newDevice(me);
    answer = jsonAnswer(502, {});
    assertSuccess(await srv.api("POST", REGISTER, fullRegistration(pending), me));
    answer = ok;
    assertError(await srv.api("POST", TEST_NOTIFY, {}, me), ...noActive);
    const theirs = await activeDevice(other);
    assertError(await srv.api("POST", TEST_NOTIFY, { device_id: theirs }, me), ...noActive);
    assertError(await srv.api("POST", TEST_NOTIFY, { device_id: 424242 }, me), ...noActive);
    assertError(await srv.api("POST", TEST_NOTIFY, { device_id: "1.5" }, me), "device_id is not an integer");
    const calls = received.length;
    assertError(await srv.api("POST", TEST_NOTIFY, {}, me), ...noActive);
    assert.equal(received.length, calls, "no relay call without an active device");
  });

  test("success: the relay receives one encrypted test payload per active device", async () => {
    const me = await newUser(srv);
    const android = await activeDevice(me, "fcm-token", "fcm", 3);
    const ios = await activeDevice(me, "apns-token", "apns", 4);
    received.length = 0;
    process.env.PUSH_BOUNCER_SERVER_UUID = "6cde5f7a-1f7e-4978-9716-49f69ebfc9fe";
    process.env.PUSH_BOUNCER_SERVER_KEY = "server-secret";
    const before = Math.floor(Date.now() / 1000);
    assertSuccess(await srv.api("POST", TEST_NOTIFY, {}, me));
    assert.equal(received.length, 1);
    const req = received[0]!;
    assert.equal(req.path, "/api/v1/remotes/push/e2ee/notify");
    assert.equal(
      req.headers.authorization,
      "Basic " + Buffer.from("6cde5f7a-1f7e-4978-9716-49f69ebfc9fe:server-secret").toString("base64"),
    );
    assert.match(String(req.headers["user-agent"]), /^ZulipServer\//);
    assert.match(String(req.headers["content-type"]), /application\/json/);
    const body = JSON.parse(req.body);
    assert.deepEqual(Object.keys(body).sort(), ["push_requests", "realm_uuid"]);
    assert.equal(body.push_requests.length, 2);
    const byToken = new Map(body.push_requests.map((r: { token_id: string }) => [r.token_id, r]));
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const fcm = byToken.get(tokenId("fcm-token")) as any;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const apns = byToken.get(tokenId("apns-token")) as any;
    assert.equal(fcm.fcm_priority, "high");
    assert.deepEqual(Object.keys(fcm.payload).sort(), ["encrypted_data", "push_key_id"]);
    assert.deepEqual(apns.http_headers, { apns_priority: 10, apns_push_type: "alert" });
    assert.deepEqual(apns.payload.aps, { "mutable-content": 1, alert: { title: "New notification" } });
    for (const [r, keyByte] of [
      [fcm, 3],
      [apns, 4],
    ] as const) {
      assert.equal(r.payload.push_key_id, 2408);
      const data = decrypt(r.payload.encrypted_data, pushKey(keyByte).key);
      assert.equal(data.type, "test");
      assert.equal(data.user_id, me.userId);
      assert.equal(data.realm_name, "Test Org");
      assert.match(String(data.realm_url), /^http:\/\/localhost/);
      assert.ok(Number(data.time) >= before && Number(data.time) <= before + 60);
      assert.deepEqual(Object.keys(data).sort(), ["realm_name", "realm_url", "time", "type", "user_id"]);
    }

    // One device only.
    received.length = 0;
    assertSuccess(await srv.api("POST", TEST_NOTIFY, { device_id: android }, me));
    const one = JSON.parse(received[0]!.body);
    assert.deepEqual(
      one.push_requests.map((r: { token_id: string }) => r.token_id),
      [tokenId("fcm-token")],
    );
    void ios;
  });

  test("relay failures map to Zulip's errors", async () => {
    const me = await newUser(srv);
    await activeDevice(me);

    answer = jsonAnswer(500, { result: "error", msg: "boom" });
    assertError(
      await srv.api("POST", TEST_NOTIFY, {}, me),
      "Internal server error on the push notification service, retry later.",
      "INTERNAL_SERVER_ERROR_ON_BOUNCER",
      502,
    );
    const admin = [
      "Push notification configuration issue on server, contact the server administrator or retry later.",
      "ADMIN_ACTION_REQUIRED",
      403,
    ] as const;
    for (const code of ["INVALID_ZULIP_SERVER", "PUSH_NOTIFICATIONS_DISALLOWED", "MISSING_REMOTE_REALM"]) {
      answer = jsonAnswer(401, { result: "error", msg: "nope", code });
      assertError(await srv.api("POST", TEST_NOTIFY, {}, me), ...admin);
    }
    // An unexpected success status is a configuration problem too.
    answer = jsonAnswer(202, {});
    assertError(await srv.api("POST", TEST_NOTIFY, {}, me), ...admin);
    // Any other refusal passes the relay's message on.
    answer = jsonAnswer(400, { result: "error", msg: "Something the relay disliked", code: "BAD_REQUEST" });
    assertError(await srv.api("POST", TEST_NOTIFY, {}, me), "Something the relay disliked");

    // Slower than the timeout.
    process.env.PUSH_BOUNCER_TIMEOUT_MS = "300";
    answer = (_req, res) => {
      const t = setTimeout(() => ok(_req, res), 3000);
      res.on("close", () => clearTimeout(t));
    };
    const started = Date.now();
    const connect = [
      "Network error while connecting to the push notification service.",
      "FAILED_TO_CONNECT_BOUNCER",
      502,
    ] as const;
    assertError(await srv.api("POST", TEST_NOTIFY, {}, me), ...connect);
    assert.ok(Date.now() - started < 2500, "the timeout cut the call short");

    // Nothing listening.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    process.env.PUSH_BOUNCER_URL = `http://127.0.0.1:${port}`;
    assertError(await srv.api("POST", TEST_NOTIFY, {}, me), ...connect);

    // A relay on loopback without OUTGOING_WEBHOOK_ALLOWED_NETWORKS: the
    // egress check refuses the address before any connection is made.
    process.env.PUSH_BOUNCER_URL = relayUrl;
    delete process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS;
    received.length = 0;
    assertError(await srv.api("POST", TEST_NOTIFY, {}, me), ...connect);
    assert.equal(received.length, 0, "the relay on loopback was not reached");
    process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS = "127.0.0.0/8";

    // Relay configuration removed after the device became active.
    delete process.env.PUSH_BOUNCER_URL;
    assertError(
      await srv.api("POST", TEST_NOTIFY, {}, me),
      "Server is not configured to use push notification service.",
      "PUSH_SERVICE_NOT_CONFIGURED",
    );
  });

  test("bots may not send test notifications; anonymous callers get 401", async () => {
    const m = await roleMatrix(srv);
    assertError(
      await srv.api("POST", TEST_NOTIFY, {}, m.bot!),
      "This endpoint does not accept bot requests.",
    );
    assert.equal((await srv.api("POST", TEST_NOTIFY, {}, null)).status, 401);
  });
});
