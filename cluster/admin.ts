// The node side of the admin API, and how a gateway asks every node at once.
//
// Each node subscribes to ADMIN_SUBJECT on the bus. A gateway publishes one
// request {id, reply, op, args} there and collects the answers that the nodes
// publish on its reply subject (one per node, JSON: the admin path is not a
// hot path), until every live node answered or the timeout passed. Ops:
//   report {top, realm}   this node's shards (with lease epochs), actor and
//                         queue counts, mailbox depths, memory, deepest mailboxes
//   where {kind, realm, key}   whether this node serves the actor's shard and
//                         holds an activation of it
// The same functions back a node's own admin HTTP port (gateway/admin/).

import { randomBytes } from "node:crypto";
import type { ActorRef, Kind } from "../actors/types.ts";
import { shardOf } from "./addressing.ts";
import { summarize, type ActivationView, type MailboxEntry } from "./metrics.ts";
import type { MemoryGuard } from "./overload.ts";
import type { Bus, NodeInfo, Subscription } from "./transport/contract.ts";

export const ADMIN_SUBJECT = "admin.req";
const REPLY_PREFIX = "admin.rep.";
export const ADMIN_ASK_TIMEOUT_MS = 1500;
/** Most deepest-mailbox entries a node returns. */
export const MAX_TOP = 100;

/** What the admin side needs from a NodeRuntime. */
export interface AdminNode {
  readonly nodeId: string;
  readonly shards: number;
  readonly catalog: { activations(): Iterable<ActivationView>; has(ref: ActorRef): boolean };
  servingShards(): number[];
  shardEpoch(shard: number): number | null;
}

export interface NodeReport {
  node: string;
  pid: number;
  uptime_s: number;
  shards: { shard: number; epoch: number }[];
  actors: number;
  actors_by_kind: Record<string, number>;
  queue_actors: number;
  event_queues: number;
  parked_polls: number;
  mailbox_queued: number;
  mailbox_max: number;
  journal_lag: number;
  journal_lag_max: number;
  heap_used_bytes: number;
  rss_bytes: number;
  memory_budget_bytes: number;
  overloaded: boolean;
  deepest: (MailboxEntry & { node: string })[];
}

export interface WhereAnswer {
  node: string;
  shard: number;
  serving: boolean;
  epoch: number | null;
  active: boolean;
  mailbox_depth: number;
}

export function nodeReport(
  node: AdminNode,
  guard: MemoryGuard | null,
  top = 10,
  realm: number | null = null,
): NodeReport {
  const s = summarize(node.catalog.activations(), Math.max(0, Math.min(MAX_TOP, top)), realm);
  const mem = process.memoryUsage();
  const shards = node
    .servingShards()
    .sort((a, b) => a - b)
    .map((shard) => ({ shard, epoch: node.shardEpoch(shard) ?? 0 }));
  return {
    node: node.nodeId,
    pid: process.pid,
    uptime_s: Math.round(process.uptime()),
    shards,
    actors: s.actors,
    actors_by_kind: s.byKind,
    queue_actors: s.byKind.queue ?? 0,
    event_queues: s.eventQueues,
    parked_polls: s.parkedPolls,
    mailbox_queued: s.mailboxQueued,
    mailbox_max: s.mailboxMax,
    journal_lag: s.journalLag,
    journal_lag_max: s.journalLagMax,
    heap_used_bytes: mem.heapUsed,
    rss_bytes: mem.rss,
    memory_budget_bytes: guard?.budgetBytes ?? 0,
    overloaded: guard?.overloaded() ?? false,
    deepest: s.deepest.map((d) => ({ node: node.nodeId, ...d })),
  };
}

export function whereAnswer(node: AdminNode, ref: ActorRef): WhereAnswer {
  const shard = shardOf(ref, node.shards);
  const epoch = node.shardEpoch(shard);
  let depth = 0;
  let active = false;
  if (node.catalog.has(ref)) {
    active = true;
    for (const a of node.catalog.activations()) {
      if (a.ref.kind === ref.kind && a.ref.realm === ref.realm && a.ref.key === ref.key) {
        depth = a.mailbox.length;
        break;
      }
    }
  }
  return { node: node.nodeId, shard, serving: epoch !== null, epoch, active, mailbox_depth: depth };
}

/** Build the ref of an actor from the admin API's (kind, realm, key). */
export function adminRef(kind: Kind, realm: number, key: string): ActorRef {
  // A queue actor is sharded by its owner's user id, which is its key.
  return kind === "queue" ? { kind, realm, key, shardKey: key } : { kind, realm, key };
}

// ---- Bus protocol ---------------------------------------------------------------------

interface AdminRequest {
  id: string;
  reply: string;
  op: "report" | "where";
  args: Record<string, unknown>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Answer admin requests for this node on the bus. */
export function serveNodeAdmin(bus: Bus, node: AdminNode, guard: MemoryGuard | null): Subscription {
  return bus.subscribe(ADMIN_SUBJECT, (data) => {
    let req: AdminRequest;
    try {
      req = JSON.parse(dec.decode(data)) as AdminRequest;
    } catch {
      return;
    }
    if (typeof req.reply !== "string" || !req.reply.startsWith(REPLY_PREFIX)) return;
    let answer: unknown;
    const a = req.args ?? {};
    if (req.op === "report") {
      answer = nodeReport(
        node,
        guard,
        typeof a.top === "number" ? a.top : 10,
        typeof a.realm === "number" ? a.realm : null,
      );
    } else if (req.op === "where") {
      answer = whereAnswer(node, adminRef(a.kind as Kind, Number(a.realm), String(a.key)));
    } else {
      return;
    }
    bus.publish(req.reply, enc.encode(JSON.stringify({ id: req.id, node: node.nodeId, data: answer })));
  });
}

/** Which nodes a gateway expects answers from. Membership fits; embedded mode passes its one node. */
export interface ClusterView {
  liveNodes(): NodeInfo[];
  owners(): string[];
}

export function singleNodeView(nodeId: string): ClusterView {
  const owners = [nodeId];
  return {
    liveNodes: () => [{ id: nodeId, grpc: "", draining: false, lastSeen: Date.now() }],
    owners: () => owners,
  };
}

interface Pending {
  expect: Set<string> | null;
  got: Map<string, unknown>;
  done: () => void;
}

/** The gateway's side: ask every node, collect the answers. */
export class AdminBusClient {
  private readonly inbox = REPLY_PREFIX + randomBytes(8).toString("hex");
  private readonly pending = new Map<string, Pending>();
  private readonly sub: Subscription;
  private seq = 0;

  constructor(private readonly bus: Bus) {
    this.sub = bus.subscribe(this.inbox, (data) => this.onReply(data));
  }

  close(): void {
    this.sub.unsubscribe();
    for (const p of this.pending.values()) p.done();
  }

  /**
   * Publish one request to every node; resolve with the answers by node id
   * once every node of `expect` answered or after `timeoutMs` (`expect`
   * null: nodes unknown, collect until the timeout; empty: no node is live).
   */
  ask<T>(
    op: AdminRequest["op"],
    args: Record<string, unknown>,
    expect: string[] | null,
    timeoutMs = ADMIN_ASK_TIMEOUT_MS,
  ): Promise<Map<string, T>> {
    if (expect !== null && expect.length === 0) return Promise.resolve(new Map());
    const id = String(++this.seq);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      const p: Pending = {
        expect: expect === null ? null : new Set(expect),
        got: new Map(),
        done: () => {
          if (timer) clearTimeout(timer);
          this.pending.delete(id);
          resolve(p.got as Map<string, T>);
        },
      };
      this.pending.set(id, p);
      timer = setTimeout(p.done, timeoutMs);
      const req: AdminRequest = { id, reply: this.inbox, op, args };
      this.bus.publish(ADMIN_SUBJECT, enc.encode(JSON.stringify(req)));
    });
  }

  private onReply(data: Uint8Array): void {
    let msg: { id: string; node: string; data: unknown };
    try {
      msg = JSON.parse(dec.decode(data)) as typeof msg;
    } catch {
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    p.got.set(msg.node, msg.data);
    if (p.expect !== null && [...p.expect].every((n) => p.got.has(n))) p.done();
  }
}
