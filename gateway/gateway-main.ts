// Cluster mode gateway: `npm run start:gateway`. Stateless: finds nodes
// through NATS heartbeats and sends each request to the node that owns the
// actor's shard. The wiring is in cluster/compose/cluster.ts.
// First: stack traces name the TypeScript sources (see there).
import "../cluster/source-maps.ts";
import { gatewayOptions, startGateway } from "../cluster/compose/cluster.ts";
import { closeOnSignal, startProcess } from "../cluster/compose/process.ts";

const options = gatewayOptions();
const log = startProcess("zulip-gateway", { gateway: options.name }, options.name);
const gateway = await startGateway(options);
log.info(`gateway listening on port ${gateway.port}`);
closeOnSignal(() => gateway.close());
