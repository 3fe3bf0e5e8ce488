// Overload protection at a node's door.
//
// Two bounds keep a node's memory from growing without limit:
// - Each actor's mailbox holds at most ACTOR_MAILBOX_MAX waiting turns
//   (catalog.ts refuses the next one with UnavailableError).
// - The node's memory budget, NODE_MEMORY_BUDGET_MB, is compared with the V8
//   heap in use (where activations, mailboxes and event queues live),
//   sampled every SAMPLE_MS. While the heap is past the budget the node
//   refuses requests that arrive from its transports (gateways over gRPC,
//   other nodes over NATS) with UnavailableError; work already inside the
//   node (turns in progress, their calls to local actors, timers, event
//   delivery between nodes) goes on so it can finish and free memory.
// The gateway turns UnavailableError into HTTP 503 with Retry-After and
// Zulip's error envelope (actors/errors.ts errors.unavailable).

import { UnavailableError } from "./runtime-errors.ts";
import { env } from "./config.ts";
import { isRouterRef } from "./event-router.ts";
import { errorToResponse } from "./responses.ts";
import { metrics } from "./metrics.ts";
import type { ActorRequest, ActorResponse, RequestHandler } from "./transport/contract.ts";
import { componentLogger } from "./log.ts";

export const SAMPLE_MS = 200;
/** Seconds a refused client is told to wait (Retry-After). */
export const RETRY_AFTER_S = 1;

/** Overload settings from the environment (docs/operations.md "Overload"). */
export function overloadConfig(): { mailboxLimit: number | undefined; memoryBudgetMb: number } {
  const mailbox = env.int("ACTOR_MAILBOX_MAX", 0);
  return {
    mailboxLimit: mailbox > 0 ? mailbox : undefined,
    memoryBudgetMb: env.int("NODE_MEMORY_BUDGET_MB", 0),
  };
}

export class MemoryGuard {
  /** 0: no budget. Writable so an operator (or a test) can change it at run time. */
  budgetBytes: number;
  private over = false;
  private timer: NodeJS.Timeout | null = null;
  heapUsed = 0;

  constructor(
    readonly nodeId: string,
    budgetMb: number,
    private readonly sample: () => number = () => process.memoryUsage().heapUsed,
  ) {
    this.budgetBytes = Math.max(0, budgetMb) * 1024 * 1024;
  }

  start(): void {
    if (this.timer) return;
    this.check();
    this.timer = setInterval(() => this.check(), SAMPLE_MS);
    this.timer.unref();
    metrics.attachGuard(this);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    metrics.detachGuard(this);
  }

  /** Sample now (the timer does it every SAMPLE_MS). */
  check(): boolean {
    this.heapUsed = this.sample();
    const was = this.over;
    this.over = this.budgetBytes > 0 && this.heapUsed > this.budgetBytes;
    if (this.over && !was)
      componentLogger("overload").warn(
        { node: this.nodeId, heapMb: mb(this.heapUsed), budgetMb: mb(this.budgetBytes) },
        "heap past the budget; refusing new requests",
      );
    else if (!this.over && was)
      componentLogger("overload").warn({ node: this.nodeId }, "heap back under budget; accepting requests");
    return this.over;
  }

  overloaded(): boolean {
    return this.over;
  }

  /** Wrap the node's request handler for its transports. */
  admit(handle: RequestHandler): RequestHandler {
    return (req: ActorRequest): Promise<ActorResponse> => {
      if (this.over && !isRouterRef(req.ref)) {
        metrics.rejected("memory");
        return Promise.resolve(
          errorToResponse(
            new UnavailableError(`node ${this.nodeId} is past its memory budget`, RETRY_AFTER_S),
          ),
        );
      }
      return handle(req);
    };
  }
}

function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}
