// The storage contract. One interface, two implementations (Redis for cluster
// mode, LMDB for embedded mode), one conformance suite
// (test/storage-conformance.test.ts) that both must pass.
//
// Invariants every implementation keeps:
// - A shard is written only under its current lease epoch. `append` and
//   `saveSnapshot` check the epoch and write in one atomic step; a stale
//   epoch (or an expired lease) raises FencedError and writes nothing.
// - `append` resolves only once the entries are durable (Redis: AOF; LMDB:
//   committed). An acknowledged write is never lost.
// - Journal sequence numbers are per actor, start at 1 and are contiguous;
//   appending a seq that is not last+1 raises FencedError too (a second
//   writer exists).

export interface JournalEntry {
  seq: number;
  data: Uint8Array;
}

export interface Snapshot {
  /** The journal seq this snapshot includes (entries <= seq are folded in). */
  seq: number;
  data: string;
}

/** One actor's part of a multi-actor append (`Store.appendMany`). */
export interface AppendItem {
  actor: string;
  firstSeq: number;
  entries: Uint8Array[];
}

export interface Store {
  /**
   * Take the shard's lease for `node` if it is free, expired, or already
   * held by `node`. Returns the new epoch (strictly greater than any epoch
   * ever handed out for this shard), or null when another live node holds it.
   */
  acquireLease(shard: number, node: string, ttlMs: number): Promise<number | null>;
  /** Extend the lease; false when `node` no longer holds it at `epoch`. */
  renewLease(shard: number, node: string, epoch: number, ttlMs: number): Promise<boolean>;
  /** Give the lease up at once (graceful leave). No-op when not held. */
  releaseLease(shard: number, node: string, epoch: number): Promise<void>;
  /** Current holder, for inspection. */
  leaseHolder(shard: number): Promise<{ node: string; epoch: number } | null>;

  /** Append entries with seqs firstSeq, firstSeq+1, ... under the epoch (fenced). */
  append(shard: number, epoch: number, actor: string, firstSeq: number, entries: Uint8Array[]): Promise<void>;
  /**
   * Group commit across actors: several actors' appends on one shard in one
   * atomic, fenced step (one LMDB transaction, one Redis script). A stale
   * epoch raises FencedError and writes nothing; an item whose firstSeq is
   * not its actor's last+1 is skipped and reported `false` (a second writer
   * exists, as for `append`), the others are written. Items with no entries
   * are no-ops reported `true`. Results are in item order.
   */
  appendMany(shard: number, epoch: number, items: AppendItem[]): Promise<boolean[]>;
  /** Entries with seq > afterSeq, in order. */
  readJournal(shard: number, actor: string, afterSeq: number): Promise<JournalEntry[]>;
  /** Save a snapshot (fenced) and drop journal entries it covers. */
  saveSnapshot(shard: number, epoch: number, actor: string, snapshot: Snapshot): Promise<void>;
  loadSnapshot(shard: number, actor: string): Promise<Snapshot | null>;

  /** Next value of a named counter (starts at 1, never reused, not fenced). */
  nextId(scope: string): Promise<number>;

  close(): Promise<void>;
}
