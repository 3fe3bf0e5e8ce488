// POST /mobile_push/test_notification (Zulip's send_test_push_notification_api):
// a test notification to the caller's legacy push tokens (all of them, or
// the one named by `token`) through the push relay's push/notify, with
// the payloads Zulip's send_test_push_notification builds. The user actor
// picks the tokens (actors/user/push-test.ts); the relay call is made here.

import { realmRef, userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";
import { pushRelayUrl, realmUuid, relayNotifyLegacy, throwForNotify, userUuid } from "./push-relay.ts";

async function realmInfo(req: RouteRequest): Promise<{ name: string; url: string; host: string }> {
  const info = await req.call(realmRef(req.realmId), "publicInfo", {});
  const host = info.host || process.env.EXTERNAL_HOST || req.host;
  return { name: info.name ?? "", url: `${req.scheme}://${host}`, host };
}

const testNotification = defineRoute({
  method: "POST",
  path: "/mobile_push/test_notification",
  auth: "required",
  params: { token: param(p.string()) },
  async handler(req) {
    const userId = req.caller!.userId;
    const token = req.params.token;
    const { tokens } = await req.call(userRef(req.realmId, userId), "testPushTokens", { token });
    // No token of the user's: nothing to send (Zulip loops over none).
    if (tokens.length === 0) return {};
    if (!pushRelayUrl()) throw errors.pushServiceNotConfigured();
    const realm = await realmInfo(req);
    const base = {
      server: process.env.EXTERNAL_HOST || realm.host,
      realm_id: req.realmId,
      realm_name: realm.name,
      realm_uri: realm.url,
      realm_url: realm.url,
      user_id: userId,
    };
    const outcome = await relayNotifyLegacy({
      user_uuid: userUuid(realm.url, userId),
      user_id: userId,
      realm_uuid: realmUuid(realm.url),
      apns_payload: {
        alert: {
          title: "Test notification",
          body: `This is a test notification from ${realm.name} (${realm.url}).`,
        },
        sound: "default",
        custom: { zulip: { ...base, event: "test" } },
      },
      gcm_payload: { ...base, event: "test", time: Math.floor(Date.now() / 1000) },
      gcm_options: { priority: "high" },
      android_devices: tokens.filter((t) => t.kind === "fcm").map((t) => t.token),
      apple_devices: tokens.filter((t) => t.kind === "apns").map((t) => t.token),
    });
    if (outcome.kind === "client" && outcome.code === "INVALID_REMOTE_PUSH_DEVICE_TOKEN")
      throw errors.invalidRemotePushDeviceToken();
    throwForNotify(outcome);
    return {};
  },
});

export const pushTestRoutes: RouteDef[] = [testNotification];
