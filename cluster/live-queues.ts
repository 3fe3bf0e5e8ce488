// The registry of users with event queues, per shard, that the event router
// (event-router.ts) reads to skip everybody else, and its index of their
// subscriptions, which expands channel audiences (OutEvent.channel) at the
// shard's owner. See the class notes below and docs/events.md.

import { channelDirectoryRef } from "../actors/index.ts";
import type { ChannelDirectoryProtocol } from "../actors/channel-directory/index.ts";
import type { ArgsOf } from "../actors/protocol.ts";
import type { Obj } from "../actors/types.ts";
import { actorId, shardOf } from "./addressing.ts";
import type { RouterHost } from "./event-router.ts";
import type { Store } from "./storage/contract.ts";
import { componentLogger, type Logger } from "./log.ts";

/** Read at each use: the root logger may be replaced (setRootLogger). Logged as the router's. */
const log = (): Logger => componentLogger("event-router");

/** Deadline of one read of subscriptions from a channel directory. */
const READ_MS = 10_000;

/** Registry journal entries between two snapshots of it. */
const LIVE_SNAPSHOT_EVERY = 500;

/** Store id of a shard's registry (journal + snapshot; no actor ever runs under it). */
export function liveQueuesId(shard: number): string {
  return actorId({ kind: "queue", realm: 0, key: `~live.${shard}` });
}

/** One registry write: [1 = has a queue / 0 = has none, "realm:user"] in order. */
type LiveOp = [0 | 1, string];

/** A subscription change seen in a `subscription` event: [1 = add / 0 = remove, channel id]. */
type SubOp = [0 | 1, number];

/**
 * The subscriptions of every user with none (LiveShard.subs), shared and
 * never changed: an empty Set of their own cost idle queues about 200 B
 * each (most of a passivated queue's heap).
 */
const NO_SUBS: ReadonlySet<number> = new Set<number>();

/** How long a batch with a channel audience waits for its shard's index. */
const INDEX_WAIT_MS = 15_000;
/** Attempts of one read of subscriptions from a realm's channel directory. */
const FETCH_ATTEMPTS = 5;

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A failed write is reported to the add that waits for it; nobody else must see an unhandled rejection.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

interface LiveShard {
  epoch: number;
  /** Loaded from the store: until then nobody of the shard is skipped. */
  loaded: boolean;
  /** Gone (shard lost, or a write failed): this object no longer speaks for the shard. */
  dead: boolean;
  /**
   * The routing view: the users with a queue, or about to get one, by
   * realm (realm -> user ids; also the realm audiences, OutEvent.everyone).
   */
  byRealm: Map<number, Set<number>>;
  /** How many users `byRealm` holds. */
  size: number;
  /** What the store holds at `seq` (a snapshot's content). */
  durable: Set<string>;
  seq: number;
  snapshotSeq: number;
  /** Changes not written yet, in order, and the promise of the write that takes them. */
  ops: LiveOp[];
  next: Deferred | null;
  writing: boolean;
  /** "realm:user" -> the write that holds its latest change, while unwritten. */
  unwritten: Map<string, Promise<void>>;
  /**
   * The index of subscriptions, for channel audiences (OutEvent.channel):
   * "realm:user" -> channel ids, for every user of `users` whose
   * subscriptions are known (the others are in `fetching`).
   */
  subs: Map<string, Set<number> | typeof NO_SUBS>;
  /** "realm:channel" -> the users of `subs` subscribed to it. */
  byChannel: Map<string, Set<number>>;
  /**
   * "realm:user" -> the changes seen in its `subscription` events, in order,
   * while its subscriptions are being read from the channel directory.
   */
  fetching: Map<string, SubOp[]>;
  /** Until the registry is loaded and its users' subscriptions asked for: every change seen, in order. */
  early: [string, SubOp][] | null;
  /** Woken when the index may have become complete (or the shard was dropped). */
  waiters: (() => void)[];
  /** Users whose subscriptions are read at the next macrotask. */
  toRead: string[];
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A registry key: "realm:user". */
function parseKey(key: string): [realm: number, userId: number] {
  const at = key.indexOf(":");
  return [Number(key.slice(0, at)), Number(key.slice(at + 1))];
}

function hasUser(s: LiveShard, key: string): boolean {
  const [realm, userId] = parseKey(key);
  return s.byRealm.get(realm)?.has(userId) ?? false;
}

/** `key` has a queue on the shard, or has none, in the routing view. */
function setUser(s: LiveShard, key: string, has: boolean): void {
  const [realm, userId] = parseKey(key);
  let mine = s.byRealm.get(realm);
  if (has) {
    if (!mine) s.byRealm.set(realm, (mine = new Set()));
    if (!mine.has(userId)) s.size++;
    mine.add(userId);
  } else if (mine?.delete(userId)) {
    s.size--;
    if (mine.size === 0) s.byRealm.delete(realm);
  }
}

/**
 * The users of each served shard who have at least one event queue, so that
 * the router skips everybody else without activating their queue actor.
 *
 * Durable, in the store beside the shard's actors (a journal of changes and
 * a snapshot), and loaded when the node acquires the shard: after kill -9
 * the next owner knows at once whom to skip, without activating anybody.
 * Rebuilding it on acquisition instead would mean loading every queue actor
 * of the shard (the store can only read an actor it is given the id of).
 *
 * It may hold a user who has no queue left (a lost removal, an expired
 * queue nobody collected): that costs one activation, whose `settled`
 * report removes the entry. It must never miss a user with a queue, so a
 * registration is appended only once the user's entry is durable
 * (`beforeAppend`), and the routing view takes the user in before that, as
 * soon as the registration is decided.
 */
export class LiveQueues {
  private readonly shards = new Map<number, LiveShard>();

  constructor(private readonly host: RouterHost) {}

  /**
   * True once `shard`'s index of subscriptions is complete, so that a
   * channel audience can be expanded there (waits for it up to
   * INDEX_WAIT_MS). False when the shard is not served here or its
   * registry cannot be had. Without a store there is no index: a channel
   * audience reaches its listed users only (unit tests with a fake host).
   */
  async ready(shard: number): Promise<boolean> {
    if (!this.host.store) return true;
    const until = Date.now() + INDEX_WAIT_MS;
    for (;;) {
      if (this.readyNow(shard)) return true;
      if (!this.host.serves(shard) || Date.now() >= until) return false;
      if (!this.shards.has(shard)) this.acquired(shard);
      const s = this.shards.get(shard);
      await new Promise<void>((res) => {
        const t = setTimeout(res, 250);
        s?.waiters.push(() => {
          clearTimeout(t);
          res();
        });
      });
    }
  }

  /** ready() without waiting: true when it would settle true now. */
  readyNow(shard: number): boolean {
    if (!this.host.store) return true;
    const s = this.shards.get(shard);
    return s !== undefined && s.loaded && s.early === null && s.fetching.size === 0;
  }

  /**
   * Whether `shard`'s registry is still held here. Checked again after
   * ready() settles, since its caller resumes later: the shard may have
   * been forgotten meanwhile (it moved), and its registry is then empty.
   */
  holds(shard: number): boolean {
    return !this.host.store || this.shards.get(shard)?.loaded === true;
  }

  /** The users of `realm` with a queue on `shard` (ready() first). */
  realmUsers(shard: number, realm: number): ReadonlySet<number> | undefined {
    return this.shards.get(shard)?.byRealm.get(realm);
  }

  /** The users of `realm` with a queue on `shard` subscribed to `channel` (ready() first). */
  subscribers(shard: number, realm: number, channel: number): ReadonlySet<number> | undefined {
    return this.shards.get(shard)?.byChannel.get(`${realm}:${channel}`);
  }

  /**
   * An event is being delivered to `userId` of `realm`, a user of `shard`:
   * a `subscription` add or remove changes the index. Called by the pump in
   * delivery order, so a message routed after the change is expanded with it.
   */
  track(shard: number, realm: number, userId: number, event: Obj): void {
    if (event.type !== "subscription" || (event.op !== "add" && event.op !== "remove")) return;
    const s = this.shards.get(shard);
    if (!s) return;
    const key = `${realm}:${userId}`;
    const op = event.op === "add" ? 1 : 0;
    for (const sub of Array.isArray(event.subscriptions) ? event.subscriptions : []) {
      const id = (sub as Obj | null)?.stream_id;
      if (typeof id !== "number") continue;
      if (s.early) {
        s.early.push([key, [op, id]]);
        continue;
      }
      const pending = s.fetching.get(key);
      if (pending) pending.push([op, id]);
      else if (s.subs.has(key)) this.setSub(s, key, realm, userId, op, id);
    }
  }

  private setSub(s: LiveShard, key: string, realm: number, userId: number, op: 0 | 1, channel: number): void {
    const mine = s.subs.get(key)!;
    const ck = `${realm}:${channel}`;
    if (op === 1) {
      if (mine === NO_SUBS) s.subs.set(key, new Set([channel]));
      else (mine as Set<number>).add(channel);
      let set = s.byChannel.get(ck);
      if (!set) s.byChannel.set(ck, (set = new Set()));
      set.add(userId);
    } else {
      if (mine !== NO_SUBS) (mine as Set<number>).delete(channel);
      const set = s.byChannel.get(ck);
      set?.delete(userId);
      if (set?.size === 0) s.byChannel.delete(ck);
    }
  }

  /** `key` has no queue any more: out of the index. */
  private dropSubs(s: LiveShard, key: string): void {
    s.fetching.delete(key);
    const mine = s.subs.get(key);
    if (!mine) return;
    const [realm, user] = key.split(":").map(Number) as [number, number];
    for (const channel of [...mine]) this.setSub(s, key, realm, user, 0, channel);
    s.subs.delete(key);
    this.wake(s);
  }

  private wake(s: LiveShard): void {
    if (s.dead || (s.loaded && s.early === null && s.fetching.size === 0)) {
      const waiters = s.waiters;
      s.waiters = [];
      for (const w of waiters) w();
    }
  }

  /**
   * Read the subscriptions of `keys` ("realm:user") from their realms'
   * channel directories. Changes seen meanwhile are applied after the
   * reply: a user's events come in the directory's order, so those seen
   * are the ones after some point before the read, and applying them again
   * on the read's result gives each channel its last change.
   */
  private fetchSubs(shard: number, s: LiveShard, keys: string[]): void {
    const byRealm = new Map<number, [string, SubOp[]][]>();
    for (const key of keys) {
      let ops = s.fetching.get(key);
      if (!ops) s.fetching.set(key, (ops = []));
      const realm = Number(key.slice(0, key.indexOf(":")));
      const list = byRealm.get(realm);
      if (list) list.push([key, ops]);
      else byRealm.set(realm, [[key, ops]]);
    }
    for (const [realm, list] of byRealm)
      void this.readSubs(
        realm,
        list.map(([k]) => Number(k.slice(k.indexOf(":") + 1))),
      ).then(
        (reply) => {
          if (s.dead) return;
          for (const [key, ops] of list) {
            // Removed, or removed and added again (a newer read) meanwhile.
            if (s.fetching.get(key) !== ops) continue;
            s.fetching.delete(key);
            const userId = Number(key.slice(key.indexOf(":") + 1));
            s.subs.set(key, NO_SUBS);
            const got = reply[String(userId)];
            for (const channel of Array.isArray(got) ? got : [])
              if (typeof channel === "number") this.setSub(s, key, realm, userId, 1, channel);
            for (const [op, channel] of ops) this.setSub(s, key, realm, userId, op, channel);
          }
          this.wake(s);
        },
        (err: unknown) => {
          // Channel audiences of the shard wait (ready()); listed users and
          // the registry of queues are unaffected. Read again shortly.
          log().warn({ shard, realm, err: String(err) }, "could not read subscriptions; retrying");
          setTimeout(() => {
            if (s.dead) return;
            const again = list.filter(([key, ops]) => s.fetching.get(key) === ops).map(([key]) => key);
            if (again.length) this.fetchSubs(shard, s, again);
          }, 1000).unref();
        },
      );
  }

  private async readSubs(realm: number, userIds: number[]): Promise<Obj> {
    const ref = channelDirectoryRef(realm);
    let last = "";
    for (let attempt = 0; attempt < FETCH_ATTEMPTS; attempt++) {
      const res = await this.host.request({
        ref,
        shard: shardOf(ref, this.host.shards),
        method: "subscribedChannels",
        args: { user_ids: userIds } satisfies ArgsOf<ChannelDirectoryProtocol, "subscribedChannels">,
        caller: null,
        deadline: Date.now() + READ_MS,
        replyGraceMs: 0,
      });
      if (res.ok) return (res.value ?? {}) as Obj;
      last = `${res.kind}: ${res.msg}`;
      if (res.kind === "zulip") break;
    }
    throw new Error(last);
  }

  /** True when `user` of `realm` has no queue on `shard` for sure. */
  skips(shard: number, realm: number, userId: number): boolean {
    const s = this.shards.get(shard);
    return s !== undefined && s.loaded && !(s.byRealm.get(realm)?.has(userId) ?? false);
  }

  /** Users registered on a shard (tests, inspection); null while unknown. */
  count(shard: number): number | null {
    const s = this.shards.get(shard);
    return s?.loaded ? s.size : null;
  }

  /** This node now serves `shard`: load its registry. */
  acquired(shard: number): void {
    const store = this.host.store;
    const epoch = this.host.epoch?.(shard) ?? null;
    if (!store || epoch === null) return;
    this.forget(shard);
    const s: LiveShard = {
      epoch,
      loaded: false,
      dead: false,
      byRealm: new Map(),
      size: 0,
      durable: new Set(),
      seq: 0,
      snapshotSeq: 0,
      ops: [],
      next: null,
      writing: false,
      unwritten: new Map(),
      subs: new Map(),
      byChannel: new Map(),
      fetching: new Map(),
      early: [],
      waiters: [],
      toRead: [],
    };
    this.shards.set(shard, s);
    void this.load(store, shard, s);
  }

  /** This node no longer serves `shard`. */
  forget(shard: number): void {
    const s = this.shards.get(shard);
    if (!s) return;
    s.dead = true;
    this.shards.delete(shard);
    s.next?.reject(new Error(`shard ${shard} moved`));
    s.next = null;
    this.wake(s);
  }

  /**
   * `key` has a queue: resolves once that is durable. Rejects when it could
   * not be written (the registration must then fail: see the class note).
   */
  add(shard: number, key: string): Promise<void> {
    if (!this.host.store) return Promise.resolve(); // no registry: nobody is skipped
    let s = this.shards.get(shard);
    if (!s) {
      // Dropped after a failed write, or the shard is being handed off: a
      // registration this node cannot record must not be made.
      this.acquired(shard);
      s = this.shards.get(shard);
      if (!s) return Promise.reject(new Error(`shard ${shard} is not served here`));
    }
    if (s.loaded && hasUser(s, key)) return s.unwritten.get(key) ?? Promise.resolve();
    setUser(s, key, true);
    // Before the registry is loaded, its load reads every user's subscriptions.
    if (s.early === null && !s.subs.has(key) && !s.fetching.has(key)) {
      // Registrations of one macrotask share one read per realm.
      s.fetching.set(key, []);
      if (s.toRead.push(key) === 1)
        setImmediate(() => {
          const keys = s.toRead.filter((k) => s.fetching.has(k));
          s.toRead = [];
          if (!s.dead && keys.length) this.fetchSubs(shard, s, keys);
        });
    }
    return this.change(shard, s, [1, key]);
  }

  /** `key` has no queue any more (best effort: a lost removal costs one activation later). */
  remove(shard: number, key: string): void {
    const s = this.shards.get(shard);
    if (!s || (s.loaded && !hasUser(s, key))) return;
    setUser(s, key, false);
    this.dropSubs(s, key);
    void this.change(shard, s, [0, key]);
  }

  private change(shard: number, s: LiveShard, op: LiveOp): Promise<void> {
    s.ops.push(op);
    const d = (s.next ??= deferred());
    s.unwritten.set(op[1], d.promise);
    const clear = () => {
      if (s.unwritten.get(op[1]) === d.promise) s.unwritten.delete(op[1]);
    };
    d.promise.then(clear, clear);
    if (s.loaded && !s.writing) void this.write(shard, s);
    return d.promise;
  }

  private async load(store: Store, shard: number, s: LiveShard): Promise<void> {
    const id = liveQueuesId(shard);
    try {
      const snap = await store.loadSnapshot(shard, id);
      const durable = new Set<string>(snap ? (JSON.parse(snap.data) as string[]) : []);
      let seq = snap ? snap.seq : 0;
      for (const e of await store.readJournal(shard, id, seq)) {
        for (const [op, key] of JSON.parse(dec.decode(e.data)) as LiveOp[]) {
          if (op === 1) durable.add(key);
          else durable.delete(key);
        }
        seq = e.seq;
      }
      if (s.dead) return;
      s.durable = durable;
      s.seq = seq;
      s.snapshotSeq = snap ? snap.seq : 0;
      // Changes made while loading come after what the store holds.
      const users = new Set(durable);
      for (const [op, key] of s.ops) {
        if (op === 1) users.add(key);
        else users.delete(key);
      }
      s.byRealm = new Map();
      s.size = 0;
      for (const key of users) setUser(s, key, true);
      s.loaded = true;
      // The index: every user's subscriptions, with the changes seen since
      // the shard was acquired applied after (see fetchSubs).
      const early = s.early ?? [];
      s.early = null;
      for (const key of users) s.fetching.set(key, []);
      for (const [key, op] of early) s.fetching.get(key)?.push(op);
      if (users.size) this.fetchSubs(shard, s, [...users]);
      else this.wake(s);
      if (s.ops.length) void this.write(shard, s);
    } catch (err) {
      log().warn({ shard, err: String(err) }, "could not load the shard's queue registry; delivering to all");
      this.fail(shard, s, err);
    }
  }

  /** One append at a time per shard; changes made meanwhile share the next one. */
  private async write(shard: number, s: LiveShard): Promise<void> {
    const store = this.host.store!;
    s.writing = true;
    try {
      while (s.ops.length && !s.dead) {
        const ops = s.ops;
        const d = s.next!;
        s.ops = [];
        s.next = null;
        try {
          await store.append(shard, s.epoch, liveQueuesId(shard), s.seq + 1, [
            enc.encode(JSON.stringify(ops)),
          ]);
        } catch (err) {
          d.reject(err);
          this.fail(shard, s, err);
          return;
        }
        s.seq++;
        for (const [op, key] of ops) {
          if (op === 1) s.durable.add(key);
          else s.durable.delete(key);
        }
        d.resolve();
        if (s.seq - s.snapshotSeq >= LIVE_SNAPSHOT_EVERY) {
          const snapshot = { seq: s.seq, data: JSON.stringify([...s.durable]) };
          await store.saveSnapshot(shard, s.epoch, liveQueuesId(shard), snapshot).then(
            () => (s.snapshotSeq = snapshot.seq),
            () => {}, // the journal still holds it all; tried again after the next write
          );
        }
      }
    } finally {
      s.writing = false;
    }
  }

  /**
   * What this node knows of the shard may differ from the store now: forget
   * it (nobody of the shard is skipped) and load it again.
   */
  private fail(shard: number, s: LiveShard, err: unknown): void {
    if (s.dead) return;
    s.next?.reject(err);
    this.forget(shard);
    setTimeout(() => {
      if (!this.shards.has(shard) && this.host.serves(shard)) this.acquired(shard);
    }, 1000).unref();
  }
}
