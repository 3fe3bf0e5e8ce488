// The queue shards' event logs: each batch of events the router delivers to
// users of a queue shard is stored ONCE, as one entry of the shard's log, by
// the shard's owner, before any of those users' queue actors is given it.
// The queue actors then apply it in memory, without a journal write of
// their own (actors/queue/behavior.ts); their snapshots record how far into
// the log they are, and an activation (after a failover or a passivation)
// replays the entries for its user after that position (Behavior.sideLog,
// cluster/catalog/activation.ts). docs/events.md, "The event log".
//
// Layout: a journal and a snapshot in the store under the shard, beside
// its actors (`queue.0.~events.<shard>`; no actor runs there), written
// under the shard's lease epoch, so a node that lost the shard cannot
// write it. An entry is `{k: key, r: realm, t: ms, e: [events], a: [users
// that get every event], s: [[user, index...]...] (users that get some)}`;
// the events are those the router was given (a message event carries each
// recipient's flags), shaped per queue by the actor.
//
// The node that serves a shard holds the log's retained part in memory
// (loaded once when it takes the shard), indexed by user, so activations
// and deliveries read it without a store read. Trimming: an entry goes once
// every user it lists has a snapshot past it. The node tracks, per user,
// the first listed entry its queue actor's snapshots do not cover
// (`LogUser.unsaved`, told by Catalog's `sideSaved`); a queue actor
// snapshots within a minute of applying entries (UNSAVED_MS) and at
// passivation, and entries still unsaved after STALE_MS (a takeover: the
// new owner cannot know which were saved) are caught up by a `catchUp` turn
// to their user's queue actor, whose activation and snapshot then count.

import { queueRef } from "../actors/index.ts";
import type { Obj } from "../actors/types.ts";
import { actorId, shardOf } from "./addressing.ts";
import { UNSAVED_MS, type SideFact } from "./catalog.ts";
import { componentLogger, type Logger } from "./log.ts";
import type { RouterHost } from "./event-router.ts";

const log = (): Logger => componentLogger("event-log");

/** How long a delivery waits for its shard's log to be loaded. */
const LOAD_WAIT_MS = 15_000;
/** Trimmed at most this often (a snapshot write, after a scan of the shard's users). */
const TRIM_EVERY_MS = 1_000;
/** Unsaved entries are looked for this often. */
const SWEEP_MS = 30_000;
/** An entry unsaved for this long makes its users' queue actors catch up (and so snapshot). */
const STALE_MS = 3 * UNSAVED_MS;
/** Catch-ups started per sweep. */
const SWEEP_BATCH = 256;
const ATTEMPT_MS = 2_000;

/** Store id of a shard's event log (journal + snapshot; no actor ever runs under it). */
export function eventLogId(shard: number): string {
  return actorId({ kind: "queue", realm: 0, key: `~events.${shard}` });
}

interface LogEntry {
  pos: number;
  /** When it was appended (ms since the epoch). */
  at: number;
  key: string;
  realm: number;
  events: Obj[];
  /** Users that get only some of `events`: their indexes, in order. Every other listed user gets all. */
  some: Map<number, number[]> | null;
  /** Until the entry is durable: settles when it is (or rejects when its append failed). */
  durable: Promise<number> | null;
}

interface LogUser {
  /** Positions of the entries that list the user, ascending (the last ones may not be durable yet). */
  pos: number[];
  /** The first of them that the user's queue actor's snapshots do not cover; 0: none. */
  unsaved: number;
}

/** The stored form of an entry. */
interface Stored {
  k: string;
  r: number;
  t: number;
  e: Obj[];
  a: number[];
  s?: number[][];
}

interface Pending {
  entry: LogEntry;
  data: Uint8Array;
  resolve: (pos: number) => void;
  reject: (err: unknown) => void;
}

interface LogShard {
  epoch: number;
  loaded: boolean;
  /** Gone (shard lost, or a write failed): this object no longer speaks for the shard. */
  dead: boolean;
  /** Settles when the load ended (loaded or failed). */
  loading: Promise<void>;
  /** Entries up to here are gone from the store. */
  trimmed: number;
  /** The entries after `trimmed`, in order (entries[i].pos = trimmed + 1 + i); those after `head` are being written. */
  entries: LogEntry[];
  /** Position of the last durable entry. */
  head: number;
  /** Position the next appended entry gets. */
  next: number;
  users: Map<number, Map<number, LogUser>>;
  /** Entries not written yet, in order; one append at a time, later ones share the next. */
  pending: Pending[];
  writing: boolean;
  lastTrim: number;
  trimming: boolean;
  sweep: NodeJS.Timeout | null;
}

const noop = (): void => {};
const enc = new TextEncoder();
const dec = new TextDecoder();
const COMMA = enc.encode(",");

/** An event's JSON text and its UTF-8 bytes. */
interface EventText {
  text: string;
  bytes: Uint8Array;
}

/** The first index of `xs` (ascending) whose value is > `after`. */
function firstAfter(xs: readonly number[], after: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The event logs of the queue shards this node serves. Without a store (unit
 * tests with a fake host) it is off, and the router gives each queue actor
 * its events to journal, as before the log.
 */
export class EventLog {
  private readonly shards = new Map<number, LogShard>();
  /** The last append made per shard, until it settles (settled()), even after the shard is forgotten. */
  private readonly last = new Map<number, Promise<number>>();
  /** `appended`: entries written; `caughtUp`: catch-up turns asked for by the sweep. */
  readonly stats = { appended: 0, trimmed: 0, caughtUp: 0 };

  /**
   * Each event's JSON text and its UTF-8 bytes, kept briefly (dropped at
   * the event loop's next check phase): the router hands one channel
   * message's event to the entries of every shard its recipients live in
   * (up to all of them) in one pass, and it is serialized and encoded once
   * instead of once per shard. Events are never changed once emitted; the
   * map does not outlive the pass by much anyway.
   */
  private texts: WeakMap<Obj, EventText> | null = null;

  constructor(private readonly host: RouterHost) {}

  private encodedOf(ev: Obj): EventText {
    let texts = this.texts;
    if (texts === null) {
      texts = this.texts = new WeakMap();
      setImmediate(() => (this.texts = null));
    }
    let t = texts.get(ev);
    if (t === undefined) {
      const text = JSON.stringify(ev);
      texts.set(ev, (t = { text, bytes: enc.encode(text) }));
    }
    return t;
  }

  private textOf(ev: Obj): string {
    return this.encodedOf(ev).text;
  }

  get enabled(): boolean {
    return this.host.store !== undefined && this.host.epoch !== undefined;
  }

  /** This node now serves `shard`: load its log. */
  acquired(shard: number): void {
    const store = this.host.store;
    const epoch = this.host.epoch?.(shard) ?? null;
    if (!store || epoch === null) return;
    this.forget(shard);
    const s: LogShard = {
      epoch,
      loaded: false,
      dead: false,
      loading: Promise.resolve(),
      trimmed: 0,
      entries: [],
      head: 0,
      next: 1,
      users: new Map(),
      pending: [],
      writing: false,
      lastTrim: Date.now(),
      trimming: false,
      sweep: null,
    };
    this.shards.set(shard, s);
    s.loading = this.load(shard, s);
  }

  /** This node no longer serves `shard`. */
  forget(shard: number): void {
    const s = this.shards.get(shard);
    if (!s) return;
    s.dead = true;
    this.shards.delete(shard);
    if (s.sweep !== null) clearInterval(s.sweep);
    const err = new Error(`shard ${shard} moved`);
    for (const p of s.pending.splice(0)) p.reject(err);
  }

  /** True once `shard`'s log is loaded here (waits for it up to LOAD_WAIT_MS); false when it cannot be. */
  async ready(shard: number): Promise<boolean> {
    const until = Date.now() + LOAD_WAIT_MS;
    for (;;) {
      const s = this.shards.get(shard);
      if (s?.loaded) return true;
      if (!this.host.serves(shard) || Date.now() >= until) return false;
      if (!s) this.acquired(shard);
      const s2 = this.shards.get(shard);
      await Promise.race([
        s2?.loading ?? Promise.resolve(),
        new Promise((res) => setTimeout(res, 250).unref()),
      ]);
    }
  }

  /** Whether `shard`'s log is loaded here (append() may be called). */
  isReady(shard: number): boolean {
    return this.shards.get(shard)?.loaded === true;
  }

  /**
   * Append one batch's events for the listed users of `shard` (each user
   * with its events, in order; isReady() first). The entry takes its
   * position at once, and readers of the log see it at once but wait for
   * it to be durable (facts(), replay()), so a queue actor told of it now
   * applies it no sooner. `durable` resolves once it is; rejects when it
   * could not be written, and then so does every entry appended after it
   * (the log is loaded again).
   */
  append(
    shard: number,
    realm: number,
    key: string,
    users: readonly [number, Obj[]][],
  ): { entry: number; durable: Promise<number> } {
    const s = this.shards.get(shard);
    if (!s?.loaded) {
      const durable = Promise.reject(new Error(`the event log of shard ${shard} is not loaded here`));
      durable.catch(noop);
      return { entry: 0, durable };
    }
    const events: Obj[] = [];
    const byRef = new Map<Obj, number>();
    let byText: Map<string, number> | null = null;
    const indexOf = (ev: Obj): number => {
      let i = byRef.get(ev);
      if (i !== undefined) return i;
      // Events of a batch another node sent arrive as one copy per user: store one.
      const text = this.textOf(ev);
      i = (byText ??= new Map()).get(text);
      if (i === undefined) {
        i = events.push(ev) - 1;
        byText.set(text, i);
      }
      byRef.set(ev, i);
      return i;
    };
    // Most users of a batch share one list of events (a channel's message
    // expanded to its subscribers): each distinct list is indexed once.
    const lists: number[][] = new Array<number[]>(users.length);
    let prev: readonly Obj[] | null = null;
    let prevIdx: number[] = [];
    for (let u = 0; u < users.length; u++) {
      const evs = users[u]![1];
      if (prev === null || !sameRefs(evs, prev)) {
        prevIdx = evs.map(indexOf);
        prev = evs;
      }
      lists[u] = prevIdx;
    }
    const all: number[] = [];
    const some = new Map<number, number[]>();
    let checked: number[] | null = null;
    let whole = false;
    for (let u = 0; u < users.length; u++) {
      const idx = lists[u]!;
      if (idx !== checked) {
        checked = idx;
        whole = idx.length === events.length && idx.every((x, i) => x === i);
      }
      if (whole) all.push(users[u]![0]);
      else some.set(users[u]![0], idx);
    }
    const entry: LogEntry = {
      pos: s.next++,
      at: Date.now(),
      key,
      realm,
      events,
      some: some.size ? some : null,
      durable: null,
    };
    // The Stored form's JSON as bytes, each event's made once per pass (encodedOf).
    const parts: Uint8Array[] = [
      enc.encode(
        `{"k":${JSON.stringify(key)},"r":${JSON.stringify(realm)},"t":${JSON.stringify(entry.at)},"e":[`,
      ),
    ];
    for (let i = 0; i < events.length; i++) {
      if (i) parts.push(COMMA);
      parts.push(this.encodedOf(events[i]!).bytes);
    }
    let tail = `],"a":${JSON.stringify(all)}`;
    if (some.size) tail += `,"s":${JSON.stringify([...some].map(([userId, idx]) => [userId, ...idx]))}`;
    parts.push(enc.encode(tail + "}"));
    const data = Buffer.concat(parts);
    const durable = new Promise<number>((resolve, reject) => {
      s.pending.push({ entry, data, resolve, reject });
      if (!s.writing) void this.write(shard, s);
    });
    // Its readers handle a failure; nobody else must see an unhandled rejection.
    durable.catch(noop);
    entry.durable = durable;
    this.index(
      s,
      entry,
      users.map(([userId]) => userId),
    );
    this.last.set(shard, durable);
    const forget = () => {
      if (this.last.get(shard) === durable) this.last.delete(shard);
    };
    durable.then(forget, forget);
    return { entry: entry.pos, durable };
  }

  /** Whether an append of `shard` made here has not settled yet. */
  busy(shard: number): boolean {
    return this.last.has(shard);
  }

  /**
   * Settles once every append of `shard` made so far has (appends settle in
   * order), and after their callers' own handlers of the outcome.
   */
  settled(shard: number): Promise<void> {
    const last = this.last.get(shard);
    return last === undefined ? Promise.resolve() : last.then(noop, noop);
  }

  /**
   * The user's entries after `after` (up to `upTo`), as the facts its
   * queue actor replays, once they are durable; rejects when the log cannot be had
   * here or one of them could not be written.
   */
  async replay(
    shard: number,
    realm: number,
    userId: number,
    after: number,
    upTo = Infinity,
  ): Promise<SideFact[]> {
    if (!this.enabled) return [];
    if (!this.isReady(shard) && !(await this.ready(shard)))
      throw new Error(`the event log of shard ${shard} is not available here`);
    const s = this.shards.get(shard)!;
    const u = s.users.get(realm)?.get(userId);
    if (!u) return [];
    const out: SideFact[] = [];
    let last: LogEntry | null = null;
    for (let i = firstAfter(u.pos, after); i < u.pos.length && u.pos[i]! <= upTo; i++) {
      const e = (last = s.entries[u.pos[i]! - s.trimmed - 1]!);
      const idx = e.some?.get(userId);
      const events = idx === undefined ? e.events : idx.map((x) => e.events[x]!);
      out.push({ pos: e.pos, at: e.at, fact: { type: "logged", entry: e.pos, key: e.key, events } });
    }
    // Entries become durable in order: waiting for the last is waiting for all.
    if (last?.durable) await last.durable;
    return out;
  }

  /**
   * For a turn (ctx.sideLogNow): the user's entries after `after` (up to
   * `upTo`) as facts, when the log is loaded here and every one of them is
   * durable; otherwise null (read them with `facts`, which waits).
   */
  factsNow(shard: number, realm: number, userId: number, after: number, upTo = Infinity): Obj[] | null {
    const s = this.shards.get(shard);
    if (s === undefined || !s.loaded) return null;
    const u = s.users.get(realm)?.get(userId);
    if (!u) return [];
    const out: Obj[] = [];
    for (let i = firstAfter(u.pos, after); i < u.pos.length && u.pos[i]! <= upTo; i++) {
      const e = s.entries[u.pos[i]! - s.trimmed - 1]!;
      if (e.durable !== null) return null;
      const idx = e.some?.get(userId);
      const events = idx === undefined ? e.events : idx.map((x) => e.events[x]!);
      out.push({ type: "logged", entry: e.pos, key: e.key, events });
    }
    return out;
  }

  /** For a turn (ctx.sideLog): the user's entries after `after` (up to `upTo`), as facts. */
  async facts(shard: number, realm: number, userId: number, after: number, upTo?: number): Promise<Obj[]> {
    return (await this.replay(shard, realm, userId, after, upTo)).map((f) => f.fact);
  }

  /** Position of the last entry listing the user (0: none known). */
  head(shard: number, realm: number, userId: number): number {
    const pos = this.shards.get(shard)?.users.get(realm)?.get(userId)?.pos;
    return pos === undefined || pos.length === 0 ? 0 : pos[pos.length - 1]!;
  }

  /** The user's queue actor has a snapshot (or was loaded from one) holding the log up to `position`. */
  saved(shard: number, realm: number, userId: number, position: number): void {
    const u = this.shards.get(shard)?.users.get(realm)?.get(userId);
    if (!u || u.unsaved === 0 || u.unsaved > position) return;
    const i = firstAfter(u.pos, position);
    u.unsaved = i < u.pos.length ? u.pos[i]! : 0;
  }

  /** Retained entries of a shard (tests, inspection); null while not loaded here. */
  size(shard: number): number | null {
    const s = this.shards.get(shard);
    return s?.loaded ? s.entries.length : null;
  }

  private async load(shard: number, s: LogShard): Promise<void> {
    const store = this.host.store!;
    const id = eventLogId(shard);
    try {
      const snap = await store.loadSnapshot(shard, id);
      const trimmed = snap ? snap.seq : 0;
      const stored = await store.readJournal(shard, id, trimmed);
      if (s.dead) return;
      s.trimmed = s.head = trimmed;
      for (const j of stored) {
        const o = JSON.parse(dec.decode(j.data)) as Stored;
        let some: Map<number, number[]> | null = null;
        for (const [userId, ...idx] of o.s ?? []) (some ??= new Map()).set(userId!, idx);
        const entry: LogEntry = {
          pos: j.seq,
          at: o.t,
          key: o.k,
          realm: o.r,
          events: o.e,
          some,
          durable: null,
        };
        // Which users' snapshots cover it is not known here: every listed user counts as unsaved.
        this.index(s, entry, some === null ? o.a : [...o.a, ...some.keys()]);
        s.head = entry.pos;
      }
      s.next = s.head + 1;
      s.loaded = true;
      s.sweep = setInterval(() => this.sweep(shard, s), SWEEP_MS);
      s.sweep.unref();
    } catch (err) {
      log().warn({ shard, err: String(err) }, "could not load the shard's event log; retrying");
      this.fail(shard, s);
    }
  }

  /** An entry joins the retained part and its users' indexes (an unsaved one for each). */
  private index(s: LogShard, entry: LogEntry, users: readonly number[]): void {
    s.entries.push(entry);
    let byUser = s.users.get(entry.realm);
    if (!byUser) s.users.set(entry.realm, (byUser = new Map()));
    for (const userId of users) {
      let u = byUser.get(userId);
      if (!u) byUser.set(userId, (u = { pos: [], unsaved: 0 }));
      u.pos.push(entry.pos);
      if (u.unsaved === 0) u.unsaved = entry.pos;
    }
  }

  /** One append at a time per shard; entries appended meanwhile share the next. */
  private async write(shard: number, s: LogShard): Promise<void> {
    const store = this.host.store!;
    s.writing = true;
    try {
      while (s.pending.length && !s.dead) {
        const batch = s.pending.splice(0);
        try {
          await store.append(
            shard,
            s.epoch,
            eventLogId(shard),
            batch[0]!.entry.pos,
            batch.map((p) => p.data),
          );
        } catch (err) {
          if (!s.dead) log().warn({ shard, err: String(err) }, "event log append failed; reloading the log");
          for (const p of batch) p.reject(err);
          this.fail(shard, s);
          return;
        }
        if (s.dead) {
          // Written, but the shard moved meanwhile: the next owner loads it.
          for (const p of batch) p.resolve(p.entry.pos);
          continue;
        }
        s.head = batch[batch.length - 1]!.entry.pos;
        this.stats.appended += batch.length;
        for (const p of batch) {
          p.entry.durable = null;
          p.resolve(p.entry.pos);
        }
      }
    } finally {
      s.writing = false;
    }
    if (Date.now() - s.lastTrim >= TRIM_EVERY_MS) void this.trim(shard, s);
  }

  /**
   * Drop the entries no user needs: those before the first entry some user's
   * snapshots do not cover. A snapshot of the log at that position drops
   * them from the store too.
   */
  private async trim(shard: number, s: LogShard): Promise<void> {
    if (s.trimming || s.dead || !s.loaded) return;
    s.lastTrim = Date.now();
    let first = Infinity;
    for (const byUser of s.users.values())
      for (const u of byUser.values()) if (u.unsaved) first = Math.min(first, u.unsaved);
    const to = Math.min(first - 1, s.head);
    if (to <= s.trimmed) return;
    s.trimming = true;
    try {
      await this.host.store!.saveSnapshot(shard, s.epoch, eventLogId(shard), { seq: to, data: "{}" });
    } catch (err) {
      log().warn({ shard, err: String(err) }, "could not trim the shard's event log");
      return;
    } finally {
      s.trimming = false;
    }
    if (s.dead) return;
    s.entries.splice(0, to - s.trimmed);
    s.trimmed = to;
    this.stats.trimmed++;
    for (const [realm, byUser] of s.users) {
      for (const [userId, u] of byUser) {
        const keep = firstAfter(u.pos, to);
        if (keep === u.pos.length && u.unsaved === 0) byUser.delete(userId);
        else if (keep > 0) u.pos.splice(0, keep);
      }
      if (byUser.size === 0) s.users.delete(realm);
    }
  }

  /**
   * Users whose entries stayed unsaved too long (after a takeover, or an
   * actor that has not snapshotted): a `catchUp` turn activates their queue
   * actor, which applies what it lacks and snapshots. Then trim.
   */
  private sweep(shard: number, s: LogShard): void {
    if (s.dead || !s.loaded) return;
    const stale = Date.now() - STALE_MS;
    let asked = 0;
    users: for (const [realm, byUser] of s.users) {
      for (const [userId, u] of byUser) {
        if (u.unsaved === 0 || s.entries[u.unsaved - s.trimmed - 1]!.at > stale) continue;
        if (++asked > SWEEP_BATCH) break users;
        this.stats.caughtUp++;
        const ref = queueRef(realm, userId);
        void this.host
          .request({
            ref,
            shard: shardOf(ref, this.host.shards),
            method: "catchUp",
            args: {},
            caller: null,
            deadline: Date.now() + ATTEMPT_MS,
            replyGraceMs: 0,
          })
          .catch(() => {});
      }
    }
    void this.trim(shard, s);
  }

  /** What this node knows of the shard's log may differ from the store now: load it again. */
  private fail(shard: number, s: LogShard): void {
    if (s.dead) return;
    this.forget(shard);
    setTimeout(() => {
      if (!this.shards.has(shard) && this.host.serves(shard)) this.acquired(shard);
    }, 1000).unref();
  }
}

/** Whether two lists hold the same objects in the same order. */
function sameRefs(a: readonly Obj[], b: readonly Obj[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
