// Embedded mode: gateway and node in one process, the in-process transport in
// place of gRPC/NATS and LMDB in place of Redis; the same actor code as
// cluster mode. Also the management CLI's way into a stopped server's store.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { typedCall } from "../../actors/protocol.ts";
import { buildApp } from "../../gateway/index.ts";
import { routes } from "../../gateway/routes/index.ts";
import {
  webhookOptionsFromEnv,
  type WebhookWorker,
  type WebhookWorkerOptions,
} from "../../webhook/worker.ts";
import { singleNodeView, serveNodeAdmin } from "../admin.ts";
import { hashPasswordAhead } from "../../actors/user/index.ts";
import { bootstrap, newOwnerPassword, type BootstrapResult } from "../bootstrap.ts";
import { EMBEDDED_SHARDS } from "../addressing.ts";
import { env, type BootstrapConfig } from "../config.ts";
import type { EventRouter } from "../event-router.ts";
import type { NodeRuntime } from "../node.ts";
import type { MemoryGuard } from "../overload.ts";
// The modules themselves, not the folders' doors: those also load the
// Redis, gRPC and NATS clients, which embedded mode never uses.
import { createLmdbStore } from "../storage/lmdb-store.ts";
import { tracedStore } from "../tracing.ts";
import type { ActorClient } from "../transport/contract.ts";
import { createInProcessTransport } from "../transport/in-process.ts";
import { uploadStorageFromEnv } from "../upload-storage.ts";
import { startNodeWorkers } from "./domain.ts";
import { allShards, createGuardedNode, createNode, type ActorCall } from "./process.ts";
import type { Store } from "../storage/contract.ts";

export interface EmbeddedOptions {
  port: number;
  host: string;
  dataDir: string;
  /**
   * The shard count; absent: the one DATA_DIR records, or EMBEDDED_SHARDS
   * for a new one. A count that differs from the recorded one stops the start.
   */
  shards?: number;
  bootstrap: BootstrapConfig;
  /** With no owner in `bootstrap` and an empty store, make one up (npm start). */
  generateOwner?: boolean;
  logger?: boolean;
  /** Outgoing-webhook worker settings over the WEBHOOK_* environment (tests). */
  webhooks?: Partial<WebhookWorkerOptions>;
  /** Any Host reaches the only organization (default: env SINGLE_ORGANIZATION). */
  singleOrganization?: boolean;
  /** Peers whose X-Forwarded-* count (default: env TRUSTED_PROXIES). */
  trustedProxies?: string[];
  /** Lease timing (tests): 30 s TTL, renewed every 5 s. */
  leaseTtlMs?: number;
  renewMs?: number;
  /** Wrap the store the node uses (tests: hold a commit to observe what runs meanwhile). */
  wrapStore?: (store: Store) => Store;
}

export interface EmbeddedServer {
  url: string;
  port: number;
  /** The shard count in use (EmbeddedOptions.shards). */
  shards: number;
  node: NodeRuntime;
  /** The node's event router (cluster/event-router.ts). */
  router: EventRouter;
  /** The node's memory budget (docs/operations.md "Overload"). */
  guard: MemoryGuard;
  /** The outgoing-webhook worker (docs/webhooks.md). */
  webhooks: WebhookWorker;
  /** The gateway's client: its requests reach the node as external ones (tests forge through it). */
  gatewayClient: ActorClient;
  bootstrapped: BootstrapResult | null;
  close(): Promise<void>;
}

/** The embedded server's mark on DATA_DIR: the management CLI refuses to open the store while it runs. */
function pidFileOf(dataDir: string): string {
  return resolve(dataDir, "server.pid");
}

export async function startEmbedded(o: EmbeddedOptions): Promise<EmbeddedServer> {
  // Read (and checked) before anything opens: a bad OUTGOING_* value stops the start cleanly.
  const webhookOptions = { ...webhookOptionsFromEnv(), ...o.webhooks };
  mkdirSync(o.dataDir, { recursive: true });
  // A first start (nothing in DATA_DIR yet) creates the owner: its password
  // hash, a fraction of a second of a worker thread, starts now, beside the
  // rest of the start (actors/user/password.ts).
  const generatedPassword = o.generateOwner ? newOwnerPassword() : undefined;
  const ownerPassword = o.bootstrap.ownerPassword || generatedPassword;
  if (ownerPassword && readdirSync(o.dataDir).length === 0) hashPasswordAhead(ownerPassword);
  const lmdb = await createLmdbStore(resolve(o.dataDir), { exclusive: true });
  const shards = await lmdb.shardCount(o.shards, EMBEDDED_SHARDS).catch(async (err: unknown) => {
    await lmdb.close();
    throw err;
  });
  const store = tracedStore(o.wrapStore ? o.wrapStore(lmdb) : lmdb, "lmdb");
  const transport = createInProcessTransport();
  const { node, router, guard, handler } = createGuardedNode({
    nodeId: "embedded",
    // One process owns DATA_DIR (server.pid guards it), so no other node can
    // take a shard: an event-loop stall longer than the TTL must not fence
    // the node out (it answered "moved" until it took its shards again), so
    // the leases do not lapse while this process lives. The TTL only frees
    // them after a crash, for the next start or the management CLI.
    exclusiveStore: true,
    leaseTtlMs: o.leaseTtlMs ?? 30_000,
    renewMs: o.renewMs ?? 5_000,
    shards,
    store,
    outbound: transport.client,
    bus: transport.bus,
  });
  transport.serve(handler);
  node.start();
  guard.start();
  const workers = startNodeWorkers(node, { dataDir: resolve(o.dataDir), webhooks: webhookOptions });
  const adminSub = serveNodeAdmin(transport.bus, node, guard);
  node.setDesired(allShards(shards));
  // The node takes its shards first (a few journal transactions), then
  // bootstraps (commits, a password hash: mostly waiting) while the gateway
  // registers its routes (CPU; buildApp pauses between batches of routes).
  if (!(await node.ready())) throw new Error("embedded node could not take its shards");
  const booted = bootstrap(
    typedCall((ref, m, a) => node.call(ref, m, a)),
    o.bootstrap,
    { generateOwner: o.generateOwner, generatedPassword },
  );
  const built = buildApp({
    client: transport.gateway,
    bus: transport.bus,
    shards,
    routes,
    logger: o.logger ?? false,
    view: singleNodeView("embedded"),
    ...(o.singleOrganization !== undefined ? { singleOrganization: o.singleOrganization } : {}),
    ...(o.trustedProxies !== undefined ? { trustedProxies: o.trustedProxies } : {}),
    uploads: uploadStorageFromEnv(o.dataDir),
  });
  const [bootstrapped, app] = await Promise.all([booted, built]);
  await app.listen({ port: o.port, host: o.host });
  const pidFile = pidFileOf(o.dataDir);
  writeFileSync(pidFile, String(process.pid));
  const addr = app.server.address();
  const port = typeof addr === "object" && addr ? addr.port : o.port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    shards,
    node,
    router,
    guard,
    webhooks: workers.webhooks,
    gatewayClient: transport.gateway,
    bootstrapped,
    async close() {
      await app.close();
      adminSub.unsubscribe();
      guard.stop();
      await workers.close();
      transport.close();
      await store.close();
      rmSync(pidFile, { force: true });
    },
  };
}

/**
 * How to log in to an organization made up on first start: printed once,
 * since only the password's hash is kept.
 */
export function firstLogin(b: BootstrapResult, port: number): string {
  const external = env.str("EXTERNAL_HOST");
  const host = external ? `http://${external}` : `http://localhost:${port}`;
  return [
    "",
    "No OWNER_EMAIL/OWNER_PASSWORD were set, so the owner was made up. Log in with:",
    `  email:    ${b.generated!.email}`,
    `  password: ${b.generated!.password}`,
    `  API key:  ${b.apiKey}`,
    "This is shown once. A ready zuliprc for the Python client and zulip-terminal:",
    "[api]",
    `email=${b.generated!.email}`,
    `key=${b.apiKey}`,
    `site=${host}`,
    "",
  ].join("\n");
}

/**
 * Run `fn` against the store in DATA_DIR with a node of this process's own,
 * holding every shard (the management CLI). Refuses while the embedded
 * server runs on it: LMDB has one owner.
 */
export async function withLocalNode<T>(
  fn: (call: ActorCall, store: Store, shards: number) => Promise<T>,
): Promise<T> {
  const dataDir = resolve(env.dataDir());
  const pidFile = pidFileOf(dataDir);
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, "utf8"));
    let alive = false;
    try {
      process.kill(pid, 0);
      alive = true;
    } catch {
      alive = false;
    }
    if (alive) throw new Error(`the embedded server (pid ${pid}) is running on ${dataDir}: stop it first`);
  }
  // The CLI owns the store while it runs, like the embedded server.
  const store = await createLmdbStore(dataDir, { exclusive: true });
  const shards = await store.shardCount(env.shardsIfSet(), EMBEDDED_SHARDS).catch(async (err: unknown) => {
    await store.close();
    throw err;
  });
  const transport = createInProcessTransport();
  const { node } = createNode({
    nodeId: "manage",
    exclusiveStore: true,
    shards,
    store,
    outbound: transport.client,
    bus: transport.bus,
  });
  transport.serve((req) => node.handle(req));
  node.start();
  node.setDesired(allShards(shards));
  await node.ready();
  try {
    return await fn((ref, m, a) => node.call(ref, m, a), store, shards);
  } finally {
    await node.stop(true);
    transport.close();
    await store.close();
  }
}
