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
// - Record and index writes ride on appends (`RecordWrite`): they are applied
//   in the same atomic, fenced step as the entries they come with, only when
//   that append is applied, and are exactly as durable as the journal.
// - Reads (journal, snapshot, records, indexes) are not fenced: any node may
//   read, and a reader may see a write that committed a moment ago.

export interface JournalEntry {
  seq: number;
  data: Uint8Array;
}

export interface Snapshot {
  /** The journal seq this snapshot includes (entries <= seq are folded in). */
  seq: number;
  data: string;
}

/**
 * A write to a shard's records or ordered id indexes, carried by an append.
 * Keys and index names are the caller's (namespaced per realm by the caller);
 * they live in the shard the append is on and are read back with that shard.
 * Ids are integers 0 <= id < 2^53. Writes apply in order (a later put of a key
 * wins); adding an id already in the index and removing an absent id or key
 * are no-ops.
 */
export type RecordWrite =
  | { op: "put"; key: string; value: Uint8Array }
  | { op: "delete"; key: string }
  | { op: "index"; index: string; add: number[] }
  | { op: "unindex"; index: string; remove: number[] };

/** One actor's part of a multi-actor append (`Store.appendMany`). */
export interface AppendItem {
  actor: string;
  firstSeq: number;
  entries: Uint8Array[];
  /** Applied with the entries, only if they are (see `Store.appendMany`). */
  writes?: RecordWrite[];
}

/** `Store.rangeIndex` options. Anchors are exclusive; neither need be in the index. */
export interface IndexRange {
  /** Only ids < before. */
  before?: number;
  /** Only ids > after. */
  after?: number;
  /** At most this many ids (a non-negative integer). */
  limit: number;
  /**
   * Take the `limit` highest ids of the range instead of the lowest. The
   * result is ascending either way: `{reverse: true, limit: 100}` is the
   * newest 100, `{before: x, reverse: true, limit: 100}` the 100 just before x.
   */
  reverse?: boolean;
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

  /**
   * Append entries with seqs firstSeq, firstSeq+1, ... under the epoch
   * (fenced), and apply `writes` in the same atomic step: when the append is
   * refused (FencedError) none of them is applied. With no entries there is
   * no seq to check: the writes are applied under the epoch check alone.
   */
  append(
    shard: number,
    epoch: number,
    actor: string,
    firstSeq: number,
    entries: Uint8Array[],
    writes?: RecordWrite[],
  ): Promise<void>;
  /**
   * Group commit across actors: several actors' appends on one shard in one
   * atomic, fenced step (one LMDB transaction, one Redis script). A stale
   * epoch raises FencedError and writes nothing; an item whose firstSeq is
   * not its actor's last+1 is skipped and reported `false` (a second writer
   * exists, as for `append`), its writes are not applied, the others are
   * written. Items with no entries append nothing and are reported `true`
   * (their writes are applied, as for `append`). Results are in item order.
   */
  appendMany(shard: number, epoch: number, items: AppendItem[]): Promise<boolean[]>;
  /**
   * The seq of the actor's last durable journal entry (0: none), one read.
   * It moves with every append, and with nothing else that changes the
   * actor's state (a snapshot only covers entries), so an unchanged seq
   * means an unchanged durable state (cluster/node/durable-reads.ts).
   */
  lastSeq(shard: number, actor: string): Promise<number>;
  /** Entries with seq > afterSeq, in order. */
  readJournal(shard: number, actor: string, afterSeq: number): Promise<JournalEntry[]>;
  /** Save a snapshot (fenced) and drop journal entries it covers. */
  saveSnapshot(shard: number, epoch: number, actor: string, snapshot: Snapshot): Promise<void>;
  loadSnapshot(shard: number, actor: string): Promise<Snapshot | null>;

  /** The records of `keys` on the shard, in order; null for a missing key. One batched read. */
  getRecords(shard: number, keys: string[]): Promise<Array<Uint8Array | null>>;
  /**
   * Ids of an index in a range, ascending (see IndexRange). O(log n + limit):
   * the cost does not depend on the index's size. An index never written is empty.
   */
  rangeIndex(shard: number, index: string, range: IndexRange): Promise<number[]>;
  /** Number of ids in the index. */
  indexSize(shard: number, index: string): Promise<number>;

  /** Next value of a named counter (starts at 1, never reused, not fenced). */
  nextId(scope: string): Promise<number>;

  /**
   * Export: every actor with a journal or a snapshot on shards 0..shards-1,
   * with the shard its data is stored under. A store that keys actors by
   * their id alone (LMDB) reports shard 0, which its reads ignore. A scan
   * over the whole store, not fenced: for exports and tools, never a request.
   */
  listActors(shards: number): Promise<Array<{ shard: number; actor: string }>>;
  /** Export: every counter with its value, at least the last id handed out (a scan). */
  listCounters(): Promise<Array<{ scope: string; value: number }>>;
  /** Restore: move a counter on so its next id is above `value`; never moves it back. */
  raiseCounter(scope: string, value: number): Promise<void>;
  /**
   * Export: every record whose key starts with `prefix` on shards
   * 0..shards-1, with its shard (a scan, not fenced, as listActors).
   */
  listRecords(
    shards: number,
    prefix: string,
  ): Promise<Array<{ shard: number; key: string; value: Uint8Array }>>;
  /** Export: every id index whose name starts with `prefix`, with its shard and ids ascending (a scan). */
  listIndexes(
    shards: number,
    prefix: string,
  ): Promise<Array<{ shard: number; index: string; ids: number[] }>>;

  close(): Promise<void>;
}
