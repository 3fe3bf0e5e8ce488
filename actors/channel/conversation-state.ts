// State of a conversation actor (channel kind, key = channel id, or
// "dm:<sorted user ids>" for a direct-message conversation): its messages,
// in id order, with their reactions and edit history. The topic index is
// derived from the messages on demand (topics are few per channel).
//
// SNAPSHOT NOTE: a field added to ConvState or Msg needs a default in
// `convFromSnapshot`, because snapshots written before it lack it.

import type { ActorRef, Obj } from "../types.ts";

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
}

export type ConvFact =
  | { type: "msgAdded"; msg: Msg; dmRecipients?: Obj[] }
  | { type: "msgChanged"; id: number; changes: Obj }
  | { type: "msgRemoved"; id: number };

export function isDmKey(key: string): boolean {
  return key.startsWith("dm:");
}

export function dmKey(userIds: number[]): string {
  return "dm:" + [...new Set(userIds)].sort((a, b) => a - b).join(",");
}

export function initialConv(ref: ActorRef): ConvState {
  return { key: ref.key, realmId: ref.realm, ids: [], msgs: {}, dmRecipients: null };
}

export function applyConvFact(state: ConvState, raw: Obj): ConvState {
  const fact = raw as unknown as ConvFact;
  switch (fact.type) {
    case "msgAdded": {
      const m = structuredClone(fact.msg);
      if (!state.msgs[String(m.id)]) {
        // Ids come from a realm-wide counter; concurrent sends may commit out of order.
        let i = state.ids.length;
        while (i > 0 && state.ids[i - 1]! > m.id) i--;
        state.ids.splice(i, 0, m.id);
      }
      state.msgs[String(m.id)] = m;
      if (fact.dmRecipients) state.dmRecipients = structuredClone(fact.dmRecipients);
      break;
    }
    case "msgChanged": {
      const m = state.msgs[String(fact.id)];
      if (m) Object.assign(m, structuredClone(fact.changes));
      break;
    }
    case "msgRemoved":
      if (state.msgs[String(fact.id)]) {
        delete state.msgs[String(fact.id)];
        state.ids = state.ids.filter((id) => id !== fact.id);
      }
      break;
    default:
      break;
  }
  return state;
}

export function convToSnapshot(state: ConvState): string {
  return JSON.stringify(state);
}

export function convFromSnapshot(data: string, ref: ActorRef): ConvState {
  return { ...initialConv(ref), ...(JSON.parse(data) as Partial<ConvState>) };
}
