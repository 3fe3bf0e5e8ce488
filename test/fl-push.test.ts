// Message push notifications (feature levels 76, 115) and the push
// registration rules of levels 483 and 492, black-box over HTTP. The push
// relay is a real local HTTP server (remotes/push/notify and
// remotes/push/e2ee/notify); the server under test posts to it.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, afterEach, before, describe, test } from "node:test";
import nacl from "tweetnacl";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  startCluster,
  startEmbedded,
  type ApiHolder,
  type Creds,
  type EmbeddedHandle,
  type Member,
  type TestCluster,
} from "./support/index.ts";
import { until } from "./support/ops.ts";

interface RelayRequest {
  path: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

let relay: Server;
let relayUrl: string;
const received: RelayRequest[] = [];

before(async () => {
  relay = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Form-encoded (e2ee/register): kept as text.
      }
      received.push({ path: req.url ?? "", body });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ result: "success", msg: "" }));
    });
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
});

after(async () => {
  relay.closeAllConnections();
  await new Promise((resolve) => relay.close(resolve));
});

const LEGACY = "/api/v1/remotes/push/notify";
const E2EE = "/api/v1/remotes/push/e2ee/notify";

/** The legacy notify requests for one user's token. */
function legacyFor(token: string): RelayRequest[] {
  return received.filter((r) => r.path === LEGACY && r.body.android_devices?.includes(token));
}

async function legacyArrives(token: string): Promise<RelayRequest> {
  return until(`a push for ${token}`, async () => legacyFor(token)[0], 8000);
}

/** Nothing for `token` while a later control notification (to `control`) arrives, and a moment after. */
async function noPush(token: string, control: string): Promise<void> {
  await legacyArrives(control);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(legacyFor(token).length, 0, `no push for ${token}`);
}

async function withToken(srv: ApiHolder, name?: string): Promise<Member & { token: string }> {
  const u = await newUser(srv, 400, name);
  const token = `fcm-${u.userId}-${Math.random().toString(36).slice(2)}`;
  assertSuccess(await srv.api("POST", "/users/me/android_gcm_reg_id", { token }, u));
  return { ...u, token };
}

async function dm(srv: ApiHolder, from: Creds, to: number[], content: string): Promise<number> {
  const r = await srv.api("POST", "/messages", { type: "direct", to: JSON.stringify(to), content }, from);
  assertSuccess(r);
  return r.body.id as number;
}

async function channelWith(srv: ApiHolder, name: string, members: Member[]): Promise<number> {
  assertSuccess(
    await srv.api("POST", "/users/me/subscriptions", {
      subscriptions: JSON.stringify([{ name }]),
      principals: JSON.stringify(members.map((m) => m.userId)),
    }),
  );
  const r = await srv.api("GET", "/get_stream_id", { stream: name });
  assertSuccess(r);
  return r.body.stream_id as number;
}

function pushKey(byte: number): { b64: string; key: Uint8Array } {
  const key = new Uint8Array(32).fill(byte);
  return { b64: Buffer.concat([Buffer.from([0x31]), Buffer.from(key)]).toString("base64"), key };
}

/** Zulip's token_id: the first 8 bytes of the token's SHA-256, base64. */
function tokenId(token: string): string {
  return createHash("sha256").update(token).digest().subarray(0, 8).toString("base64");
}

function decrypt(b64: string, key: Uint8Array): Record<string, unknown> {
  const bytes = Buffer.from(b64, "base64");
  const plain = nacl.secretbox.open(
    new Uint8Array(bytes.subarray(nacl.secretbox.nonceLength)),
    new Uint8Array(bytes.subarray(0, nacl.secretbox.nonceLength)),
    key,
  );
  assert.ok(plain, "encrypted_data opens with the device's push key");
  return JSON.parse(Buffer.from(plain).toString()) as Record<string, unknown>;
}

/** A client device whose E2EE registration the relay accepted. */
async function e2eeDevice(srv: ApiHolder, auth: Creds, token: string, keyByte: number): Promise<number> {
  const d = await srv.api("POST", "/register_client_device", {}, auth);
  assertSuccess(d);
  const id = d.body.device_id as number;
  assertSuccess(
    await srv.api(
      "POST",
      "/mobile_push/register",
      {
        device_id: id,
        token_kind: "fcm",
        push_key: pushKey(keyByte).b64,
        push_key_id: 77,
        bouncer_public_key: "bouncer-public-key",
        encrypted_push_registration: "encrypted-push-registration-data",
        token_id: tokenId(token),
      },
      auth,
    ),
  );
  return id;
}

describe("message push notifications (embedded)", () => {
  let srv: EmbeddedHandle;

  before(async () => {
    process.env.PUSH_BOUNCER_URL = relayUrl;
    process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS = "127.0.0.0/8";
    srv = await startEmbedded();
  });

  after(async () => {
    await srv?.stop();
    delete process.env.PUSH_BOUNCER_URL;
    delete process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS;
  });

  afterEach(() => {
    received.length = 0;
    process.env.PUSH_BOUNCER_URL = relayUrl;
  });

  test("FL 76: a DM to an offline user with a token reaches the relay with Zulip's payloads", async () => {
    const alice = await newUser(srv, 400, "Alice Sender");
    const bob = await withToken(srv, "Bob Receiver");
    const id = await dm(srv, alice, [bob.userId], "Hello **Bob** & co");
    const r = await legacyArrives(bob.token);
    const b = r.body;
    assert.equal(b.user_id, bob.userId);
    assert.match(b.user_uuid, /^[0-9a-f-]{36}$/);
    assert.match(b.realm_uuid, /^[0-9a-f-]{36}$/);
    assert.deepEqual(b.android_devices, [bob.token]);
    assert.deepEqual(b.apple_devices, []);
    assert.deepEqual(b.gcm_options, { priority: "high" });
    const g = b.gcm_payload;
    assert.equal(g.event, "message");
    assert.equal(g.message_id, id);
    assert.equal(g.recipient_type, "private");
    assert.equal(g.sender_id, alice.userId);
    assert.equal(g.sender_email, alice.email);
    assert.equal(g.sender_full_name, "Alice Sender");
    assert.equal(g.user_id, bob.userId);
    assert.equal(g.realm_name, "Test Org");
    assert.equal(typeof g.realm_url, "string");
    assert.equal(g.content, "Hello Bob & co");
    assert.equal(typeof g.time, "number");
    assert.equal(g.stream_id, undefined);
    assert.equal(g.pm_users, undefined);
    // Fields retired at level 413.
    for (const k of ["server", "realm_id", "zulip_message_id", "content_truncated"]) assert.ok(!(k in g), k);
    const a = b.apns_payload;
    assert.deepEqual(a.alert, { title: "Alice Sender", subtitle: "", body: "Hello Bob & co" });
    assert.deepEqual(a.custom.zulip.message_ids, [id]);
    assert.equal(a.custom.zulip.recipient_type, "private");
  });

  test('FL 409: require_e2ee_push_notifications puts "New message" in legacy payloads', async () => {
    const alice = await newUser(srv, 400, "Alice Private");
    const bob = await withToken(srv, "Bob Private");
    assertSuccess(await srv.api("PATCH", "/realm", { require_e2ee_push_notifications: true }));
    try {
      await dm(srv, alice, [bob.userId], "the secret plan");
      const b = (await legacyArrives(bob.token)).body;
      assert.equal(b.gcm_payload.content, "New message");
      assert.equal(b.apns_payload.alert.body, "New message");
      assert.ok(!JSON.stringify(b).includes("secret plan"));
      // Metadata stays, as in Zulip.
      assert.equal(b.gcm_payload.sender_full_name, "Alice Private");
    } finally {
      assertSuccess(await srv.api("PATCH", "/realm", { require_e2ee_push_notifications: false }));
    }
  });

  test("FL 76: a group DM names its users in pm_users; the sender gets nothing", async () => {
    const alice = await withToken(srv, "Alice Group");
    const bob = await withToken(srv, "Bob Group");
    const carol = await withToken(srv, "Carol Group");
    await dm(srv, alice, [bob.userId, carol.userId], "hi all");
    const r = await legacyArrives(bob.token);
    const ids = [alice.userId, bob.userId, carol.userId].sort((x, y) => x - y).join(",");
    assert.equal(r.body.gcm_payload.pm_users, ids);
    assert.equal(r.body.apns_payload.alert.title, "Alice Group, Carol Group");
    assert.equal(r.body.apns_payload.alert.subtitle, "Alice Group:");
    await legacyArrives(carol.token);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(legacyFor(alice.token).length, 0, "the sender is not notified");
  });

  test("FL 76: no push for a user active on a client with online push off", async () => {
    const alice = await newUser(srv);
    const busy = await withToken(srv);
    const away = await withToken(srv);
    assertSuccess(await srv.api("PATCH", "/settings", { enable_online_push_notifications: false }, busy));
    await openQueue(srv, busy);
    assertSuccess(await srv.api("POST", "/users/me/presence", { status: "active" }, busy));
    await dm(srv, alice, [busy.userId], "are you there?");
    await dm(srv, alice, [away.userId], "control");
    await noPush(busy.token, away.token);

    // The same user with online push on (Zulip's default) is notified while active.
    received.length = 0;
    assertSuccess(await srv.api("PATCH", "/settings", { enable_online_push_notifications: true }, busy));
    await dm(srv, alice, [busy.userId], "again");
    await legacyArrives(busy.token);
  });

  test("FL 76: a queue without active presence still counts as away", async () => {
    const alice = await newUser(srv);
    const idle = await withToken(srv);
    assertSuccess(await srv.api("PATCH", "/settings", { enable_online_push_notifications: false }, idle));
    await openQueue(srv, idle);
    await dm(srv, alice, [idle.userId], "wake up");
    await legacyArrives(idle.token);
  });

  test("FL 76: settings and mutes: offline push off, a muted sender", async () => {
    const alice = await newUser(srv);
    const off = await withToken(srv);
    const muter = await withToken(srv);
    const control = await withToken(srv);
    assertSuccess(await srv.api("PATCH", "/settings", { enable_offline_push_notifications: false }, off));
    assertSuccess(await srv.api("POST", `/users/me/muted_users/${alice.userId}`, {}, muter));
    await dm(srv, alice, [off.userId], "one");
    await dm(srv, alice, [muter.userId], "two");
    await dm(srv, alice, [control.userId], "three");
    await noPush(off.token, control.token);
    assert.equal(legacyFor(muter.token).length, 0, "a muted sender does not notify");
  });

  test("FL 115: a channel mention carries stream_id, legacy and E2EE; unmentioned subscribers get nothing", async () => {
    const alice = await newUser(srv, 400, "Alice Chan");
    const bob = await withToken(srv, "Bob Chan");
    const quiet = await withToken(srv, "Quiet Chan");
    const key = pushKey(9);
    await e2eeDevice(srv, bob, `e2ee-${bob.userId}`, 9);
    const name = `push-${Date.now()}`;
    const streamId = await channelWith(srv, name, [alice, bob, quiet]);
    const r = await srv.api(
      "POST",
      "/messages",
      { type: "stream", to: name, topic: "lunch", content: "@**Bob Chan** food?" },
      alice,
    );
    assertSuccess(r);
    const legacy = await legacyArrives(bob.token);
    const g = legacy.body.gcm_payload;
    assert.equal(g.recipient_type, "stream");
    assert.equal(g.stream_id, streamId);
    assert.equal(g.stream, name);
    assert.equal(g.topic, "lunch");
    assert.equal(g.content, "@Bob Chan food?");
    assert.equal(legacy.body.apns_payload.alert.title, `#${name} > lunch`);
    assert.equal(legacy.body.apns_payload.alert.subtitle, "Alice Chan mentioned you:");
    assert.equal(legacy.body.apns_payload.custom.zulip.stream_id, streamId);

    const e2ee = await until("the E2EE notify", async () => received.find((x) => x.path === E2EE), 8000);
    const reqs = e2ee.body.push_requests as { token_id: string; payload: Record<string, unknown> }[];
    assert.equal(reqs.length, 1);
    assert.equal(reqs[0]!.token_id, tokenId(`e2ee-${bob.userId}`));
    assert.equal(reqs[0]!.payload.push_key_id, 77);
    const data = decrypt(String(reqs[0]!.payload.encrypted_data), key.key);
    assert.equal(data.type, "message");
    assert.equal(data.recipient_type, "channel");
    assert.equal(data.channel_id, streamId);
    assert.equal(data.channel_name, name);
    assert.equal(data.topic, "lunch");
    assert.equal(data.message_id, r.body.id);
    assert.equal(data.sender_id, alice.userId);
    assert.equal(data.user_id, bob.userId);

    await new Promise((res) => setTimeout(res, 300));
    assert.equal(legacyFor(quiet.token).length, 0, "no reason, no push");
  });

  test("FL 76: a user group mention carries mentioned_user_group_id and _name", async () => {
    const alice = await newUser(srv, 400, "Alice Group Sender");
    const bob = await withToken(srv, "Bob In Group");
    const direct = await withToken(srv, "Dana Direct");
    const group = `pushers${Date.now()}`;
    const g = await srv.api("POST", "/user_groups/create", {
      name: group,
      description: "push test",
      members: JSON.stringify([bob.userId, direct.userId]),
    });
    assertSuccess(g);
    const groupId = g.body.group_id as number;
    const name = `gpush-${Date.now()}`;
    await channelWith(srv, name, [alice, bob, direct]);
    const r = await srv.api(
      "POST",
      "/messages",
      { type: "stream", to: name, topic: "t", content: `@*${group}* and @**Dana Direct** hi` },
      alice,
    );
    assertSuccess(r);
    const legacy = await legacyArrives(bob.token);
    const gcm = legacy.body.gcm_payload;
    assert.equal(gcm.mentioned_user_group_id, groupId);
    assert.equal(gcm.mentioned_user_group_name, group);
    assert.equal(legacy.body.apns_payload.custom.zulip.mentioned_user_group_id, groupId);
    assert.equal(legacy.body.apns_payload.alert.subtitle, `Alice Group Sender mentioned @${group}:`);
    // Mentioned personally too: the push is a personal mention.
    const d = (await legacyArrives(direct.token)).body;
    assert.equal(d.gcm_payload.mentioned_user_group_id, undefined);
    assert.equal(d.apns_payload.alert.subtitle, "Alice Group Sender mentioned you:");
    // Zulip's rendering and the member's mentioned flag.
    const m = await srv.api("GET", `/messages/${r.body.id}`, {}, bob);
    assertSuccess(m);
    assert.ok(
      String(m.body.message.content).includes(
        `<span class="user-group-mention" data-user-group-id="${groupId}">@${group}</span>`,
      ),
      m.body.message.content,
    );
    assert.ok((m.body.message.flags as string[]).includes("mentioned"));
  });

  test("FL 76: a channel's push_notifications on notifies its subscriber, except in a muted topic", async () => {
    const alice = await newUser(srv, 400, "Alice Poster");
    const fan = await withToken(srv, "Fan Of Channel");
    const other = await withToken(srv, "Other Subscriber");
    const name = `spush-${Date.now()}`;
    const streamId = await channelWith(srv, name, [alice, fan, other]);
    assertSuccess(
      await srv.api(
        "POST",
        "/users/me/subscriptions/properties",
        {
          subscription_data: JSON.stringify([
            { stream_id: streamId, property: "push_notifications", value: true },
          ]),
        },
        fan,
      ),
    );
    assertSuccess(
      await srv.api(
        "POST",
        "/user_topics",
        { stream_id: streamId, topic: "quiet", visibility_policy: 1 },
        fan,
      ),
    );
    const post = async (topic: string, content: string) =>
      assertSuccess(await srv.api("POST", "/messages", { type: "stream", to: name, topic, content }, alice));
    await post("quiet", "muted topic");
    await post("news", "plain news");
    const r = await legacyArrives(fan.token);
    assert.equal(r.body.gcm_payload.stream_id, streamId);
    assert.equal(r.body.gcm_payload.topic, "news");
    assert.equal(r.body.apns_payload.alert.subtitle, "Alice Poster:");
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(legacyFor(fan.token).length, 1, "nothing for the muted topic");
    assert.equal(legacyFor(other.token).length, 0, "push off by default");
  });

  test("FL 76: turning a channel's push_notifications on or off takes effect on the next send", async () => {
    const alice = await newUser(srv, 400, "Alice Toggler");
    const fan = await withToken(srv, "Late Fan");
    const control = await withToken(srv, "Control Fan");
    const name = `spush-late-${Date.now()}`;
    const streamId = await channelWith(srv, name, [alice, fan, control]);
    const setPush = async (who: Member, value: boolean) =>
      assertSuccess(
        await srv.api(
          "POST",
          "/users/me/subscriptions/properties",
          {
            subscription_data: JSON.stringify([
              { stream_id: streamId, property: "push_notifications", value },
            ]),
          },
          who,
        ),
      );
    const post = async (content: string) =>
      assertSuccess(
        await srv.api("POST", "/messages", { type: "stream", to: name, topic: "t", content }, alice),
      );
    await setPush(control, true);
    await post("before"); // the channel's subscriber lists are computed (and kept) here
    await legacyArrives(control.token);
    assert.equal(legacyFor(fan.token).length, 0, "push off by default");
    await setPush(fan, true);
    await post("after");
    await legacyArrives(fan.token);
    await setPush(fan, false);
    await setPush(control, false);
    await setPush(control, true);
    const seen = legacyFor(control.token).length;
    await post("off again");
    await until(
      "a second push for the control",
      async () => legacyFor(control.token).length > seen || undefined,
      8000,
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(legacyFor(fan.token).length, 1, "nothing once turned off");
  });

  test("FL 76: without a relay nothing is sent, and nothing is sent later", async () => {
    const alice = await newUser(srv);
    const bob = await withToken(srv);
    delete process.env.PUSH_BOUNCER_URL;
    await dm(srv, alice, [bob.userId], "nobody hears");
    await new Promise((r) => setTimeout(r, 300));
    process.env.PUSH_BOUNCER_URL = relayUrl;
    const control = await withToken(srv);
    await dm(srv, alice, [control.userId], "control");
    await noPush(bob.token, control.token);
  });
});

describe("push registrations (embedded)", () => {
  let srv: EmbeddedHandle;

  before(async () => {
    process.env.PUSH_BOUNCER_URL = relayUrl;
    process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS = "127.0.0.0/8";
    srv = await startEmbedded();
  });

  after(async () => {
    await srv?.stop();
    delete process.env.PUSH_BOUNCER_URL;
    delete process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS;
  });

  afterEach(() => {
    received.length = 0;
  });

  async function devicesOf(auth: Creds): Promise<Record<string, Record<string, unknown>>> {
    const r = await srv.api("POST", "/register", { fetch_event_types: JSON.stringify(["device"]) }, auth);
    assertSuccess(r);
    return r.body.devices;
  }

  test("FL 483: E2EE registration removes the legacy token with the same value, and only that one", async () => {
    const me = await newUser(srv);
    const same = `same-${me.userId}`;
    const other = `other-${me.userId}`;
    assertSuccess(await srv.api("POST", "/users/me/android_gcm_reg_id", { token: same }, me));
    assertSuccess(await srv.api("POST", "/users/me/android_gcm_reg_id", { token: other }, me));
    await e2eeDevice(srv, me, same, 5);
    assertError(
      await srv.api("DELETE", "/users/me/android_gcm_reg_id", { token: same }, me),
      "Token does not exist",
    );
    assertSuccess(await srv.api("DELETE", "/users/me/android_gcm_reg_id", { token: other }, me));

    // An APNs token of the same value is another registration (another kind).
    const apns = "c0ffee".repeat(8);
    assertSuccess(
      await srv.api("POST", "/users/me/apns_device_token", { token: apns, appid: "org.zulip.Zulip" }, me),
    );
    await e2eeDevice(srv, me, apns, 6);
    assertSuccess(await srv.api("DELETE", "/users/me/apns_device_token", { token: apns }, me));
  });

  test("FL 492: regenerating the API key removes the E2EE push devices, with device remove events", async () => {
    const me = await newUser(srv);
    const pushed = await e2eeDevice(srv, me, `tok-${me.userId}`, 4);
    const plain = await srv.api("POST", "/register_client_device", {}, me);
    assertSuccess(plain);
    const q = await openQueue(srv, me, ["device"]);
    const r = await srv.api("POST", "/users/me/api_key/regenerate", {}, me);
    assertSuccess(r);
    const fresh = { email: me.email, apiKey: r.body.api_key as string };
    const devices = await devicesOf(fresh);
    assert.equal(devices[String(pushed)], undefined);
    assert.ok(devices[String(plain.body.device_id)], "a device without push registration stays");
    const evs = await eventsUntil(srv, { ...q, auth: fresh }, (e) => e.some((x) => x.type === "device"));
    assert.deepEqual(
      evs.filter((e) => e.type === "device").map((e) => [e.op, e.device_id]),
      [["remove", pushed]],
    );
  });
});

describe("message push notifications (cluster)", () => {
  let c: TestCluster;

  before(async () => {
    c = await startCluster({
      nodes: ["n1", "n2"],
      env: { PUSH_BOUNCER_URL: relayUrl, OUTGOING_WEBHOOK_ALLOWED_NETWORKS: "127.0.0.0/8" },
    });
  });

  after(async () => {
    await c?.stop();
  });

  test("FL 76: a DM and a channel mention reach the relay from the nodes", async () => {
    const alice = await newUser(c, 400, "Alice Cluster");
    const bob = await withToken(c, "Bob Cluster");
    const id = await dm(c, alice, [bob.userId], "hello from the cluster");
    const r = await legacyArrives(bob.token);
    assert.equal(r.body.gcm_payload.message_id, id);
    assert.equal(r.body.gcm_payload.content, "hello from the cluster");

    received.length = 0;
    const name = `cpush-${Date.now()}`;
    const streamId = await channelWith(c, name, [alice, bob]);
    assertSuccess(
      await c.api(
        "POST",
        "/messages",
        { type: "stream", to: name, topic: "t", content: "@**Bob Cluster** hi" },
        alice,
      ),
    );
    const m = await legacyArrives(bob.token);
    assert.equal(m.body.gcm_payload.stream_id, streamId);
  });
});
