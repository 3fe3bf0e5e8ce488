// Cluster mode: nodes (Redis store, NATS between nodes, gRPC from gateways)
// and stateless gateways. Loads the Redis, gRPC and NATS clients: embedded
// mode never imports this module.
import { typedCall } from "../../actors/protocol.ts";
import { startNodeAdminServer } from "../../gateway/admin/node-server.ts";
import { buildApp } from "../../gateway/index.ts";
import { uploadStorageFromEnv } from "../upload-storage.ts";
import { routes } from "../../gateway/routes/index.ts";
import { shardOf } from "../addressing.ts";
import { serveNodeAdmin } from "../admin.ts";
import { bootstrap, type BootstrapResult } from "../bootstrap.ts";
import {
  bootstrapConfig,
  env,
  grpcTls,
  natsSecurity,
  redisTls,
  type BootstrapConfig,
  type GrpcTls,
  type NatsSecurity,
  type RedisTls,
} from "../config.ts";
import { CLUSTER_READERS_PER_ACTIVATION } from "../catalog.ts";
import { rootLogger } from "../log.ts";
import { Membership } from "../membership.ts";
import type { NodeRuntime } from "../node.ts";
import { shardsOwnedBy } from "../placement/rendezvous.ts";
import { responseValue } from "../responses.ts";
import { createRedisClusterStore, createRedisStore } from "../storage/index.ts";
import { tracedStore } from "../tracing.ts";
import {
  ClusterClient,
  NatsActorClient,
  NatsBus,
  serveShardSubjects,
  startGrpcServer,
} from "../transport/index.ts";
import { startNodeWorkers } from "./domain.ts";
import { createGuardedNode, type ActorCall } from "./process.ts";

export interface ClusterNodeOptions {
  nodeId: string;
  shards: number;
  natsUrl: string;
  nats: NatsSecurity;
  /** REDIS_CLUSTER_URLS (seed nodes of a Redis Cluster) wins over REDIS_URL. */
  redisClusterUrls: string[];
  redisUrl: string;
  redisTls: RedisTls | null;
  /** The address other processes reach this node's gRPC server at. */
  grpcHost: string;
  grpcPort: number;
  /** GRPC_BIND, not GRPC_HOST: a node behind NAT announces one address and listens on another. */
  grpcBind: string;
  grpcTls: GrpcTls | null;
  /** /metrics and this node's admin view; 0: none. */
  adminPort: number;
  bootstrap: BootstrapConfig;
}

/**
 * A node's settings from the environment. Every security setting is read
 * (and checked) here, before anything connects, so a half-configured node
 * exits with the reason instead of running in the clear.
 */
export function clusterNodeOptions(): ClusterNodeOptions {
  return {
    nodeId: env.nodeId(),
    shards: env.shards(),
    natsUrl: env.natsUrl(),
    nats: natsSecurity(),
    redisClusterUrls: env.redisClusterUrls(),
    redisUrl: env.redisUrl(),
    redisTls: redisTls(),
    grpcHost: env.str("GRPC_HOST", "127.0.0.1"),
    grpcPort: env.grpcPort(),
    grpcBind: env.grpcBind(),
    grpcTls: grpcTls(),
    adminPort: env.int("ADMIN_PORT", 0),
    bootstrap: bootstrapConfig(),
  };
}

export interface ClusterNode {
  node: NodeRuntime;
  /** host:port the node announces for gRPC. */
  grpcAddress: string;
  /** The port of the admin HTTP server, when ADMIN_PORT is set. */
  adminPort: number | null;
  /** Null when the store already held an organization or another node was bootstrapping it. */
  bootstrapped: BootstrapResult | null;
  /** Drain: announce, stop taking turns, flush, release leases, disconnect. */
  close(): Promise<void>;
}

/** Start a node, join the cluster, take its rendezvous share of the shards, bootstrap an empty store. */
export async function startClusterNode(o: ClusterNodeOptions): Promise<ClusterNode> {
  const { nodeId, shards } = o;
  const bus = await NatsBus.connect(o.natsUrl, `node:${nodeId}`, o.nats);
  const redis = { tls: o.redisTls };
  const store = tracedStore(
    o.redisClusterUrls.length
      ? await createRedisClusterStore(o.redisClusterUrls, redis)
      : await createRedisStore(o.redisUrl, redis),
    "redis",
  );
  const outbound = new NatsActorClient(bus.nc);

  // eslint-disable-next-line prefer-const
  let subjects: ReturnType<typeof serveShardSubjects>;
  // Requests from gateways and other nodes pass the memory budget (docs/operations.md "Overload").
  const { node, guard, handler } = createGuardedNode({
    nodeId,
    shards,
    store,
    outbound,
    bus,
    onShardChange: (shard, serving) => (serving ? subjects.add(shard) : subjects.remove(shard)),
    readersPerActivation: CLUSTER_READERS_PER_ACTIVATION,
  });
  subjects = serveShardSubjects(bus.nc, handler);
  const grpc = await startGrpcServer(handler, o.grpcPort, o.grpcBind, o.grpcTls);
  guard.start();
  // Admin: answers gateways over the bus; /metrics and this node's view on ADMIN_PORT when set.
  const adminSub = serveNodeAdmin(bus, node, guard);
  const adminHttp = o.adminPort
    ? await startNodeAdminServer({
        node,
        guard,
        client: { request: (r) => node.request(r) },
        bus,
        port: o.adminPort,
      })
    : null;

  const grpcAddress = `${o.grpcHost}:${grpc.port}`;
  const membership = new Membership(bus, { self: { id: nodeId, grpc: grpcAddress } });
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
  // Export files go to DATA_DIR, which gateways must see too (docs/export.md).
  const workers = startNodeWorkers(node, { dataDir: env.dataDir() });
  // Listen for a heartbeat round before taking shards, so a node joining a
  // running cluster does not grab shards that belong to others.
  await new Promise((r) => setTimeout(r, 1200));
  joined = true;
  membership.setDraining(false);
  place();
  await node.ready(15_000);

  let bootstrapped: BootstrapResult | null = null;
  try {
    bootstrapped = await bootstrap(
      typedCall((ref, m, a) => node.call(ref, m, a)),
      o.bootstrap,
    );
  } catch (err) {
    rootLogger().error({ err: (err as Error).message }, "bootstrap failed (another node may be doing it)");
  }

  return {
    node,
    grpcAddress,
    adminPort: adminHttp?.port ?? null,
    bootstrapped,
    async close() {
      membership.setDraining(true);
      await workers.close();
      adminSub.unsubscribe();
      guard.stop();
      await adminHttp?.app.close();
      await membership.leave();
      await subjects.close();
      await grpc.close();
      await bus.close();
      await store.close();
    },
  };
}

export interface GatewayOptions {
  /** Names the gateway on NATS and in logs and traces. */
  name: string;
  shards: number;
  natsUrl: string;
  nats: NatsSecurity;
  grpcTls: GrpcTls | null;
  port: number;
  host: string;
  logRequests: boolean;
}

export function gatewayOptions(): GatewayOptions {
  return {
    name: `gateway:${process.pid}`,
    shards: env.shards(),
    grpcTls: grpcTls(),
    natsUrl: env.natsUrl(),
    nats: natsSecurity(),
    port: env.port(),
    host: env.host(),
    logRequests: env.str("LOG_REQUESTS") === "1",
  };
}

export interface Gateway {
  port: number;
  close(): Promise<void>;
}

/** A stateless gateway: finds nodes through NATS heartbeats, sends each request to the owner of its shard. */
export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const bus = await NatsBus.connect(o.natsUrl, o.name, o.nats);
  const membership = new Membership(bus, {});
  membership.start();
  const client = new ClusterClient(membership, o.shards, { tls: o.grpcTls });
  const app = await buildApp({
    client,
    bus,
    shards: o.shards,
    routes,
    logger: o.logRequests,
    view: membership,
    uploads: uploadStorageFromEnv(),
  });
  // A deep accept queue (Node's default is 511; the kernel caps it at
  // net.core.somaxconn): thousands of long-poll clients reconnect at once after
  // a restart, and a SYN dropped on a full queue is retried only after 1, 3, 7 s.
  await app.listen({ port: o.port, host: o.host, backlog: 4096 });
  const addr = app.server.address();
  return {
    port: typeof addr === "object" && addr ? addr.port : o.port,
    async close() {
      await app.close();
      membership.stop();
      client.close?.();
      await bus.close();
    },
  };
}

/** Run `fn` against the running cluster's actors over NATS (the management CLI). */
export async function withClusterCaller<T>(fn: (call: ActorCall) => Promise<T>): Promise<T> {
  const bus = await NatsBus.connect(env.natsUrl(), `manage:${process.pid}`, natsSecurity());
  const client = new NatsActorClient(bus.nc);
  const shards = env.shards();
  try {
    return await fn(async (ref, method, args) =>
      responseValue(
        await client.request({
          ref,
          shard: shardOf(ref, shards),
          method,
          args,
          caller: null,
          deadline: Date.now() + 15_000,
        }),
      ),
    );
  } finally {
    await bus.close();
  }
}
