// The one place where thrown errors become wire responses and back
// (connect-es style: a closed set of kinds, the Zulip code carried inside).
import { ZulipError } from "../actors/errors.ts";
import { isStoreUnavailable, MovedError, UnavailableError } from "./runtime-errors.ts";
import { JsonText, type Obj, type TurnReply, type Value } from "../actors/types.ts";
import type { ActorResponse } from "./transport/contract.ts";
import { componentLogger } from "./log.ts";

/** UTF-8 JSON text as a value. */
export function parseJsonBytes(bytes: Uint8Array): Value {
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8")) as Value;
}

/**
 * A reply received as JSON text: `value` is parsed on its first read, once.
 * The text rides along as `json`, not enumerable, so the response compares
 * and prints as the plain `{ ok, value }` it stands for.
 */
export function jsonResponse(json: Uint8Array): ActorResponse {
  let parsed: { value: Value } | undefined;
  const res = {
    ok: true,
    get value(): Value {
      return (parsed ??= { value: parseJsonBytes(json) }).value;
    },
  } as const;
  return Object.defineProperty(res, "json", { value: json, enumerable: false });
}

/** A turn's reply as a response: a reply built as JSON text (`JsonText`) travels as that text. */
export function okResponse(reply: TurnReply): ActorResponse {
  return reply instanceof JsonText ? jsonResponse(Buffer.from(reply.text)) : { ok: true, value: reply };
}

/** A turn's reply as a value, for a caller in this process. */
export function replyValue(reply: TurnReply): Value {
  return reply instanceof JsonText ? (JSON.parse(reply.text) as Value) : reply;
}

export function errorToResponse(err: unknown): ActorResponse {
  if (err instanceof ZulipError) {
    const r: ActorResponse = {
      ok: false,
      kind: "zulip",
      code: err.code,
      msg: err.message,
      status: err.status,
    };
    if (Object.keys(err.extra).length) r.extra = err.extra as Obj;
    if (Object.keys(err.headers).length) r.headers = err.headers;
    return r;
  }
  if (err instanceof MovedError) {
    return { ok: false, kind: "moved", code: "MOVED", msg: err.message, status: 503 };
  }
  if (err instanceof UnavailableError) {
    return {
      ok: false,
      kind: "unavailable",
      code: "SERVICE_UNAVAILABLE",
      msg: err.message,
      status: 503,
      headers: { "Retry-After": String(err.retryAfterSeconds) },
    };
  }
  if (isStoreUnavailable(err)) {
    // The store is restarting or unreachable: the client may retry.
    componentLogger("actor-turn").warn({ err: (err as Error).message }, "store unavailable in actor turn");
    return {
      ok: false,
      kind: "unavailable",
      code: "SERVICE_UNAVAILABLE",
      msg: "Service temporarily unavailable",
      status: 503,
      headers: { "Retry-After": "1" },
    };
  }
  componentLogger("actor-turn").error({ err }, "unexpected error in actor turn");
  return { ok: false, kind: "zulip", code: "", msg: "Internal server error", status: 500 };
}

/** Re-raise a failed response on the calling side; returns the value otherwise. */
export function responseValue(res: ActorResponse): Value {
  if (res.ok) return res.value;
  if (res.kind === "zulip") {
    return throwZulip(res);
  }
  const retry = Number(res.headers?.["Retry-After"] ?? 1);
  throw new UnavailableError(res.msg, Number.isFinite(retry) ? retry : 1);
}

function throwZulip(res: Extract<ActorResponse, { ok: false }>): never {
  throw new ZulipError(res.msg, res.code, res.status, res.extra ?? {}, res.headers ?? {});
}
