// The push relay client: Zulip's send_to_push_bouncer (zerver/lib/remote_server.py)
// for the two E2EE endpoints the gateway needs. Actors never touch the
// network, so the push routes ask the user actor first and call the relay
// here afterwards.
//
// Configuration (read per request, so an operator's change needs no restart
// of the routes and tests can point it at a local server):
//   PUSH_BOUNCER_URL          base URL of the relay (Zulip's ZULIP_SERVICES_URL);
//                             unset = push notifications not configured
//   PUSH_BOUNCER_TIMEOUT_MS   per-request timeout, default 5000, at most 8000
//                             (below the gateway's 10 s request deadline)
//   PUSH_BOUNCER_SERVER_UUID, PUSH_BOUNCER_SERVER_KEY
//                             this server's relay credentials (Zulip's
//                             ZULIP_ORG_ID / ZULIP_ORG_KEY), sent as HTTP Basic
//
// Like every outbound request, the relay's address goes through the egress
// check (webhook/egress.ts): a relay on a loopback or private address must be
// allowed by OUTGOING_WEBHOOK_ALLOWED_NETWORKS, or reached through
// OUTGOING_HTTP_PROXY. Its answer is read up to RELAY_BODY_BYTES.

import { createHash, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import type Nacl from "tweetnacl";
import { allowedNetworksFromEnv, Egress, proxyUrlFromEnv, undici } from "../../webhook/egress.ts";
import { errors } from "../../actors/errors.ts";
import { ZULIP_VERSION } from "../../actors/index.ts";

const DEFAULT_TIMEOUT_MS = 5000;
const MAX_TIMEOUT_MS = 8000;
const USER_AGENT = `ZulipServer/${ZULIP_VERSION}`;
/** The relay answers small JSON objects; anything longer is not a relay's answer. */
const RELAY_BODY_BYTES = 64 * 1024;

let egress: { key: string; egress: Egress } | null = null;

/** The egress for the environment's settings, made again when they change. */
function relayEgress(): Egress {
  const networks = allowedNetworksFromEnv();
  const proxy = proxyUrlFromEnv();
  const key = `${networks.join(",")} ${proxy ?? ""}`;
  if (egress?.key !== key) {
    void egress?.egress.close();
    egress = { key, egress: new Egress({ allowedNetworks: networks, proxyUrl: proxy }) };
  }
  return egress.egress;
}

/** The body as text, or null when it is longer than `cap` bytes. */
async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(): void },
  cap: number,
): Promise<string | null> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > cap) {
      body.destroy();
      return null;
    }
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString("utf8");
}

export function pushRelayUrl(): string | null {
  const url = process.env.PUSH_BOUNCER_URL?.trim();
  return url ? url : null;
}

function timeoutMs(): number {
  const n = Number(process.env.PUSH_BOUNCER_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? Math.min(n, MAX_TIMEOUT_MS) : DEFAULT_TIMEOUT_MS;
}

/**
 * Zulip sends each realm's uuid; our realms have none, so a stable one is
 * derived from the realm's URL (same URL, same uuid, across restarts).
 */
export function realmUuid(realmUrl: string): string {
  const h = createHash("sha256").update(`realm:${realmUrl}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** A stable uuid for a user (our users have none), from the realm's URL and the user id. */
export function userUuid(realmUrl: string, userId: number): string {
  const h = createHash("sha256").update(`user:${realmUrl}:${userId}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** How a relay call ended, in the classes Zulip's send_to_push_bouncer raises. */
export type RelayOutcome =
  | { kind: "ok"; body: unknown }
  /** requests' Timeout / ConnectionError / SSLError: PushNotificationBouncerRetryLaterError. */
  | { kind: "network" }
  /** 5xx: PushNotificationBouncerServerError. */
  | { kind: "server"; status: number }
  /**
   * Credentials, plan or realm registration (INVALID_ZULIP_SERVER,
   * PUSH_NOTIFICATIONS_DISALLOWED, MISSING_REMOTE_REALM), an unexpected
   * status, or an unreadable error body: something the server's
   * administrator must fix.
   */
  | { kind: "admin" }
  /** Any other 4xx with a JSON body: the relay refused the request itself. */
  | { kind: "client"; code: string; msg: string };

const ADMIN_CODES = new Set([
  "INVALID_ZULIP_SERVER",
  "PUSH_NOTIFICATIONS_DISALLOWED",
  "MISSING_REMOTE_REALM",
]);

async function post(endpoint: string, body: string, contentType: string): Promise<RelayOutcome> {
  const base = pushRelayUrl();
  if (!base) throw errors.pushServiceNotConfigured();
  const headers: Record<string, string> = { "content-type": contentType, "user-agent": USER_AGENT };
  const id = process.env.PUSH_BOUNCER_SERVER_UUID;
  const key = process.env.PUSH_BOUNCER_SERVER_KEY;
  if (id && key) headers.authorization = "Basic " + Buffer.from(`${id}:${key}`).toString("base64");
  let status: number;
  let text: string | null;
  try {
    // Like Python's urljoin with an absolute path: the base URL's path is replaced.
    const url = new URL(`/api/v1/remotes/${endpoint}`, base);
    const res = await undici().request(url, {
      method: "POST",
      headers,
      body,
      signal: AbortSignal.timeout(timeoutMs()),
      dispatcher: relayEgress().dispatcher(),
    });
    status = res.statusCode;
    text = await readCapped(res.body as AsyncIterable<Buffer> & { destroy(): void }, RELAY_BODY_BYTES);
  } catch {
    // Unreachable, timed out, or refused by the egress check.
    return { kind: "network" };
  }
  if (status >= 500) return { kind: "server", status };
  if (text === null) return { kind: "admin" };
  if (status >= 400) {
    let parsed: { code?: unknown; msg?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      return { kind: "admin" };
    }
    const code = typeof parsed?.code === "string" ? parsed.code : "BAD_REQUEST";
    if (ADMIN_CODES.has(code)) return { kind: "admin" };
    return { kind: "client", code, msg: typeof parsed?.msg === "string" ? parsed.msg : "" };
  }
  if (status !== 200) return { kind: "admin" };
  try {
    return { kind: "ok", body: text ? JSON.parse(text) : {} };
  } catch {
    return { kind: "admin" };
  }
}

/** POST remotes/push/e2ee/register, form-encoded as Zulip's worker sends it. */
export function relayRegister(fields: Record<string, string>): Promise<RelayOutcome> {
  return post(
    "push/e2ee/register",
    new URLSearchParams(fields).toString(),
    "application/x-www-form-urlencoded",
  );
}

/** POST remotes/push/e2ee/notify with a JSON body (Zulip's send_json_to_push_bouncer). */
export function relayNotify(body: unknown): Promise<RelayOutcome> {
  return post("push/e2ee/notify", JSON.stringify(body), "application/json");
}

/** POST remotes/push/notify with a JSON body: legacy (token) notifications, Zulip's send_notifications_to_bouncer. */
export function relayNotifyLegacy(body: unknown): Promise<RelayOutcome> {
  return post("push/notify", JSON.stringify(body), "application/json");
}

/**
 * libsodium crypto_secretbox_easy with the device's push key (the bytes
 * after the 0x31 prefix), as base64 of nonce then ciphertext.
 */
export function encryptForDevice(pushKeyBase64: string, plaintext: string): string {
  const key = Buffer.from(pushKeyBase64, "base64").subarray(1);
  // Loaded at the first push, not at every start.
  const nacl = createRequire(import.meta.url)("tweetnacl") as typeof Nacl;
  const nonce = new Uint8Array(randomBytes(nacl.secretbox.nonceLength));
  const box = nacl.secretbox(new TextEncoder().encode(plaintext), nonce, new Uint8Array(key));
  return Buffer.concat([Buffer.from(nonce), Buffer.from(box)]).toString("base64");
}

/** The test notification's client errors, as Zulip maps the relay's failures. */
export function throwForNotify(outcome: RelayOutcome): void {
  switch (outcome.kind) {
    case "ok":
      return;
    case "network":
      throw errors.failedToConnectBouncer();
    case "server":
      throw errors.internalServerErrorOnBouncer();
    case "admin":
      throw errors.pushAdminActionRequired();
    case "client":
      // Zulip re-raises the relay's message as a plain JsonableError.
      throw errors.badRequest(outcome.msg);
  }
}
