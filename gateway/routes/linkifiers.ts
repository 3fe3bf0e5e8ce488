// Linkifiers (Zulip's zerver/views/realm_linkifiers.py): parse, call the
// realm actor, shape the reply.

import { realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { ArgsOf } from "../../actors/protocol.ts";
import type { RealmProtocol } from "../../actors/realm/index.ts";
import { c, p, param, type RouteDef, type RouteRequest } from "../index.ts";

function filterId(req: RouteRequest): number {
  const raw = req.path.filter_id ?? "";
  // Zulip's URL pattern takes digits only; anything else matches no route.
  if (!/^\d{1,15}$/.test(raw)) throw errors.noSuchRoute();
  return Number(raw);
}

const linkifierParams = {
  pattern: param(p.string(), { required: true }),
  url_template: param(p.string(), { required: true }),
  example_input: param(p.string()),
  reverse_template: param(p.string()),
  alternative_url_templates: param(p.json(c.list(c.string()))),
};

function linkifierArgs(req: RouteRequest): ArgsOf<RealmProtocol, "addLinkifier"> {
  const sent = req.params;
  return {
    pattern: sent.pattern as string,
    url_template: sent.url_template as string,
    example_input: sent.example_input as string | undefined,
    reverse_template: sent.reverse_template as string | undefined,
    alternative_url_templates: sent.alternative_url_templates as string[] | undefined,
  };
}

const list: RouteDef = {
  method: "GET",
  path: "/realm/linkifiers",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "listLinkifiers", {});
  },
};

const add: RouteDef = {
  method: "POST",
  path: "/realm/filters",
  auth: "required",
  params: linkifierParams,
  async handler(req) {
    return await req.call(realmRef(req.realmId), "addLinkifier", linkifierArgs(req));
  },
};

const update: RouteDef = {
  method: "PATCH",
  path: "/realm/filters/:filter_id",
  auth: "required",
  params: linkifierParams,
  async handler(req) {
    const args = { ...linkifierArgs(req), id: filterId(req) };
    await req.call(realmRef(req.realmId), "updateLinkifier", args);
    return {};
  },
};

const remove: RouteDef = {
  method: "DELETE",
  path: "/realm/filters/:filter_id",
  auth: "required",
  params: {},
  async handler(req) {
    await req.call(realmRef(req.realmId), "removeLinkifier", { id: filterId(req) });
    return {};
  },
};

const reorder: RouteDef = {
  method: "PATCH",
  path: "/realm/linkifiers",
  auth: "required",
  params: { ordered_linkifier_ids: param(p.intList(), { required: true }) },
  async handler(req) {
    await req.call(realmRef(req.realmId), "reorderLinkifiers", {
      ids: req.params.ordered_linkifier_ids as number[],
    });
    return {};
  },
};

export const linkifierRoutes: RouteDef[] = [list, add, update, remove, reorder];
