// Cluster mode node: `npm run start:node`. Hosts the actors of the shards it
// holds leases for; gateways reach it over gRPC, other nodes over NATS.
import { behaviors } from "../actors/index.ts";
import { bootstrap } from "./bootstrap.ts";
import { bootstrapConfig, env } from "./config.ts";
import { Membership } from "./membership.ts";
import { NodeRuntime } from "./node.ts";
import { shardsOwnedBy } from "./placement/rendezvous.ts";
import { createRedisStore } from "./storage/index.ts";
import { NatsActorClient, NatsBus, serveShardSubjects, startGrpcServer } from "./transport/index.ts";

const nodeId = env.nodeId();
const shards = env.shards();
const grpcHost = env.str("GRPC_HOST", "127.0.0.1");

const bus = await NatsBus.connect(env.natsUrl(), `node:${nodeId}`);
const store = await createRedisStore(env.redisUrl());
const outbound = new NatsActorClient(bus.nc);

// eslint-disable-next-line prefer-const
let subjects: ReturnType<typeof serveShardSubjects>;
const node = new NodeRuntime({
  nodeId,
  shards,
  store,
  behaviors,
  outbound,
  bus,
  onShardChange: (shard, serving) => (serving ? subjects.add(shard) : subjects.remove(shard)),
});
subjects = serveShardSubjects(bus.nc, (req) => node.handle(req));
const grpc = await startGrpcServer((req) => node.handle(req), env.grpcPort(), "0.0.0.0");

const membership = new Membership(bus, { self: { id: nodeId, grpc: `${grpcHost}:${grpc.port}` } });
const place = () => node.setDesired(shardsOwnedBy(nodeId, membership.owners(), shards));
membership.onChange(place);
membership.start();
node.start();
// Listen for a heartbeat round before taking shards, so a node joining a
// running cluster does not grab shards that belong to others.
await new Promise((r) => setTimeout(r, 1200));
place();
await node.ready(15_000);

try {
  const b = await bootstrap((ref, m, a) => node.call(ref, m, a), bootstrapConfig());
  if (b?.created) console.log(`Created organization ${b.realmId} and its owner (user ${b.userId}).`);
} catch (err) {
  console.error("bootstrap failed (another node may be doing it):", (err as Error).message);
}
console.log(`node ${nodeId} ready (gRPC ${grpcHost}:${grpc.port}, ${node.servingShards().length} shards)`);

let leaving = false;
async function leave(): Promise<void> {
  if (leaving) return;
  leaving = true;
  // Drain: announce, stop taking turns, flush, release leases, go.
  membership.setDraining(true);
  await node.stop(true);
  await membership.leave();
  subjects.close();
  await grpc.close();
  await bus.close();
  await store.close();
  process.exit(0);
}
process.on("SIGTERM", () => void leave());
process.on("SIGINT", () => void leave());
