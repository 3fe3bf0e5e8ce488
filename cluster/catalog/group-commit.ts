// Group commit across actors: the appends that many activations of one shard
// make in the same tick (a message reaching 1,000 actors) go to the store as
// one `appendMany` (one LMDB transaction, one Redis script per shard).

import { FencedError } from "../runtime-errors.ts";
import type { AppendItem, RecordWrite, Store } from "../storage/contract.ts";
import type { Activation } from "./core.ts";

/** An append waiting for the next cross-actor group commit of its shard. */
interface QueuedAppend extends AppendItem {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Most actors' appends written in one `appendMany`. */
const COMMIT_GROUP_LIMIT = 512;

export class GroupCommit {
  /**
   * Appends waiting for the next group commit, by "<shard>:<epoch>". Many
   * activations that append in the same tick share one store write.
   */
  private readonly commits = new Map<string, { shard: number; epoch: number; items: QueuedAppend[] }>();
  private commitTimer: NodeJS.Immediate | null = null;

  constructor(private readonly store: Store) {}

  /** Append in the shard's next group commit (one `appendMany` for every actor that appends this tick). */
  queueAppend(act: Activation, entries: Uint8Array[], writes: RecordWrite[]): Promise<void> {
    return new Promise((resolve, reject) => {
      const key = `${act.shard}:${act.epoch}`;
      let group = this.commits.get(key);
      if (group === undefined)
        this.commits.set(key, (group = { shard: act.shard, epoch: act.epoch, items: [] }));
      const item: QueuedAppend = { actor: act.id, firstSeq: act.seq + 1, entries, resolve, reject };
      if (writes.length) item.writes = writes;
      group.items.push(item);
      this.commitTimer ??= setImmediate(() => this.commitQueued());
    });
  }

  private commitQueued(): void {
    this.commitTimer = null;
    const groups = [...this.commits.values()];
    this.commits.clear();
    for (const g of groups) {
      for (let i = 0; i < g.items.length; i += COMMIT_GROUP_LIMIT)
        void this.commitGroup(g.shard, g.epoch, g.items.slice(i, i + COMMIT_GROUP_LIMIT));
    }
  }

  private async commitGroup(shard: number, epoch: number, items: QueuedAppend[]): Promise<void> {
    if (items.length === 1) {
      const it = items[0]!;
      try {
        await this.store.append(shard, epoch, it.actor, it.firstSeq, it.entries, it.writes);
        it.resolve();
      } catch (err) {
        it.reject(err);
      }
      return;
    }
    let ok: boolean[];
    try {
      ok = await this.store.appendMany(shard, epoch, items);
    } catch (err) {
      for (const it of items) it.reject(err);
      return;
    }
    items.forEach((it, i) => (ok[i] ? it.resolve() : it.reject(new FencedError(shard, epoch))));
  }
}
