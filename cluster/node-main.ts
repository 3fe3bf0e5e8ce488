// Cluster mode node: `npm run start:node`. Hosts the actors of the shards it
// holds leases for; gateways reach it over gRPC, other nodes over NATS.
import { behaviors } from "../actors/index.ts";
import { startNodeAdminServer } from "../gateway/admin/node-server.ts";
import { serveNodeAdmin } from "./admin.ts";
import { bootstrap } from "./bootstrap.ts";
import { bootstrapConfig, env, grpcTls, natsSecurity, redisTls } from "./config.ts";
import { Membership } from "./membership.ts";
import { NodeRuntime } from "./node.ts";
import { MemoryGuard, overloadConfig } from "./overload.ts";
import { shardsOwnedBy } from "./placement/rendezvous.ts";
import { createRedisClusterStore, createRedisStore } from "./storage/index.ts";
import { shutdownTracing, startTracing, tracedStore } from "./tracing.ts";
import { NatsActorClient, NatsBus, serveShardSubjects, startGrpcServer } from "./transport/index.ts";
import { startWebhookWorker } from "../webhook/worker.ts";
import { createLogger, setRootLogger } from "./log.ts";

const nodeId = env.nodeId();
const log = createLogger({ service: "zulip-node", node: nodeId });
setRootLogger(log);
// Tracing first (docs/operations.md "Tracing").
startTracing({ service: "zulip-node", instance: nodeId });
const shards = env.shards();
const grpcHost = env.str("GRPC_HOST", "127.0.0.1");
// Every security setting is read (and checked) before anything connects, so a
// half-configured node exits with the reason instead of running in the clear.
const tls = grpcTls();
const nats = natsSecurity();
const redis = { tls: redisTls() };

const bus = await NatsBus.connect(env.natsUrl(), `node:${nodeId}`, nats);
// REDIS_CLUSTER_URLS (seed nodes of a Redis Cluster) wins over REDIS_URL.
const redisCluster = env.redisClusterUrls();
const store = tracedStore(
  redisCluster.length
    ? await createRedisClusterStore(redisCluster, redis)
    : await createRedisStore(env.redisUrl(), redis),
  "redis",
);
const outbound = new NatsActorClient(bus.nc);

// eslint-disable-next-line prefer-const
let subjects: ReturnType<typeof serveShardSubjects>;
const overload = overloadConfig();
const node = new NodeRuntime({
  mailboxLimit: overload.mailboxLimit,
  nodeId,
  shards,
  store,
  behaviors,
  outbound,
  bus,
  onShardChange: (shard, serving) => (serving ? subjects.add(shard) : subjects.remove(shard)),
});
// Requests from gateways and other nodes pass the memory budget (docs/operations.md "Overload").
const guard = new MemoryGuard(nodeId, overload.memoryBudgetMb);
const admitted = guard.admit((req) => node.handle(req));
subjects = serveShardSubjects(bus.nc, admitted);
// GRPC_BIND, not GRPC_HOST: a node behind NAT announces one address and listens on another.
const grpc = await startGrpcServer(admitted, env.grpcPort(), env.grpcBind(), tls);
guard.start();
// Admin: answers gateways over the bus; /metrics and this node's view on ADMIN_PORT when set.
const adminSub = serveNodeAdmin(bus, node, guard);
const adminPort = env.int("ADMIN_PORT", 0);
const adminHttp = adminPort
  ? await startNodeAdminServer({
      node,
      guard,
      client: { request: (r) => node.request(r) },
      bus,
      port: adminPort,
    })
  : null;

const membership = new Membership(bus, { self: { id: nodeId, grpc: `${grpcHost}:${grpc.port}` } });
// A joining node first announces itself as draining (it owns nothing yet, so
// gateways and the other nodes leave its future shards where they are) and
// listens for a heartbeat round; then it turns owner: the others hand its
// rendezvous share over (stop taking turns, flush, release) and it acquires.
let joined = false;
const place = () => {
  if (joined) node.setDesired(shardsOwnedBy(nodeId, membership.owners(), shards));
};
membership.setDraining(true);
membership.onChange(place);
membership.start();
node.start();
const webhooks = startWebhookWorker(node);
// Listen for a heartbeat round before taking shards, so a node joining a
// running cluster does not grab shards that belong to others.
await new Promise((r) => setTimeout(r, 1200));
joined = true;
membership.setDraining(false);
place();
await node.ready(15_000);

try {
  const b = await bootstrap((ref, m, a) => node.call(ref, m, a), bootstrapConfig());
  if (b?.created) log.info(`Created organization ${b.realmId} and its owner (user ${b.userId}).`);
} catch (err) {
  log.error({ err: (err as Error).message }, "bootstrap failed (another node may be doing it)");
}
log.info(
  `node ${nodeId} ready (gRPC ${grpcHost}:${grpc.port}${tls ? " TLS" : ""}, ${node.servingShards().length} shards` +
    (adminHttp ? `, admin port ${adminHttp.port})` : ")"),
);

let leaving = false;
async function leave(): Promise<void> {
  if (leaving) return;
  leaving = true;
  // Drain: announce, stop taking turns, flush, release leases, go.
  membership.setDraining(true);
  await webhooks.stop();
  await node.stop(true);
  adminSub.unsubscribe();
  guard.stop();
  await adminHttp?.app.close();
  await membership.leave();
  await subjects.close();
  await grpc.close();
  await bus.close();
  await store.close();
  await shutdownTracing();
  process.exit(0);
}
process.on("SIGTERM", () => void leave());
process.on("SIGINT", () => void leave());
