// The transport module's door: import transports from here, not from the files.
export type {
  ActorClient,
  ActorRequest,
  ActorResponse,
  Bus,
  NodeInfo,
  RequestHandler,
  Subscription,
} from "./contract.ts";
export {
  createInProcessTransport,
  MemoryBus,
  subjectMatches,
  type InProcessTransport,
} from "./in-process.ts";
export { connectNats, NatsBus, natsServers, openNatsConnections } from "./nats-bus.ts";
export { startGrpcServer, ACTOR_SERVICE, type GrpcServerHandle } from "./grpc-server.ts";
export { GrpcNodeClient, type GrpcNodeClientOptions } from "./grpc-client.ts";
export { ClusterClient } from "./cluster-client.ts";
export {
  NatsActorClient,
  serveShardSubjects,
  type NatsActorClientOptions,
  type ShardSubjects,
} from "./nats-actor.ts";
export { unavailable, internalError, CONNECTION_LOST } from "./retry.ts";
export {
  Membership,
  HEARTBEAT_MS,
  DEAD_AFTER_MS,
  SUBJECT_HEARTBEAT,
  SUBJECT_HELLO,
  SUBJECT_LEAVE,
  type MembershipOptions,
} from "../membership.ts";
