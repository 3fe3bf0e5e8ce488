// LMDB implementation of the storage contract (embedded mode, one process).
//
// Every write is an lmdb-js asynchronous transaction callback: callbacks run
// one after another on the main thread inside the batched write transaction,
// so a check (lease epoch, journal contiguity) and the writes that depend on
// it are atomic, and many calls in one event turn share one commit. A call
// resolves once its transaction has committed (survives a kill -9 of the
// process; with lmdb's default overlappingSync the disk flush follows).
//
// Leases work exactly as in Redis (TTL, holder, epoch) so the same conformance
// suite passes; in embedded mode the one node simply always gets them. Epochs
// are persisted per shard and never reused.
//
// `exclusive` (embedded mode: one process owns the directory, server.pid
// guards it): a lease stays its holder's until released or taken, however
// late its renewal comes. The TTL then only frees the leases of a process
// that died (the next start, or the management CLI, takes them); within the
// process nobody else asks for them, so an event-loop stall longer than the
// TTL must not fence the one node out of its own store.
//
// Layout: db "meta" (msgpack values), dbs "journal", "records", "index" (raw bytes):
//   meta   ["lease", shard]  -> [node, epoch, expiresAtMs]
//   meta   ["epoch", shard]  -> last epoch handed out
//   meta   ["jlast", actor]  -> last journal seq of the actor
//   meta   ["snap", actor]   -> { seq, epoch, data }
//   meta   ["ctr", scope]    -> last id reserved (handed out, or in this process's block)
//   meta   ["isize", shard, index] -> number of ids in the index (indexSize without a scan)
//   meta   ["shards"]        -> the shard count the directory was made with (shardCount)
//   journal [actor, seq]     -> entry bytes (ordered keys: readJournal is a range scan)
//   records [shard, key]     -> record bytes
//   index   [shard, index, id] -> empty (ordered keys: rangeIndex is a cursor over
//                                at most `limit` keys from an anchor, O(log n + limit))
// Records and indexes are keyed by shard as in Redis (where the shard is the
// key's hash tag), so both stores name the same data the same way.
import { open, type Database, type RootDatabase } from "lmdb";
import { FencedError } from "../runtime-errors.ts";
import type { JournalEntry, RecordWrite, Snapshot, Store } from "./contract.ts";
import { checkIndexName, checkKeys, checkRange, checkWrites } from "./records.ts";

type Lease = [node: string, epoch: number, expiresAt: number];
interface StoredSnapshot {
  seq: number;
  epoch: number;
  data: string;
}

const FENCED = -1;
const EMPTY = Buffer.alloc(0);
/** Above every id (ids are < 2^53): the open upper end of an index range. */
const ID_END = 2 ** 53;
/** Ids reserved per counter commit (nextId). */
const ID_BLOCK = 256;

export interface LmdbStoreOptions {
  /** One process owns the store: a held lease does not lapse on a late renewal. */
  exclusive?: boolean;
}

/** The LMDB store, and the one thing only a store of one process's own keeps: its shard count. */
export interface LmdbStore extends Store {
  /**
   * The shard count this directory's data is placed by. Recorded at the
   * first call: `requested`, else `fresh` for an empty directory. A
   * directory written before the count was recorded gets the count it was
   * run with, which is the number of shards with an epoch (a node takes
   * every shard at its start, and epochs are never removed). Rejects when
   * `requested` differs from the recorded count: every record, index and
   * event log is placed by it, so it cannot change.
   */
  shardCount(requested: number | undefined, fresh: number): Promise<number>;
}

export function createLmdbStore(dir: string, opts: LmdbStoreOptions = {}): LmdbStore {
  const exclusive = opts.exclusive === true;
  // noSubdir: lmdb-js guesses "a file" for a path with an extension, so a
  // DATA_DIR like "chat.data" would fail; the store is always a directory.
  const root: RootDatabase = open({ path: dir, maxDbs: 8, noSubdir: false });
  const meta: Database = root.openDB({ name: "meta" });
  const journal: Database<Buffer> = root.openDB({ name: "journal", encoding: "binary" });
  const records: Database<Buffer> = root.openDB({ name: "records", encoding: "binary" });
  const index: Database<Buffer> = root.openDB({ name: "index", encoding: "binary" });

  // Counters: one process owns the environment, so ids are handed out from
  // a block reserved in one transaction (the counter jumps to the block's
  // end before any id of it is used) instead of one commit per id: a send
  // does not wait for a commit to learn its message id. Ids stay strictly
  // increasing in the order they are handed out; a crash skips the rest of
  // the block, as an aborted transaction skips a sequence value in Zulip.
  const blocks = new Map<string, { next: number; last: number }>();
  const reserving = new Map<string, Promise<void>>();
  function reserve(scope: string): Promise<void> {
    let p = reserving.get(scope);
    if (p === undefined) {
      p = root
        .transaction(() => {
          const last = (meta.get(["ctr", scope]) as number | undefined) ?? 0;
          meta.put(["ctr", scope], last + ID_BLOCK);
          return last;
        })
        .then((last) => {
          blocks.set(scope, { next: last + 1, last: last + ID_BLOCK });
        })
        .finally(() => reserving.delete(scope));
      reserving.set(scope, p);
    }
    return p;
  }

  /** The live lease of a shard, or undefined when free or expired. */
  function liveLease(shard: number): Lease | undefined {
    const l = meta.get(["lease", shard]) as Lease | undefined;
    return l && l[2] > Date.now() ? l : undefined;
  }

  /**
   * The lease a holder may go on using: the live one, or under `exclusive`
   * the recorded one even past its expiry (nobody took it since).
   */
  function heldLease(shard: number): Lease | undefined {
    if (!exclusive) return liveLease(shard);
    return meta.get(["lease", shard]) as Lease | undefined;
  }

  function holds(shard: number, epoch: number): boolean {
    return heldLease(shard)?.[1] === epoch;
  }

  /** Apply record writes; only inside a write transaction whose checks passed. */
  function applyWrites(shard: number, writes: readonly RecordWrite[]): void {
    for (const w of writes) {
      switch (w.op) {
        case "put":
          records.put([shard, w.key], w.value as Buffer);
          break;
        case "delete":
          records.remove([shard, w.key]);
          break;
        case "index":
        case "unindex": {
          const adding = w.op === "index";
          let delta = 0;
          for (const id of adding ? w.add : w.remove) {
            const k = [shard, w.index, id];
            if (index.doesExist(k) === adding) continue;
            if (adding) index.put(k, EMPTY);
            else index.remove(k);
            delta += adding ? 1 : -1;
          }
          if (delta !== 0) {
            const sk = ["isize", shard, w.index];
            const n = ((meta.get(sk) as number | undefined) ?? 0) + delta;
            if (n === 0) meta.remove(sk);
            else meta.put(sk, n);
          }
          break;
        }
      }
    }
  }

  return {
    acquireLease(shard, node, ttlMs) {
      return root.transaction(() => {
        const cur = liveLease(shard);
        if (cur && cur[0] !== node) return null;
        const epoch = ((meta.get(["epoch", shard]) as number | undefined) ?? 0) + 1;
        meta.put(["epoch", shard], epoch);
        meta.put(["lease", shard], [node, epoch, Date.now() + ttlMs] satisfies Lease);
        return epoch;
      });
    },

    renewLease(shard, node, epoch, ttlMs) {
      return root.transaction(() => {
        const cur = heldLease(shard);
        if (!cur || cur[0] !== node || cur[1] !== epoch) return false;
        meta.put(["lease", shard], [node, epoch, Date.now() + ttlMs] satisfies Lease);
        return true;
      });
    },

    async releaseLease(shard, node, epoch) {
      await root.transaction(() => {
        const cur = heldLease(shard);
        if (cur && cur[0] === node && cur[1] === epoch) meta.remove(["lease", shard]);
      });
    },

    async leaseHolder(shard) {
      const l = heldLease(shard);
      return l ? { node: l[0], epoch: l[1] } : null;
    },

    async append(shard, epoch, actor, firstSeq, entries, writes = []) {
      checkWrites(writes);
      const r = await root.transaction(() => {
        if (!holds(shard, epoch)) return FENCED;
        if (entries.length > 0) {
          const last = (meta.get(["jlast", actor]) as number | undefined) ?? 0;
          if (firstSeq !== last + 1) return FENCED;
          for (let i = 0; i < entries.length; i++) journal.put([actor, firstSeq + i], entries[i] as Buffer);
          meta.put(["jlast", actor], firstSeq + entries.length - 1);
        }
        applyWrites(shard, writes);
        return entries.length;
      });
      if (r === FENCED) throw new FencedError(shard, epoch);
    },

    async appendMany(shard, epoch, items) {
      for (const it of items) if (it.writes) checkWrites(it.writes);
      const r = await root.transaction(() => {
        if (!holds(shard, epoch)) return FENCED;
        return items.map(({ actor, firstSeq, entries, writes = [] }) => {
          if (entries.length > 0) {
            const last = (meta.get(["jlast", actor]) as number | undefined) ?? 0;
            if (firstSeq !== last + 1) return false;
            for (let i = 0; i < entries.length; i++) journal.put([actor, firstSeq + i], entries[i] as Buffer);
            meta.put(["jlast", actor], firstSeq + entries.length - 1);
          }
          applyWrites(shard, writes);
          return true;
        });
      });
      if (r === FENCED) throw new FencedError(shard, epoch);
      return r;
    },

    async readJournal(_shard, actor, afterSeq): Promise<JournalEntry[]> {
      const out: JournalEntry[] = [];
      for (const { key, value } of journal.getRange({
        start: [actor, afterSeq + 1],
        end: [actor, Number.MAX_SAFE_INTEGER],
      })) {
        out.push({ seq: (key as [string, number])[1], data: value });
      }
      return out;
    },

    async saveSnapshot(shard, epoch, actor, snapshot) {
      const r = await root.transaction(() => {
        if (!holds(shard, epoch)) return FENCED;
        const old = meta.get(["snap", actor]) as StoredSnapshot | undefined;
        if (old && old.seq > snapshot.seq) return 0;
        meta.put(["snap", actor], { seq: snapshot.seq, epoch, data: snapshot.data } satisfies StoredSnapshot);
        const covered = [...journal.getKeys({ start: [actor, 0], end: [actor, snapshot.seq + 1] })];
        for (const key of covered) journal.remove(key);
        const last = (meta.get(["jlast", actor]) as number | undefined) ?? 0;
        if (snapshot.seq > last) meta.put(["jlast", actor], snapshot.seq);
        return 1;
      });
      if (r === FENCED) throw new FencedError(shard, epoch);
    },

    async loadSnapshot(_shard, actor): Promise<Snapshot | null> {
      const s = meta.get(["snap", actor]) as StoredSnapshot | undefined;
      return s ? { seq: s.seq, data: s.data } : null;
    },

    async getRecords(shard, keys) {
      checkKeys(keys);
      // Synchronous gets in one turn share lmdb-js's read transaction: one consistent read.
      return keys.map((k) => records.get([shard, k]) ?? null);
    },

    async rangeIndex(shard, name, range) {
      checkRange(name, range);
      const { before, after, limit, reverse = false } = range;
      const lo = after === undefined ? 0 : after + 1;
      const hi = before === undefined ? ID_END : before; // exclusive
      if (limit === 0 || lo >= hi) return [];
      // lmdb-js ranges: `start` inclusive, `end` exclusive, in the scan's direction.
      const ids: number[] = [];
      for (const k of index.getKeys(
        reverse
          ? { start: [shard, name, hi - 1], end: [shard, name, lo - 1], reverse: true, limit }
          : { start: [shard, name, lo], end: [shard, name, hi], limit },
      )) {
        ids.push((k as [number, string, number])[2]);
      }
      return reverse ? ids.reverse() : ids;
    },

    async indexSize(shard, name) {
      checkIndexName(name);
      return (meta.get(["isize", shard, name]) as number | undefined) ?? 0;
    },

    async lastSeq(_shard, actor) {
      return (meta.get(["jlast", actor]) as number | undefined) ?? 0;
    },

    async nextId(scope) {
      for (;;) {
        const b = blocks.get(scope);
        if (b !== undefined && b.next <= b.last) return b.next++;
        await reserve(scope);
      }
    },

    async listActors() {
      const out: Array<{ shard: number; actor: string }> = [];
      // Every actor with a journal or a snapshot has a jlast (a snapshot sets it too).
      for (const k of meta.getKeys({ start: ["jlast", ""], end: ["jlast\u0000"] })) {
        const [tagName, actor] = k as [string, unknown];
        if (tagName === "jlast" && typeof actor === "string") out.push({ shard: 0, actor });
      }
      return out;
    },

    async listCounters() {
      const out: Array<{ scope: string; value: number }> = [];
      for (const { key, value } of meta.getRange({ start: ["ctr", ""], end: ["ctr\u0000"] })) {
        const [tagName, scope] = key as [string, unknown];
        if (tagName === "ctr" && typeof scope === "string") out.push({ scope, value: Number(value) });
      }
      return out;
    },

    async listRecords(shards, prefix) {
      const out: Array<{ shard: number; key: string; value: Uint8Array }> = [];
      for (let shard = 0; shard < shards; shard++)
        for (const { key, value } of records.getRange({
          start: [shard, prefix],
          end: [shard, `${prefix}\uffff`],
        })) {
          const k = (key as [number, string])[1];
          if (k.startsWith(prefix)) out.push({ shard, key: k, value: new Uint8Array(value) });
        }
      return out;
    },

    async listIndexes(shards, prefix) {
      const out: Array<{ shard: number; index: string; ids: number[] }> = [];
      for (let shard = 0; shard < shards; shard++) {
        const byName = new Map<string, number[]>();
        for (const key of index.getKeys({ start: [shard, prefix], end: [shard, `${prefix}\uffff`] })) {
          const [, name, id] = key as [number, string, number];
          if (!name.startsWith(prefix)) continue;
          const ids = byName.get(name);
          if (ids) ids.push(id);
          else byName.set(name, [id]);
        }
        for (const [name, ids] of byName) out.push({ shard, index: name, ids });
      }
      return out;
    },

    async raiseCounter(scope, value) {
      await Promise.all([...reserving.values()]);
      await root.transaction(() => {
        const last = (meta.get(["ctr", scope]) as number | undefined) ?? 0;
        if (last < value) meta.put(["ctr", scope], value);
      });
      // A block reserved below the new value would hand out ids under it.
      const b = blocks.get(scope);
      if (b !== undefined && b.next <= value) blocks.delete(scope);
    },

    async shardCount(requested, fresh) {
      const recorded = await root.transaction(() => {
        let n = meta.get(["shards"]) as number | undefined;
        if (n === undefined) {
          let taken = 0;
          while (meta.get(["epoch", taken]) !== undefined) taken++;
          n = taken > 0 ? taken : (requested ?? fresh);
          meta.put(["shards"], n);
        }
        return n;
      });
      if (requested !== undefined && requested !== recorded)
        throw new Error(
          `SHARDS=${requested}, but the data in ${dir} is placed over ${recorded} shards; ` +
            `the count cannot change (unset SHARDS, or set it to ${recorded})`,
        );
      return recorded;
    },

    async close() {
      // Hand the unused rest of each reserved block back, so a clean restart
      // goes on where this process stopped (a crash only leaves a gap).
      await Promise.all([...reserving.values()]);
      await root.transaction(() => {
        for (const [scope, b] of blocks)
          if (meta.get(["ctr", scope]) === b.last) meta.put(["ctr", scope], b.next - 1);
      });
      blocks.clear();
      await root.close();
    },
  };
}
