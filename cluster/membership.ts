// Cluster membership over the bus. Nodes announce themselves with Heartbeat
// messages on `cluster.hb`; every process (nodes and gateways) tracks the
// live set. A node silent for DEAD_AFTER_MS is dead; a node that leaves
// gracefully says so on `cluster.leave` and is dropped at once. A process
// that starts publishes `cluster.hello` and every node answers with an
// immediate heartbeat, so a new gateway knows the cluster within one round
// trip instead of one heartbeat period.
//
// All Membership instances of a process share ONE interval timer (heartbeats
// and dead-node sweeps), never a timer per node.
import { pb } from "../proto/codec.ts";
import type { Bus, NodeInfo, Subscription } from "./transport/contract.ts";
import { componentLogger } from "./log.ts";

export const HEARTBEAT_MS = 500;
export const DEAD_AFTER_MS = 2500;

export const SUBJECT_HEARTBEAT = "cluster.hb";
export const SUBJECT_LEAVE = "cluster.leave";
export const SUBJECT_HELLO = "cluster.hello";

export interface MembershipOptions {
  /** Present on nodes: what to announce. Gateways only listen. */
  self?: { id: string; grpc: string };
  heartbeatMs?: number;
  deadAfterMs?: number;
}

interface PbHeartbeat {
  nodeId: string;
  grpc: string;
  draining: boolean;
  startedAt: number;
}

interface Entry extends NodeInfo {
  startedAt: number;
}

export class Membership {
  readonly self: { id: string; grpc: string } | null;
  readonly heartbeatMs: number;
  readonly deadAfterMs: number;
  /** Incremented on every change of the live set or of a node's draining flag. */
  version = 0;

  private readonly nodes = new Map<string, Entry>();
  private readonly listeners = new Set<(nodes: NodeInfo[]) => void>();
  private subs: Subscription[] = [];
  private running = false;
  private draining = false;
  private startedAt = 0;
  private nextBeatAt = 0;
  private beatQueued = false;
  private ownersCache: string[] = [];
  private liveCache: NodeInfo[] | null = null;

  constructor(
    private readonly bus: Bus,
    opts: MembershipOptions = {},
  ) {
    this.self = opts.self ? { id: opts.self.id, grpc: opts.self.grpc } : null;
    this.heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS;
    this.deadAfterMs = opts.deadAfterMs ?? DEAD_AFTER_MS;
    if (this.heartbeatMs <= 0 || this.deadAfterMs <= this.heartbeatMs) {
      throw new Error("Membership: need 0 < heartbeatMs < deadAfterMs");
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.startedAt = Date.now();
    this.subs = [
      this.bus.subscribe(SUBJECT_HEARTBEAT, (d) => this.onHeartbeat(d)),
      this.bus.subscribe(SUBJECT_LEAVE, (d) => this.onLeave(d)),
      this.bus.subscribe(SUBJECT_HELLO, () => this.onHello()),
    ];
    if (this.self) {
      this.nodes.set(this.self.id, {
        id: this.self.id,
        grpc: this.self.grpc,
        draining: this.draining,
        lastSeen: this.startedAt,
        startedAt: this.startedAt,
      });
      this.changed();
      this.beat();
    }
    this.bus.publish(SUBJECT_HELLO, new Uint8Array(0));
    ticker.add(this);
  }

  /** Stop announcing and tracking (no farewell: to others this looks like a crash). */
  stop(): void {
    if (!this.running) return;
    this.running = false;
    ticker.remove(this);
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
  }

  /** Graceful exit: a final draining heartbeat, a `cluster.leave`, then stop. */
  leave(): void {
    if (!this.running) return;
    if (this.self) {
      this.draining = true;
      const msg = this.encodeSelf();
      this.bus.publish(SUBJECT_HEARTBEAT, msg);
      this.bus.publish(SUBJECT_LEAVE, msg);
    }
    this.stop();
  }

  /** Announce (or withdraw) that this node is draining: it stays live but owns no shards. */
  setDraining(draining: boolean): void {
    if (!this.self || this.draining === draining) return;
    this.draining = draining;
    const e = this.nodes.get(this.self.id);
    if (e) {
      e.draining = draining;
      this.changed();
    }
    if (this.running) this.beat();
  }

  isDraining(): boolean {
    return this.draining;
  }

  /** Live nodes sorted by id, draining ones included (with their flag). */
  liveNodes(): NodeInfo[] {
    if (this.liveCache === null) {
      this.liveCache = [...this.nodes.values()]
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .map((e) => ({ id: e.id, grpc: e.grpc, draining: e.draining, lastSeen: e.lastSeen }));
    }
    // lastSeen moves on every heartbeat; copy it fresh.
    return this.liveCache.map((n) => ({ ...n, lastSeen: this.nodes.get(n.id)?.lastSeen ?? n.lastSeen }));
  }

  /**
   * Ids of the nodes eligible to own shards (live, not draining), sorted.
   * The same array is returned until the set changes: compare by identity,
   * never mutate it.
   */
  owners(): string[] {
    return this.ownersCache;
  }

  /** A live node by id. */
  node(id: string): NodeInfo | undefined {
    const e = this.nodes.get(id);
    return e ? { id: e.id, grpc: e.grpc, draining: e.draining, lastSeen: e.lastSeen } : undefined;
  }

  /** gRPC address of a live node, or undefined. */
  grpcOf(id: string): string | undefined {
    return this.nodes.get(id)?.grpc;
  }

  /** Called with the new live set after every change; returns an unsubscribe function. */
  onChange(cb: (nodes: NodeInfo[]) => void): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  /**
   * Resolves once the answers to this process's `cluster.hello` had time to
   * arrive (one heartbeat period after start): from then on the live set is
   * as complete as heartbeats can make it.
   */
  settled(): Promise<void> {
    const wait = this.startedAt + this.heartbeatMs - Date.now();
    return wait > 0 ? new Promise((r) => setTimeout(r, wait)) : Promise.resolve();
  }

  // ---- internals -------------------------------------------------------------

  private encodeSelf(): Uint8Array {
    const self = this.self as { id: string; grpc: string };
    return pb()
      .Heartbeat.encode({
        nodeId: self.id,
        grpc: self.grpc,
        draining: this.draining,
        startedAt: this.startedAt,
      })
      .finish();
  }

  private beat(): void {
    if (!this.self) return;
    const now = Date.now();
    this.nextBeatAt = now + this.heartbeatMs;
    const e = this.nodes.get(this.self.id);
    if (e) e.lastSeen = now;
    this.bus.publish(SUBJECT_HEARTBEAT, this.encodeSelf());
  }

  /** Called by the shared ticker. */
  tick(now: number): void {
    if (!this.running) return;
    if (this.self && now >= this.nextBeatAt) this.beat();
    let changed = false;
    for (const e of this.nodes.values()) {
      if (this.self && e.id === this.self.id) continue;
      if (now - e.lastSeen > this.deadAfterMs) {
        this.nodes.delete(e.id);
        changed = true;
      }
    }
    if (changed) this.changed();
  }

  private decode(data: Uint8Array): PbHeartbeat | null {
    try {
      const hb = pb().Heartbeat.decode(data) as unknown as PbHeartbeat;
      return hb.nodeId ? hb : null;
    } catch {
      return null;
    }
  }

  private onHeartbeat(data: Uint8Array): void {
    if (!this.running) return;
    const hb = this.decode(data);
    // Our own echo carries nothing we do not know, and may be older than a
    // local setDraining: ignore it.
    if (!hb || (this.self && hb.nodeId === this.self.id)) return;
    const now = Date.now();
    const e = this.nodes.get(hb.nodeId);
    if (!e) {
      this.nodes.set(hb.nodeId, {
        id: hb.nodeId,
        grpc: hb.grpc,
        draining: !!hb.draining,
        lastSeen: now,
        startedAt: hb.startedAt,
      });
      this.changed();
      return;
    }
    e.lastSeen = now;
    if (e.grpc !== hb.grpc || e.draining !== !!hb.draining || e.startedAt !== hb.startedAt) {
      e.grpc = hb.grpc;
      e.draining = !!hb.draining;
      e.startedAt = hb.startedAt;
      this.changed();
    }
  }

  private onLeave(data: Uint8Array): void {
    if (!this.running) return;
    const hb = this.decode(data);
    if (!hb || (this.self && hb.nodeId === this.self.id)) return;
    const e = this.nodes.get(hb.nodeId);
    // A leave from an older incarnation must not drop a restarted node.
    if (e && e.startedAt <= hb.startedAt) {
      this.nodes.delete(hb.nodeId);
      this.changed();
    }
  }

  private onHello(): void {
    if (!this.running || !this.self || this.beatQueued) return;
    this.beatQueued = true;
    queueMicrotask(() => {
      this.beatQueued = false;
      if (this.running) this.beat();
    });
  }

  private changed(): void {
    this.version++;
    this.liveCache = null;
    const owners: string[] = [];
    for (const e of this.nodes.values()) if (!e.draining) owners.push(e.id);
    owners.sort();
    const prev = this.ownersCache;
    if (owners.length !== prev.length || owners.some((id, i) => id !== prev[i])) this.ownersCache = owners;
    if (this.listeners.size === 0) return;
    const nodes = this.liveNodes();
    for (const cb of this.listeners) {
      try {
        cb(nodes);
      } catch (err) {
        componentLogger("membership").error({ err }, "membership listener threw");
      }
    }
  }
}

// ---- The shared ticker -------------------------------------------------------------

const TICK_MS = 100;

const ticker = {
  members: new Set<Membership>(),
  timer: null as NodeJS.Timeout | null,
  period: 0,
  add(m: Membership): void {
    this.members.add(m);
    this.reschedule();
  },
  remove(m: Membership): void {
    this.members.delete(m);
    this.reschedule();
  },
  reschedule(): void {
    let period = TICK_MS;
    for (const m of this.members) period = Math.min(period, Math.max(10, Math.floor(m.heartbeatMs / 2)));
    if (this.members.size === 0) {
      if (this.timer) clearInterval(this.timer);
      this.timer = null;
      return;
    }
    if (this.timer && period === this.period) return;
    if (this.timer) clearInterval(this.timer);
    this.period = period;
    this.timer = setInterval(() => {
      const now = Date.now();
      for (const m of this.members) m.tick(now);
    }, period);
    // Membership alone never keeps a process alive.
    this.timer.unref();
  },
};
