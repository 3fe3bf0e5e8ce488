// Cluster mode gateway: `npm run start:gateway`. Stateless: finds nodes
// through NATS heartbeats and sends each request to the node that owns the
// actor's shard.
import { env, grpcTls, natsSecurity } from "../cluster/config.ts";
import { shutdownTracing, startTracing } from "../cluster/tracing.ts";
import { Membership } from "../cluster/membership.ts";
import { ClusterClient, NatsBus } from "../cluster/transport/index.ts";
import { buildApp } from "./index.ts";
import { routes } from "./routes/index.ts";
import { createLogger, setRootLogger } from "../cluster/log.ts";

const log = createLogger({ service: "zulip-gateway", gateway: `gateway:${process.pid}` });
setRootLogger(log);
// Tracing first (docs/operations.md "Tracing").
startTracing({ service: "zulip-gateway", instance: `gateway:${process.pid}` });
const shards = env.shards();
const tls = grpcTls();
const bus = await NatsBus.connect(env.natsUrl(), `gateway:${process.pid}`, natsSecurity());
const membership = new Membership(bus, {});
membership.start();
const client = new ClusterClient(membership, shards, { tls });
const app = await buildApp({
  client,
  bus,
  shards,
  routes,
  logger: process.env.LOG_REQUESTS === "1",
  view: membership,
});
// A deep accept queue (Node's default is 511; the kernel caps it at
// net.core.somaxconn): thousands of long-poll clients reconnect at once after
// a restart, and a SYN dropped on a full queue is retried only after 1, 3, 7 s.
await app.listen({ port: env.port(), host: env.host(), backlog: 4096 });
const addr = app.server.address();
log.info(`gateway listening on port ${typeof addr === "object" && addr ? addr.port : env.port()}`);

let closing = false;
async function close(): Promise<void> {
  if (closing) return;
  closing = true;
  await app.close();
  membership.stop();
  client.close?.();
  await bus.close();
  await shutdownTracing();
  process.exit(0);
}
process.on("SIGTERM", () => void close());
process.on("SIGINT", () => void close());
