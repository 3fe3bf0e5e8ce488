// Navigation views (Zulip's zerver/views/navigation_views.py, FL 390):
// parse, one call to the caller's user actor, reply. The fragment of the
// PATCH and DELETE paths may itself hold slashes ("narrow/is/starred"), as
// Zulip's <path:fragment> does.

import { userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { defineRoute, p, param, type Parser, type RouteDef, type RouteRequest } from "../index.ts";

/**
 * Pydantic's StringConstraints(strip_whitespace=True, min_length=1). A NUL
 * cannot be stored by Zulip's database, so no view ever has one.
 */
const stripped: Parser<string> = (raw, name) => {
  const s = raw.trim();
  if (s === "") throw errors.tooShort(name);
  if (s.includes("\u0000")) throw errors.invalid(name);
  return s;
};

function pathFragment(req: RouteRequest): string {
  const raw = req.path["*"] ?? "";
  if (raw === "") throw errors.noSuchRoute();
  return stripped(raw, "fragment");
}

function own(req: RouteRequest) {
  return userRef(req.caller!.realmId, req.caller!.userId);
}

const listViews = defineRoute({
  method: "GET",
  path: "/navigation_views",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(own(req), "navigationViews", {});
  },
});

const addView = defineRoute({
  method: "POST",
  path: "/navigation_views",
  auth: "required",
  params: {
    fragment: param(stripped, { required: true }),
    is_pinned: param(p.bool(), { required: true }),
    name: param(stripped),
  },
  async handler(req) {
    return await req.call(own(req), "addNavigationView", {
      fragment: req.params.fragment,
      is_pinned: req.params.is_pinned,
      name: req.params.name,
    });
  },
});

const updateView = defineRoute({
  method: "PATCH",
  path: "/navigation_views/*",
  auth: "required",
  params: {
    is_pinned: param(p.bool()),
    name: param(stripped),
  },
  async handler(req) {
    return await req.call(own(req), "updateNavigationView", {
      fragment: pathFragment(req),
      is_pinned: req.params.is_pinned,
      name: req.params.name,
    });
  },
});

const removeView = defineRoute({
  method: "DELETE",
  path: "/navigation_views/*",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(own(req), "removeNavigationView", { fragment: pathFragment(req) });
  },
});

export const navigationViewRoutes: RouteDef[] = [listViews, addView, updateView, removeView];
