// What every process (embedded server, cluster node, gateway, management CLI)
// wires the same way. Embedded mode loads this module: it must not import the
// Redis, gRPC or NATS clients, not even through a folder's index.
import { behaviors } from "../../actors/index.ts";
import type { ActorRef, Obj, Value } from "../../actors/types.ts";
import type { BootstrapResult } from "../bootstrap.ts";
import type { EventRouter } from "../event-router.ts";
import { createLogger, setRootLogger, type Logger } from "../log.ts";
import { NodeRuntime, type NodeOptions } from "../node.ts";
import { MemoryGuard, overloadConfig } from "../overload.ts";
import { shutdownTracing, startTracing } from "../tracing.ts";
import type { RequestHandler } from "../transport/contract.ts";
import { attachDomain } from "./domain.ts";

/**
 * Name the process's logger (every line carries `base`) and start tracing
 * (docs/operations.md "Tracing"): the first thing an entry point does, so the rest logs
 * and traces through them.
 */
export function startProcess(service: string, base: Record<string, unknown> = {}, instance?: string): Logger {
  const log = createLogger({ service, ...base });
  setRootLogger(log);
  startTracing(instance !== undefined ? { service, instance } : { service });
  return log;
}

/** On SIGTERM or SIGINT: close once, flush the traces, exit 0. */
export function closeOnSignal(close: () => Promise<void>): void {
  let closing = false;
  const stop = async () => {
    if (closing) return;
    closing = true;
    await close();
    await shutdownTracing();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
}

export interface DomainNode {
  node: NodeRuntime;
  /** Routes the node's events to the queue actors (cluster/event-router.ts). */
  router: EventRouter;
}

/** A node running the actor behaviours, with the domain's wiring (compose/domain.ts). */
export function createNode(o: Omit<NodeOptions, "behaviors">): DomainNode {
  const node = new NodeRuntime({ ...o, behaviors });
  return { node, router: attachDomain(node).router };
}

export interface GuardedNode extends DomainNode {
  /** The node's memory budget (docs/operations.md "Overload"). */
  guard: MemoryGuard;
  /** The node's request handler behind the guard: what the transports serve. */
  handler: RequestHandler;
}

/** A node (createNode), its mailboxes and memory bounded by the overload settings. */
export function createGuardedNode(o: Omit<NodeOptions, "behaviors" | "mailboxLimit">): GuardedNode {
  const overload = overloadConfig();
  const { node, router } = createNode({ ...o, mailboxLimit: overload.mailboxLimit });
  const guard = new MemoryGuard(o.nodeId, overload.memoryBudgetMb);
  return { node, router, guard, handler: guard.admit((req) => node.handle(req)) };
}

export function allShards(shards: number): number[] {
  return Array.from({ length: shards }, (_, i) => i);
}

/** The line a first start logs once it made the organization (tests wait for it). */
export function logBootstrapped(log: Logger, b: BootstrapResult | null): void {
  if (b?.created) log.info(`Created organization ${b.realmId} and its owner (user ${b.userId}).`);
}

/** One call to an actor, awaited to its value (the management CLI's view of either mode). */
export type ActorCall = (ref: ActorRef, method: string, args: Obj) => Promise<Value>;
