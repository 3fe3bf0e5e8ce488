// Process configuration from the environment, in one place; every variable
// read here is documented in README.md's configuration table.
import { readFileSync } from "node:fs";
import type { ConnectionOptions } from "@nats-io/transport-node";
import { DEFAULT_SHARDS } from "./addressing.ts";

function int(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${v}`);
  return n;
}

function shardsOr<T extends number | undefined>(dflt: T): number | T {
  const n = int("SHARDS", -1);
  if (n === -1) return dflt;
  if (n < 1) throw new Error(`SHARDS must be at least 1, got ${n}`);
  return n;
}

function str(name: string, dflt = ""): string {
  const v = process.env[name];
  return v === undefined || v === "" ? dflt : v;
}

export interface BootstrapConfig {
  ownerEmail: string;
  ownerPassword: string;
  ownerName: string;
  realmName: string;
  externalHost: string;
}

export function bootstrapConfig(): BootstrapConfig {
  return {
    ownerEmail: str("OWNER_EMAIL"),
    ownerPassword: str("OWNER_PASSWORD"),
    ownerName: str("OWNER_NAME", "Owner"),
    realmName: str("REALM_NAME", "Zulip"),
    externalHost: str("EXTERNAL_HOST", "localhost"),
  };
}

export const env = {
  int,
  str,
  port: () => int("PORT", 9991),
  host: () => str("HOST", "0.0.0.0"),
  dataDir: () => str("DATA_DIR", "./data"),
  shards: () => shardsOr(DEFAULT_SHARDS),
  /** SHARDS when set (embedded mode: otherwise the count its DATA_DIR records). */
  shardsIfSet: () => shardsOr(undefined),
  natsUrl: () => str("NATS_URL", "nats://127.0.0.1:4222"),
  redisUrl: () => str("REDIS_URL", "redis://127.0.0.1:6379"),
  /** Seed nodes of a Redis Cluster, comma-separated; when set, used instead of REDIS_URL. */
  redisClusterUrls: () =>
    str("REDIS_CLUSTER_URLS")
      .split(",")
      .map((u) => u.trim())
      .filter(Boolean),
  grpcPort: () => int("GRPC_PORT", 50051),
  /** Interface the node's gRPC server listens on (GRPC_HOST is what it announces). */
  grpcBind: () => str("GRPC_BIND", "127.0.0.1"),
  nodeId: () => str("NODE_ID", `node-${process.pid}`),
};

// ---- Securing the internal links (docs/operations.md "Securing the cluster") ------------

/** The contents of the file named by `name`, or undefined when `name` is unset. */
function fileOf(name: string): string | undefined {
  const path = str(name);
  if (path === "") return undefined;
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new Error(`${name}: cannot read ${path}: ${(err as Error).message}`);
  }
}

/** A certificate and its key: both or neither. */
function certAndKey(cert: string, key: string): { cert: string; key: string } | undefined {
  const c = fileOf(cert);
  const k = fileOf(key);
  if ((c === undefined) !== (k === undefined)) {
    throw new Error(
      `${c === undefined ? cert : key} must be set together with ${c === undefined ? key : cert}`,
    );
  }
  return c !== undefined && k !== undefined ? { cert: c, key: k } : undefined;
}

/**
 * NATS connect options plus a creds file's bytes, which connectNats turns
 * into an authenticator (so that this module, read by every process, does
 * not load the NATS client: embedded mode never uses it).
 */
export type NatsSecurity = Partial<ConnectionOptions> & { creds?: Uint8Array };

/**
 * What every NATS connection of a process (node, gateway, CLI) adds to its
 * connect options: one of user/password, token or creds file, and TLS. An
 * incomplete setting fails at start rather than falling back to plaintext or
 * to no authentication.
 */
export function natsSecurity(): NatsSecurity {
  const out: NatsSecurity = {};
  const user = str("NATS_USER");
  const password = str("NATS_PASSWORD");
  const token = str("NATS_TOKEN");
  const creds = str("NATS_CREDS");
  if ((user === "") !== (password === ""))
    throw new Error("NATS_USER and NATS_PASSWORD must be set together");
  const methods = [user && "NATS_USER", token && "NATS_TOKEN", creds && "NATS_CREDS"].filter(Boolean);
  if (methods.length > 1) throw new Error(`set only one of ${methods.join(", ")}`);
  if (user) {
    out.user = user;
    out.pass = password;
  } else if (token) {
    out.token = token;
  } else if (creds) {
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(creds);
    } catch (err) {
      throw new Error(`NATS_CREDS: cannot read ${creds}: ${(err as Error).message}`);
    }
    out.creds = bytes;
  }
  const ca = fileOf("NATS_TLS_CA");
  const pair = certAndKey("NATS_TLS_CERT", "NATS_TLS_KEY");
  if (ca !== undefined || pair !== undefined) out.tls = { ...(ca !== undefined ? { ca } : {}), ...pair };
  return out;
}

/** PEM material of the gateway -> node gRPC link; all three files or none. */
export interface GrpcTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/**
 * GRPC_TLS_CA, GRPC_TLS_CERT, GRPC_TLS_KEY: null when none is set
 * (plaintext); throws when only some are, so a node never serves plaintext
 * by mistake and a gateway never talks plaintext to a TLS node.
 */
export function grpcTls(): GrpcTls | null {
  const names = ["GRPC_TLS_CA", "GRPC_TLS_CERT", "GRPC_TLS_KEY"] as const;
  const set = names.filter((n) => str(n) !== "");
  if (set.length === 0) return null;
  if (set.length < names.length) {
    const missing = names.filter((n) => !set.includes(n));
    throw new Error(`gRPC TLS needs all of ${names.join(", ")}: ${missing.join(", ")} not set`);
  }
  const [ca, cert, key] = names.map((n) => Buffer.from(fileOf(n)!));
  return { ca: ca!, cert: cert!, key: key! };
}

/** TLS material for Redis connections (files; a rediss:// URL turns TLS on). */
export interface RedisTls {
  ca?: string;
  cert?: string;
  key?: string;
}

/**
 * REDIS_TLS_CA (verify a server certificate not signed by a public CA),
 * REDIS_TLS_CERT + REDIS_TLS_KEY (client certificate). Null when none is set.
 */
export function redisTls(): RedisTls | null {
  const ca = fileOf("REDIS_TLS_CA");
  const pair = certAndKey("REDIS_TLS_CERT", "REDIS_TLS_KEY");
  if (ca === undefined && pair === undefined) return null;
  return { ...(ca !== undefined ? { ca } : {}), ...pair };
}
