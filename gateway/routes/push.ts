// Push device registration (Zulip's zerver/views/push_notifications.py and
// zerver/views/devices.py): the legacy token routes
// (POST/DELETE /users/me/apns_device_token, /users/me/android_gcm_reg_id),
// the logged-in device routes (POST /register_client_device,
// POST /remove_client_device), E2EE push registration
// (POST /mobile_push/register) and POST /mobile_push/e2ee/test_notification.
// Rules live in the user actor (actors/user/devices.ts); the calls to the
// push relay (push-relay.ts) happen here, after the actor has answered.

import { realmRef, userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { ArgsOf, MethodOf, ReplyOf } from "../../actors/protocol.ts";
import type { UserProtocol } from "../../actors/user/index.ts";
import { defineRoute, p, param, type Parser, type RouteDef, type RouteRequest } from "../index.ts";
import {
  encryptForDevice,
  pushRelayUrl,
  realmUuid,
  relayNotify,
  relayRegister,
  throwForNotify,
} from "./push-relay.ts";

/** Zulip's ApnsAppId: letters, digits, dots and dashes. */
const appIdParam: Parser<string> = (raw) => {
  if (!/^[.a-zA-Z0-9-]+$/.test(raw)) throw errors.invalidAppId();
  return raw;
};

/** One call to the caller's own user actor. */
async function call<M extends MethodOf<UserProtocol>>(
  req: RouteRequest,
  method: M,
  args: ArgsOf<UserProtocol, M>,
): Promise<ReplyOf<UserProtocol, M>> {
  return await req.call(userRef(req.caller!.realmId, req.caller!.userId), method, args);
}

const addApns = defineRoute({
  method: "POST",
  path: "/users/me/apns_device_token",
  auth: "required",
  // Zulip's signature order: appid is checked before token.
  params: { appid: param(appIdParam, { required: true }), token: param(p.string(), { required: true }) },
  async handler(req) {
    return call(req, "addPushToken", {
      kind: "apns",
      token: req.params.token,
      appId: req.params.appid,
    });
  },
});

const removeApns = defineRoute({
  method: "DELETE",
  path: "/users/me/apns_device_token",
  auth: "required",
  params: { token: param(p.string(), { required: true }) },
  async handler(req) {
    return call(req, "removePushToken", { kind: "apns", token: req.params.token });
  },
});

const addAndroid = defineRoute({
  method: "POST",
  path: "/users/me/android_gcm_reg_id",
  auth: "required",
  params: { token: param(p.string(), { required: true }) },
  async handler(req) {
    return call(req, "addPushToken", { kind: "fcm", token: req.params.token });
  },
});

const removeAndroid = defineRoute({
  method: "DELETE",
  path: "/users/me/android_gcm_reg_id",
  auth: "required",
  params: { token: param(p.string(), { required: true }) },
  async handler(req) {
    return call(req, "removePushToken", { kind: "fcm", token: req.params.token });
  },
});

// ---- Logged-in devices (Zulip 12, feature levels 468 and 470) --------------

const registerClientDevice = defineRoute({
  method: "POST",
  path: "/register_client_device",
  auth: "required",
  params: {},
  async handler(req) {
    return call(req, "registerClientDevice", {});
  },
});

const removeClientDevice = defineRoute({
  method: "POST",
  path: "/remove_client_device",
  auth: "required",
  params: { device_id: param(p.int(), { required: true }) },
  async handler(req) {
    return call(req, "removeClientDevice", { deviceId: req.params.device_id });
  },
});

// ---- POST /mobile_push/register ---------------------------------------------

/** Zulip's check_string_in_validator(Device.PushTokenKind.values), as pydantic words it. */
const tokenKindParam: Parser<"fcm" | "apns"> = (raw, name) => {
  if (raw !== "fcm" && raw !== "apns") throw errors.valueError(name, "Not in the list of possible values");
  return raw;
};

/** Json[int] with Zulip's uint32_validator. */
const uint32Param: Parser<number> = (raw, name) => {
  const n = p.int()(raw, name);
  if (n < 0 || n > 2 ** 32 - 1) throw errors.valueError(name, "Not a valid unsigned 32-bit integer");
  return n;
};

/** The relay's refusal of a forwarded registration, as Zulip's worker records it. */
function registrationErrorCode(code: string): string {
  return code === "INVALID_BOUNCER_PUBLIC_KEY" || code === "REQUEST_EXPIRED" ? code : "BAD_REQUEST";
}

async function realmInfo(req: RouteRequest): Promise<{ name: string; url: string }> {
  const info = await req.call(realmRef(req.realmId), "publicInfo", {});
  const host = info.host || process.env.EXTERNAL_HOST || req.host;
  return { name: info.name ?? "", url: `${req.scheme}://${host}` };
}

const registerPushDevice = defineRoute({
  method: "POST",
  path: "/mobile_push/register",
  auth: "required",
  params: {
    device_id: param(p.int(), { required: true }),
    token_kind: param(tokenKindParam),
    push_key: param(p.string()),
    push_key_id: param(uint32Param),
    bouncer_public_key: param(p.string()),
    encrypted_push_registration: param(p.string()),
    token_id: param(p.string()),
  },
  async handler(req) {
    const { relay } = await call(req, "registerPushDevice", {
      relayConfigured: pushRelayUrl() !== null,
      deviceId: req.params.device_id,
      tokenKind: req.params.token_kind,
      pushKey: req.params.push_key,
      pushKeyId: req.params.push_key_id,
      bouncerPublicKey: req.params.bouncer_public_key,
      encryptedPushRegistration: req.params.encrypted_push_registration,
      tokenId: req.params.token_id,
    });
    if (!relay) return {};
    // Zulip hands this to a queue worker and answers the client at once;
    // the outcome reaches the client as a `device` event either way.
    const realm = await realmInfo(req);
    const outcome = await relayRegister({
      realm_uuid: realmUuid(realm.url),
      token_id: relay.token_id,
      encrypted_push_registration: relay.encrypted_push_registration,
      bouncer_public_key: relay.bouncer_public_key,
    });
    // Network, 5xx and configuration failures leave the registration
    // pending, as Zulip's worker does while it retries.
    if (outcome.kind === "ok" || outcome.kind === "client") {
      await call(req, "completePushRegistration", {
        deviceId: relay.device_id,
        tokenId: relay.token_id,
        ...(outcome.kind === "client" ? { errorCode: registrationErrorCode(outcome.code) } : {}),
      });
    }
    return {};
  },
});

// ---- POST /mobile_push/e2ee/test_notification -------------------------------

const e2eeTestNotification = defineRoute({
  method: "POST",
  path: "/mobile_push/e2ee/test_notification",
  auth: "required",
  params: { device_id: param(p.int()) },
  async handler(req) {
    const deviceId = req.params.device_id;
    const { devices } = await call(req, "activePushDevices", { deviceId });
    // Devices become active only through a relay; one configured earlier
    // and removed since leaves nothing to send them through.
    if (!pushRelayUrl()) throw errors.pushServiceNotConfigured();
    const realm = await realmInfo(req);
    const data = JSON.stringify({
      realm_name: realm.name,
      realm_url: realm.url,
      time: Math.floor(Date.now() / 1000),
      type: "test",
      user_id: req.caller!.userId,
    });
    const pushRequests = devices.map((d) => {
      const encrypted = encryptForDevice(d.push_key, data);
      if (d.push_token_kind === "apns") {
        return {
          token_id: d.push_token_id,
          http_headers: { apns_priority: 10, apns_push_type: "alert" },
          payload: {
            push_key_id: d.push_key_id,
            encrypted_data: encrypted,
            aps: { "mutable-content": 1, alert: { title: "New notification" } },
          },
        };
      }
      return {
        token_id: d.push_token_id,
        fcm_priority: "high",
        payload: { push_key_id: d.push_key_id, encrypted_data: encrypted },
      };
    });
    throwForNotify(await relayNotify({ realm_uuid: realmUuid(realm.url), push_requests: pushRequests }));
    return {};
  },
});

export const pushRoutes: RouteDef[] = [
  addApns,
  removeApns,
  addAndroid,
  removeAndroid,
  registerClientDevice,
  removeClientDevice,
  registerPushDevice,
  e2eeTestNotification,
];
