// Bots (Zulip's zerver/views/users.py: add_bot_backend, get_bots_backend,
// patch_bot_backend, regenerate_bot_api_key, deactivate_bot_backend):
// parse, one realm-actor call, reply.

import { realmRef, userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj } from "../../actors/types.ts";
import { defineRoute, p, param, type Parser, type RouteDef, type RouteRequest } from "../index.ts";
import { announceDeactivated } from "../deactivation-peers.ts";

/**
 * An http(s) URL, sent JSON-encoded as Zulip's web client does
 * (JSON.stringify), or as plain text. Anything else is "<name> is not a URL".
 */
function urlParam(): Parser<string> {
  return (raw, name) => {
    let v: unknown = raw;
    if (raw.startsWith('"')) {
      try {
        v = JSON.parse(raw);
      } catch {
        throw errors.notJson(name);
      }
    }
    if (typeof v !== "string") throw errors.notString(name);
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      throw errors.notAUrl(name);
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
      throw errors.notAUrl(name);
    }
    return v;
  };
}

function botId(req: RouteRequest): number {
  const raw = req.path.bot_id!;
  // Zulip's URL pattern takes digits only; anything else matches no route.
  if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : 0;
}

const createBot = defineRoute({
  method: "POST",
  path: "/bots",
  auth: "required",
  params: {
    full_name: param(p.string(), { required: true }),
    short_name: param(p.string(), { required: true }),
    bot_type: param(p.int()),
    payload_url: param(urlParam()),
    service_name: param(p.string()),
    interface_type: param(p.int()),
  },
  async handler(req) {
    const args: Obj = {
      fullName: req.params.full_name,
      shortName: req.params.short_name,
    };
    if (req.params.bot_type !== undefined) args.botType = req.params.bot_type;
    if (req.params.payload_url !== undefined) args.payloadUrl = req.params.payload_url;
    if (req.params.service_name !== undefined) args.serviceName = req.params.service_name;
    if (req.params.interface_type !== undefined) args.interfaceType = req.params.interface_type;
    return (await req.call(realmRef(req.realmId), "createBot", args)) as Obj;
  },
});

const getBots = defineRoute({
  method: "GET",
  path: "/bots",
  auth: "required",
  params: {},
  async handler(req) {
    return (await req.call(realmRef(req.realmId), "getBots", {})) as Obj;
  },
});

const updateBot = defineRoute({
  method: "PATCH",
  path: "/bots/:bot_id",
  auth: "required",
  params: {
    full_name: param(p.string()),
    role: param(p.int()),
    bot_owner_id: param(p.int()),
    service_payload_url: param(urlParam()),
    service_interface: param(p.int()),
    short_name: param(p.string()),
  },
  async handler(req) {
    const args: Obj = { botId: botId(req) };
    const map: [keyof typeof req.params, string][] = [
      ["full_name", "fullName"],
      ["role", "role"],
      ["bot_owner_id", "botOwnerId"],
      ["service_payload_url", "servicePayloadUrl"],
      ["service_interface", "serviceInterface"],
      ["short_name", "shortName"],
    ];
    for (const [from, to] of map) {
      if (req.params[from] !== undefined) args[to] = req.params[from];
    }
    const { syncEmailOf, ...reply } = (await req.call(realmRef(req.realmId), "updateBot", args)) as Obj;
    // The bot's user actor keeps a copy of its address (actors/user/email-sync.ts).
    if (typeof syncEmailOf === "number") await req.call(userRef(req.realmId, syncEmailOf), "syncEmail", {});
    return reply;
  },
});

const regenerateBotKey = defineRoute({
  method: "POST",
  path: "/bots/:bot_id/api_key/regenerate",
  auth: "required",
  params: {},
  async handler(req) {
    return (await req.call(realmRef(req.realmId), "regenerateBotKey", { botId: botId(req) })) as Obj;
  },
});

const deactivateBot = defineRoute({
  method: "DELETE",
  path: "/bots/:bot_id",
  auth: "required",
  params: {},
  async handler(req) {
    const r = (await req.call(realmRef(req.realmId), "deactivateBot", { botId: botId(req) })) as Obj;
    return announceDeactivated(req, r);
  },
});

export const botRoutes: RouteDef[] = [createBot, getBots, updateBot, regenerateBotKey, deactivateBot];
