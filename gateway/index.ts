// The gateway's door: route modules and the processes import from here only.
export {
  API_PREFIX,
  DEFAULT_BODY_LIMIT,
  acceptsHtml,
  buildApp,
  clientName,
  rawBody,
  requestHeader,
  uploadStorage,
  uploadedFiles,
} from "./app.ts";
export type { BuildAppOptions, UploadedFile } from "./app.ts";
export { AUTH_INVALIDATE_SUBJECT } from "./auth.ts";
export { c, p, param, sentParams } from "./params.ts";
export type { Checker } from "./params.ts";
export type {
  AuthMode,
  ParamSpec,
  ParamSpecs,
  ParamValues,
  Parser,
  PathParams,
  RouteDef,
  RouteRequest,
} from "./route-types.ts";
export { defineRoute, RawReply, Relayed } from "./route-types.ts";
