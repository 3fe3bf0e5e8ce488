// The contract between the gateway's framework (gateway/app.ts, params.ts,
// auth.ts) and the route modules (gateway/routes/<area>.ts).
//
// A route declares its parameters; the framework reads them from the query
// string and the body (urlencoded or multipart, every method; body wins),
// converts and validates them with Zulip's error texts, authenticates the
// caller, calls `handler`, and wraps the returned object in
// {result: "success", msg: "", ...} plus ignored_parameters_unsupported.
// Handlers throw ZulipError (actors/errors.ts) for failures.

import type { Caller, Obj } from "../actors/types.ts";
import type { TypedCall } from "../actors/protocol.ts";

/**
 * A parameter parser: takes the raw string from the request (never
 * undefined: absent parameters do not reach the parser) and the parameter
 * name for error texts, returns the typed value or throws ZulipError.
 */
export type Parser<T> = (raw: string, name: string) => T;

export interface ParamSpec<T = unknown> {
  parse: Parser<T>;
  required?: boolean;
  /** Other names accepted for this parameter; sending two gives REQUEST_CONFUSING_VAR. */
  aliases?: string[];
  /** Value used when absent (after parsing nothing). */
  default?: T;
}

export type AuthMode =
  /** HTTP Basic required. */
  | "required"
  /** No credentials read at all (server_settings, fetch_api_key). */
  | "none"
  /** Credentials used when sent; anonymous allowed when the handler permits (public access). */
  | "optional";

export interface RouteRequest {
  /** Parsed parameters by their canonical name; absent optional ones are missing. */
  params: Record<string, unknown>;
  /** Path parameters, raw strings (e.g. { user_id: "12" }). */
  path: Record<string, string>;
  caller: Caller | null;
  /** The realm the request's Host resolved to. */
  realmId: number;
  /** Host header (without port), e.g. for realm_url. */
  host: string;
  /** URL scheme seen by the client ("http" or "https"), for absolute URLs. */
  scheme: string;
  /** Send one message to an actor as this caller; throws ZulipError on failure. */
  call: TypedCall;
}

export interface RouteDef {
  method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT" | "OPTIONS";
  /** Path under /api/v1, Fastify syntax: "/users/:user_id". */
  path: string;
  auth: AuthMode;
  params: Record<string, ParamSpec>;
  /**
   * Request deadline (start-by: replies of turns started in time are awaited
   * REPLY_GRACE_MS longer), when the default (10 s) is too short: GET /events
   * parks up to ~55 s.
   */
  timeoutMs?: number;
  /** Mount point of `path`; default "/api/v1". Served files (/user_avatars/...) use "". */
  prefix?: string;
  /** The success object (wrapped in Zulip's envelope), or a RawReply for a served file. */
  handler(req: RouteRequest): Promise<Obj | RawReply>;
}

/** A handler's non-JSON answer: the bytes of a served file or page, sent as they are (status 200 unless given). */
export class RawReply {
  constructor(
    readonly body: Buffer,
    readonly contentType: string,
    readonly headers: Record<string, string> = {},
    readonly status = 200,
  ) {}
}
