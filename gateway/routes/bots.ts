// Bots (Zulip's zerver/views/users.py: add_bot_backend, get_bots_backend,
// patch_bot_backend, regenerate_bot_api_key, deactivate_bot_backend):
// parse, one realm-actor call, reply.

import { realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { ArgsOf } from "../../actors/protocol.ts";
import type { RealmProtocol } from "../../actors/realm/index.ts";
import { defineRoute, p, param, type Parser, type RouteDef, type RouteRequest } from "../index.ts";

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
    const args: ArgsOf<RealmProtocol, "createBot"> = {
      fullName: req.params.full_name,
      shortName: req.params.short_name,
    };
    if (req.params.bot_type !== undefined) args.botType = req.params.bot_type;
    if (req.params.payload_url !== undefined) args.payloadUrl = req.params.payload_url;
    if (req.params.service_name !== undefined) args.serviceName = req.params.service_name;
    if (req.params.interface_type !== undefined) args.interfaceType = req.params.interface_type;
    return await req.call(realmRef(req.realmId), "createBot", args);
  },
});

const getBots = defineRoute({
  method: "GET",
  path: "/bots",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "getBots", {});
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
    const sent = req.params;
    const args: ArgsOf<RealmProtocol, "updateBot"> = { botId: botId(req) };
    if (sent.full_name !== undefined) args.fullName = sent.full_name;
    if (sent.role !== undefined) args.role = sent.role;
    if (sent.bot_owner_id !== undefined) args.botOwnerId = sent.bot_owner_id;
    if (sent.service_payload_url !== undefined) args.servicePayloadUrl = sent.service_payload_url;
    if (sent.service_interface !== undefined) args.serviceInterface = sent.service_interface;
    if (sent.short_name !== undefined) args.shortName = sent.short_name;
    // A new address reaches the bot's user actor in the realm's hand-off (actors/realm/member-handoffs.ts).
    return await req.call(realmRef(req.realmId), "updateBot", args);
  },
});

const regenerateBotKey = defineRoute({
  method: "POST",
  path: "/bots/:bot_id/api_key/regenerate",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "regenerateBotKey", { botId: botId(req) });
  },
});

const deactivateBot = defineRoute({
  method: "DELETE",
  path: "/bots/:bot_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "deactivateBot", { botId: botId(req) });
  },
});

export const botRoutes: RouteDef[] = [createBot, getBots, updateBot, regenerateBotKey, deactivateBot];
