// Helpers for the operations tests (metrics, admin API, overload): raw HTTP
// with any Authorization header, and a reader for Prometheus text.
import type { Creds } from "./embedded.ts";
import { basicAuth } from "./embedded.ts";

export interface RawResult {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export function bearer(token: string): string {
  return `Bearer ${token}`;
}

export function basic(c: Creds): string {
  return basicAuth(c);
}

/** GET (or another method) a URL with an optional Authorization header. */
export async function raw(url: string, authorization?: string | null, method = "GET"): Promise<RawResult> {
  const headers: Record<string, string> = {};
  if (authorization) headers.authorization = authorization;
  const res = await fetch(url, { method, headers });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON (metrics, HTML)
  }
  return { status: res.status, headers: res.headers, text, body };
}

/**
 * Sum of the samples of `name` whose labels include every pair of `labels`
 * (NaN when no sample matches).
 */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = NaN;
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line === "") continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const pair of (m[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have[pair[1]!] = pair[2]!;
    if (!Object.entries(labels).every(([k, v]) => have[k] === v)) continue;
    sum = (Number.isNaN(sum) ? 0 : sum) + Number(m[4]);
  }
  return sum;
}

export async function until<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  ms = 10_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
