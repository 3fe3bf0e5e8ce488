// One outgoing-webhook POST with the limits a server owes the network it
// calls out to: a deadline covering the whole exchange, redirects returned
// rather than followed, a cap on the response size, and a W3C `traceparent`.

import { randomBytes } from "node:crypto";

export type PostResult =
  | { kind: "response"; status: number; text: string }
  /** The deadline passed before the whole response was read. */
  | { kind: "timeout" }
  /** No connection, or it broke (Zulip's ConnectionError: retried). */
  | { kind: "connection"; detail: string }
  /** Any other failure (bad URL, response over the size cap): not retried. */
  | { kind: "error"; name: string; detail: string };

export interface PostOptions {
  url: string;
  body: string;
  contentType: string;
  userAgent: string;
  timeoutMs: number;
  maxResponseBytes: number;
  traceparent: string;
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "ETIMEDOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);

function errorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === "object"; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function isTimeout(err: unknown, signal: AbortSignal): boolean {
  if (signal.aborted) return true;
  const name = (err as { name?: string } | null)?.name;
  return name === "TimeoutError" || errorCode(err) === "UND_ERR_CONNECT_TIMEOUT";
}

function classify(err: unknown, signal: AbortSignal): PostResult {
  if (isTimeout(err, signal)) return { kind: "timeout" };
  const code = errorCode(err);
  if (code && CONNECTION_CODES.has(code)) return { kind: "connection", detail: code };
  const e = err as Error;
  return { kind: "error", name: e?.name ?? "Error", detail: e?.message ?? String(err) };
}

export class ResponseTooLargeError extends Error {
  constructor(limit: number) {
    super(`The response exceeded the limit of ${limit} bytes.`);
    this.name = "ResponseTooLarge";
  }
}

export async function postWebhook(o: PostOptions): Promise<PostResult> {
  let url: URL;
  try {
    url = new URL(o.url);
  } catch {
    return { kind: "error", name: "InvalidURL", detail: `Invalid URL '${o.url}'` };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return {
      kind: "error",
      name: "InvalidSchema",
      detail: `No connection adapters were found for '${o.url}'`,
    };
  }
  const signal = AbortSignal.timeout(o.timeoutMs);
  try {
    const res = await fetch(url, {
      method: "POST",
      body: o.body,
      redirect: "manual",
      signal,
      headers: {
        "content-type": o.contentType,
        "user-agent": o.userAgent,
        traceparent: o.traceparent,
      },
    });
    const declared = Number(res.headers.get("content-length") ?? "NaN");
    if (Number.isFinite(declared) && declared > o.maxResponseBytes) {
      await res.body?.cancel().catch(() => undefined);
      const e = new ResponseTooLargeError(o.maxResponseBytes);
      return { kind: "error", name: e.name, detail: e.message };
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (res.body) {
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > o.maxResponseBytes) {
          await reader.cancel().catch(() => undefined);
          const e = new ResponseTooLargeError(o.maxResponseBytes);
          return { kind: "error", name: e.name, detail: e.message };
        }
        chunks.push(value);
      }
    }
    return { kind: "response", status: res.status, text: Buffer.concat(chunks).toString("utf8") };
  } catch (err) {
    return classify(err, signal);
  }
}

// OpenTelemetry is optional here: when the API package is present and a
// span is active, the webhook request joins its trace; otherwise it starts
// a fresh, unsampled one.
interface OtelApi {
  trace: {
    getActiveSpan(): { spanContext(): { traceId: string; spanId: string; traceFlags: number } } | undefined;
  };
}
let otel: OtelApi | null = null;
try {
  const name = "@opentelemetry/api";
  otel = (await import(name)) as OtelApi;
} catch {
  otel = null;
}

const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

/** A W3C trace context header: the active span's trace with a new parent id, or a fresh trace. */
export function makeTraceparent(): string {
  const sc = otel?.trace.getActiveSpan()?.spanContext();
  const spanId = randomBytes(8).toString("hex");
  if (sc && /^[0-9a-f]{32}$/.test(sc.traceId) && sc.traceId !== ZERO_TRACE && sc.spanId !== ZERO_SPAN) {
    return `00-${sc.traceId}-${spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, "0")}`;
  }
  return `00-${randomBytes(16).toString("hex")}-${spanId}-00`;
}
