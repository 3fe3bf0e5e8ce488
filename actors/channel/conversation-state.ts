// State of a conversation actor (channel kind, key = channel id, or
// "dm:<sorted user ids>" for a direct-message conversation).
//
// The messages live in the store, on the conversation's shard
// (docs/storage.md): a record per message and ordered id indexes, one for
// the conversation and one per lowercased topic, written with the facts
// that change them (Decision.writes). The state keeps only what decisions
// need and what stays bounded by something other than history length:
// counters, per-topic summaries (message count and how many messages each
// sender wrote: topic wildcard mentions reach a topic's participants), a
// window of the most recent messages (every message with id >= `recentFrom`,
// at most RECENT of them) and, outside the snapshot, an LRU of bodies read
// from the store. Reads go through `getMsgs` / `idsRange` / `allIds`, which
// answer from the window when it is provably complete for the range, and
// from the store otherwise.
//
// State written by older code held every message (`ids`, `msgs`): it loads
// as `legacy`, and `upgradeConv` (Behavior.upgrade) moves it into the store
// in batches, each a `legacyStored` fact appended with its writes.
//
// SNAPSHOT NOTE: a field added to ConvState or Msg needs a default in
// `convFromSnapshot`, because snapshots written before it lack it.

import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { ActorContext, ActorRef, IndexRange, Obj, RecordWrite } from "../types.ts";
import { insertId, lowerBound, removeId } from "../sorted-ids.ts";
import { forgetMessageJson } from "./message-json.ts";

export interface Reaction {
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
  user_id: number;
}

export interface Msg {
  id: number;
  senderId: number;
  senderEmail: string;
  senderName: string;
  senderAvatarVersion: number;
  /** "J": the sender's avatar is a Jdenticon (absent in older messages and for gravatars). */
  senderAvatarSource?: "J";
  client: string;
  /** Markdown source and its rendering. */
  content: string;
  rendered: string;
  /** "" for direct messages and the empty channel topic. */
  topic: string;
  /** Linkifier matches in the topic (Zulip's topic_links); absent in old snapshots. */
  topicLinks?: { text: string; url: string }[];
  /** UNIX seconds. */
  timestamp: number;
  reactions: Reaction[];
  lastEditTimestamp: number | null;
  lastMovedTimestamp: number | null;
  /** Newest first (Zulip's edit_history). */
  editHistory: Obj[];
  /** Users mentioned by the current content. */
  mentioned: number[];
  isMe: boolean;
}

/** One topic: how many messages it has, and how many of them each sender wrote. */
export interface TopicSummary {
  count: number;
  senders: Map<number, number>;
}

export interface ConvState {
  key: string;
  realmId: number;
  /** Direct messages: the participants as display_recipient shows them. */
  dmRecipients: Obj[] | null;
  /** Messages in the conversation. */
  count: number;
  /** Lowercased topic -> its summary (topics with messages only). */
  topics: Map<string, TopicSummary>;
  /** Every message of the conversation with id >= recentFrom is in `recent`. */
  recentFrom: number;
  /** The recent window: ids ascending, and the messages. */
  recentIds: number[];
  recent: Map<number, Msg>;
  /** Bodies read from the store (not in snapshots; dropped with the activation). */
  cache: LRUCache<number, Msg> | null;
  /**
   * Bumped when a fact drops a cached body (not in snapshots). A reader
   * (Behavior.readers) runs while facts are applied: a body it read from
   * the store before a change was applied is not cached after it.
   */
  cacheGen: number;
  /**
   * Not in snapshots: every id of the conversation from `from` up,
   * ascending (`from` 0: all of them), read from the store by the first
   * range the recent window cannot answer (the newest TAIL ids) and kept
   * up to date by the facts that add and remove messages, so that reads
   * near the newest message (GET /messages' usual window) take no store
   * range read. Bounded: past 2 × TAIL ids the oldest TAIL are dropped.
   */
  tail?: { from: number; ids: number[] };
  /**
   * Counts the adds and removals applied (not in snapshots): a tail read
   * from the store while one was applied is used once, not kept.
   */
  tailGen?: number;
  /** Old-shape content not yet moved into the store (upgradeConv). */
  legacy: { ids: number[]; msgs: Record<string, Msg> } | null;
  /**
   * The latest SEND_KEYS_KEPT send keys and the message each sent, oldest
   * first: a delivery retried after a crash finds its message here.
   */
  sendKeys: [string, number][];
  /**
   * Moves to another channel this conversation decided and has not yet
   * completed (`moveDecided` until `moveDone`): a move's hand-off completes
   * one of these at most once, and a request repeated meanwhile joins it
   * (actors/channel/move.ts).
   */
  moves: PendingMove[];
  /**
   * The latest MOVE_KEYS_KEPT moves taken in here, oldest first, with
   * whether the target topic held other messages: a repeated hand-off
   * answers the first `moveIn`'s outcome and adds nothing.
   */
  movedIn: [string, boolean][];
  /** A DM conversation: this activation listed it with the directory (retention.ts; not in snapshots). */
  dmListed?: boolean;
}

/** A decided move (ConvState.moves): its id, target channel and topic, and the messages it takes. */
export interface PendingMove {
  id: string;
  target: number;
  topic: string;
  ids: number[];
}

export const SEND_KEYS_KEPT = 1000;
export const MOVE_KEYS_KEPT = 1000;

/** Messages kept in the recent window (and so in the snapshot). */
let RECENT = 50;
/** Bodies an activation keeps in its LRU. */
export const BODY_CACHE = 1000;
/** Conversation ids an activation keeps from the newest back (ConvState.tail; 0: none). */
let TAIL = 1000;
/** Old-shape messages moved into the store per append at activation. */
export const CONVERT_BATCH = 1000;
/** Ids read per store range when a read needs a whole index. */
const PAGE = 5000;

/** Test hook: the id tail's size (ConvState.tail; 0 keeps none). */
export function setIdTail(n: number): number {
  const old = TAIL;
  TAIL = n;
  return old;
}

/** Test hook: the recent window's bound (build states after setting it). */
export function setRecentWindow(n: number): number {
  const old = RECENT;
  RECENT = n;
  return old;
}

export type ConvFact =
  /**
   * `stored`: the message's record and index entries were written with the
   * fact. Facts of older code lack it: their message exists only in the
   * state, so it goes to `legacy` and into the store at activation.
   */
  | { type: "msgAdded"; msg: Msg; stored?: true; dmRecipients?: Obj[]; sendKey?: string }
  /** `was`: the message's topic and sender before, for the summaries when the topic changes. */
  | { type: "msgChanged"; id: number; changes: Obj; was?: { topic: string; senderId: number } }
  | { type: "msgRemoved"; id: number; topic?: string; senderId?: number }
  | { type: "legacyStored"; ids: number[] }
  /** A move to another channel, decided here (source); `moveDone` when its completion ran. */
  | { type: "moveDecided"; move: PendingMove }
  | { type: "moveDone"; move: string }
  /** A move taken in here (target). */
  | { type: "movedIn"; move: string; preexisting: boolean };

export function initialConv(ref: ActorRef): ConvState {
  return {
    key: ref.key,
    realmId: ref.realm,
    dmRecipients: null,
    count: 0,
    topics: new Map(),
    recentFrom: 0,
    recentIds: [],
    recent: new Map(),
    cache: null,
    cacheGen: 0,
    legacy: null,
    sendKeys: [],
    moves: [],
    movedIn: [],
  };
}

// ---- store layout ------------------------------------------------------------------

/**
 * A conversation's name in its record and index keys, which all start with
 * it and a ":" (a restore places them by it); a long DM key is hashed to
 * stay short.
 */
export function recordNamespace(realmId: number, key: string): string {
  const k = key.length > 64 ? "h" + createHash("sha256").update(key).digest("hex") : key;
  return `${realmId}:c:${k}`;
}

function ns(state: Pick<ConvState, "realmId" | "key">): string {
  return recordNamespace(state.realmId, state.key);
}

export function msgKey(state: Pick<ConvState, "realmId" | "key">, id: number): string {
  return `${ns(state)}:m:${id}`;
}

export function convIndex(state: Pick<ConvState, "realmId" | "key">): string {
  return `${ns(state)}:ids`;
}

export function topicIndex(state: Pick<ConvState, "realmId" | "key">, topic: string): string {
  return `${ns(state)}:t:${topic.toLowerCase()}`;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function encodeMsg(m: Msg): Uint8Array {
  return enc.encode(JSON.stringify(m));
}

/** The writes that store new messages (a put each, index adds grouped per index). */
export function addWrites(state: Pick<ConvState, "realmId" | "key">, msgs: Msg[]): RecordWrite[] {
  const out: RecordWrite[] = msgs.map((m) => ({ op: "put", key: msgKey(state, m.id), value: encodeMsg(m) }));
  if (!msgs.length) return out;
  out.push({ op: "index", index: convIndex(state), add: msgs.map((m) => m.id) });
  const byTopic = new Map<string, number[]>();
  for (const m of msgs) {
    const name = topicIndex(state, m.topic);
    const list = byTopic.get(name) ?? byTopic.set(name, []).get(name)!;
    list.push(m.id);
  }
  for (const [index, add] of byTopic) out.push({ op: "index", index, add });
  return out;
}

/** The writes that drop messages. */
export function removeWrites(state: Pick<ConvState, "realmId" | "key">, msgs: Msg[]): RecordWrite[] {
  const out: RecordWrite[] = msgs.map((m) => ({ op: "delete", key: msgKey(state, m.id) }));
  if (!msgs.length) return out;
  out.push({ op: "unindex", index: convIndex(state), remove: msgs.map((m) => m.id) });
  const byTopic = new Map<string, number[]>();
  for (const m of msgs) {
    const name = topicIndex(state, m.topic);
    const list = byTopic.get(name) ?? byTopic.set(name, []).get(name)!;
    list.push(m.id);
  }
  for (const [index, remove] of byTopic) out.push({ op: "unindex", index, remove });
  return out;
}

/** A msgChanged fact of `old` and its writes (the new body; the topic indexes when the topic changes). */
export function changeOf(
  state: Pick<ConvState, "realmId" | "key">,
  old: Msg,
  changes: Obj,
): { fact: Obj; writes: RecordWrite[] } {
  const next = { ...old, ...(structuredClone(changes) as Partial<Msg>) };
  const writes: RecordWrite[] = [{ op: "put", key: msgKey(state, old.id), value: encodeMsg(next) }];
  const f: ConvFact = { type: "msgChanged", id: old.id, changes };
  if ("topic" in changes || "senderId" in changes) {
    f.was = { topic: old.topic, senderId: old.senderId };
    const from = topicIndex(state, old.topic);
    const to = topicIndex(state, next.topic);
    if (from !== to)
      writes.push(
        { op: "unindex", index: from, remove: [old.id] },
        { op: "index", index: to, add: [old.id] },
      );
  }
  return { fact: f as unknown as Obj, writes };
}

/** msgRemoved facts of `msgs` (with what the summaries need). */
export function removedFacts(msgs: Msg[]): Obj[] {
  return msgs.map(
    (m) => ({ type: "msgRemoved", id: m.id, topic: m.topic, senderId: m.senderId }) as unknown as Obj,
  );
}

// ---- apply ---------------------------------------------------------------------------

function summaryAdd(state: ConvState, topic: string, senderId: number): void {
  const key = topic.toLowerCase();
  let t = state.topics.get(key);
  if (!t) state.topics.set(key, (t = { count: 0, senders: new Map() }));
  t.count++;
  t.senders.set(senderId, (t.senders.get(senderId) ?? 0) + 1);
}

function summaryRemove(state: ConvState, topic: string, senderId: number): void {
  const key = topic.toLowerCase();
  const t = state.topics.get(key);
  if (!t) return;
  t.count--;
  const n = (t.senders.get(senderId) ?? 0) - 1;
  if (n > 0) t.senders.set(senderId, n);
  else t.senders.delete(senderId);
  if (t.count <= 0) state.topics.delete(key);
}

/** A message added (any id, also one moved in) or removed: the id tail follows. */
function tailAdded(state: ConvState, id: number): void {
  state.tailGen = (state.tailGen ?? 0) + 1;
  const t = state.tail;
  if (t === undefined || id < t.from) return;
  insertId(t.ids, id);
  if (t.ids.length > 2 * TAIL) {
    const cut = t.ids.length - TAIL;
    t.from = t.ids[cut]!;
    t.ids = t.ids.slice(cut);
  }
}

function tailRemoved(state: ConvState, id: number): void {
  state.tailGen = (state.tailGen ?? 0) + 1;
  if (state.tail !== undefined) removeId(state.tail.ids, id);
}

function added(state: ConvState, m: Msg): void {
  tailAdded(state, m.id);
  const old = state.recent.get(m.id);
  if (old) summaryRemove(state, old.topic, old.senderId);
  else state.count++;
  summaryAdd(state, m.topic, m.senderId);
  if (state.cache?.delete(m.id)) state.cacheGen++;
  if (m.id < state.recentFrom) return;
  if (!old) insertId(state.recentIds, m.id);
  state.recent.set(m.id, m);
  while (state.recentIds.length > RECENT) {
    const oldest = state.recentIds.shift()!;
    state.recent.delete(oldest);
    state.recentFrom = oldest + 1;
  }
}

/** Old-shape apply, on the legacy content (journals written before the store held messages). */
function applyLegacy(legacy: NonNullable<ConvState["legacy"]>, fact: ConvFact): void {
  switch (fact.type) {
    case "msgAdded": {
      const m = structuredClone(fact.msg);
      if (!legacy.msgs[String(m.id)]) insertId(legacy.ids, m.id);
      legacy.msgs[String(m.id)] = m;
      break;
    }
    case "msgChanged": {
      const m = legacy.msgs[String(fact.id)];
      if (m) {
        Object.assign(m, structuredClone(fact.changes));
        forgetMessageJson(m);
      }
      break;
    }
    case "msgRemoved":
      if (legacy.msgs[String(fact.id)]) {
        delete legacy.msgs[String(fact.id)];
        removeId(legacy.ids, fact.id);
      }
      break;
    default:
      break;
  }
}

export function applyConvFact(state: ConvState, raw: Obj): ConvState {
  const fact = raw as unknown as ConvFact;
  switch (fact.type) {
    case "moveDecided":
      state.moves.push(structuredClone(fact.move));
      return state;
    case "moveDone":
      state.moves = state.moves.filter((m) => m.id !== fact.move);
      return state;
    case "movedIn":
      state.movedIn.push([fact.move, fact.preexisting]);
      if (state.movedIn.length > MOVE_KEYS_KEPT) state.movedIn.shift();
      return state;
    default:
      break;
  }
  if (fact.type === "msgAdded" && fact.dmRecipients) state.dmRecipients = structuredClone(fact.dmRecipients);
  // An old journal without an old snapshot starts with an unstored add.
  if (!state.legacy && fact.type === "msgAdded" && fact.stored !== true) state.legacy = { ids: [], msgs: {} };
  if (state.legacy && fact.type !== "legacyStored") {
    applyLegacy(state.legacy, fact);
    return state;
  }
  switch (fact.type) {
    case "msgAdded":
      added(state, structuredClone(fact.msg));
      if (fact.sendKey !== undefined) {
        state.sendKeys.push([fact.sendKey, fact.msg.id]);
        if (state.sendKeys.length > SEND_KEYS_KEPT) state.sendKeys.shift();
      }
      break;
    case "msgChanged": {
      const m = state.recent.get(fact.id);
      const was = m ? { topic: m.topic, senderId: m.senderId } : fact.was;
      if (was && ("topic" in fact.changes || "senderId" in fact.changes)) {
        summaryRemove(state, was.topic, was.senderId);
        const topic = typeof fact.changes.topic === "string" ? fact.changes.topic : was.topic;
        const sender = typeof fact.changes.senderId === "number" ? fact.changes.senderId : was.senderId;
        summaryAdd(state, topic, sender);
      }
      if (m) {
        Object.assign(m, structuredClone(fact.changes));
        forgetMessageJson(m);
      }
      if (state.cache?.delete(fact.id)) state.cacheGen++;
      break;
    }
    case "msgRemoved": {
      tailRemoved(state, fact.id);
      const m = state.recent.get(fact.id);
      const topic = m ? m.topic : fact.topic;
      const sender = m ? m.senderId : fact.senderId;
      if (topic !== undefined && sender !== undefined) summaryRemove(state, topic, sender);
      state.count = Math.max(0, state.count - 1);
      if (m) {
        state.recent.delete(fact.id);
        removeId(state.recentIds, fact.id);
      }
      if (state.cache?.delete(fact.id)) state.cacheGen++;
      break;
    }
    case "legacyStored": {
      const legacy = state.legacy;
      if (!legacy) break;
      const moved = new Set(fact.ids);
      for (const id of fact.ids) {
        const m = legacy.msgs[String(id)];
        if (!m) continue;
        delete legacy.msgs[String(id)];
        added(state, m);
      }
      legacy.ids = legacy.ids.filter((id) => !moved.has(id));
      if (!legacy.ids.length) state.legacy = null;
      break;
    }
    default:
      break;
  }
  return state;
}

/** Behavior.upgrade: the next batch of old-shape messages into the store, or null when none is left. */
export function upgradeConv(state: ConvState): { facts: Obj[]; writes: RecordWrite[] } | null {
  const legacy = state.legacy;
  if (!legacy) return null;
  const ids = legacy.ids.slice(0, CONVERT_BATCH);
  const msgs = ids.map((id) => legacy.msgs[String(id)]!);
  return {
    facts: [{ type: "legacyStored", ids } satisfies ConvFact as unknown as Obj],
    writes: addWrites(state, msgs),
  };
}

// ---- snapshots ---------------------------------------------------------------------

interface StoredConv {
  v: 2;
  key: string;
  realmId: number;
  dmRecipients: Obj[] | null;
  count: number;
  /** [lowercased topic, count, [[sender, messages]...]] */
  topics: [string, number, [number, number][]][];
  recentFrom: number;
  recent: Msg[];
  legacy?: Msg[];
  /** Absent in snapshots written before scheduled messages. */
  sendKeys?: [string, number][];
  /** Absent in snapshots written before moves were hand-offs. */
  moves?: PendingMove[];
  movedIn?: [string, boolean][];
}

export function convToSnapshot(state: ConvState): string {
  const stored: StoredConv = {
    v: 2,
    key: state.key,
    realmId: state.realmId,
    dmRecipients: state.dmRecipients,
    count: state.count,
    topics: [...state.topics].map(([k, t]) => [k, t.count, [...t.senders]]),
    recentFrom: state.recentFrom,
    recent: state.recentIds.map((id) => state.recent.get(id)!),
    sendKeys: state.sendKeys,
    moves: state.moves,
    movedIn: state.movedIn,
  };
  if (state.legacy) stored.legacy = state.legacy.ids.map((id) => state.legacy!.msgs[String(id)]!);
  return JSON.stringify(stored);
}

export function convFromSnapshot(data: string, ref: ActorRef): ConvState {
  const raw = JSON.parse(data) as Partial<StoredConv> & { ids?: number[]; msgs?: Record<string, Msg> };
  const state = initialConv(ref);
  state.dmRecipients = raw.dmRecipients ?? null;
  state.sendKeys = raw.sendKeys ?? [];
  state.moves = raw.moves ?? [];
  state.movedIn = raw.movedIn ?? [];
  if (raw.v !== 2) {
    // Written before messages lived in the store: everything is legacy content.
    const msgs = raw.msgs ?? {};
    const ids = Object.keys(msgs)
      .map(Number)
      .sort((a, b) => a - b);
    if (ids.length) state.legacy = { ids, msgs };
    return state;
  }
  state.count = raw.count ?? 0;
  for (const [k, count, senders] of raw.topics ?? [])
    state.topics.set(k, { count, senders: new Map(senders) });
  state.recentFrom = raw.recentFrom ?? 0;
  for (const m of raw.recent ?? []) {
    state.recentIds.push(m.id);
    state.recent.set(m.id, m);
  }
  if (raw.legacy?.length) {
    const msgs: Record<string, Msg> = {};
    for (const m of raw.legacy) msgs[String(m.id)] = m;
    state.legacy = { ids: raw.legacy.map((m) => m.id), msgs };
  }
  return state;
}

// ---- reads -----------------------------------------------------------------------------

/** What reads need of a turn's context. */
export type Reader = Pick<ActorContext, "getRecords" | "rangeIndex">;

function store(ctx: Reader): Required<Reader> {
  if (!ctx.getRecords || !ctx.rangeIndex) throw new Error("conversation reads need the store");
  return ctx as Required<Reader>;
}

/** The messages of `ids` (null for an id that is not one of this conversation's), one batched store read at most. */
export async function getMsgs(
  ctx: Reader,
  state: ConvState,
  ids: readonly number[],
): Promise<(Msg | null)[]> {
  const out: (Msg | null)[] = new Array<Msg | null>(ids.length).fill(null);
  const missing: number[] = [];
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (!Number.isSafeInteger(id) || id < 0) continue;
    const m = state.recent.get(id) ?? state.cache?.get(id);
    if (m) out[i] = m;
    // Ids of the window's range that are not in it are not messages here.
    else if (id < state.recentFrom) missing.push(i);
  }
  if (!missing.length) return out;
  const gen = state.cacheGen;
  const got = await store(ctx).getRecords(missing.map((i) => msgKey(state, ids[i]!)));
  const cache =
    gen === state.cacheGen ? (state.cache ??= new LRUCache<number, Msg>({ max: BODY_CACHE })) : null;
  missing.forEach((i, k) => {
    const bytes = got[k];
    if (!bytes) return;
    const m = JSON.parse(dec.decode(bytes)) as Msg;
    cache?.set(m.id, m);
    out[i] = m;
  });
  return out;
}

/** The ids of `ids` that are messages of this conversation, in the order given. */
export async function presentIds(ctx: Reader, state: ConvState, ids: readonly number[]): Promise<number[]> {
  const msgs = await getMsgs(ctx, state, ids);
  return ids.filter((_, i) => msgs[i] !== null);
}

/**
 * Message ids of the conversation (topic null) or of one topic (any
 * spelling) in a range, ascending (Store.rangeIndex semantics): from the
 * recent window when it holds the whole answer, else one store range read.
 */
export async function idsRange(
  ctx: Reader,
  state: ConvState,
  topic: string | null,
  r: IndexRange,
): Promise<number[]> {
  if (r.limit <= 0 || state.count === 0) return [];
  const low = topic === null ? null : topic.toLowerCase();
  if (low !== null && !state.topics.has(low)) return [];
  const from = r.after === undefined ? 0 : r.after + 1;
  const cands: number[] = [];
  for (const id of state.recentIds) {
    if (id < from || (r.before !== undefined && id >= r.before)) continue;
    if (low !== null && state.recent.get(id)!.topic.toLowerCase() !== low) continue;
    cands.push(id);
  }
  if (state.recentFrom === 0 || from >= state.recentFrom || (r.reverse && cands.length >= r.limit))
    return r.reverse ? cands.slice(Math.max(0, cands.length - r.limit)) : cands.slice(0, r.limit);
  if (low !== null) return store(ctx).rangeIndex(topicIndex(state, low), r);
  return tailRange(ctx, state, r);
}

/** idsRange of the whole conversation beyond the recent window: from the id tail when it holds the answer. */
async function tailRange(ctx: Reader, state: ConvState, r: IndexRange): Promise<number[]> {
  let t = state.tail;
  if (t === undefined) {
    if (TAIL <= 0) return store(ctx).rangeIndex(convIndex(state), r);
    const gen = state.tailGen ?? 0;
    const ids = await store(ctx).rangeIndex(convIndex(state), { limit: TAIL, reverse: true });
    t = { from: ids.length < TAIL ? 0 : ids[0]!, ids };
    // Kept only if no add or removal was applied while it was read.
    if (gen === (state.tailGen ?? 0)) state.tail ??= t;
  }
  const lo = r.after === undefined ? 0 : r.after + 1;
  const a = lowerBound(t.ids, lo);
  const b = r.before === undefined ? t.ids.length : lowerBound(t.ids, r.before);
  // The tail holds every id from `from` up: the answer when the range starts
  // there, or when the newest `limit` below `before` are all in it.
  if (t.from === 0 || lo >= t.from || (r.reverse && b - a >= r.limit))
    return r.reverse ? t.ids.slice(Math.max(a, b - r.limit), b) : t.ids.slice(a, Math.min(b, a + r.limit));
  return store(ctx).rangeIndex(convIndex(state), r);
}

/**
 * Every id of the conversation or of a topic in (after, before), ascending,
 * read in pages: O(the ids in the range), for the reads that need them all
 * (a topic's messages to move, received rows, search).
 */
export async function allIds(
  ctx: Reader,
  state: ConvState,
  topic: string | null,
  after?: number,
  before?: number,
): Promise<number[]> {
  const out: number[] = [];
  let cursor = after;
  for (;;) {
    const r: IndexRange = { limit: PAGE };
    if (cursor !== undefined) r.after = cursor;
    if (before !== undefined) r.before = before;
    const page = await idsRange(ctx, state, topic, r);
    for (const id of page) out.push(id);
    if (page.length < PAGE) return out;
    cursor = page[page.length - 1]!;
  }
}

/** The newest id of the conversation or of a topic, 0 when it has none. */
export async function newestId(ctx: Reader, state: ConvState, topic: string | null): Promise<number> {
  const [id] = await idsRange(ctx, state, topic, { limit: 1, reverse: true });
  return id ?? 0;
}
