// Embedded mode: gateway and node in one process. Requests call the served
// handler directly (no serialization); the bus is an in-memory subject
// pub/sub with NATS wildcard semantics, delivered asynchronously.
import type {
  ActorClient,
  ActorRequest,
  ActorResponse,
  Bus,
  RequestHandler,
  Subscription,
} from "./contract.ts";
import { BACKOFF_MIN_MS, delay, internalError, nextBackoff, replyWaitUntil, unavailable } from "./retry.ts";
import { componentLogger } from "../log.ts";

export interface InProcessTransport {
  /** Internal: the node's outbound client, tools, tests. */
  client: ActorClient;
  /**
   * The embedded gateway's client: its requests reach the node as
   * "external" (ActorRequest.origin), as a gateway's do over gRPC.
   */
  gateway: ActorClient;
  bus: Bus;
  serve(handler: RequestHandler): void;
  /**
   * The process's node has stopped for good: no other node will take its
   * shards, so a request answered "moved" is not retried (a sweep left
   * running would otherwise retry until its deadline and hold the process).
   */
  close(): void;
}

export function createInProcessTransport(): InProcessTransport {
  const client = new InProcessClient();
  return {
    client,
    // Marked in place: the gateway makes a new request object for every call.
    gateway: {
      request: (req) => {
        req.origin = "external";
        return client.request(req);
      },
    },
    bus: new MemoryBus(),
    serve(handler: RequestHandler) {
      client.handler = handler;
    },
    close() {
      client.closed = true;
    },
  };
}

// ---- Requests ----------------------------------------------------------------

interface Pending {
  /** deadline + grace: a handler that was called is awaited until then. */
  until: number;
  resolve: (r: ActorResponse) => void;
  done: boolean;
}

const SWEEP_MS = 25;

class InProcessClient implements ActorClient {
  handler: RequestHandler | null = null;
  closed = false;
  private readonly pending = new Set<Pending>();
  private sweeper: NodeJS.Timeout | null = null;

  async request(req: ActorRequest): Promise<ActorResponse> {
    let backoff = BACKOFF_MIN_MS;
    for (;;) {
      if (Date.now() >= req.deadline) return unavailable();
      const handler = this.handler;
      if (handler !== null) {
        const res = await this.once(handler, req);
        if (res.ok || res.kind !== "moved") return res;
      }
      if (this.closed) return unavailable();
      const left = req.deadline - Date.now();
      if (left <= 0) return unavailable();
      await delay(Math.min(backoff, left));
      backoff = nextBackoff(backoff);
    }
  }

  /**
   * One delivery, cut short by the shared sweep at deadline + grace (not at
   * the deadline: the turn may have started just before it, see retry.ts).
   */
  private once(handler: RequestHandler, req: ActorRequest): Promise<ActorResponse> {
    return new Promise<ActorResponse>((resolve) => {
      const p: Pending = { until: replyWaitUntil(req), resolve, done: false };
      this.pending.add(p);
      if (this.sweeper === null) this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
      settle(this, p, handler, req);
    });
  }

  finish(p: Pending, res: ActorResponse): void {
    if (p.done) return;
    p.done = true;
    this.pending.delete(p);
    this.stopIfIdle();
    p.resolve(res);
  }

  private sweep(): void {
    const now = Date.now();
    for (const p of this.pending) if (now >= p.until) this.finish(p, unavailable());
    this.stopIfIdle();
  }

  private stopIfIdle(): void {
    if (this.pending.size === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}

async function settle(
  c: InProcessClient,
  p: Pending,
  handler: RequestHandler,
  req: ActorRequest,
): Promise<void> {
  let res: ActorResponse;
  try {
    res = await handler(req);
  } catch {
    res = internalError();
  }
  c.finish(p, res);
}

// ---- Bus -----------------------------------------------------------------------

interface MemSub {
  tokens: string[] | null; // null: exact subject
  subject: string;
  onMessage: (data: Uint8Array, subject: string) => void;
  active: boolean;
}

/** NATS subject matching: `*` is one token, `>` (last) is one or more tokens. */
export function subjectMatches(pattern: string, subject: string): boolean {
  return tokensMatch(pattern.split("."), subject.split("."));
}

function tokensMatch(p: string[], s: string[]): boolean {
  for (let i = 0; i < p.length; i++) {
    const t = p[i];
    if (t === ">") return s.length > i;
    if (i >= s.length) return false;
    if (t !== "*" && t !== s[i]) return false;
  }
  return p.length === s.length;
}

export class MemoryBus implements Bus {
  private readonly exact = new Map<string, Set<MemSub>>();
  private readonly wild = new Set<MemSub>();

  publish(subject: string, data: Uint8Array): void {
    const targets: MemSub[] = [];
    const ex = this.exact.get(subject);
    if (ex) for (const s of ex) targets.push(s);
    if (this.wild.size) {
      const toks = subject.split(".");
      for (const s of this.wild) if (tokensMatch(s.tokens as string[], toks)) targets.push(s);
    }
    if (targets.length === 0) return;
    queueMicrotask(() => {
      for (const s of targets) {
        if (!s.active) continue;
        try {
          s.onMessage(data, subject);
        } catch (err) {
          // One subscriber's bug must not starve the others (NATS behaves the same).
          componentLogger("bus").error({ err, subject: s.subject }, "bus subscriber threw");
        }
      }
    });
  }

  subscribe(subject: string, onMessage: (data: Uint8Array, subject: string) => void): Subscription {
    const wildcard = subject.split(".").some((t) => t === "*" || t === ">");
    const sub: MemSub = { tokens: wildcard ? subject.split(".") : null, subject, onMessage, active: true };
    if (wildcard) this.wild.add(sub);
    else {
      let set = this.exact.get(subject);
      if (!set) this.exact.set(subject, (set = new Set()));
      set.add(sub);
    }
    return {
      unsubscribe: () => {
        if (!sub.active) return;
        sub.active = false;
        if (wildcard) this.wild.delete(sub);
        else {
          const set = this.exact.get(subject);
          set?.delete(sub);
          if (set && set.size === 0) this.exact.delete(subject);
        }
      },
    };
  }

  /** Live subscriptions (for leak checks). */
  size(): number {
    let n = this.wild.size;
    for (const s of this.exact.values()) n += s.size;
    return n;
  }
}
