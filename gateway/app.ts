// The HTTP gateway: Fastify under /api/v1, Zulip's request conventions
// (parameters, error envelope: https://zulip.com/api/rest-error-handling)
// around the route modules of gateway/routes/.
//
// Per request: resolve the realm from Host, authenticate (route.auth), read
// the declared parameters from the body then the query string, call the
// handler, and wrap its object in {result: "success", msg: "", ...} with
// ignored_parameters_unsupported; every failure becomes Zulip's error
// envelope. Realm and credentials are cached, so a warm request awaits only
// its handler.

import formbody from "@fastify/formbody";
import multipart from "@fastify/multipart";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import { isIP } from "node:net";
import { errors, ZulipError } from "../actors/errors.ts";
import { toZulipError, UnavailableError } from "../cluster/runtime-errors.ts";
import type { ActorRef, Caller, Obj } from "../actors/types.ts";
import { typedCall, type TypedCall } from "../actors/protocol.ts";
import { shardOf } from "../cluster/addressing.ts";
import { endHttpSpan, startHttpSpan, traceparentOf, tracingActive, type Span } from "../cluster/tracing.ts";
import { responseValue } from "../cluster/responses.ts";
import type { ActorClient, ActorRequest, ActorResponse, Bus } from "../cluster/transport/contract.ts";
import type { ClusterView } from "../cluster/admin.ts";
import { installOps } from "./admin/index.ts";
import { Authenticator } from "./auth.ts";
import { ClusterRateLimiter, rateLimitFromEnv } from "./rate-limit.ts";
import { RealmResolver, singleOrganizationFromEnv } from "./realm-resolver.ts";
import {
  RawReply,
  Relayed,
  type ParamSpec,
  type Parser,
  type RouteDef,
  type RouteRequest,
  type TypedRelay,
} from "./route-types.ts";
import { componentLogger, type Logger } from "../cluster/log.ts";
import { uploadStorageFromEnv, type UploadStorage } from "../cluster/upload-storage.ts";

/** Read at each use (errors are rare): the root logger may be replaced (setRootLogger). */
const httpLog = (): Logger => componentLogger("http");

export const API_PREFIX = "/api/v1";
/** Zulip's DATA_UPLOAD_MAX_MEMORY_SIZE and nginx client_max_body_size. */
export const DEFAULT_BODY_LIMIT = 25 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_MULTIPART_PARTS = 1000;
const JSON_TYPE = "application/json; charset=utf-8";

export interface BuildAppOptions {
  client: ActorClient;
  bus: Bus;
  shards: number;
  routes: RouteDef[];
  requestTimeoutMs?: number;
  logger?: boolean;
  bodyLimit?: number;
  /** Authenticated requests per user per minute, cluster-wide; 0 disables. Default: env RATE_LIMIT_PER_MINUTE or 200. */
  rateLimitPerMinute?: number;
  /**
   * Nodes the admin API expects answers from (Membership; embedded: its one
   * node). docs/operations.md "Admin API and placement page".
   */
  view?: ClusterView;
  /**
   * Peers whose X-Forwarded-For/-Proto/-Host are believed (addresses or
   * CIDRs). Default: env TRUSTED_PROXIES, comma-separated; none when unset.
   */
  trustedProxies?: string[];
  /** Any Host reaches the only organization. Default: env SINGLE_ORGANIZATION=1. */
  singleOrganization?: boolean;
  /** Where uploaded files live (docs/uploads.md). Default: from the environment; closed with the app. */
  uploads?: UploadStorage;
}

/** proxy-addr's names for address ranges, accepted besides addresses and CIDRs. */
const PROXY_RANGE_NAMES = new Set(["loopback", "linklocal", "uniquelocal"]);

/** TRUSTED_PROXIES: "10.0.0.1, 192.168.0.0/16, ::1"; a bad entry stops the start. */
export function trustedProxiesFromEnv(value = process.env.TRUSTED_PROXIES ?? ""): string[] {
  const out: string[] = [];
  for (const raw of value.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    const slash = entry.indexOf("/");
    const addr = slash < 0 ? entry : entry.slice(0, slash);
    const family = isIP(addr);
    let ok = PROXY_RANGE_NAMES.has(entry) || family !== 0;
    if (ok && slash >= 0) {
      const bits = entry.slice(slash + 1);
      ok = /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32);
    }
    if (!ok) throw new Error(`TRUSTED_PROXIES: "${entry}" is not an IP address or CIDR range`);
    out.push(entry);
  }
  return out;
}

/** A file part of a multipart body, kept for routes that take uploads. */
export interface UploadedFile {
  fieldname: string;
  filename: string;
  mimetype: string;
  data: Buffer;
}

/**
 * Parsed form or query string: one string per key, or every value of a
 * repeated key (fast-querystring's shape; the last one counts, like
 * Django's QueryDict.get). Null prototype.
 */
type Form = Record<string, string | string[]>;

interface CompiledParam {
  name: string;
  /** Canonical name first, then aliases: the order Zulip looks them up in. */
  names: string[];
  parse: Parser<unknown>;
  required: boolean;
  hasDefault: boolean;
  default: unknown;
}

interface CompiledRoute {
  def: RouteDef;
  params: CompiledParam[];
  /** Every accepted name (canonical and aliases), for ignored_parameters_unsupported. */
  accepted: Set<string>;
  readsBody: boolean;
  /** Names of the path's parameters: find-my-way lets the last one match "". */
  pathParams: string[];
  /** The URL template (the HTTP span's name and http.route). */
  route: string;
}

function compileRoute(def: RouteDef): CompiledRoute {
  const params: CompiledParam[] = [];
  const accepted = new Set<string>();
  for (const name of Object.keys(def.params)) {
    const spec: ParamSpec = def.params[name]!;
    const names = [name, ...(spec.aliases ?? [])];
    for (const n of names) {
      if (accepted.has(n)) throw new Error(`${def.method} ${def.path}: parameter name "${n}" declared twice`);
      accepted.add(n);
    }
    params.push({
      name,
      names,
      parse: spec.parse,
      required: spec.required === true,
      hasDefault: spec.default !== undefined,
      default: spec.default,
    });
  }
  const pathParams = def.path
    .split("/")
    .filter((s) => s.startsWith(":"))
    .map((s) => s.slice(1));
  const route = (def.prefix ?? API_PREFIX) + def.path;
  return { def, params, accepted, readsBody: def.method !== "GET", pathParams, route };
}

function lastValue(v: string | string[]): string {
  return typeof v === "string" ? v : v[v.length - 1]!;
}

/** Zulip's typed_endpoint loop: per parameter, its names in order; body before query. */
function readParams(cr: CompiledRoute, query: Form, body: Form | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const params = cr.params;
  for (let i = 0; i < params.length; i++) {
    const p = params[i]!;
    let used: string | undefined;
    let raw = "";
    const names = p.names;
    for (let j = 0; j < names.length; j++) {
      const n = names[j]!;
      let v = body === undefined ? undefined : body[n];
      if (v === undefined) v = query[n];
      if (v === undefined) continue;
      if (used !== undefined) throw errors.confusingArgument(used, n);
      used = n;
      raw = lastValue(v);
    }
    if (used === undefined) {
      if (p.required) throw errors.missingArgument(p.name);
      if (p.hasDefault) out[p.name] = p.default;
      continue;
    }
    // Error texts use the canonical name whichever alias was sent (Zulip's request_var_name).
    out[p.name] = p.parse(raw, p.name);
  }
  return out;
}

/** Request keys (query ∪ body) the route does not declare, sorted; undefined when none. */
function ignoredParams(cr: CompiledRoute, query: Form, body: Form | undefined): string[] | undefined {
  let ignored: string[] | undefined;
  const accepted = cr.accepted;
  for (const k in query) if (!accepted.has(k)) (ignored ??= []).push(k);
  if (body !== undefined) {
    // Fastify's query object has Object.prototype: `constructor` would look sent.
    for (const k in body) if (!accepted.has(k) && !Object.hasOwn(query, k)) (ignored ??= []).push(k);
  }
  return ignored?.sort();
}

// ---- Responses ----------------------------------------------------------------

function sendSuccess(reply: FastifyReply, payload: Obj | undefined, ignored: string[] | undefined): void {
  if (payload !== undefined && (payload === null || typeof payload !== "object" || Array.isArray(payload))) {
    throw new Error(`route handler returned ${JSON.stringify(payload)}, not an object`);
  }
  // {result, msg, ...payload} without copying the payload: splice its JSON.
  const json = payload === undefined ? "{}" : JSON.stringify(payload);
  let body =
    json.length > 2 ? `{"result":"success","msg":"",${json.slice(1)}` : `{"result":"success","msg":""}`;
  if (ignored !== undefined) {
    body = `${body.slice(0, -1)},"ignored_parameters_unsupported":${JSON.stringify(ignored)}}`;
  }
  // Zulip's responses end with a newline (orjson OPT_APPEND_NEWLINE).
  reply
    .code(200)
    .header("content-type", JSON_TYPE)
    .send(body + "\n");
}

const SUCCESS_HEAD = Buffer.from(`{"result":"success","msg":"",`);
const NEWLINE = Buffer.from("\n");

/**
 * A relayed reply: its JSON text (an object's, "{...}") spliced into the
 * envelope as bytes. Parsed and answered as any payload when it did not
 * travel as text (embedded mode), is empty, or ignored parameters must be
 * added.
 */
function sendRelayed(reply: FastifyReply, payload: Relayed<Obj>, ignored: string[] | undefined): void {
  const json = payload.json;
  if (json === undefined || ignored !== undefined || json.length <= 2 || json[0] !== 0x7b) {
    sendSuccess(reply, payload.value, ignored);
    return;
  }
  const body = Buffer.concat([SUCCESS_HEAD, json.subarray(1), NEWLINE]);
  reply.code(200).header("content-type", JSON_TYPE).send(body);
}

function sendError(reply: FastifyReply, e: ZulipError): void {
  if (reply.sent) return;
  const o: Record<string, unknown> = { result: "error", msg: e.message };
  if (e.code !== "") o.code = e.code;
  for (const k of Object.keys(e.extra)) if (!(k in o)) o[k] = e.extra[k];
  reply.code(e.status);
  for (const h of Object.keys(e.headers)) reply.header(h, e.headers[h]!);
  reply.header("content-type", JSON_TYPE).send(JSON.stringify(o) + "\n");
}

/** Anything thrown while serving -> the ZulipError the client sees. Bad input never becomes a 500. */
function toHttpError(err: unknown, req: FastifyRequest, logged: boolean): ZulipError {
  if (err instanceof ZulipError || err instanceof UnavailableError) return toZulipError(err);
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  // Fastify's and @fastify/multipart's errors about the request itself.
  if (status === 413) return errors.payloadTooLarge();
  if (typeof status === "number" && status >= 400 && status < 500) {
    return errors.badRequest(err instanceof Error && err.message ? err.message : "Bad request");
  }
  if (logged) req.log.error({ err }, "unhandled error");
  else httpLog().error({ err, req_id: req.id, method: req.method, url: req.url }, "unhandled error");
  return errors.internal();
}

// ---- Multipart -------------------------------------------------------------------

async function readMultipart(
  req: FastifyRequest,
  limit: number,
): Promise<{ fields: Form; files: UploadedFile[] | undefined }> {
  const declared = Number(req.headers["content-length"]);
  if (declared > limit) throw errors.payloadTooLarge();
  const fields: Form = Object.create(null);
  let files: UploadedFile[] | undefined;
  let total = 0;
  try {
    for await (const part of req.parts()) {
      if (part.type === "file") {
        const data = await part.toBuffer();
        total += data.length;
        (files ??= []).push({
          fieldname: part.fieldname,
          filename: part.filename,
          mimetype: part.mimetype,
          data,
        });
      } else {
        if (part.valueTruncated) throw errors.payloadTooLarge();
        // A part sent as application/json arrives decoded; parameters are JSON text.
        const value = typeof part.value === "string" ? part.value : JSON.stringify(part.value);
        total += value.length;
        fields[part.fieldname] = value;
      }
      if (total > limit) throw errors.payloadTooLarge();
    }
  } catch (err) {
    if (err instanceof ZulipError) throw err;
    const status = (err as { statusCode?: unknown }).statusCode;
    if (status === 413) throw errors.payloadTooLarge();
    // busboy's own errors ("Unexpected end of form", ...) carry no status.
    throw errors.badRequest(err instanceof Error && err.message ? err.message : "Bad request");
  }
  return { fields, files };
}

// ---- The per-request context handed to handlers -------------------------------------

class Gateway {
  constructor(
    readonly client: ActorClient,
    readonly shards: number,
    readonly realms: RealmResolver,
    readonly auth: Authenticator,
    readonly timeoutMs: number,
    readonly bodyLimit: number,
    readonly logged: boolean,
    readonly limiter: ClusterRateLimiter | null,
    readonly uploads: UploadStorage,
  ) {}

  /** Not async: a parked GET /events waits here (a promise, no async frame kept for 100 s). */
  requestActor(
    ref: ActorRef,
    method: string,
    args: Obj,
    caller: Caller | null,
    deadline: number,
    traceparent: string | undefined,
  ): Promise<ActorResponse> {
    const areq: ActorRequest = { ref, shard: shardOf(ref, this.shards), method, args, caller, deadline };
    if (traceparent !== undefined) areq.traceparent = traceparent;
    return this.client.request(areq);
  }
}

/** A successful response as a Relayed reply; a failed one raises, as `responseValue` does. */
function relayed(res: ActorResponse): Relayed {
  if (res.ok) return new Relayed(res);
  responseValue(res);
  throw new Error("responseValue returned for a failed response");
}

class GatewayRequest implements RouteRequest {
  /** Own arrows, not methods: handlers may destructure `{ call }`. */
  readonly call: TypedCall;
  readonly relay: TypedRelay;
  files?: UploadedFile[];
  /** An application/offset+octet-stream body (the tus protocol's PATCH). */
  rawBody?: Buffer;
  headers?: FastifyRequest["headers"];
  userAgent?: string;
  accept?: string;

  constructor(
    readonly gw: Gateway,
    readonly params: Record<string, unknown>,
    readonly path: Record<string, string>,
    readonly caller: Caller | null,
    readonly realmId: number,
    readonly host: string,
    readonly scheme: string,
    deadline: number,
    traceparent: string | undefined,
  ) {
    this.call = typedCall((ref, method, args) =>
      gw.requestActor(ref, method, args, caller, deadline, traceparent).then(responseValue),
    );
    this.relay = ((ref: ActorRef, method: string, args: Obj) =>
      gw.requestActor(ref, method, args, caller, deadline, traceparent).then(relayed)) as TypedRelay;
  }
}

/**
 * Zulip's client name of a request (parse_client, parse_user_agent): the
 * User-Agent's leading product name ("ZulipPython/0.9 (Linux)" ->
 * "ZulipPython", "Mozilla/5.0 ..." -> "Mozilla"), "Unspecified" without
 * one; at most 30 characters, as Zulip's Client.name. Scanned once, so a
 * hostile header costs linear time.
 */
export function clientName(req: RouteRequest): string {
  const ua = (req as GatewayRequest).userAgent;
  if (ua === undefined) return "Unspecified";
  // The name: everything up to the first "/" or space, then on through
  // characters that are neither a digit, "/" nor "(", ending where the rest
  // starts with "/" or a space (or the header ends).
  let i = 0;
  while (i < ua.length && ua[i] !== "/" && ua[i] !== " ") i++;
  let end = i;
  for (let j = i; j <= ua.length; j++) {
    const ch = ua[j];
    if (ch === undefined || ch === "/" || ch === " ") end = j;
    if (ch === undefined || ch === "/" || ch === "(" || (ch >= "0" && ch <= "9")) break;
  }
  const name = ua.slice(0, end);
  return name === "" ? "Unspecified" : name.slice(0, 30);
}

/** Whether the client asked for HTML (a browser): pages answer their errors as pages, not JSON. */
export function acceptsHtml(req: RouteRequest): boolean {
  return /\btext\/html\b/i.test((req as GatewayRequest).accept ?? "");
}

/** Files of a multipart request (for upload routes); empty otherwise. */
export function uploadedFiles(req: RouteRequest): UploadedFile[] {
  return (req as GatewayRequest).files ?? [];
}

/** The raw bytes of an application/offset+octet-stream body (gateway/routes/tus.ts); null otherwise. */
export function rawBody(req: RouteRequest): Buffer | null {
  return (req as GatewayRequest).rawBody ?? null;
}

/** One request header as a string (the first when repeated), or undefined. */
export function requestHeader(req: RouteRequest, name: string): string | undefined {
  const v = (req as GatewayRequest).headers?.[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/** The upload storage (gateway/routes/uploads.ts). */
export function uploadStorage(req: RouteRequest): UploadStorage {
  return (req as GatewayRequest).gw.uploads;
}

/**
 * The request's HTTP span (route template as its name) when tracing is on
 * and the request is sampled; the span's traceparent travels to the nodes.
 * With tracing off an incoming traceparent is passed through unchanged.
 *
 * Returns nothing: Fastify gets no promise to wrap (its wrap-thenable would
 * keep two more closures and a promise per parked GET /events), so every
 * path below answers the request itself and never throws or rejects.
 */
function serveTraced(gw: Gateway, cr: CompiledRoute, req: FastifyRequest, reply: FastifyReply): void {
  const tp = req.headers.traceparent;
  const incoming = typeof tp === "string" ? tp : undefined;
  if (!tracingActive()) {
    void serve(gw, cr, req, reply, incoming, null);
    return;
  }
  const span = startHttpSpan(req.method, cr.route, incoming);
  void serve(gw, cr, req, reply, span === null ? undefined : traceparentOf(span), span);
}

/** The request is answered: end its span (sampled requests only). */
function ended(reply: FastifyReply, span: Span | null): void {
  if (span === null) return;
  try {
    endHttpSpan(span, reply.statusCode, reply.request.url.split("?", 1)[0]!);
  } catch (err) {
    httpLog().error({ err, req_id: reply.request.id }, "ending an HTTP span failed");
  }
}

/** Answer a failure; never throws (no promise of the request's is left to reject). */
function fail(reply: FastifyReply, err: unknown, logged: boolean): void {
  try {
    sendError(reply, toHttpError(err, reply.request, logged));
  } catch (e) {
    const req = reply.request;
    httpLog().error({ err: e, req_id: req.id, method: req.method, url: req.url }, "answering failed");
    if (!reply.sent) reply.raw.destroy();
  }
}

/**
 * Resolves once the handler has been called (not when it answers): a
 * parked GET /events waits only in `respond`'s promise, and this frame's
 * many locals do not wait with it. Never rejects.
 */
async function serve(
  gw: Gateway,
  cr: CompiledRoute,
  req: FastifyRequest,
  reply: FastifyReply,
  traceparent: string | undefined,
  span: Span | null,
): Promise<void> {
  try {
    const path = req.params as Record<string, string>;
    for (let i = 0; i < cr.pathParams.length; i++) {
      if (path[cr.pathParams[i]!] === "") throw errors.noSuchRoute();
    }
    const now = Date.now();
    // The request's start-by time: no actor turn starts for it later. A turn
    // that started in time is still awaited until deadline + REPLY_GRACE_MS
    // (cluster/transport/retry.ts), so its outcome, not a 503, is answered.
    // Nothing in front of that wait cuts the HTTP request shorter: Fastify's
    // connectionTimeout, requestTimeout and handlerTimeout stay at their
    // default (0: none).
    const deadline = now + (cr.def.timeoutMs ?? gw.timeoutMs);
    const headers = req.headers;
    // req.host is X-Forwarded-Host only when a trusted proxy sent it.
    const hostHeader = req.host;
    const realm = gw.realms.peek(hostHeader) ?? (await gw.realms.resolve(hostHeader, deadline));

    let caller: Caller | null = null;
    const mode = cr.def.auth;
    if (mode !== "none") {
      const authorization = headers.authorization;
      if (authorization !== undefined) {
        const c = gw.auth.authenticate(authorization, realm.realmId, deadline);
        caller = c instanceof Promise ? await c : c;
        if (gw.limiter !== null) {
          const rl = gw.limiter.check(caller, now);
          reply.headers(rl.headers);
          if (rl.error) throw rl.error;
        }
      } else if (mode === "required") {
        throw errors.notLoggedIn();
      }
    }

    let body: Form | undefined;
    let files: UploadedFile[] | undefined;
    let raw: Buffer | undefined;
    if (cr.readsBody) {
      if (Buffer.isBuffer(req.body)) {
        raw = req.body;
      } else if (req.isMultipart()) {
        const m = await readMultipart(req, gw.bodyLimit);
        body = m.fields;
        files = m.files;
      } else if (req.body !== null && typeof req.body === "object") {
        body = req.body as Form;
      }
    }
    const query = req.query as Form;
    const params = readParams(cr, query, body);

    // X-Forwarded-Proto counts only from a trusted proxy (Fastify's
    // trustProxy, set from TRUSTED_PROXIES); anyone else could claim https.
    const xfp = req.protocol;
    const scheme = xfp === "https" || xfp === "http" ? xfp : "http";
    const r = new GatewayRequest(
      gw,
      params,
      path,
      caller,
      realm.realmId,
      realm.host,
      scheme,
      deadline,
      traceparent,
    );
    if (files !== undefined) r.files = files;
    if (raw !== undefined) r.rawBody = raw;
    r.headers = headers;
    const ua = headers["user-agent"];
    if (typeof ua === "string") r.userAgent = ua;
    if (typeof headers.accept === "string") r.accept = headers.accept;
    // The handler's answer is awaited outside this frame: a long-poll may
    // wait 100 s, and this function's many locals would wait with it. The
    // ignored parameters depend on the request only: listed now, so the
    // wait keeps no query or body.
    respond(reply, ignoredParams(cr, query, body), gw.logged, span, Promise.resolve(cr.def.handler(r)));
  } catch (err) {
    fail(reply, err, gw.logged);
    ended(reply, span);
  }
}

/** Answer the handler's outcome: what a parked GET /events waits in (two closures over four values). */
function respond(
  reply: FastifyReply,
  ignored: string[] | undefined,
  logged: boolean,
  span: Span | null,
  pending: Promise<Obj | Relayed<Obj> | RawReply | undefined>,
): void {
  void pending.then(
    (payload) => {
      try {
        if (payload instanceof RawReply) {
          reply
            .code(payload.status)
            .headers(payload.headers)
            .header("content-type", payload.contentType)
            .send(payload.body);
        } else if (payload instanceof Relayed) {
          sendRelayed(reply, payload, ignored);
        } else {
          sendSuccess(reply, payload, ignored);
        }
      } catch (err) {
        fail(reply, err, logged);
      }
      ended(reply, span);
    },
    (err: unknown) => {
      fail(reply, err, logged);
      ended(reply, span);
    },
  );
}

// ---- 404, 405, OPTIONS ----------------------------------------------------------------

/**
 * Which methods some route accepts for a concrete path. Only consulted when
 * Fastify found no route for (method, path), so it need not be fast.
 */
class MethodIndex {
  private readonly patterns: { segments: string[]; methods: string[] }[] = [];

  add(path: string, method: string): void {
    const segments = path.split("/");
    let p = this.patterns.find((x) => x.segments.join("/") === path);
    if (p === undefined) this.patterns.push((p = { segments, methods: [] }));
    if (!p.methods.includes(method)) p.methods.push(method);
  }

  /** Methods in declaration order, HEAD last when GET is there (Zulip's rest_dispatch); null: no such path. */
  allowed(url: string): string[] | null {
    const q = url.indexOf("?");
    const path = q >= 0 ? url.slice(0, q) : url;
    if (!path.startsWith(API_PREFIX + "/")) return null;
    const segments = path.slice(API_PREFIX.length).split("/");
    const methods: string[] = [];
    for (const p of this.patterns) {
      if (!matches(p.segments, segments)) continue;
      for (const m of p.methods) if (!methods.includes(m)) methods.push(m);
    }
    if (methods.length === 0) return null;
    if (methods.includes("GET")) methods.push("HEAD");
    return methods;
  }
}

function matches(pattern: string[], segments: string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p === "*") return true;
    if (i >= segments.length) return false;
    if (p.startsWith(":")) {
      if (segments[i] === "") return false;
    } else if (p !== segments[i]) {
      return false;
    }
  }
  return pattern.length === segments.length;
}

// ---- The app ---------------------------------------------------------------------

function limitPerMinute(opts: BuildAppOptions): number {
  return opts.rateLimitPerMinute ?? rateLimitFromEnv();
}

function noSchemas(): never {
  throw new Error("gateway routes declare no JSON schemas: parameters are parsed by gateway/params.ts");
}

/** How many routes buildApp registers between two turns of the event loop. */
const ROUTES_PER_TURN = 16;

export async function buildApp(opts: BuildAppOptions): Promise<FastifyInstance> {
  const bodyLimit = opts.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const logged = opts.logger === true;
  // Fastify believes X-Forwarded-* (req.ip, req.protocol, req.host, the
  // request log's remoteAddress) only when the socket's peer is one of these.
  const proxies = opts.trustedProxies ?? trustedProxiesFromEnv();
  // LOG_REQUESTS=1: Fastify logs every request through the process's logger
  // (a child per request carrying its reqId). Off by default: a child logger
  // per request costs throughput, and errors are logged with req_id anyway.
  const app = Fastify({
    ...(logged ? { loggerInstance: httpLog() as FastifyBaseLogger } : { logger: false }),
    trustProxy: proxies.length > 0 ? proxies : false,
    bodyLimit,
    // Path parameters carry emails; find-my-way's default cap is 100 characters.
    routerOptions: { maxParamLength: 1000 },
    // No route declares a JSON schema (gateway/params.ts parses parameters),
    // so Fastify's compilers for them (ajv, fast-json-stringify) would load
    // at every start for nothing: a route that declares one fails instead.
    schemaController: { compilersFactory: { buildValidator: noSchemas, buildSerializer: noSchemas } },
    frameworkErrors: (err, req, reply) => {
      // Malformed percent-encoding or an overlong path parameter: no route matches.
      const code = (err as { code?: string }).code;
      if (code === "FST_ERR_BAD_URL" || code === "FST_ERR_MAX_PARAM_LENGTH")
        sendError(reply, errors.noSuchRoute());
      else sendError(reply, toHttpError(err, req, logged));
    },
  });

  const gw = new Gateway(
    opts.client,
    opts.shards,
    new RealmResolver(opts.client, opts.shards, opts.singleOrganization ?? singleOrganizationFromEnv()),
    new Authenticator(opts.client, opts.shards, opts.bus),
    opts.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS,
    bodyLimit,
    logged,
    limitPerMinute(opts) > 0 ? new ClusterRateLimiter(opts.bus, limitPerMinute(opts)) : null,
    opts.uploads ?? uploadStorageFromEnv(),
  );
  app.addHook("onClose", async () => {
    gw.auth.close();
    gw.limiter?.close();
    gw.uploads.close();
  });
  // /metrics, /api/v1/admin/*, /admin/placement and the HTTP metrics hook (gateway/admin/).
  await installOps(app, {
    bus: opts.bus,
    shards: opts.shards,
    realms: gw.realms,
    auth: gw.auth,
    view: opts.view,
  });

  // Bodies: urlencoded and multipart become parameters, for every method;
  // anything else (JSON included, as Zulip does) is read within the limit
  // and ignored.
  app.removeAllContentTypeParsers();
  await app.register(formbody, { bodyLimit });
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit }, (_req, _body, done) =>
    done(null, undefined),
  );
  // The tus protocol's chunks (gateway/routes/tus.ts): kept as bytes.
  app.addContentTypeParser(
    "application/offset+octet-stream",
    { parseAs: "buffer", bodyLimit },
    (_req, body, done) => done(null, body),
  );
  // Outside the scope of the body-reading routes (below), a multipart body
  // (to an unknown path, say) is not read, as @fastify/multipart's parser.
  app.addContentTypeParser("multipart/form-data", (_req, _payload, done) => done(null));

  app.setErrorHandler((err, req, reply) => sendError(reply, toHttpError(err, req, logged)));

  const index = new MethodIndex();
  for (const def of opts.routes) if (def.prefix === undefined) index.add(def.path, def.method);
  const route = (scope: FastifyInstance, def: RouteDef) => {
    const cr = compileRoute(def);
    scope.route({
      method: def.method,
      url: (def.prefix ?? API_PREFIX) + def.path,
      handler: (req, reply) => serveTraced(gw, cr, req, reply),
    });
  };
  // GET routes read no body (Fastify parses none): they stay out of
  // @fastify/multipart's scope, whose onRequest hook adds a 'close'
  // listener (a closure and its context) to every response, 20,000 of them
  // on a gateway holding parked GET /events (docs/benchmarks.md).
  // Registering ~160 routes is tens of milliseconds of CPU: it pauses every
  // ROUTES_PER_TURN routes so the I/O of whatever starts beside it (the
  // embedded node's start: journal commits, a password hash) goes on.
  let registered = 0;
  const add = async (scope: FastifyInstance, def: RouteDef) => {
    route(scope, def);
    if (++registered % ROUTES_PER_TURN === 0) await new Promise<void>((r) => setImmediate(r));
  };
  for (const def of opts.routes) if (def.method === "GET") await add(app, def);
  await app.register(async (bodies) => {
    bodies.removeContentTypeParser("multipart/form-data");
    await bodies.register(multipart, {
      limits: { fieldSize: bodyLimit, fileSize: bodyLimit, parts: MAX_MULTIPART_PARTS, fieldNameSize: 1024 },
    });
    for (const def of opts.routes) if (def.method !== "GET") await add(bodies, def);
  });

  app.setNotFoundHandler((req, reply) => {
    const allowed = index.allowed(req.url);
    if (allowed === null) return sendError(reply, errors.noSuchRoute());
    if (req.method === "OPTIONS") {
      reply
        .code(204)
        .header("Allow", [...allowed].sort().join(", "))
        .send();
      return;
    }
    sendError(reply, errors.methodNotAllowed(allowed));
  });

  return app;
}
