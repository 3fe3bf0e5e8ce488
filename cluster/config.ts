// Process configuration from the environment, in one place. README lists
// every variable.
import { DEFAULT_SHARDS } from "./addressing.ts";

function int(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${v}`);
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
  shards: () => int("SHARDS", DEFAULT_SHARDS),
  natsUrl: () => str("NATS_URL", "nats://127.0.0.1:4222"),
  redisUrl: () => str("REDIS_URL", "redis://127.0.0.1:6379"),
  /** Seed nodes of a Redis Cluster, comma-separated; when set, used instead of REDIS_URL. */
  redisClusterUrls: () =>
    str("REDIS_CLUSTER_URLS")
      .split(",")
      .map((u) => u.trim())
      .filter(Boolean),
  grpcPort: () => int("GRPC_PORT", 50051),
  nodeId: () => str("NODE_ID", `node-${process.pid}`),
};
