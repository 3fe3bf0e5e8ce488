// A user's message flags: Zulip's UserMessage rows, kept with the user
// actor. One entry per message the user received (or touched as
// "historical"): its conversation key and a flag bitmask. The entries
// double as the index GET /messages uses for narrows that are not bound to
// one channel (is:starred, is:unread, dm, home view).
//
// Every handler here is a leaf (calls nobody), so conversation actors may
// call a user inside their turns without risk of a cycle.
//
// SNAPSHOT NOTE: the state lives in `UserState.msgs` (see FlagHolder); old
// snapshots lack it and `msgsOf` supplies the empty default.

import { own } from "../dict.ts";
import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import { insertId, removeId } from "../sorted-ids.ts";
import type { Caller, Obj, OutEvent } from "../types.ts";
import type { FlagMap, UnreadEntry, UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";
import { applyTopicFact } from "./topics.ts";
import { autoTopicsOnReceive, type ReceivedRow } from "./auto-topics.ts";

type Handlers = SomeHandlersOf<
  UserState,
  UserProtocol,
  | "receiveMessages"
  | "messageFlags"
  | "selectMessages"
  | "updateFlags"
  | "messagesMoved"
  | "messagesDeleted"
  | "unreads"
  | "maxMessageId"
>;

export const FLAG_BITS: Record<string, number> = {
  read: 1,
  starred: 2,
  collapsed: 4,
  mentioned: 8,
  stream_wildcard_mentioned: 16,
  topic_wildcard_mentioned: 32,
  group_mentioned: 64,
  has_alert_word: 128,
  historical: 256,
};
/** The flags a client may change (https://zulip.com/api/update-message-flags). */
export const EDITABLE_FLAGS = ["read", "starred", "collapsed"];

export interface MsgIndex {
  /** Message ids, ascending. */
  ids: number[];
  /** id -> [conversation key, flag bits, topic ("" for DMs), sender id]. */
  entries: Record<string, Entry>;
}

export type Entry = [string, number, string, number];

interface FlagHolder {
  msgs?: MsgIndex;
  /**
   * Channel messages are not delivered to ordinary recipients: a message of
   * a channel the user received (its id in one of the user's subscription
   * spans, kept by the channel directory) that has no entry here is a
   * "received row" with default flags: read when its id is at or below the
   * channel's read-through mark, unread above it. An entry, once made
   * (flags changed, mentions, the sender's own message, rows from before
   * spans existed), decides instead. conv -> id.
   */
  readThrough?: Record<string, number>;
}

export function msgsOf(state: UserState): MsgIndex {
  return (state as UserState & FlagHolder).msgs ?? { ids: [], entries: {} };
}

export function readThroughOf(state: UserState): Record<string, number> {
  return (state as UserState & FlagHolder).readThrough ?? {};
}

/** Default flag bits of a received row that has no entry. */
export function receivedBits(state: UserState, conv: string, id: number): number {
  return id <= (readThroughOf(state)[conv] ?? 0) ? FLAG_BITS.read! : 0;
}

/** Names by flag bits, each combination spelled once (a page of 100 messages asks 100 times). */
const namesByBits = new Map<number, readonly string[]>();

/** The names of `bits`, shared and frozen: for replies only read (messageFlags). */
export function sharedFlagNames(bits: number): readonly string[] {
  let names = namesByBits.get(bits);
  if (names === undefined) {
    const out: string[] = [];
    for (const [name, bit] of Object.entries(FLAG_BITS)) if (bits & bit) out.push(name);
    // The deprecated synthetic flag Zulip still sends.
    if (bits & (FLAG_BITS.stream_wildcard_mentioned! | FLAG_BITS.topic_wildcard_mentioned!)) {
      out.push("wildcard_mentioned");
    }
    names = Object.freeze(out);
    // Stored bits are FLAG_BITS' combinations; a bound all the same.
    if (namesByBits.size < 4096) namesByBits.set(bits, names);
  }
  return names;
}

/** The names of `bits`, a copy the caller may change. */
export function flagNames(bits: number): string[] {
  return sharedFlagNames(bits).slice();
}

export function flagBits(names: string[]): number {
  let bits = 0;
  for (const n of names) bits |= own(FLAG_BITS, n) ?? 0;
  return bits;
}

export type FlagFact =
  | { type: "msgsReceived"; items: [number, string, number, string, number][] }
  | { type: "msgsMoved"; ids: number[]; conv: string; topic: string }
  | { type: "flagsSet"; ids: number[]; bit: number; on: boolean }
  | { type: "msgsForgotten"; ids: number[] }
  /** Raise read-through marks (never lowers one). */
  | { type: "readThrough"; convs: Record<string, number> };

/** Fold a flag (or topic policy) fact; other facts pass through untouched. */
export function applyFlagFact(state: UserState, raw: Obj): UserState {
  applyTopicFact(state, raw);
  const fact = raw as unknown as FlagFact;
  const holder = state as UserState & FlagHolder;
  switch (fact.type) {
    case "msgsReceived": {
      const m = (holder.msgs ??= { ids: [], entries: {} });
      for (const [id, conv, bits, topic, sender] of fact.items) {
        const key = String(id);
        if (!m.entries[key]) insertId(m.ids, id);
        m.entries[key] = [conv, (m.entries[key]?.[1] ?? 0) | bits, topic, sender];
      }
      break;
    }
    case "msgsMoved": {
      const m = holder.msgs;
      if (!m) break;
      for (const id of fact.ids) {
        const e = m.entries[String(id)];
        if (e) {
          e[0] = fact.conv;
          e[2] = fact.topic;
        }
      }
      break;
    }
    case "flagsSet": {
      const m = holder.msgs;
      if (!m) break;
      for (const id of fact.ids) {
        const e = m.entries[String(id)];
        if (e) e[1] = fact.on ? e[1] | fact.bit : e[1] & ~fact.bit;
      }
      break;
    }
    case "readThrough": {
      const marks = (holder.readThrough ??= Object.create(null) as Record<string, number>);
      for (const [conv, id] of Object.entries(fact.convs)) marks[conv] = Math.max(marks[conv] ?? 0, id);
      break;
    }
    case "msgsForgotten": {
      const m = holder.msgs;
      if (!m) break;
      for (const id of fact.ids) delete m.entries[String(id)];
      if (fact.ids.length <= 16) {
        // A single deletion: binary search, not a pass over every message the user has.
        for (const id of fact.ids) removeId(m.ids, id);
      } else {
        const gone = new Set(fact.ids);
        m.ids = m.ids.filter((id) => !gone.has(id));
      }
      break;
    }
    default:
      break;
  }
  return state;
}

function requireInternal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

function requireSelf(state: UserState, caller: Caller | null): void {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId))
    throw errors.accessDenied();
}

/** A conversation actor delivers messages: [[id, conv, flag names]]. Idempotent. */
const receiveMessages: Handlers["receiveMessages"] = async (state, args, ctx, caller) => {
  requireInternal(caller);
  const items = args.items;
  const m = msgsOf(state);
  // A historical row (the user marked the message before its delivery
  // arrived) becomes a real one: its flags stay, "historical" goes.
  const hist = FLAG_BITS.historical!;
  const upgraded: number[] = [];
  const fresh = items
    .filter(([id]) => {
      const e = m.entries[String(id)];
      if (e && e[1] & hist) upgraded.push(id);
      return !e || e[1] & hist;
    })
    .map(([id, conv, names, topic, sender]) => [id, conv, flagBits(names), topic, sender] as const);
  if (!fresh.length) return { reply: {} };
  const facts = [{ type: "msgsReceived", items: fresh } as unknown as Obj];
  if (upgraded.length) facts.push({ type: "flagsSet", ids: upgraded, bit: hist, on: false });
  // A send's automatic topic policies, with its rows (only rows new here: a
  // repeated delivery changes nothing the user may have changed since).
  if (!args.own?.length && !args.mention_follows?.length) return { facts, reply: {} };
  const sends = new Map(
    (args.own ?? []).map(([id, initiated, channelMuted]) => [id, { initiated, channel_muted: channelMuted }]),
  );
  const follows = new Set(args.mention_follows ?? []);
  const rows: ReceivedRow[] = fresh
    .filter(([id, conv]) => !conv.startsWith("dm:") && (sends.has(id) || follows.has(id)))
    .map(([id, conv, bits, topic]) => ({
      id,
      streamId: Number(conv),
      topic,
      mentioned: (bits & FLAG_BITS.mentioned!) !== 0,
      ...(sends.has(id) ? { own: sends.get(id)! } : { mentionFollows: true }),
    }));
  const auto = await autoTopicsOnReceive(state, ctx, rows);
  return { facts: [...facts, ...auto.facts], events: auto.events, reply: {} };
};

/**
 * Flags of messages: by ids (only those walk), or every message of one
 * conversation; `unread: true` keeps the unread ones. {id: names}.
 */
const messageFlags: Handlers["messageFlags"] = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const m = msgsOf(state);
  const out: FlagMap = {};
  const conv = args.conv;
  const unreadOnly = args.unread === true;
  const ids = args.ids ?? m.ids;
  const entries = m.entries;
  for (const id of ids) {
    // By number, not String(id): the same key, without a string per id.
    const e = entries[id];
    if (!e || (conv !== undefined && e[0] !== conv)) continue;
    if (unreadOnly && e[1] & FLAG_BITS.read!) continue;
    out[id] = sharedFlagNames(e[1]);
  }
  // With `withReadThrough`: {flags, readThrough, read: ids with an entry that is read}
  // (the caller adds the received rows that have no entry).
  if (args.withReadThrough === true) {
    const read: number[] = [];
    if (unreadOnly)
      for (const id of ids) {
        const e = m.entries[String(id)];
        if (e && (conv === undefined || e[0] === conv) && e[1] & FLAG_BITS.read!) read.push(id);
      }
    return {
      reply: { flags: out, readThrough: conv === undefined ? 0 : (readThroughOf(state)[conv] ?? 0), read },
    };
  }
  return { reply: out };
};

/**
 * The user's own messages matching flag and conversation filters, as
 * [[id, conv, flag names]] ascending: the candidates of a GET /messages
 * narrow that is not bound to one channel.
 */
const selectMessages: Handlers["selectMessages"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const m = msgsOf(state);
  const need = flagBits(args.flags ?? []);
  const without = flagBits(args.notFlags ?? []);
  const convSet = args.convs ? new Set(args.convs) : null;
  const dmOnly = args.dmOnly === true;
  const only = args.ids ? new Set(args.ids) : null;
  const out: [number, string, string[], string, number][] = [];
  // A lookup by ids walks only those ids, not the whole index.
  const walk = only ? [...only].filter((id) => m.entries[String(id)]).sort((a, b) => a - b) : m.ids;
  for (const id of walk) {
    const [conv, bits, topic, sender] = m.entries[String(id)]!;
    if ((bits & need) !== need || (bits & without) !== 0) continue;
    if (convSet && !convSet.has(conv)) continue;
    if (dmOnly && !conv.startsWith("dm:")) continue;
    if (only && !only.has(id)) continue;
    out.push([id, conv, flagNames(bits), topic, sender]);
  }
  return { reply: { items: out, readThrough: { ...readThroughOf(state) } } };
};

/**
 * POST /messages/flags for one user: the ids the user has, changed or not.
 * Unknown ids are "Invalid message(s)" (Zulip's check of UserMessage rows).
 */
const updateFlags: Handlers["updateFlags"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const { op, flag } = args;
  const ids = args.messages;
  if (op !== "add" && op !== "remove") throw errors.invalidFlagOperation(op);
  if (!Object.hasOwn(FLAG_BITS, flag)) throw errors.invalidFlag(flag);
  if (!EDITABLE_FLAGS.includes(flag)) throw errors.flagNotEditable(flag);
  const m = msgsOf(state);
  // Messages the user never received but may read (public history, located
  // by the gateway): Zulip creates "historical" rows, read, for them.
  // Received rows without an entry (located by the gateway in the user's
  // subscription spans) get one, with their default flags.
  const historical = new Map<number, [string, string, number, number]>();
  const base = FLAG_BITS.historical! | FLAG_BITS.read!;
  for (const [id, conv, topic, sender] of args.historical ?? [])
    if (!m.entries[String(id)]) historical.set(id, [conv, topic, sender, base]);
  for (const [id, conv, topic, sender] of args.received ?? [])
    if (!m.entries[String(id)]) historical.set(id, [conv, topic, sender, receivedBits(state, conv, id)]);
  for (const id of ids) if (!m.entries[String(id)] && !historical.has(id)) throw errors.invalidMessages();
  const bit = FLAG_BITS[flag]!;
  const on = op === "add";
  const wanted = [...new Set(ids)];
  const changed = wanted.filter((id) => {
    const bits = m.entries[String(id)]?.[1] ?? historical.get(id)![3];
    return ((bits & bit) !== 0) !== on;
  });
  changed.sort((a, b) => a - b);
  const fresh = wanted
    .filter((id) => !m.entries[String(id)] && historical.has(id))
    .sort((a, b) => a - b)
    .map((id) => {
      const [conv, topic, sender, bits] = historical.get(id)!;
      return [id, conv, bits, topic, sender] as [number, string, number, string, number];
    });
  const d = flagDecision(state, changed, flag, op, { messages: changed }, fresh);
  // A row is kept unchanged only when it is historical (Zulip makes those rows).
  const kept = fresh.filter((f) => f[2] & FLAG_BITS.historical!);
  if (kept.length && !changed.length)
    return { ...d, facts: [{ type: "msgsReceived", items: kept } as unknown as Obj] };
  return d;
};

/** Shared by updateFlags and the narrow variant: the fact, the event, the reply. */
export function flagDecision<R>(
  state: UserState,
  changed: number[],
  flag: string,
  op: string,
  reply: R,
  fresh: [number, string, number, string, number][] = [],
): { reply: R; facts?: Obj[]; events?: OutEvent[] } {
  if (!changed.length) return { reply };
  const m = msgsOf(state);
  const overlay = new Map<string, Entry>(
    fresh.map(([id, conv, bits, topic, sender]) => [String(id), [conv, bits, topic, sender]]),
  );
  const entry = (id: number): Entry => overlay.get(String(id)) ?? m.entries[String(id)]!;
  const event: Obj = { type: "update_message_flags", op, operation: op, flag, messages: changed, all: false };
  if (flag === "read" && op === "remove") {
    const details: Obj = {};
    for (const id of changed) {
      const [conv, bits, topic] = entry(id);
      const d: Obj = conv.startsWith("dm:")
        ? {
            type: "private",
            user_ids: conv
              .slice(3)
              .split(",")
              .map(Number)
              .filter((u) => u !== state.userId),
          }
        : { type: "stream", stream_id: Number(conv), topic };
      if (bits & FLAG_BITS.mentioned!) d.mentioned = true;
      details[String(id)] = d;
    }
    event.message_details = details;
  }
  const events: OutEvent[] = [{ event, userIds: [state.userId] }];
  const fact = { type: "flagsSet", ids: changed, bit: FLAG_BITS[flag]!, on: op === "add" } as unknown as Obj;
  const facts = fresh.length ? [{ type: "msgsReceived", items: fresh } as unknown as Obj, fact] : [fact];
  return { facts, events, reply };
}

/**
 * Messages moved to another channel or topic: re-point the entries the
 * user has. {held}: how many of them the user had (whether the move is
 * news to them, in a channel with protected history).
 */
const messagesMoved: Handlers["messagesMoved"] = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const m = msgsOf(state);
  const ids = args.ids.filter((id) => m.entries[String(id)]);
  const { conv, topic } = args;
  // Received rows of the source without an entry (`received`: [[id, source conv, sender]])
  // become entries of the target with their flags, so the move keeps them.
  const fresh: [number, string, number, string, number][] = [];
  for (const [id, from, sender] of args.received ?? [])
    if (!m.entries[String(id)]) fresh.push([id, conv, receivedBits(state, from, id), topic, sender]);
  const facts: Obj[] = [];
  if (fresh.length) facts.push({ type: "msgsReceived", items: fresh } as unknown as Obj);
  if (ids.length) facts.push({ type: "msgsMoved", ids, conv, topic } as unknown as Obj);
  return { facts, reply: { held: ids.length + fresh.length } };
};

/** Messages deleted: drop the user's entries. {held}: how many the user had. */
const messagesDeleted: Handlers["messagesDeleted"] = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const m = msgsOf(state);
  const ids = args.ids.filter((id) => m.entries[String(id)]);
  if (!ids.length) return { reply: { held: 0 } };
  return { facts: [{ type: "msgsForgotten", ids } as unknown as Obj], reply: { held: ids.length } };
};

/** Unread messages for /register's unread_msgs: {id, conv, topic, sender, mentioned, wildcard}. */
const unreads: Handlers["unreads"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  const m = msgsOf(state);
  const out: UnreadEntry[] = [];
  for (const id of m.ids) {
    const [conv, bits, topic, sender] = m.entries[String(id)]!;
    if (bits & FLAG_BITS.read!) continue;
    const wildcard =
      (bits & (FLAG_BITS.stream_wildcard_mentioned! | FLAG_BITS.topic_wildcard_mentioned!)) !== 0;
    out.push({ id, conv, topic, sender, mentioned: (bits & FLAG_BITS.mentioned!) !== 0, wildcard });
  }
  // `entries`: the caller leaves these ids out of the received rows it adds.
  const entries: Record<string, number[]> = {};
  const marks = readThroughOf(state);
  for (const id of m.ids) {
    const conv = m.entries[String(id)]![0];
    if (!conv.startsWith("dm:") && id > (marks[conv] ?? 0)) (entries[conv] ??= []).push(id);
  }
  return { reply: { items: out, readThrough: { ...marks }, entries } };
};

/** The newest message id the user has (GET /users/me max_message_id, register). */
const maxMessageId: Handlers["maxMessageId"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  const m = msgsOf(state);
  return { reply: { max_message_id: m.ids.length ? m.ids[m.ids.length - 1]! : -1 } };
};

export const flagHandlers: Handlers = {
  receiveMessages,
  messageFlags,
  selectMessages,
  updateFlags,
  messagesMoved,
  messagesDeleted,
  unreads,
  maxMessageId,
};
