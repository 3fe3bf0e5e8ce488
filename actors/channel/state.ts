// State of the channel kind's per-realm directory (ref.key "directory"):
// every channel's metadata, the name index, and every subscription with its
// personal properties. One actor answers GET /streams and
// GET /users/me/subscriptions in one turn.
//
// SNAPSHOT NOTE: a field added to DirState or Channel needs a default in
// `dirFromSnapshot`, because snapshots written before it lack it.

import { dict } from "../dict.ts";
import type { ActorRef, Obj, Value } from "../types.ts";

/** Zulip's group-setting value: a group id or an anonymous group. */
export type GroupValue = number | { direct_members: number[]; direct_subgroups: number[] };

export const GROUP_SETTINGS = [
  "can_add_subscribers_group",
  "can_administer_channel_group",
  "can_create_topic_group",
  "can_delete_any_message_group",
  "can_delete_own_message_group",
  "can_move_messages_out_of_channel_group",
  "can_move_messages_within_channel_group",
  "can_remove_subscribers_group",
  "can_resolve_topics_group",
  "can_send_message_group",
  "can_subscribe_group",
] as const;
export type GroupSettingName = (typeof GROUP_SETTINGS)[number];

export const TOPICS_POLICIES = ["inherit", "allow_empty_topic", "disable_empty_topic", "empty_topic_only"];

export interface Channel {
  id: number;
  name: string;
  description: string;
  renderedDescription: string;
  /** UNIX seconds. */
  dateCreated: number;
  creatorId: number | null;
  inviteOnly: boolean;
  isWebPublic: boolean;
  historyPublic: boolean;
  /** null: the realm's setting; -1: forever. */
  retentionDays: number | null;
  topicsPolicy: string;
  folderId: number | null;
  isArchived: boolean;
  isDefault: boolean;
  defaultPushNotifications: boolean;
  firstMessageId: number | null;
  groups: Record<string, GroupValue>;
}

/** A user's subscription to a channel; `active` false once unsubscribed. */
export interface Sub {
  active: boolean;
  color: string;
  isMuted: boolean;
  pinToTop: boolean;
  desktopNotifications: boolean | null;
  audibleNotifications: boolean | null;
  pushNotifications: boolean | null;
  emailNotifications: boolean | null;
  wildcardMentionsNotify: boolean | null;
}

export interface DirState {
  realmId: number;
  channels: Record<string, Channel>;
  /** lowercased name -> channel id (null prototype: see dict.ts). */
  byName: Record<string, number>;
  /** channel id -> user id -> subscription. */
  subs: Record<string, Record<string, Sub>>;
}

export type DirFact =
  | { type: "channelCreated"; channel: Channel }
  | { type: "channelChanged"; channelId: number; changes: Obj }
  | { type: "subscribed"; channelId: number; userId: number; sub: Sub }
  | { type: "unsubscribed"; channelId: number; userId: number }
  | { type: "subChanged"; channelId: number; userId: number; changes: Obj };

export function initialDir(ref: ActorRef): DirState {
  return { realmId: ref.realm, channels: {}, byName: dict(), subs: {} };
}

/** A deep copy for a handler's trial applies (structuredClone drops the null prototypes). */
export function cloneDir(state: DirState): DirState {
  const s = structuredClone(state);
  s.byName = dict(s.byName);
  return s;
}

export function applyDirFact(state: DirState, raw: Obj): DirState {
  const fact = raw as unknown as DirFact;
  switch (fact.type) {
    case "channelCreated": {
      const ch = structuredClone(fact.channel);
      state.channels[String(ch.id)] = ch;
      state.byName[ch.name.toLowerCase()] = ch.id;
      state.subs[String(ch.id)] ??= {};
      break;
    }
    case "channelChanged": {
      const ch = state.channels[String(fact.channelId)];
      if (!ch) break;
      if (typeof fact.changes.name === "string" && fact.changes.name !== ch.name) {
        delete state.byName[ch.name.toLowerCase()];
        state.byName[fact.changes.name.toLowerCase()] = ch.id;
      }
      Object.assign(ch, structuredClone(fact.changes));
      break;
    }
    case "subscribed":
      (state.subs[String(fact.channelId)] ??= {})[String(fact.userId)] = { ...fact.sub, active: true };
      break;
    case "unsubscribed": {
      const sub = state.subs[String(fact.channelId)]?.[String(fact.userId)];
      if (sub) sub.active = false;
      break;
    }
    case "subChanged": {
      const sub = state.subs[String(fact.channelId)]?.[String(fact.userId)];
      if (sub) Object.assign(sub, fact.changes as Record<string, Value>);
      break;
    }
    default:
      break; // a fact from a newer version: ignore, never throw
  }
  return state;
}

export function dirToSnapshot(state: DirState): string {
  return JSON.stringify(state);
}

export function dirFromSnapshot(data: string, ref: ActorRef): DirState {
  const out = { ...initialDir(ref), ...(JSON.parse(data) as Partial<DirState>) };
  out.byName = dict(out.byName);
  return out;
}
