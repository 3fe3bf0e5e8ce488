// Legacy push device registration (Zulip's zerver/views/push_notifications.py):
// POST/DELETE /users/me/apns_device_token and /users/me/android_gcm_reg_id.
// Parse, one call to the caller's user actor, reply.

import { userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj } from "../../actors/types.ts";
import { p, param, type Parser, type RouteDef, type RouteRequest } from "../index.ts";

/** Zulip's ApnsAppId: letters, digits, dots and dashes. */
const appIdParam: Parser<string> = (raw) => {
  if (!/^[.a-zA-Z0-9-]+$/.test(raw)) throw errors.invalidAppId();
  return raw;
};

async function call(req: RouteRequest, method: string, args: Obj): Promise<Obj> {
  return (await req.call(userRef(req.caller!.realmId, req.caller!.userId), method, args)) as Obj;
}

const addApns: RouteDef = {
  method: "POST",
  path: "/users/me/apns_device_token",
  auth: "required",
  // Zulip's signature order: appid is checked before token.
  params: { appid: param(appIdParam, { required: true }), token: param(p.string(), { required: true }) },
  async handler(req) {
    return call(req, "addPushToken", {
      kind: "apns",
      token: req.params.token as string,
      appId: req.params.appid as string,
    });
  },
};

const removeApns: RouteDef = {
  method: "DELETE",
  path: "/users/me/apns_device_token",
  auth: "required",
  params: { token: param(p.string(), { required: true }) },
  async handler(req) {
    return call(req, "removePushToken", { kind: "apns", token: req.params.token as string });
  },
};

const addAndroid: RouteDef = {
  method: "POST",
  path: "/users/me/android_gcm_reg_id",
  auth: "required",
  params: { token: param(p.string(), { required: true }) },
  async handler(req) {
    return call(req, "addPushToken", { kind: "fcm", token: req.params.token as string });
  },
};

const removeAndroid: RouteDef = {
  method: "DELETE",
  path: "/users/me/android_gcm_reg_id",
  auth: "required",
  params: { token: param(p.string(), { required: true }) },
  async handler(req) {
    return call(req, "removePushToken", { kind: "fcm", token: req.params.token as string });
  },
};

export const pushRoutes: RouteDef[] = [addApns, removeApns, addAndroid, removeAndroid];
