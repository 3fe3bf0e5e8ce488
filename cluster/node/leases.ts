// Leases and shard ownership: which shards a node serves. A node serves a
// shard only while it holds the shard's lease (renewed every `renewMs`, TTL
// `leaseTtlMs`, epoch-fenced writes: cluster/node.ts); it takes the shards
// placement gives it when their leases are free, hands off the others
// gracefully, and stops at once on a lease it lost.

import { metrics } from "../metrics.ts";
import type { Logger } from "../log.ts";
import type { Store } from "../storage/contract.ts";

type ShardStatus = "acquiring" | "active" | "releasing";

export interface ShardState {
  status: ShardStatus;
  epoch: number;
  /** When the lease was last taken or renewed (ms, local clock). */
  renewedAt: number;
  selfFenced?: boolean;
}

export interface LeaseOptions {
  nodeId: string;
  store: Store;
  log: Logger;
  leaseTtlMs: number;
  renewMs: number;
  /** How often to retry acquiring wanted shards held by someone else. */
  acquireRetryMs: number;
  /** No other node can take a shard (NodeOptions.exclusiveStore): a late renewal fences nothing. */
  exclusiveStore: boolean;
  /** The node starts serving `shard` (its lease is taken). */
  acquired(shard: number): void;
  /** The node stops serving `shard` (lost, or being handed off), before its activations go. */
  left(shard: number): void;
  /** Forget the shard's activations: graceful (drain, snapshot) or not (Catalog.dropShard). */
  drop(shard: number, graceful: boolean): Promise<void>;
}

export class ShardLeases {
  private readonly state = new Map<number, ShardState>();
  private desired = new Set<number>();
  private renewTimer: NodeJS.Timeout | null = null;
  private acquireTimer: NodeJS.Timeout | null = null;
  private acquiring = false;
  /** ready()'s sleepers, woken by each acquisition. */
  private readonly waiters = new Set<() => void>();
  private stopped = false;
  readonly stats = { leaseRenewals: 0, leaseLosses: 0, shardAcquisitions: 0, shardReleases: 0 };

  constructor(private readonly o: LeaseOptions) {}

  start(): void {
    this.renewTimer = setInterval(() => void this.renewAll(), this.o.renewMs);
    this.acquireTimer = setInterval(() => void this.acquireWanted(), this.o.acquireRetryMs);
  }

  /** Resolves once every wanted shard is served (or the timeout passes). */
  async ready(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if ([...this.desired].every((s) => this.state.get(s)?.status === "active")) return true;
      // Woken by the next acquisition (a start waits for no polling tick), or after 20 ms.
      await new Promise<void>((r) => {
        const wake = () => {
          clearTimeout(t);
          this.waiters.delete(wake);
          r();
        };
        const t = setTimeout(wake, 20);
        this.waiters.add(wake);
      });
    }
    return false;
  }

  /** Whether `shard` is served now. */
  serves(shard: number): boolean {
    return this.state.get(shard)?.status === "active";
  }

  /** Shards served now. */
  servingShards(): number[] {
    return [...this.state.entries()].filter(([, s]) => s.status === "active").map(([n]) => n);
  }

  shardEpoch(shard: number): number | null {
    const s = this.state.get(shard);
    return s && s.status === "active" ? s.epoch : null;
  }

  /** The shard's state here, whatever its status (read only). */
  get(shard: number): Readonly<ShardState> | undefined {
    return this.state.get(shard);
  }

  /**
   * The state of a shard a request may run on now, or null (the request
   * answers "moved"): served, and its lease renewed within the TTL.
   */
  admit(shard: number): Readonly<ShardState> | null {
    const st = this.state.get(shard);
    if (!st || st.status !== "active") return null;
    if (!this.o.exclusiveStore && Date.now() - st.renewedAt > this.o.leaseTtlMs) {
      // Self-fencing: our lease may have expired (paused process, store
      // unreachable). Refuse rather than risk a second writer.
      if (!st.selfFenced) this.o.log.warn({ shard }, `lost lease of shard ${shard} (not renewed in time)`);
      st.selfFenced = true;
      return null;
    }
    return st;
  }

  /** Placement changed: take the shards in `shards`, let go of the others. */
  setDesired(shards: Iterable<number>): void {
    this.desired = new Set(shards);
    for (const [shard, st] of this.state) {
      if (!this.desired.has(shard) && st.status === "active") void this.releaseShard(shard);
    }
    void this.acquireWanted();
  }

  private async acquireWanted(): Promise<void> {
    if (this.acquiring || this.stopped) return;
    this.acquiring = true;
    try {
      const wanted = [...this.desired].filter((s) => !this.state.has(s));
      await Promise.all(
        wanted.map(async (shard) => {
          this.state.set(shard, { status: "acquiring", epoch: 0, renewedAt: 0 });
          let epoch: number | null = null;
          try {
            epoch = await this.o.store.acquireLease(shard, this.o.nodeId, this.o.leaseTtlMs);
          } catch {
            epoch = null;
          }
          const now = Date.now();
          if (epoch === null || !this.desired.has(shard) || this.stopped) {
            this.state.delete(shard);
            if (epoch !== null) await this.o.store.releaseLease(shard, this.o.nodeId, epoch).catch(() => {});
            return;
          }
          this.state.set(shard, { status: "active", epoch, renewedAt: now });
          this.stats.shardAcquisitions++;
          metrics.shardMove("acquired");
          this.o.acquired(shard);
          for (const wake of [...this.waiters]) wake();
        }),
      );
    } finally {
      this.acquiring = false;
    }
  }

  private async renewAll(): Promise<void> {
    const active = [...this.state.entries()].filter(([, s]) => s.status === "active");
    await Promise.all(
      active.map(async ([shard, st]) => {
        const startedAt = Date.now();
        let ok: boolean;
        try {
          ok = await this.o.store.renewLease(shard, this.o.nodeId, st.epoch, this.o.leaseTtlMs);
        } catch {
          metrics.leaseRenewal("failed");
          return; // store unreachable: keep trying; admit() self-fences after the TTL
        }
        if (this.state.get(shard) !== st) return;
        if (ok) {
          // Count the TTL from when we asked, not when Redis answered.
          st.renewedAt = startedAt;
          st.selfFenced = false;
          this.stats.leaseRenewals++;
          metrics.leaseRenewal("ok");
        } else {
          this.o.log.warn({ shard, epoch: st.epoch }, `lost lease of shard ${shard} (epoch ${st.epoch})`);
          metrics.leaseRenewal("lost");
          await this.lose(shard);
        }
      }),
    );
  }

  /** The lease is gone (expired and taken, or fenced): stop at once. */
  async lose(shard: number): Promise<void> {
    const st = this.state.get(shard);
    if (!st || st.status !== "active") return;
    this.state.delete(shard);
    this.stats.leaseLosses++;
    metrics.shardMove("lost");
    this.o.left(shard);
    await this.o.drop(shard, false);
  }

  /** Graceful hand-off: no new turns, finish running ones, snapshot, release. */
  private async releaseShard(shard: number): Promise<void> {
    const st = this.state.get(shard);
    if (!st || st.status !== "active") return;
    st.status = "releasing";
    this.o.left(shard);
    await this.o.drop(shard, true);
    await this.o.store.releaseLease(shard, this.o.nodeId, st.epoch).catch(() => {});
    if (this.state.get(shard) === st) this.state.delete(shard);
    this.stats.shardReleases++;
    metrics.shardMove("released");
  }

  /** Release every shard (graceful) or just stop (for tests of crashes). */
  async stop(graceful: boolean): Promise<void> {
    if (graceful) {
      this.desired = new Set();
      await Promise.all([...this.state.keys()].map((s) => this.releaseShard(s)));
    }
    this.stopped = true;
    if (this.renewTimer) clearInterval(this.renewTimer);
    if (this.acquireTimer) clearInterval(this.acquireTimer);
  }
}
