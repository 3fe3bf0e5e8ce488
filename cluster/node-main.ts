// Cluster mode node: `npm run start:node`. Hosts the actors of the shards it
// holds leases for; gateways reach it over gRPC, other nodes over NATS. The
// wiring is in compose/cluster.ts.
// First: stack traces name the TypeScript sources (see there).
import "./source-maps.ts";
import { clusterNodeOptions, startClusterNode } from "./compose/cluster.ts";
import { closeOnSignal, logBootstrapped, startProcess } from "./compose/process.ts";

const options = clusterNodeOptions();
const { nodeId } = options;
const log = startProcess("zulip-node", { node: nodeId }, nodeId);
const srv = await startClusterNode(options);
logBootstrapped(log, srv.bootstrapped);
log.info(
  `node ${nodeId} ready (gRPC ${srv.grpcAddress}${options.grpcTls ? " TLS" : ""}, ${srv.node.servingShards().length} shards` +
    (srv.adminPort !== null ? `, admin port ${srv.adminPort})` : ")"),
);
closeOnSignal(() => srv.close());
