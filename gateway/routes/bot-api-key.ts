// GET /bots/{bot_id}/api_key (Zulip 12, feature level 463).

import { realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { defineRoute, type RouteDef } from "../index.ts";

const getBotApiKey = defineRoute({
  method: "GET",
  path: "/bots/:bot_id/api_key",
  auth: "required",
  params: {},
  async handler(req) {
    const raw = req.path.bot_id!;
    // As the other /bots/{bot_id} routes: digits only, else no such route.
    if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
    const id = Number(raw);
    const botId = Number.isSafeInteger(id) ? id : 0;
    return await req.call(realmRef(req.realmId), "getBotKey", { botId });
  },
});

export const botApiKeyRoutes: RouteDef[] = [getBotApiKey];
