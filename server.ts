// Embedded mode: `npm start`. Gateway and node in one process, the
// in-process transport in place of gRPC/NATS and LMDB in place of Redis; the
// same actor code as cluster mode. No services needed.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { behaviors } from "./actors/index.ts";
import { bootstrap, type BootstrapResult } from "./cluster/bootstrap.ts";
import { bootstrapConfig, env, type BootstrapConfig } from "./cluster/config.ts";
import { singleNodeView, serveNodeAdmin } from "./cluster/admin.ts";
import { NodeRuntime } from "./cluster/node.ts";
import { MemoryGuard, overloadConfig } from "./cluster/overload.ts";
// The modules themselves, not the folders' doors: those also load the
// Redis, gRPC and NATS clients, which embedded mode never uses.
import { createLmdbStore } from "./cluster/storage/lmdb-store.ts";
import { shutdownTracing, startTracing, tracedStore } from "./cluster/tracing.ts";
import type { ActorClient } from "./cluster/transport/contract.ts";
import { createInProcessTransport } from "./cluster/transport/in-process.ts";
import { buildApp } from "./gateway/index.ts";
import { routes } from "./gateway/routes/index.ts";
import {
  startWebhookWorker,
  webhookOptionsFromEnv,
  type WebhookWorker,
  type WebhookWorkerOptions,
} from "./webhook/worker.ts";
import { createLogger, setRootLogger } from "./cluster/log.ts";

export interface EmbeddedOptions {
  port: number;
  host: string;
  dataDir: string;
  shards: number;
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
}

export interface EmbeddedServer {
  url: string;
  port: number;
  node: NodeRuntime;
  /** The node's memory budget (docs/operations.md "Overload"). */
  guard: MemoryGuard;
  /** The outgoing-webhook worker (docs/webhooks.md). */
  webhooks: WebhookWorker;
  /** The gateway's client: its requests reach the node as external ones (tests forge through it). */
  gatewayClient: ActorClient;
  bootstrapped: BootstrapResult | null;
  close(): Promise<void>;
}

export async function startEmbedded(o: EmbeddedOptions): Promise<EmbeddedServer> {
  // Read (and checked) before anything opens: a bad OUTGOING_* value stops the start cleanly.
  const webhookOptions = { ...webhookOptionsFromEnv(), ...o.webhooks };
  mkdirSync(o.dataDir, { recursive: true });
  const store = tracedStore(await createLmdbStore(resolve(o.dataDir), { exclusive: true }), "lmdb");
  const transport = createInProcessTransport();
  const overload = overloadConfig();
  const node = new NodeRuntime({
    mailboxLimit: overload.mailboxLimit,
    nodeId: "embedded",
    // One process owns DATA_DIR (server.pid guards it), so no other node can
    // take a shard: an event-loop stall longer than the TTL must not fence
    // the node out (it answered "moved" until it took its shards again), so
    // the leases do not lapse while this process lives. The TTL only frees
    // them after a crash, for the next start or the management CLI.
    exclusiveStore: true,
    leaseTtlMs: o.leaseTtlMs ?? 30_000,
    renewMs: o.renewMs ?? 5_000,
    shards: o.shards,
    store,
    behaviors,
    outbound: transport.client,
    bus: transport.bus,
  });
  const guard = new MemoryGuard("embedded", overload.memoryBudgetMb);
  transport.serve(guard.admit((req) => node.handle(req)));
  node.start();
  guard.start();
  const webhooks = startWebhookWorker(node, webhookOptions);
  const adminSub = serveNodeAdmin(transport.bus, node, guard);
  node.setDesired(Array.from({ length: o.shards }, (_, i) => i));
  if (!(await node.ready())) throw new Error("embedded node could not take its shards");
  const bootstrapped = await bootstrap((ref, m, a) => node.call(ref, m, a), o.bootstrap, {
    generateOwner: o.generateOwner,
  });

  const app = await buildApp({
    client: transport.gateway,
    bus: transport.bus,
    shards: o.shards,
    routes,
    logger: o.logger ?? false,
    view: singleNodeView("embedded"),
    ...(o.singleOrganization !== undefined ? { singleOrganization: o.singleOrganization } : {}),
    ...(o.trustedProxies !== undefined ? { trustedProxies: o.trustedProxies } : {}),
  });
  await app.listen({ port: o.port, host: o.host });
  // The management CLI refuses to open the store while this process runs.
  const pidFile = resolve(o.dataDir, "server.pid");
  writeFileSync(pidFile, String(process.pid));
  const addr = app.server.address();
  const port = typeof addr === "object" && addr ? addr.port : o.port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    node,
    guard,
    webhooks,
    gatewayClient: transport.gateway,
    bootstrapped,
    async close() {
      await app.close();
      adminSub.unsubscribe();
      guard.stop();
      await webhooks.stop();
      await node.stop(true);
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
  const host = process.env.EXTERNAL_HOST ? `http://${process.env.EXTERNAL_HOST}` : `http://localhost:${port}`;
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

const isMain = process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname);
if (isMain) {
  const log = createLogger({ service: "zulip-embedded" });
  setRootLogger(log);
  // Tracing first (docs/operations.md "Tracing"); tests start their own SDK.
  startTracing({ service: "zulip-embedded" });
  const srv = await startEmbedded({
    port: env.port(),
    host: env.host(),
    dataDir: env.dataDir(),
    shards: env.shards(),
    bootstrap: bootstrapConfig(),
    generateOwner: true,
    logger: process.env.LOG_REQUESTS === "1",
  });
  const b = srv.bootstrapped;
  if (b?.created) log.info(`Created organization ${b.realmId} and its owner (user ${b.userId}).`);
  // For the person at the terminal, not a log line: shown once, as text.
  if (b?.created && b.generated) process.stdout.write(firstLogin(b, srv.port) + "\n");
  log.info(`Embedded server listening on port ${srv.port} (data in ${env.dataDir()}).`);
  const shutdown = async () => {
    await srv.close();
    await shutdownTracing();
    process.exit(0);
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}
