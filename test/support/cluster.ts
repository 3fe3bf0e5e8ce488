// A real cluster for integration tests: nats-server, redis-server (AOF), N
// node processes and a gateway process, each stopped by pid afterwards.
import { after, before } from "node:test";
import type { ActorRef } from "../../actors/types.ts";
import { startProc, type Proc } from "../../bench/procs.ts";
import { shardOf } from "../../cluster/addressing.ts";
import { ownerOf } from "../../cluster/placement/rendezvous.ts";
import { freePort, onFreePort, startNats, startRedis, type Service } from "./services.ts";
import { makeApi, type Api, type Creds } from "./embedded.ts";

export interface TestCluster {
  nats: Service;
  redis: Service;
  nodes: Map<string, Proc & { grpcPort: number; adminPort?: number }>;
  gateway: Proc;
  baseUrl: string;
  owner: Creds & { password: string };
  api: Api;
  shards: number;
  startNode(id: string): Promise<void>;
  stop(): Promise<void>;
}

export const OWNER = { email: "owner@example.com", password: "owner-password-1" };

export interface ClusterOptions {
  nodes?: string[];
  shards?: number;
  /** Extra environment for every node and the gateway (e.g. ADMIN_TOKEN). */
  env?: Record<string, string>;
  /** Give each node an ADMIN_PORT (its /metrics and admin view). */
  adminPorts?: boolean;
  /** Extra environment per node id (e.g. a test-only crash point on one node). */
  nodeEnv?: Record<string, Record<string, string>>;
  /** Extra environment for every node (after `env`), e.g. the node's NATS user and certificates. */
  nodesEnv?: Record<string, string>;
  /** Extra environment for the gateway (after `env`). */
  gatewayEnv?: Record<string, string>;
  /** Servers started by the caller (e.g. with TLS and passwords); stopped with the cluster. */
  nats?: Service;
  redis?: Service;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<TestCluster> {
  const shards = opts.shards ?? 32;
  const nodes = new Map<string, Proc & { grpcPort: number; adminPort?: number }>();
  const services: Service[] = [opts.nats, opts.redis].filter((s) => s !== undefined);
  let gateway: Proc | undefined;
  // The gateway first, so it drains while every node still answers.
  const stopAll = async () => {
    await gateway?.stop();
    for (const n of nodes.values()) {
      n.child.kill("SIGCONT");
      await n.stop("SIGKILL");
    }
    await Promise.all(services.map((s) => s.stop()));
  };
  /** Every start settled, then the first failure thrown (after stopping all that did start). */
  const all = async <T extends unknown[]>(starts: { [K in keyof T]: Promise<T[K]> }): Promise<T> => {
    const settled = await Promise.allSettled(starts);
    const failed = settled.find((r) => r.status === "rejected");
    if (failed) {
      await stopAll();
      throw failed.reason;
    }
    return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as T;
  };
  const service = async (given: Service | undefined, start: () => Promise<Service>) => {
    if (given) return given;
    const s = await start();
    services.push(s);
    return s;
  };
  const [nats, redis] = await all<[Service, Service]>([
    service(opts.nats, startNats),
    service(opts.redis, startRedis),
  ]);
  const common = {
    NATS_URL: nats.url,
    REDIS_URL: redis.url,
    SHARDS: String(shards),
    OWNER_EMAIL: OWNER.email,
    OWNER_PASSWORD: OWNER.password,
    OWNER_NAME: "Olivia Owner",
    REALM_NAME: "Cluster Org",
    // One organization, reached at 127.0.0.1 (SINGLE_ORGANIZATION, cluster/config.ts).
    SINGLE_ORGANIZATION: "1",
    ...opts.env,
  };
  const startNode = async (id: string) => {
    const known = nodes.get(id);
    const launch = async (grpcPort: number) => {
      const adminPort = opts.adminPorts ? (known?.adminPort ?? (await freePort())) : undefined;
      const p = await startProc(
        id,
        "cluster/node-main.ts",
        {
          ...common,
          ...opts.nodesEnv,
          ...opts.nodeEnv?.[id],
          NODE_ID: id,
          GRPC_PORT: String(grpcPort),
          ...(adminPort !== undefined ? { ADMIN_PORT: String(adminPort) } : {}),
        },
        /node \S+ ready/,
      );
      nodes.set(id, adminPort !== undefined ? { ...p, grpcPort, adminPort } : { ...p, grpcPort });
    };
    // A restart keeps its ports; a first start takes other ports when
    // another test's process took the chosen ones before the node bound them.
    if (known) await launch(known.grpcPort);
    else await onFreePort(launch);
  };
  const [first, ...rest] = opts.nodes ?? ["n1", "n2"];
  // The first node alone bootstraps the store. Then the others, one after the
  // other as they would join a running cluster, and meanwhile the gateway,
  // which needs nothing from them to start: two cores overlap the start-ups.
  await all([startNode(first!)]);
  let port = 0;
  await all([
    (async () => {
      for (const id of rest) await startNode(id);
    })(),
    (async () => {
      ({ port, server: gateway } = await onFreePort((p) =>
        startProc(
          "gateway",
          "gateway/gateway-main.ts",
          // Tests send far more than Zulip's 200 requests a minute; test/rate-limit.test.ts covers the limit.
          { ...common, RATE_LIMIT_PER_MINUTE: "0", ...opts.gatewayEnv, PORT: String(p) },
          /listening on port/,
        ),
      ));
    })(),
  ]);
  const baseUrl = `http://127.0.0.1:${port}`;

  // The owner's API key, once the gateway sees the nodes.
  let apiKey = "";
  for (let i = 0; i < 100 && !apiKey; i++) {
    const res = await makeApi(baseUrl, null)(
      "POST",
      "/fetch_api_key",
      { username: OWNER.email, password: OWNER.password },
      null,
    );
    if (res.status === 200) apiKey = res.body.api_key;
    else await new Promise((r) => setTimeout(r, 100));
  }
  if (!apiKey) {
    await stopAll();
    throw new Error("cluster never answered fetch_api_key");
  }
  const owner = { ...OWNER, apiKey };
  return {
    nats,
    redis,
    nodes,
    gateway: gateway!,
    baseUrl,
    owner,
    api: makeApi(baseUrl, owner),
    shards,
    startNode,
    stop: stopAll,
  };
}

/**
 * A cluster for the enclosing suite (usually a describe skipped without the
 * binaries: `{ skip: requireBinaries("nats-server", "redis-server") }`),
 * started in before() and stopped in after(); the handle forwards to it.
 */
export function useCluster(opts: ClusterOptions | (() => ClusterOptions) = {}): TestCluster {
  let c: TestCluster | undefined;
  let starting: Promise<TestCluster> | undefined;
  before(async () => {
    starting = startCluster(typeof opts === "function" ? opts() : opts);
    c = await starting;
  });
  after(async () => {
    await c?.stop();
  });
  // Node 20 runs a file's top-level before() hooks concurrently: the API
  // waits for the start, the fields are there once it is done.
  const live = (): TestCluster => {
    if (!c) throw new Error("the cluster starts in before(); until it is up, only its API can be called");
    return c;
  };
  const started = async (): Promise<TestCluster> => {
    if (!starting) throw new Error("the cluster starts in before()");
    return c ?? (await starting);
  };
  return {
    get nats() {
      return live().nats;
    },
    get redis() {
      return live().redis;
    },
    get nodes() {
      return live().nodes;
    },
    get gateway() {
      return live().gateway;
    },
    get baseUrl() {
      return live().baseUrl;
    },
    get owner() {
      return live().owner;
    },
    get shards() {
      return live().shards;
    },
    api: async (...a) => (await started()).api(...a),
    startNode: (id) => live().startNode(id),
    stop: () => live().stop(),
  };
}

/** The node that owns this actor's shard, among `nodes` (by default every node the cluster started). */
export function nodeOf(
  c: Pick<TestCluster, "shards" | "nodes">,
  ref: ActorRef,
  nodes = [...c.nodes.keys()],
): string {
  return ownerOf(shardOf(ref, c.shards), nodes)!;
}
