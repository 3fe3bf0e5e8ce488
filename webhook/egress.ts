// Where the server may send HTTP requests on a user's behalf. An outgoing
// webhook's URL is chosen by any member, so without a check a bot could be
// aimed at the server's own loopback, the private network behind it or a
// cloud metadata address, and the answer would come back as a message.
//
// The check runs at connect time on the RESOLVED addresses, inside the
// dispatcher's connector: the host is resolved once, every address is
// checked, and the socket goes to the checked address (never resolved
// again), so a name that changes its answer between a check and the
// connect (DNS rebinding) gains nothing. Literal addresses in any spelling
// (2130706433, 0x7f.1, [::ffff:127.0.0.1]) reach the connector normalized
// by the URL parser and are checked the same way.
//
// With an egress proxy (OUTGOING_HTTP_PROXY, e.g. Smokescreen), every
// request goes through it and the destination check is the proxy's job;
// the proxy's own address is not checked (it is the operator's choice).

import { lookup as dnsLookup } from "node:dns/promises";
import { createRequire } from "node:module";
import { BlockList, isIP } from "node:net";
import type * as Undici from "undici";
import type { buildConnector, Dispatcher } from "undici";

let undiciModule: typeof Undici | null = null;

/**
 * undici, loaded at the first outbound request rather than at every start
 * (it is ~110 modules, and most processes never call out).
 */
export function undici(): typeof Undici {
  return (undiciModule ??= createRequire(import.meta.url)("undici") as typeof Undici);
}

export const ALLOWED_NETWORKS_ENV = "OUTGOING_WEBHOOK_ALLOWED_NETWORKS";
export const PROXY_ENV = "OUTGOING_HTTP_PROXY";

/** Loopback, private, link-local, unspecified, shared, multicast, broadcast, reserved and documentation ranges. */
const BLOCKED_V4: [string, number][] = [
  ["0.0.0.0", 8], // "this network", including the unspecified address
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata services
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, and the broadcast address
];

// IPv4-mapped addresses (::ffff:0:0/96) need no rule of their own: a
// BlockList applies its IPv4 rules to them (and an IPv6 rule for the whole
// /96 would match every IPv4 address). NAT64 and 6to4 addresses are checked
// by the IPv4 address they embed (embeddedV4).
const BLOCKED_V6: [string, number][] = [
  ["::", 96], // unspecified, loopback, IPv4-compatible
  ["64:ff9b:1::", 48], // local-use NAT64
  ["100::", 64], // discard
  ["2001::", 32], // Teredo
  ["2001:2::", 48], // benchmarking
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
];

function blockList(v4: [string, number][], v6: [string, number][]): BlockList {
  const b = new BlockList();
  for (const [a, p] of v4) b.addSubnet(a, p, "ipv4");
  for (const [a, p] of v6) b.addSubnet(a, p, "ipv6");
  return b;
}

const BLOCKED = blockList(BLOCKED_V4, BLOCKED_V6);

/** The 16 bytes of an IPv6 address (no zone), or null. */
function ipv6Bytes(addr: string): number[] | null {
  let s = addr;
  let tail: number[] = [];
  const dot = s.lastIndexOf(":");
  if (s.includes(".")) {
    const v4 = s
      .slice(dot + 1)
      .split(".")
      .map(Number);
    if (v4.length !== 4) return null;
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
    s = s.slice(0, dot + 1) + "0:0";
  }
  const [head, rest] = s.split("::") as [string, string | undefined];
  const parse = (p: string) => (p === "" ? [] : p.split(":").map((h) => parseInt(h, 16)));
  let words: number[];
  if (rest === undefined) words = parse(head);
  else {
    const a = parse(head);
    const b = parse(rest);
    words = [...a, ...new Array<number>(8 - a.length - b.length).fill(0), ...b];
  }
  if (tail.length) words.splice(6, 2, ...tail);
  if (words.length !== 8 || words.some((w) => !(w >= 0 && w <= 0xffff))) return null;
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

/** The IPv4 address a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address stands for. */
function embeddedV4(addr: string): string | null {
  const b = ipv6Bytes(addr);
  if (!b) return null;
  if (
    b[0] === 0x00 &&
    b[1] === 0x64 &&
    b[2] === 0xff &&
    b[3] === 0x9b &&
    b.slice(4, 12).every((x) => x === 0)
  )
    return b.slice(12).join(".");
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6).join(".");
  return null;
}

/** Which destination addresses are allowed: everything public, plus the operator's exceptions. */
export class AddressPolicy {
  constructor(private readonly allow: BlockList = new BlockList()) {}

  /** Parse a list of CIDR networks (a bare address is one host); throws on anything else. */
  static fromNetworks(networks: readonly string[], source = ALLOWED_NETWORKS_ENV): AddressPolicy {
    const allow = new BlockList();
    for (const raw of networks) {
      const n = raw.trim();
      if (n === "") continue;
      const bad = () =>
        new Error(
          `${source}: '${n}' is not a network in CIDR notation (like 127.0.0.0/8 or fd00::/8); ` +
            "give a comma-separated list of them",
        );
      const slash = n.indexOf("/");
      const addr = slash < 0 ? n : n.slice(0, slash);
      const family = isIP(addr);
      if (family === 0) throw bad();
      const max = family === 4 ? 32 : 128;
      const prefixText = slash < 0 ? String(max) : n.slice(slash + 1);
      if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) throw bad();
      allow.addSubnet(addr, Number(prefixText), family === 4 ? "ipv4" : "ipv6");
    }
    return new AddressPolicy(allow);
  }

  allows(address: string): boolean {
    const addr = address.replace(/%.*$/, "");
    const family = isIP(addr);
    if (family === 0) return false;
    const type = family === 4 ? "ipv4" : "ipv6";
    const inner = family === 6 ? embeddedV4(addr) : null;
    if (this.allow.check(addr, type) || (inner !== null && this.allow.check(inner, "ipv4"))) return true;
    return !(BLOCKED.check(addr, type) || (inner !== null && BLOCKED.check(inner, "ipv4")));
  }
}

/** A destination resolved to an address outside the allowed ones. */
export class DisallowedDestinationError extends Error {
  readonly code = "ERR_DISALLOWED_DESTINATION";
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`The destination ${host} (${address}) is in a network outgoing requests may not reach.`);
    this.name = "DisallowedDestination";
  }
}

export type LookupAll = (hostname: string) => Promise<{ address: string; family: number }[]>;

const systemLookup: LookupAll = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * Resolve `hostname` and return the address to connect to, once every
 * address it resolves to passed the policy (a name that also points
 * inside is refused whole, rather than raced through its other addresses).
 */
export async function checkedAddress(
  hostname: string,
  policy: AddressPolicy,
  lookup = systemLookup,
): Promise<string> {
  const host = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  const addrs = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host);
  if (addrs.length === 0)
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
  for (const a of addrs) if (!policy.allows(a.address)) throw new DisallowedDestinationError(host, a.address);
  return addrs[0]!.address;
}

/** An undici connector that connects only to addresses the policy allows. */
export function guardedConnector(
  policy: AddressPolicy,
  lookup: LookupAll = systemLookup,
): buildConnector.connector {
  const inner = undici().buildConnector({});
  return (opts: buildConnector.Options, cb: buildConnector.Callback) => {
    checkedAddress(opts.hostname, policy, lookup).then(
      (address) => {
        const host = opts.hostname.replace(/^\[|\]$/g, "");
        // The socket goes to the checked address; TLS still verifies (and
        // sends as SNI) the name from the URL.
        const servername = opts.servername || (isIP(host) ? undefined : host);
        inner({ ...opts, hostname: address, ...(servername ? { servername } : {}) }, cb);
      },
      (err: Error) => cb(err, null),
    );
  };
}

export interface EgressOptions {
  /** Networks allowed despite the default refusal (CIDR strings). */
  allowedNetworks: readonly string[];
  /** An egress proxy for every request (http://host:port); null for direct connections. */
  proxyUrl: string | null;
  /** Name resolution for direct connections (tests). */
  lookup?: LookupAll;
}

/**
 * The dispatcher for outbound requests: a proxy when configured, else direct
 * connections with the address check. The settings are checked when it is
 * made (a bad network or proxy URL stops a start); undici's dispatcher is
 * built at the first request.
 */
export class Egress {
  private readonly policy: AddressPolicy;
  private readonly proxy: string | null;
  private built: Dispatcher | null = null;

  constructor(private readonly o: EgressOptions) {
    this.policy = AddressPolicy.fromNetworks(o.allowedNetworks);
    this.proxy = o.proxyUrl ? parseProxyUrl(o.proxyUrl).href : null;
  }

  dispatcher(): Dispatcher {
    if (this.built) return this.built;
    const { Agent, ProxyAgent } = undici();
    this.built = this.proxy
      ? new ProxyAgent({ uri: this.proxy })
      : new Agent({ connect: guardedConnector(this.policy, this.o.lookup) });
    return this.built;
  }

  async close(): Promise<void> {
    await this.built?.close();
  }
}

/** The comma-separated networks of the environment, checked now so a bad value stops the start. */
export function allowedNetworksFromEnv(): string[] {
  const list = (process.env[ALLOWED_NETWORKS_ENV] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  AddressPolicy.fromNetworks(list);
  return list;
}

function parseProxyUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${PROXY_ENV}: '${raw}' is not a URL (like http://127.0.0.1:4750)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new Error(`${PROXY_ENV}: '${raw}' must be an http:// or https:// URL`);
  return url;
}

/** The proxy URL of the environment, checked now so a bad value stops the start. */
export function proxyUrlFromEnv(): string | null {
  const raw = process.env[PROXY_ENV]?.trim();
  if (!raw) return null;
  parseProxyUrl(raw);
  return raw;
}
