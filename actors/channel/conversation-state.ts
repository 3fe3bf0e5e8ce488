// State of a conversation actor (channel kind, key = channel id, or
// "dm:<sorted user ids>" for a direct-message conversation): its messages,
// in id order, with their reactions and edit history, and a per-topic index
// (message ids and senders of each topic) that `applyConvFact` keeps up to
// date, so sends, moves and topic lists never scan the whole channel. The
// index is derived: snapshots leave it out and `convFromSnapshot` rebuilds it.
//
// SNAPSHOT NOTE: a field added to ConvState or Msg needs a default in
// `convFromSnapshot`, because snapshots written before it lack it.

import type { ActorRef, Obj } from "../types.ts";
import { insertId, removeId } from "../sorted-ids.ts";

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

export interface ConvState {
  key: string;
  realmId: number;
  /** Message ids ascending. */
  ids: number[];
  msgs: Record<string, Msg>;
  /** Direct messages: the participants as display_recipient shows them. */
  dmRecipients: Obj[] | null;
  /** Derived (not in snapshots): lowercased topic -> its messages. */
  topicIndex: Map<string, TopicEntry>;
  /**
   * The latest SEND_KEYS_KEPT send keys and the message each sent, oldest
   * first: a delivery retried after a crash finds its message here.
   */
  sendKeys: [string, number][];
}

export const SEND_KEYS_KEPT = 1000;

/** One topic's messages: ids ascending, and how many of them each sender wrote. */
export interface TopicEntry {
  ids: number[];
  senders: Map<number, number>;
}

export type ConvFact =
  | { type: "msgAdded"; msg: Msg; dmRecipients?: Obj[]; sendKey?: string }
  | { type: "msgChanged"; id: number; changes: Obj }
  | { type: "msgRemoved"; id: number };

export function isDmKey(key: string): boolean {
  return key.startsWith("dm:");
}

export function dmKey(userIds: number[]): string {
  return "dm:" + [...new Set(userIds)].sort((a, b) => a - b).join(",");
}

export function initialConv(ref: ActorRef): ConvState {
  return {
    key: ref.key,
    realmId: ref.realm,
    ids: [],
    msgs: {},
    dmRecipients: null,
    topicIndex: new Map(),
    sendKeys: [],
  };
}

function indexAdd(index: Map<string, TopicEntry>, m: Msg): void {
  const key = m.topic.toLowerCase();
  let t = index.get(key);
  if (!t) index.set(key, (t = { ids: [], senders: new Map() }));
  insertId(t.ids, m.id);
  t.senders.set(m.senderId, (t.senders.get(m.senderId) ?? 0) + 1);
}

function indexRemove(index: Map<string, TopicEntry>, m: Msg): void {
  const key = m.topic.toLowerCase();
  const t = index.get(key);
  if (!t) return;
  removeId(t.ids, m.id);
  const n = (t.senders.get(m.senderId) ?? 0) - 1;
  if (n > 0) t.senders.set(m.senderId, n);
  else t.senders.delete(m.senderId);
  if (!t.ids.length) index.delete(key);
}

/** The index entry of a topic (any spelling), if it has messages. */
export function topicEntry(state: ConvState, topic: string): TopicEntry | undefined {
  return state.topicIndex.get(topic.toLowerCase());
}

export function applyConvFact(state: ConvState, raw: Obj): ConvState {
  const fact = raw as unknown as ConvFact;
  switch (fact.type) {
    case "msgAdded": {
      const m = structuredClone(fact.msg);
      const old = state.msgs[String(m.id)];
      if (old) indexRemove(state.topicIndex, old);
      else insertId(state.ids, m.id);
      state.msgs[String(m.id)] = m;
      indexAdd(state.topicIndex, m);
      if (fact.dmRecipients) state.dmRecipients = structuredClone(fact.dmRecipients);
      if (fact.sendKey !== undefined) {
        state.sendKeys.push([fact.sendKey, m.id]);
        if (state.sendKeys.length > SEND_KEYS_KEPT) state.sendKeys.shift();
      }
      break;
    }
    case "msgChanged": {
      const m = state.msgs[String(fact.id)];
      if (!m) break;
      const reindex = "topic" in fact.changes || "senderId" in fact.changes;
      if (reindex) indexRemove(state.topicIndex, m);
      Object.assign(m, structuredClone(fact.changes));
      if (reindex) indexAdd(state.topicIndex, m);
      break;
    }
    case "msgRemoved": {
      const m = state.msgs[String(fact.id)];
      if (m) {
        indexRemove(state.topicIndex, m);
        delete state.msgs[String(fact.id)];
        removeId(state.ids, fact.id);
      }
      break;
    }
    default:
      break;
  }
  return state;
}

export function convToSnapshot(state: ConvState): string {
  const { topicIndex: _derived, ...stored } = state;
  return JSON.stringify(stored);
}

/** The derived indexes, built from the messages (snapshots do not carry them). */
export function rebuildIndexes(state: ConvState): ConvState {
  state.ids = [...state.ids].sort((a, b) => a - b);
  state.topicIndex = new Map();
  for (const id of state.ids) indexAdd(state.topicIndex, state.msgs[String(id)]!);
  return state;
}

export function convFromSnapshot(data: string, ref: ActorRef): ConvState {
  const stored = JSON.parse(data) as Partial<ConvState>;
  delete stored.topicIndex;
  return rebuildIndexes({ ...initialConv(ref), ...stored });
}
