// The contract between the gateway's framework (gateway/app.ts, params.ts,
// auth.ts) and the route modules (gateway/routes/<area>.ts).
//
// A route declares its parameters; the framework reads them from the query
// string and the body (urlencoded or multipart, every method; body wins),
// converts and validates them with Zulip's error texts, authenticates the
// caller, calls `handler`, and wraps the returned object in
// {result: "success", msg: "", ...} plus ignored_parameters_unsupported.
// Handlers throw ZulipError (actors/errors.ts) for failures.

import type { Caller, Obj, Value } from "../actors/types.ts";
import type { ArgsOf, MethodOf, Protocol, Ref, ReplyOf, TypedCall } from "../actors/protocol.ts";

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

/** A route's parameter declarations, by canonical name. */
export type ParamSpecs = Record<string, ParamSpec>;

/**
 * The handler's value of one declared parameter: its parser's type, and
 * `undefined` too unless the parameter is required or has a default (the
 * framework fills those in or fails the request first).
 */
export type ParamValue<S> =
  S extends ParamSpec<infer T>
    ? S extends { required: true } | { default: unknown }
      ? T
      : T | undefined
    : never;

/** The handler's `req.params`, typed from the route's `params` declaration. */
export type ParamValues<S extends ParamSpecs> = { [K in keyof S]: ParamValue<S[K]> };

/**
 * The parameter names of a Fastify path: "/users/:user_id/status" ->
 * "user_id"; a trailing wildcard ("/realm/emoji/*") is named "*".
 */
export type PathParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | PathParamNames<Rest>
  : P extends `${string}:${infer Name}`
    ? Name
    : P extends `${string}*`
      ? "*"
      : never;

/**
 * The handler's `req.path`: each of the path's parameters, a raw string
 * (find-my-way lets the last one match ""). A path known only as `string`
 * (the erased RouteDef) gives a record.
 */
export type PathParams<P extends string> = string extends P
  ? Record<string, string>
  : { [K in PathParamNames<P>]: string };

export type AuthMode =
  /** HTTP Basic required. */
  | "required"
  /** No credentials read at all (server_settings, fetch_api_key). */
  | "none"
  /** Credentials used when sent; anonymous allowed when the handler permits (public access). */
  | "optional";

/**
 * What a handler gets. Typed from the route's declaration under
 * defineRoute; the defaults are the erased form, for helpers shared by
 * several routes (and the framework).
 */
export interface RouteRequest<
  Params extends Record<string, unknown> = Record<string, unknown>,
  Path extends Record<string, string> = Record<string, string>,
> {
  /** Parsed parameters by their canonical name; absent optional ones are missing. */
  params: Params;
  /** Path parameters, raw strings (e.g. { user_id: "12" }). */
  path: Path;
  caller: Caller | null;
  /** The realm the request's Host resolved to. */
  realmId: number;
  /** Host header (without port), e.g. for realm_url. */
  host: string;
  /** URL scheme seen by the client ("http" or "https"), for absolute URLs. */
  scheme: string;
  /** Send one message to an actor as this caller; throws ZulipError on failure. */
  call: TypedCall;
  /** `call`, for a reply the route answers unchanged (`Relayed`). */
  relay: TypedRelay;
}

/** `call`'s signature, its reply wrapped for answering unchanged. */
export interface TypedRelay {
  <P extends Protocol, M extends MethodOf<P>>(
    ref: Ref<P>,
    method: M,
    args: ArgsOf<P, M>,
  ): Promise<Relayed<ReplyOf<P, M>>>;
}

/**
 * An actor's reply that the route answers as it is: the success envelope
 * is spliced around the JSON text the reply travelled as (cluster mode), so
 * the gateway neither parses it nor serializes it again. A route may still
 * read `value` (parsed then, once); in embedded mode, where a reply does not
 * travel as text, it is serialized like any other answer.
 */
export class Relayed<T = Value> {
  constructor(private readonly res: { value: Value; json?: Uint8Array }) {}
  get value(): T {
    return this.res.value as T;
  }
  /** The reply's JSON text, when it travelled as such. */
  get json(): Uint8Array | undefined {
    return this.res.json;
  }
}

/**
 * A route. `RouteDef` without type arguments is the erased form the
 * framework's tables hold; a route module writes `defineRoute({...})`,
 * which infers Path and Specs so the handler's `req` is typed.
 */
export interface RouteDef<Path extends string = string, Specs extends ParamSpecs = ParamSpecs> {
  method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT" | "OPTIONS";
  /** Path under /api/v1, Fastify syntax: "/users/:user_id". */
  path: Path;
  auth: AuthMode;
  params: Specs;
  /**
   * Request deadline (start-by: replies of turns started in time are awaited
   * REPLY_GRACE_MS longer), when the default (10 s) is too short: GET /events
   * parks up to ~55 s.
   */
  timeoutMs?: number;
  /** Mount point of `path`; default "/api/v1". Served files (/user_avatars/...) use "". */
  prefix?: string;
  /** The success object (wrapped in Zulip's envelope), a Relayed actor reply, or a RawReply for a served file. */
  handler(req: RouteRequest<ParamValues<Specs>, PathParams<Path>>): Promise<Obj | Relayed<Obj> | RawReply>;
}

/**
 * A route whose handler sees its parameters typed from their declaration
 * (`param(p.int(), { required: true })` -> number), returned erased for
 * the route tables. A method's parameter is compared bivariantly, which is
 * what lets the typed handler stand in the erased RouteDef.
 */
export function defineRoute<Path extends string, Specs extends ParamSpecs>(
  def: RouteDef<Path, Specs>,
): RouteDef {
  return def;
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
