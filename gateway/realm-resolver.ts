// Host header -> realm id, cached per gateway.
//
// The realm directory (actors/realm-directory/) owns the host table. A
// realm's host changes rarely, so a stale entry lives at most TTL_MS; errors
// (unknown host) are not cached and reach the client as the actor raised them.
//
// An unknown host is Zulip's "Invalid subdomain" (404), unless the
// deployment says it is a single organization (SINGLE_ORGANIZATION=1): then
// every host reaches the only organization there is (actors/realm-directory/handlers.ts).

import { LRUCache } from "lru-cache";
import { realmDirectoryRef } from "../actors/index.ts";
import type { ArgsOf, ReplyOf } from "../actors/protocol.ts";
import type { RealmDirectoryProtocol } from "../actors/realm-directory/index.ts";
import { shardOf } from "../cluster/addressing.ts";
import { responseValue } from "../cluster/responses.ts";
import type { ActorClient } from "../cluster/transport/contract.ts";

const TTL_MS = 60_000;
/** The Host header is client-controlled: bound what it can make us remember. */
const MAX_ENTRIES = 10_000;

const DIRECTORY = realmDirectoryRef();

export interface ResolvedHost {
  realmId: number;
  /** Lowercased host name without the port. */
  host: string;
}

/** "Chat.Example.com:443" -> "chat.example.com"; "[::1]:80" -> "[::1]". */
export function hostName(header: string): string {
  let end = header.length;
  if (header.charCodeAt(0) === 91 /* [ */) {
    const close = header.indexOf("]");
    if (close > 0) end = close + 1;
  } else {
    const colon = header.indexOf(":");
    if (colon >= 0) end = colon;
  }
  return header.slice(0, end).trim().toLowerCase();
}

/** SINGLE_ORGANIZATION=1: any Host reaches the deployment's only organization. */
export function singleOrganizationFromEnv(): boolean {
  const v = process.env.SINGLE_ORGANIZATION;
  if (v === undefined || v === "" || v === "0") return false;
  if (v === "1") return true;
  throw new Error(`SINGLE_ORGANIZATION must be 0 or 1, got ${v}`);
}

export class RealmResolver {
  // Keyed by the raw header so the hot path does no string work; the least
  // recently used host goes first when full.
  private readonly cache = new LRUCache<string, ResolvedHost>({ max: MAX_ENTRIES, ttl: TTL_MS });
  private readonly inflight = new Map<string, Promise<ResolvedHost>>();
  private readonly shard: number;

  constructor(
    private readonly client: ActorClient,
    shards: number,
    private readonly single: boolean = singleOrganizationFromEnv(),
  ) {
    this.shard = shardOf(DIRECTORY, shards);
  }

  /** The cached answer, if fresh. */
  peek(hostHeader: string): ResolvedHost | undefined {
    return this.cache.get(hostHeader);
  }

  /** Ask the directory (one request per host at a time). Throws ZulipError. */
  resolve(hostHeader: string, deadline: number): Promise<ResolvedHost> {
    let p = this.inflight.get(hostHeader);
    if (p === undefined) {
      p = this.fetch(hostHeader, deadline).finally(() => this.inflight.delete(hostHeader));
      this.inflight.set(hostHeader, p);
    }
    return p;
  }

  private async fetch(hostHeader: string, deadline: number): Promise<ResolvedHost> {
    const host = hostName(hostHeader);
    const args: ArgsOf<RealmDirectoryProtocol, "resolveHost"> = { host, single: this.single };
    const res = await this.client.request({
      ref: DIRECTORY,
      shard: this.shard,
      method: "resolveHost",
      args,
      caller: null,
      deadline,
    });
    // Trusted like every reply, but a mistake here would route requests to the wrong organization.
    const value = responseValue(res) as Partial<ReplyOf<RealmDirectoryProtocol, "resolveHost">> | null;
    const realmId = value?.realmId;
    if (typeof realmId !== "number")
      throw new Error(`resolveHost(${host}) answered ${JSON.stringify(value)}`);
    const entry: ResolvedHost = { realmId, host };
    this.cache.set(hostHeader, entry);
    return entry;
  }

  clear(): void {
    this.cache.clear();
  }
}
