// HTTP Basic authentication (email:api_key) with Zulip's error texts and a
// per-gateway credential cache.
//
// Order of checks follows zerver/decorator.py (authenticated_rest_api_view,
// get_basic_credentials, validate_api_key, validate_account_and_subdomain):
// header shape, scheme, base64/UTF-8/":" split, key format, lookup, key and
// email match, realm deactivated, user deactivated, incoming-webhook bot.
//
// The key is checked at the node, never here: the gateway sends the presented
// key to the realm actor's authVerify, which compares it in constant time and
// answers the account's record without any key (null for a wrong key or an
// unknown email alike). No API key ever travels to a gateway.
//
// Cache: per (realm, email) for TTL_MS, the key the node verified and the
// account's record (not the verdict: deactivation is checked at each use).
// Another key for a cached email is refused here, as the node would refuse
// it. When credentials, roles or activation change, the realm actor publishes
// notice.auth.invalidate {realmId, email} (email "*": the whole realm) and
// every gateway drops the entries at once; the TTL only bounds the damage of
// a lost notice. Unknown emails are not cached.

import { timingSafeEqual } from "node:crypto";
import { LRUCache } from "lru-cache";
import { errors } from "../actors/errors.ts";
import { realmRef } from "../actors/index.ts";
import type { ArgsOf, ReplyOf } from "../actors/protocol.ts";
import type { RealmProtocol } from "../actors/realm/index.ts";
import type { Caller } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import { responseValue } from "../cluster/responses.ts";
import type { ActorClient, Bus, Subscription } from "../cluster/transport/contract.ts";
import { fromPbMap, pb } from "../proto/codec.ts";
import { componentLogger } from "../cluster/log.ts";

export const AUTH_INVALIDATE_SUBJECT = "notice.auth.invalidate";

const TTL_MS = 60_000;
const MAX_ENTRIES = 100_000;
/** Decoded Authorization headers remembered (decoding is a pure function of the header). */
const MAX_HEADERS = 10_000;
/** Zulip's UserProfile.INCOMING_WEBHOOK_BOT. */
const INCOMING_WEBHOOK_BOT = 2;

/** What the realm actor's authVerify answers for a known email and its key. */
/** The realm's answer to a credential (authVerify): the account's state, never its key. */
type AuthRecord = NonNullable<ReplyOf<RealmProtocol, "authVerify">>;

interface Entry {
  rec: AuthRecord;
  /** The key the node verified for this email. */
  key: Buffer;
  caller: Caller;
  /** The realm's invalidation count when the record was fetched (a realm-wide "*" bumps it). */
  realmEpoch: number;
}

interface Credentials {
  email: string;
  key: Buffer;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function isAlnum(ch: number): boolean {
  return (ch >= 48 && ch <= 57) || (ch >= 65 && ch <= 90) || (ch >= 97 && ch <= 122);
}

function isBase64(s: string): boolean {
  if (s.length % 4 !== 0) return false;
  let i = 0;
  for (; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    if (!(isAlnum(ch) || ch === 43 || ch === 47)) break;
  }
  const pad = s.length - i;
  if (pad > 2) return false;
  for (; i < s.length; i++) if (s.charCodeAt(i) !== 61) return false;
  return true;
}

/**
 * Split "Basic base64(email:key)" like Zulip's get_basic_credentials, then
 * check the key's format (has_api_key_format: 32 ASCII letters or digits).
 * Throws the ZulipError the client gets.
 */
export function parseBasicAuth(header: string): Credentials {
  // Python's str.split(): runs of whitespace, ends stripped.
  const parts = header.trim().split(/\s+/);
  if (parts.length !== 2) throw errors.badAuthHeader();
  if (parts[0]!.toLowerCase() !== "basic") throw errors.notBasicAuth();
  const b64 = parts[1]!;
  if (!isBase64(b64)) throw errors.badAuthHeader();
  let text: string;
  try {
    text = utf8.decode(Buffer.from(b64, "base64"));
  } catch {
    throw errors.badAuthHeader();
  }
  const fields = text.split(":");
  if (fields.length !== 2) throw errors.badAuthHeader();
  const email = fields[0]!.trim().toLowerCase();
  const key = fields[1]!.trim();
  if (key.length !== 32) throw errors.malformedApiKey();
  for (let i = 0; i < 32; i++) if (!isAlnum(key.charCodeAt(i))) throw errors.malformedApiKey();
  return { email, key: Buffer.from(key, "latin1") };
}

export class Authenticator {
  /**
   * Records by "<realm>\0<email>", least recently used dropped first when
   * full (a full cache no longer forgets everyone at once, which sent every
   * user's next request to the realm actor together), expiring after TTL_MS.
   */
  private get entries(): LRUCache<string, Entry> {
    // Made at the first request: its arrays for MAX_ENTRIES are allocated up front.
    return (this.entryCache ??= new LRUCache<string, Entry>({ max: MAX_ENTRIES, ttl: TTL_MS }));
  }
  private entryCache: LRUCache<string, Entry> | null = null;
  /** Realm-wide invalidations so far, per realm: entries of an older count are stale. */
  private readonly realmEpochs = new Map<number, number>();
  private readonly inflight = new Map<string, Promise<Entry | null>>();
  /** Bumped by every invalidation: a lookup that raced one is not cached. */
  private generation = 0;
  private readonly headers = new LRUCache<string, Credentials>({ max: MAX_HEADERS });
  private readonly sub: Subscription;

  constructor(
    private readonly client: ActorClient,
    private readonly shards: number,
    bus: Bus,
  ) {
    this.sub = bus.subscribe(AUTH_INVALIDATE_SUBJECT, (data) => this.onNotice(data));
  }

  close(): void {
    this.sub.unsubscribe();
  }

  /**
   * The caller for an Authorization header, or a thrown ZulipError. Returns
   * synchronously on a cache hit so the hot path awaits nothing.
   */
  authenticate(header: string, realmId: number, deadline: number): Caller | Promise<Caller> {
    let cred = this.headers.get(header);
    if (cred === undefined) {
      cred = parseBasicAuth(header);
      this.headers.set(header, cred);
    }
    const hit = this.peek(realmId, cred.email);
    if (hit !== undefined) return verify(hit, cred);
    return this.load(realmId, cred, deadline).then((e) => {
      if (e === null) throw errors.invalidApiKey();
      return verify(e, cred);
    });
  }

  /** Drop cached records: one email, or every email of the realm with "*". */
  invalidate(realmId: number, email: string): void {
    this.generation++;
    if (email === "*") this.realmEpochs.set(realmId, (this.realmEpochs.get(realmId) ?? 0) + 1);
    // No cache made yet: nothing to drop (and no need to allocate it now).
    else this.entryCache?.delete(`${realmId}\u0000${email.toLowerCase()}`);
  }

  private onNotice(data: Uint8Array): void {
    // Nothing cached yet (a server creating its first users): a lookup in
    // flight must not be cached, and there is nothing else to drop, so the
    // notice is not even decoded (which would load protobufjs at start).
    if (this.entryCache === null) {
      this.generation++;
      return;
    }
    let realmId: unknown;
    let email: unknown;
    try {
      const o = fromPbMap(pb().MapValue.decode(data) as unknown as Parameters<typeof fromPbMap>[0]);
      realmId = o.realmId;
      email = o.email;
    } catch (err) {
      componentLogger("auth").error({ err }, "bad auth invalidation notice");
      return;
    }
    if (typeof realmId === "number" && typeof email === "string") this.invalidate(realmId, email);
  }

  private peek(realmId: number, email: string): Entry | undefined {
    const e = this.entries.get(`${realmId}\u0000${email}`);
    return e !== undefined && e.realmEpoch === (this.realmEpochs.get(realmId) ?? 0) ? e : undefined;
  }

  private load(realmId: number, cred: Credentials, deadline: number): Promise<Entry | null> {
    // The key is part of the question: requests with another key get their own answer.
    const k = `${realmId}\u0000${cred.email}\u0000${cred.key.toString("latin1")}`;
    let p = this.inflight.get(k);
    if (p === undefined) {
      p = this.fetch(realmId, cred, deadline).finally(() => this.inflight.delete(k));
      this.inflight.set(k, p);
    }
    return p;
  }

  private async fetch(realmId: number, cred: Credentials, deadline: number): Promise<Entry | null> {
    const gen = this.generation;
    const ref = realmRef(realmId);
    const args: ArgsOf<RealmProtocol, "authVerify"> = {
      email: cred.email,
      apiKey: cred.key.toString("latin1"),
    };
    const res = await this.client.request({
      ref,
      shard: shardOf(ref, this.shards),
      method: "authVerify",
      args,
      caller: null,
      deadline,
    });
    const rec = responseValue(res) as AuthRecord | null;
    if (rec === null) return null;
    if (typeof rec !== "object" || typeof rec.userId !== "number") {
      throw new Error(`authVerify answered ${JSON.stringify(rec)}`);
    }
    const entry: Entry = {
      rec,
      key: cred.key,
      caller: { realmId, userId: rec.userId, role: rec.role, isBot: rec.isBot },
      realmEpoch: this.realmEpochs.get(realmId) ?? 0,
    };
    if (gen === this.generation) this.entries.set(`${realmId}\u0000${cred.email}`, entry);
    return entry;
  }
}

function verify(e: Entry, cred: Credentials): Caller {
  if (e.key.length !== cred.key.length || !timingSafeEqual(e.key, cred.key)) throw errors.invalidApiKey();
  const rec = e.rec;
  if (rec.realmDeactivated) throw errors.realmDeactivated();
  if (!rec.isActive) throw errors.accountDeactivated();
  if (rec.botType === INCOMING_WEBHOOK_BOT) throw errors.incomingWebhookBot();
  return e.caller;
}
