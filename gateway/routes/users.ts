// User administration and the caller's own profile and status
// (Zulip's zerver/views/users.py and zerver/views/presence.py).

import { channelRows, spannedChannels } from "../received.ts";
import { realmRef, userRef } from "../../actors/index.ts";
import type { Caller } from "../../actors/types.ts";
import { defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";

function me(req: RouteRequest): Caller {
  // auth "required" guarantees a caller.
  return req.caller!;
}

const createUser = defineRoute({
  method: "POST",
  path: "/users",
  auth: "required",
  params: {
    email: param(p.string(), { required: true }),
    password: param(p.string(), { required: true }),
    full_name: param(p.string(), { required: true }),
  },
  async handler(req) {
    // With a caller, the realm answers Zulip's {user_id}, once its hand-offs
    // greeted the user and joined them to the default channels.
    return (await req.call(realmRef(req.realmId), "createUser", {
      email: req.params.email,
      password: req.params.password,
      fullName: req.params.full_name,
    })) as { user_id: number };
  },
});

const getOwnUser = defineRoute({
  method: "GET",
  path: "/users/me",
  auth: "required",
  params: {},
  async handler(req) {
    const caller = me(req);
    // The realm's directory is the authority for the user object (role,
    // activation, name changes by administrators).
    const { user } = await req.call(realmRef(caller.realmId), "getMember", {
      userId: caller.userId,
      clientGravatar: false,
      // Zulip's /users/me always carries profile_data.
      includeCustomProfileFields: true,
    });
    // The newest message the user received (their flag index), -1 when none.
    const own = userRef(caller.realmId, caller.userId);
    const [max, spanned] = await Promise.all([req.call(own, "maxMessageId", {}), spannedChannels(req)]);
    // Received rows count too (gateway/received.ts); `after` far above any id lists none.
    const parts = await channelRows(req, spanned, () => ({
      after: Number.MAX_SAFE_INTEGER,
    }));
    const maxId = Math.max(max.max_message_id, ...parts.map((p) => p.lastReceived || -1));
    return { ...user, max_message_id: maxId };
  },
});

const updateStatus = defineRoute({
  method: "POST",
  path: "/users/me/status",
  auth: "required",
  params: {
    away: param(p.bool()),
    // The 60-code-point limit applies after stripping, so the actor checks it.
    status_text: param(p.string()),
    emoji_name: param(p.string()),
    emoji_code: param(p.string()),
    reaction_type: param(p.string()),
  },
  async handler(req) {
    const caller = me(req);
    return await req.call(userRef(caller.realmId, caller.userId), "updateStatus", {
      away: req.params.away,
      status_text: req.params.status_text,
      emoji_name: req.params.emoji_name,
      emoji_code: req.params.emoji_code,
      reaction_type: req.params.reaction_type,
    });
  },
});

const regenerateApiKey = defineRoute({
  method: "POST",
  path: "/users/me/api_key/regenerate",
  auth: "required",
  params: {},
  async handler(req) {
    // Level 492: the E2EE push devices go with the old key, in the realm's
    // hand-off before it answers (actors/realm/member-handoffs.ts).
    return await req.call(realmRef(me(req).realmId), "regenerateOwnKey", {});
  },
});

export const userRoutes: RouteDef[] = [createUser, getOwnUser, updateStatus, regenerateApiKey];
