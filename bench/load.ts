// autocannon wrapper: a warm-up, then the measured window.
import autocannon from "autocannon";
import type { LoadFigure } from "./table.ts";

export interface LoadSpec {
  url: string;
  method: "GET" | "POST" | "PATCH";
  connections: number;
  duration: number;
  /** Seconds of unmeasured warm-up first (JIT, activations, connections). */
  warmup?: number;
  headers?: Record<string, string>;
  /** A fixed body, or one computed per request. */
  body?: string | (() => string);
  /** Seconds before a request counts as failed (autocannon's default: 10). */
  timeout?: number;
}

export async function load(spec: LoadSpec): Promise<LoadFigure> {
  const headers: Record<string, string> = { ...spec.headers };
  if (spec.body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
  const body = spec.body;
  const requests =
    typeof body === "function"
      ? [{ setupRequest: (req: autocannon.Request) => ({ ...req, body: body() }) }]
      : undefined;
  const run = (duration: number) =>
    autocannon({
      url: spec.url,
      method: spec.method,
      connections: spec.connections,
      duration,
      timeout: spec.timeout ?? 10,
      headers,
      body: typeof body === "string" ? body : undefined,
      requests,
    });
  if (spec.warmup !== 0) await run(spec.warmup ?? 2);
  const r = await run(spec.duration);
  return {
    rps: r.requests.average,
    // autocannon reports 0 ms when nothing completed.
    p50: r.requests.total ? r.latency.p50 : NaN,
    p99: r.requests.total ? r.latency.p99 : NaN,
    total: r.requests.total,
    failed: r.errors + r.timeouts + r.non2xx,
  };
}
