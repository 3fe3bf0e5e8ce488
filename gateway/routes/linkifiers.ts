// Linkifiers (Zulip's zerver/views/realm_linkifiers.py): parse, call the
// realm actor, shape the reply.

import { realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { ArgsOf } from "../../actors/protocol.ts";
import type { RealmProtocol } from "../../actors/realm/index.ts";
import { c, defineRoute, p, param, type ParamValues, type RouteDef, type RouteRequest } from "../index.ts";

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

function linkifierArgs(
  req: RouteRequest<ParamValues<typeof linkifierParams>>,
): ArgsOf<RealmProtocol, "addLinkifier"> {
  const sent = req.params;
  return {
    pattern: sent.pattern,
    url_template: sent.url_template,
    example_input: sent.example_input,
    reverse_template: sent.reverse_template,
    alternative_url_templates: sent.alternative_url_templates,
  };
}

const list = defineRoute({
  method: "GET",
  path: "/realm/linkifiers",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "listLinkifiers", {});
  },
});

const add = defineRoute({
  method: "POST",
  path: "/realm/filters",
  auth: "required",
  params: linkifierParams,
  async handler(req) {
    return await req.call(realmRef(req.realmId), "addLinkifier", linkifierArgs(req));
  },
});

const update = defineRoute({
  method: "PATCH",
  path: "/realm/filters/:filter_id",
  auth: "required",
  params: linkifierParams,
  async handler(req) {
    const args = { ...linkifierArgs(req), id: filterId(req) };
    await req.call(realmRef(req.realmId), "updateLinkifier", args);
    return {};
  },
});

const remove = defineRoute({
  method: "DELETE",
  path: "/realm/filters/:filter_id",
  auth: "required",
  params: {},
  async handler(req) {
    await req.call(realmRef(req.realmId), "removeLinkifier", { id: filterId(req) });
    return {};
  },
});

const reorder = defineRoute({
  method: "PATCH",
  path: "/realm/linkifiers",
  auth: "required",
  params: { ordered_linkifier_ids: param(p.intList(), { required: true }) },
  async handler(req) {
    await req.call(realmRef(req.realmId), "reorderLinkifiers", {
      ids: req.params.ordered_linkifier_ids,
    });
    return {};
  },
});

export const linkifierRoutes: RouteDef[] = [list, add, update, remove, reorder];
