// POST /users/{user_id}/status: an administrator sets another user's status
// (Zulip 11, feature level 407; administrators' bots too since 473). Zulip's
// update_user_status_admin: the same fields as /users/me/status but `away`.

import { realmRef, userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { defineRoute, p, param, type RouteDef } from "../index.ts";

/** A `<int:...>` path segment: digits or no route; past our ids, an unknown user. */
function pathId(raw: string): number {
  if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : 0;
}

const updateStatusForUser = defineRoute({
  method: "POST",
  path: "/users/:user_id/status",
  auth: "required",
  params: {
    // The 60-code-point limit applies after stripping, so the actor checks it.
    status_text: param(p.string()),
    emoji_name: param(p.string()),
    emoji_code: param(p.string()),
    reaction_type: param(p.string()),
  },
  async handler(req) {
    const userId = pathId(req.path.user_id!);
    await req.call(realmRef(req.realmId), "adminStatusTarget", { userId });
    return await req.call(userRef(req.realmId, userId), "updateStatusByAdmin", {
      status_text: req.params.status_text,
      emoji_name: req.params.emoji_name,
      emoji_code: req.params.emoji_code,
      reaction_type: req.params.reaction_type,
    });
  },
});

export const userStatusRoutes: RouteDef[] = [updateStatusForUser];
