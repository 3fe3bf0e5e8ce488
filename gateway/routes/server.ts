// GET /server_settings and POST /fetch_api_key: the two endpoints a client
// uses before it has credentials (Zulip's zerver/views/auth.py).

import { FEATURE_LEVEL, MERGE_BASE, ZULIP_VERSION, realmRef, userRef } from "../../actors/index.ts";
import { defineRoute, p, param, type RouteDef } from "../index.ts";
import { pushRelayUrl } from "./push-relay.ts";

/**
 * Zulip's get_auth_backends_data keys: "password", then one per backend in
 * AUTH_BACKEND_NAME_MAP. We offer email + password only.
 */
const AUTHENTICATION_METHODS = {
  password: true,
  dev: false,
  email: true,
  ldap: false,
  remoteuser: false,
  github: false,
  azuread: false,
  gitlab: false,
  google: false,
  apple: false,
  discord: false,
  saml: false,
  "openid connect": false,
};

const serverSettings = defineRoute({
  method: "GET",
  path: "/server_settings",
  auth: "none",
  params: {},
  async handler(req) {
    const info = await req.call(realmRef(req.realmId), "publicInfo", {});
    // The realm's host was EXTERNAL_HOST when the server created it.
    const realmUrl = `${req.scheme}://${info.host || process.env.EXTERNAL_HOST || req.host}`;
    return {
      authentication_methods: { ...AUTHENTICATION_METHODS },
      zulip_version: ZULIP_VERSION,
      zulip_merge_base: MERGE_BASE,
      zulip_feature_level: FEATURE_LEVEL,
      service_version: ZULIP_VERSION,
      service_merge_base: MERGE_BASE,
      service_feature_level: FEATURE_LEVEL,
      push_notifications_enabled: pushRelayUrl() !== null,
      is_incompatible: false,
      email_auth_enabled: true,
      require_email_format_usernames: true,
      realm_url: realmUrl,
      realm_uri: realmUrl,
      realm_name: info.name,
      realm_icon: info.icon,
      realm_description: info.description,
      realm_web_public_access_enabled: info.webPublicAccessEnabled,
      external_authentication_methods: [],
    };
  },
});

const fetchApiKey = defineRoute({
  method: "POST",
  path: "/fetch_api_key",
  auth: "none",
  params: {
    username: param(p.string(), { required: true }),
    password: param(p.string(), { required: true }),
  },
  async handler(req) {
    const username = req.params.username;
    const password = req.params.password;
    // Two steps so the realm actor never waits on a password hash: the
    // realm checks the username (syntax, rate limit, account state), then
    // the user actor verifies the password.
    const found = await req.call(realmRef(req.realmId), "login", {
      username,
      emptyPassword: password === "",
    });
    return await req.call(userRef(req.realmId, found.userId), "login", { password });
  },
});

export const serverRoutes: RouteDef[] = [serverSettings, fetchApiKey];
