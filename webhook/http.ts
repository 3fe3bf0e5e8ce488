// One outgoing-webhook POST with the limits a server owes the network it
// calls out to: a deadline covering the whole exchange, redirects returned
// rather than followed, a cap on the response size, a W3C `traceparent`,
// and connections only where the egress dispatcher allows (egress.ts).

import { randomBytes } from "node:crypto";
import { trace } from "@opentelemetry/api";
import type { Dispatcher } from "undici";
import { undici } from "./egress.ts";

export type PostResult =
  | { kind: "response"; status: number; text: string }
  /** The deadline passed before the whole response was read. */
  | { kind: "timeout" }
  /** No connection, or it broke (Zulip's ConnectionError: retried). */
  | { kind: "connection"; detail: string }
  /** The destination is in a network outgoing webhooks may not reach (or the egress proxy refused it). */
  | { kind: "disallowed"; detail: string }
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
  /** Where connections come from: the egress dispatcher (egress.ts). */
  dispatcher: Dispatcher;
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
  if (code === "ERR_DISALLOWED_DESTINATION") return { kind: "disallowed", detail: (err as Error).message };
  const tunnel = TUNNEL_REFUSED.exec((err as Error | null)?.message ?? "");
  if (tunnel) {
    // Smokescreen answers 407 for a destination it refuses.
    if (tunnel[1] === "407")
      return { kind: "disallowed", detail: "The egress proxy refused the destination." };
    return { kind: "connection", detail: `proxy answered ${tunnel[1]}` };
  }
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

/** How much of a non-2xx answer is read: enough for the owner's excerpt (payload.ts). */
export const ERROR_BODY_BYTES = 4096;

/** undici's refusal of a CONNECT the proxy answered with another status than 200. */
const TUNNEL_REFUSED = /^Proxy response \((\d{3})\) !== 200/;

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
    // undici's request never follows redirects: a 3xx comes back as is.
    const res = await undici().request(url, {
      method: "POST",
      body: o.body,
      signal,
      dispatcher: o.dispatcher,
      headers: {
        "content-type": o.contentType,
        "user-agent": o.userAgent,
        traceparent: o.traceparent,
      },
    });
    const ok = res.statusCode >= 200 && res.statusCode <= 299;
    const declared = Number(res.headers["content-length"] ?? "NaN");
    if (ok && Number.isFinite(declared) && declared > o.maxResponseBytes) {
      res.body.destroy();
      const e = new ResponseTooLargeError(o.maxResponseBytes);
      return { kind: "error", name: e.name, detail: e.message };
    }
    // A reply is read whole (up to the cap, else refused); of an error
    // answer only the start is read, since only an excerpt is ever shown.
    const cap = ok ? o.maxResponseBytes : Math.min(o.maxResponseBytes, ERROR_BODY_BYTES);
    const decoder = new TextDecoder();
    let text = "";
    let size = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      const room = cap - size;
      size += chunk.byteLength;
      if (size > cap) {
        res.body.destroy();
        if (ok) {
          const e = new ResponseTooLargeError(o.maxResponseBytes);
          return { kind: "error", name: e.name, detail: e.message };
        }
        // stream: true keeps a character cut at the cap out of the text.
        text += decoder.decode(chunk.subarray(0, room), { stream: true });
        return { kind: "response", status: res.statusCode, text };
      }
      text += decoder.decode(chunk, { stream: true });
    }
    text += decoder.decode();
    return { kind: "response", status: res.statusCode, text };
  } catch (err) {
    return classify(err, signal);
  }
}

// The webhook request joins the active span's trace when there is one;
// otherwise it starts a fresh, unsampled one.
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

/** A W3C trace context header: the active span's trace with a new parent id, or a fresh trace. */
export function makeTraceparent(): string {
  const sc = trace.getActiveSpan()?.spanContext();
  const spanId = randomBytes(8).toString("hex");
  if (sc && /^[0-9a-f]{32}$/.test(sc.traceId) && sc.traceId !== ZERO_TRACE && sc.spanId !== ZERO_SPAN) {
    return `00-${sc.traceId}-${spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, "0")}`;
  }
  return `00-${randomBytes(16).toString("hex")}-${spanId}-00`;
}
