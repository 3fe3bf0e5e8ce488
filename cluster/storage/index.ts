// The storage module's door: the contract and its two implementations.
export type { AppendItem, IndexRange, JournalEntry, RecordWrite, Snapshot, Store } from "./contract.ts";
export { createLmdbStore } from "./lmdb-store.ts";
export {
  createRedisClusterStore,
  createRedisStore,
  snapshotEntityId,
  snapshotSchema,
  type RedisStoreOptions,
} from "./redis-store.ts";
