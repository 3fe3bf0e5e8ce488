// Organization data exports (Zulip's zerver/views/realm_export.py):
// GET and POST /export/realm, GET /export/realm/consents, and the download
// of a finished export at its export_url. Administrators only. The rows
// live in the realm actor (actors/realm/export.ts); the file is written by
// the node's export worker (cluster/export.ts, format in docs/export.md).

import { readFile } from "node:fs/promises";
import { realmRef, userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { defineRoute, param, RawReply, type Parser, type RouteDef } from "../index.ts";

/**
 * export_type: Zulip's names since feature level 449, or the integers
 * clients of earlier levels send (1 public, 2 full with consent). Any other
 * value reaches the realm actor as-is and is refused there.
 */
const EXPORT_TYPE_IDS: ReadonlyMap<string, number> = new Map([
  ["public", 1],
  ["full_with_consent", 2],
  ["1", 1],
  ["2", 2],
]);
const exportType: Parser<number | string> = (raw) => EXPORT_TYPE_IDS.get(raw) ?? raw;

const list = defineRoute({
  method: "GET",
  path: "/export/realm",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "listExports", {});
  },
});

const create = defineRoute({
  method: "POST",
  path: "/export/realm",
  auth: "required",
  params: { export_type: param(exportType) },
  async handler(req) {
    return await req.call(realmRef(req.realmId), "requestExport", {
      export_type: req.params.export_type,
    });
  },
});

const consents = defineRoute({
  method: "GET",
  path: "/export/realm/consents",
  auth: "required",
  params: {},
  async handler(req) {
    const { user_ids } = await req.call(realmRef(req.realmId), "exportConsentUsers", {});
    const export_consents = await Promise.all(
      user_ids.map((id) => req.call(userRef(req.realmId, id), "exportConsent", {})),
    );
    return { export_consents };
  },
});

/** The file at export_url: only an administrator of the organization gets it. */
const download = defineRoute({
  method: "GET",
  prefix: "",
  path: "/user_avatars/exports/:realm_id/:secret/:name",
  auth: "required",
  params: {},
  async handler(req) {
    if (req.path.realm_id !== String(req.realmId)) throw errors.noSuchRoute();
    const found = await req.call(realmRef(req.realmId), "exportDownload", {
      secret: req.path.secret ?? "",
      name: req.path.name ?? "",
    });
    if (!found) throw errors.noSuchRoute();
    let body: Buffer;
    try {
      body = await readFile(found.file);
    } catch {
      // Written on a node whose DATA_DIR this gateway does not share (docs/export.md).
      throw errors.noSuchRoute();
    }
    return new RawReply(body, "application/gzip", {
      "content-disposition": `attachment; filename="${req.path.name}"`,
      "cache-control": "private, no-store",
      "x-content-type-options": "nosniff",
    });
  },
});

export const exportRoutes: RouteDef[] = [list, create, consents, download];
