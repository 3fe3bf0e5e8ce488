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
import { createLmdbStore } from "./cluster/storage/index.ts";
import { shutdownTracing, startTracing, tracedStore } from "./cluster/tracing.ts";
import { createInProcessTransport } from "./cluster/transport/index.ts";
import { buildApp } from "./gateway/index.ts";
import { routes } from "./gateway/routes/index.ts";
import {
  startWebhookWorker,
  webhookOptionsFromEnv,
  type WebhookWorker,
  type WebhookWorkerOptions,
} from "./webhook/worker.ts";

export interface EmbeddedOptions {
  port: number;
  host: string;
  dataDir: string;
  shards: number;
  bootstrap: BootstrapConfig;
  logger?: boolean;
  /** Outgoing-webhook worker settings over the WEBHOOK_* environment (tests). */
  webhooks?: Partial<WebhookWorkerOptions>;
}

export interface EmbeddedServer {
  url: string;
  port: number;
  node: NodeRuntime;
  /** The node's memory budget (README "Overload"). */
  guard: MemoryGuard;
  /** The outgoing-webhook worker (docs/webhooks.md). */
  webhooks: WebhookWorker;
  bootstrapped: BootstrapResult | null;
  close(): Promise<void>;
}

export async function startEmbedded(o: EmbeddedOptions): Promise<EmbeddedServer> {
  // Read (and checked) before anything opens: a bad OUTGOING_* value stops the start cleanly.
  const webhookOptions = { ...webhookOptionsFromEnv(), ...o.webhooks };
  mkdirSync(o.dataDir, { recursive: true });
  const store = tracedStore(await createLmdbStore(resolve(o.dataDir)), "lmdb");
  const transport = createInProcessTransport();
  const overload = overloadConfig();
  const node = new NodeRuntime({
    mailboxLimit: overload.mailboxLimit,
    nodeId: "embedded",
    // One process owns DATA_DIR (server.pid guards it), so no other node can
    // take a shard: a long lease only spares a busy machine needless
    // self-fencing (a late renewal dropped every actor and re-activated it).
    leaseTtlMs: 30_000,
    renewMs: 5_000,
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
  const bootstrapped = await bootstrap((ref, m, a) => node.call(ref, m, a), o.bootstrap);

  const app = await buildApp({
    client: transport.client,
    bus: transport.bus,
    shards: o.shards,
    routes,
    logger: o.logger ?? false,
    view: singleNodeView("embedded"),
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

const isMain = process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname);
if (isMain) {
  // Tracing first (README "Tracing"); tests start their own SDK.
  startTracing({ service: "zulip-embedded" });
  const srv = await startEmbedded({
    port: env.port(),
    host: env.host(),
    dataDir: env.dataDir(),
    shards: env.shards(),
    bootstrap: bootstrapConfig(),
    logger: process.env.LOG_REQUESTS === "1",
  });
  if (srv.bootstrapped?.created) {
    console.log(
      `Created organization ${srv.bootstrapped.realmId} and its owner (user ${srv.bootstrapped.userId}).`,
    );
  }
  console.log(`Embedded server listening on port ${srv.port} (data in ${env.dataDir()}).`);
  const shutdown = async () => {
    await srv.close();
    await shutdownTracing();
    process.exit(0);
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}
