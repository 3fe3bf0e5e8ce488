// PATCH /settings and its deprecated aliases /settings/display and
// /settings/notifications (Zulip's json_change_settings). The gateway only
// parses types; values, permissions and target_users live in the user actor.

import { settingTypes, userRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import { c, p, param, type ParamSpec, type RouteDef } from "../index.ts";

const PARSERS: Record<string, ParamSpec["parse"]> = { bool: p.bool(), int: p.int(), string: p.string() };

function settingsParams(): Record<string, ParamSpec> {
  const params: Record<string, ParamSpec> = {
    full_name: param(p.string()),
    email: param(p.string()),
    old_password: param(p.string()),
    new_password: param(p.string()),
    timezone: param(p.string()),
    target_users: param(
      p.json(
        c.dict(
          {
            user_ids: { check: c.list(c.int()) },
            group_ids: { check: c.list(c.int()) },
            skip_if_already_edited: { check: c.bool(), required: true },
          },
          // Zulip's TargetUsersData is a pydantic model that ignores extra keys.
          { allowExtra: true },
        ),
      ),
    ),
  };
  for (const [name, type] of Object.entries(settingTypes())) params[name] = param(PARSERS[type]!);
  return params;
}

function settingsRoute(path: string): RouteDef {
  return {
    method: "PATCH",
    path,
    auth: "required",
    params: settingsParams(),
    async handler(req) {
      const caller = req.caller!;
      const args: Obj = {};
      for (const [name, value] of Object.entries(req.params)) {
        if (value !== undefined) args[name] = value as Obj[string];
      }
      return await req.call(userRef(caller.realmId, caller.userId), "updateSettings", args);
    },
  };
}

export const settingsRoutes: RouteDef[] = [
  settingsRoute("/settings"),
  settingsRoute("/settings/display"),
  settingsRoute("/settings/notifications"),
];
