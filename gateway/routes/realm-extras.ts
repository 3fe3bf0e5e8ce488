// PATCH /realm/user_settings_defaults (Zulip's
// update_realm_user_settings_defaults) and code playgrounds, POST
// /realm/playgrounds and DELETE /realm/playgrounds/{playground_id}
// (zerver/views/realm_playgrounds.py). The gateway parses types; the realm
// actor checks the caller is an administrator and validates the values.

import { realmRef, settingTypes, userDefaultSettings } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj } from "../../actors/types.ts";
import { defineRoute, p, param, type ParamSpec, type RouteDef, type RouteRequest } from "../index.ts";

const PARSERS: Record<string, ParamSpec["parse"]> = { bool: p.bool(), int: p.int(), string: p.string() };

/** Settings the endpoint does not take are reported in ignored_parameters_unsupported. */
function defaultsParams(): Record<string, ParamSpec> {
  const types = settingTypes();
  const params: Record<string, ParamSpec> = {};
  for (const name of userDefaultSettings()) params[name] = param(PARSERS[types[name]!]!);
  return params;
}

const updateDefaults = defineRoute({
  method: "PATCH",
  path: "/realm/user_settings_defaults",
  auth: "required",
  params: defaultsParams(),
  async handler(req) {
    const args: Obj = {};
    for (const [name, value] of Object.entries(req.params))
      if (value !== undefined) args[name] = value as Obj[string];
    await req.call(realmRef(req.realmId), "updateUserSettingsDefaults", args);
    return {};
  },
});

function playgroundId(req: RouteRequest): number {
  const raw = req.path.playground_id ?? "";
  // Zulip's URL pattern takes digits only; anything else matches no route.
  if (!/^\d{1,15}$/.test(raw)) throw errors.noSuchRoute();
  return Number(raw);
}

const addPlayground = defineRoute({
  method: "POST",
  path: "/realm/playgrounds",
  auth: "required",
  params: {
    name: param(p.string(), { required: true }),
    url_template: param(p.string(), { required: true }),
    pygments_language: param(p.string(), { required: true }),
  },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "addPlayground", {
      name: req.params.name,
      url_template: req.params.url_template,
      pygments_language: req.params.pygments_language,
    });
  },
});

const removePlayground = defineRoute({
  method: "DELETE",
  path: "/realm/playgrounds/:playground_id",
  auth: "required",
  params: {},
  async handler(req) {
    await req.call(realmRef(req.realmId), "removePlayground", { id: playgroundId(req) });
    return {};
  },
});

export const realmExtraRoutes: RouteDef[] = [updateDefaults, addPlayground, removePlayground];
