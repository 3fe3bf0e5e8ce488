// State of the realm's channel directory (kind channelDirectory, key
// "directory"; stored as the channel kind's, see behavior.ts): every
// channel's metadata, the name index, and every subscription with its
// personal properties. One actor answers GET /streams and
// GET /users/me/subscriptions in one turn.
//
// SNAPSHOT NOTE: a field added to DirState or Channel needs a default in
// `dirFromSnapshot`, because snapshots written before it lack it.

import { randomBytes } from "node:crypto";
import { dict } from "../dict.ts";
import type { Span } from "../spans.ts";
import type { ActorRef, Obj, Value } from "../types.ts";

/** The key of the realm's one directory actor. */
export const CHANNEL_DIRECTORY_KEY = "directory";

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
  /** FL 323 (recently-active.ts); absent in old snapshots: true. */
  isRecentlyActive?: boolean;
  /**
   * UNIX day of the newest send (recently-active.ts); null: none yet;
   * absent (old snapshots): unknown, counted from the next sweep.
   */
  lastMessageDay?: number | null;
  groups: Record<string, GroupValue>;
  /**
   * Subscriptions from before received-spans existed (see `Sub.spans`) have
   * their earlier messages as stored rows in the user actors; they receive
   * the channel's messages from this id on. Set by the first send after the
   * upgrade (`sendContext`); absent on channels that never had such a
   * subscription, and unset while no message was sent since.
   */
  legacyCut?: number;
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
  /** Absent on subscriptions made before spans existed: see `spansOf`. */
  spans?: Span[];
}

export interface DirState {
  realmId: number;
  channels: Record<string, Channel>;
  /** lowercased name -> channel id (null prototype: see dict.ts). */
  byName: Record<string, number>;
  /** channel id -> user id -> subscription. */
  subs: Record<string, Record<string, Sub>>;
  /**
   * False while some subscription made before spans existed has no legacy
   * cut yet (an old snapshot lacks the field; a replayed old `subscribed`
   * fact clears it); the next send sets the cuts (`spansInit`).
   */
  spansReady?: boolean;
  /** Channel folders by id (see folders.ts). */
  folders: Record<string, ChannelFolder>;
  /**
   * The realm's direct-message conversations (their actor keys "dm:<ids>";
   * null prototype), for the retention sweep (retention.ts). SNAPSHOT NOTE:
   * absent in older snapshots (empty then; conversations list themselves
   * again when they next run).
   */
  dmConvs: Record<string, true>;
  /**
   * User id -> the role whose channel view that user's clients were last
   * told of (role-access.ts), so a role change's hand-off given again tells
   * nothing twice. SNAPSHOT NOTE: absent in older snapshots (none told yet).
   */
  roleSeen?: Record<string, number>;
  /**
   * The keys of the latest HANDLED_KEPT hand-offs of other actors carried
   * out here (a deactivation's peer_remove, a new user's default channels),
   * so one given again does nothing twice. SNAPSHOT NOTE: absent in older
   * snapshots (none yet).
   */
  handled?: string[];
}

/** How many hand-off keys `handled` keeps: far more than are ever pending at once. */
const HANDLED_KEPT = 1000;

/** A hand-off keyed `key` was carried out here already (DirState.handled). */
export function handledAlready(state: DirState, key: string): boolean {
  return state.handled?.includes(key) ?? false;
}

/** A channel folder (folders.ts); realm-wide, held here beside the channels that name them. */
export interface ChannelFolder {
  id: number;
  name: string;
  description: string;
  renderedDescription: string;
  /** Position among the realm's folders (FL 414); a new folder's is its id. */
  order: number;
  creatorId: number | null;
  /** UNIX seconds. */
  dateCreated: number;
  isArchived: boolean;
}

export type DirFact =
  | { type: "channelCreated"; channel: Channel }
  | { type: "channelChanged"; channelId: number; changes: Obj }
  /** `from`/`to`: the span bound (absent in facts written before spans). */
  | { type: "subscribed"; channelId: number; userId: number; sub: Sub; from?: number }
  | { type: "unsubscribed"; channelId: number; userId: number; to?: number }
  | { type: "subChanged"; channelId: number; userId: number; changes: Obj }
  /** Every channel with a subscription made before spans existed receives from `cut` on. */
  | { type: "spansInit"; cut: number }
  | { type: "dmConvListed"; key: string }
  /** The user's clients were told of the channels `role` sees (role-access.ts). */
  | { type: "roleSeen"; userId: number; role: number }
  /** A hand-off keyed `key` was carried out (DirState.handled). */
  | { type: "handled"; key: string };

export function initialDir(ref: ActorRef): DirState {
  return {
    realmId: ref.realm,
    channels: {},
    byName: dict(),
    subs: {},
    spansReady: true,
    folders: {},
    dmConvs: dict(),
  };
}

/**
 * The containers a trial copy (`cloneDir`) has made its own. It starts
 * sharing every channel, subscription map and subscription with the
 * actor's state, and `applyDirFact` copies one before changing it; the
 * actor's own state (no entry here) is changed in place.
 */
const trialOwned = new WeakMap<DirState, WeakSet<object>>();

/**
 * A copy for a handler's trial applies, in O(1): what a trial fact
 * changes is copied then (`writable`), so a subscription costs what it
 * touches, not a copy of every channel's subscribers.
 */
export function cloneDir(state: DirState): DirState {
  const s = { ...state };
  trialOwned.set(s, new WeakSet());
  return s;
}

/**
 * `obj` as `state` may change it: itself for the actor's state or a
 * container this trial copy made, else a shallow copy (null prototype
 * kept) that `put` stores where `obj` was.
 */
function writable<T extends object>(state: DirState, obj: T, put: (copy: T) => void): T {
  const mine = trialOwned.get(state);
  if (mine === undefined || mine.has(obj)) return obj;
  const copy = (
    Array.isArray(obj)
      ? obj.slice()
      : Object.getPrototypeOf(obj) === null
        ? Object.assign(Object.create(null) as object, obj)
        : { ...obj }
  ) as T;
  mine.add(copy);
  put(copy);
  return copy;
}

/** The state's containers a fact changes (the optional ones once present). */
type Field = "channels" | "byName" | "subs" | "dmConvs" | "roleSeen" | "handled";

/** One of the state's containers, as `state` may change it. */
function writableField<K extends Field>(state: DirState, key: K): NonNullable<DirState[K]> {
  return writable(state, state[key]!, (c) => (state[key] = c));
}

/** The channel id -> user id -> subscription map, as `state` may change it. */
function writableSubs(state: DirState): Record<string, Record<string, Sub>> {
  return writableField(state, "subs");
}

/** One channel's subscription map, as `state` may change it (undefined: none). */
function writableChannelSubs(state: DirState, channelId: number): Record<string, Sub> | undefined {
  const all = writableSubs(state);
  const key = String(channelId);
  const subs = all[key];
  return subs === undefined ? undefined : writable(state, subs, (c) => (all[key] = c));
}

/** One subscription, as `state` may change it. */
function writableSub(state: DirState, channelId: number, userId: number): Sub | undefined {
  const subs = writableChannelSubs(state, channelId);
  const key = String(userId);
  const sub = subs?.[key];
  return sub === undefined ? undefined : writable(state, sub, (c) => (subs![key] = c));
}

/** One channel, as `state` may change it. */
function writableChannel(state: DirState, key: string): Channel | undefined {
  const channels = writableField(state, "channels");
  const ch = channels[key];
  return ch === undefined ? undefined : writable(state, ch, (c) => (channels[key] = c));
}

export function applyDirFact(state: DirState, raw: Obj): DirState {
  const fact = raw as unknown as DirFact;
  switch (fact.type) {
    case "channelCreated": {
      const ch = structuredClone(fact.channel);
      writableField(state, "channels")[String(ch.id)] = ch;
      writableField(state, "byName")[ch.name.toLowerCase()] = ch.id;
      writableSubs(state)[String(ch.id)] ??= {};
      break;
    }
    case "channelChanged": {
      const ch = writableChannel(state, String(fact.channelId));
      if (!ch) break;
      if (typeof fact.changes.name === "string" && fact.changes.name !== ch.name) {
        const byName = writableField(state, "byName");
        delete byName[ch.name.toLowerCase()];
        byName[fact.changes.name.toLowerCase()] = ch.id;
      }
      Object.assign(ch, structuredClone(fact.changes));
      break;
    }
    case "subscribed": {
      const subs =
        writableChannelSubs(state, fact.channelId) ?? (writableSubs(state)[String(fact.channelId)] = {});
      forgetSubscribers(subs);
      const old = subs[String(fact.userId)];
      const ch = state.channels[String(fact.channelId)];
      const spans = old && ch ? spansOf(ch, old) : [];
      const sub: Sub = { ...fact.sub, active: true };
      delete sub.spans;
      if (fact.from !== undefined) sub.spans = [...spans, [fact.from, null]];
      else if (old?.spans) sub.spans = old.spans;
      else state.spansReady = false;
      subs[String(fact.userId)] = sub;
      break;
    }
    case "unsubscribed": {
      const sub = writableSub(state, fact.channelId, fact.userId);
      const ch = state.channels[String(fact.channelId)];
      if (!sub) break;
      forgetSubscribers(state.subs[String(fact.channelId)]);
      if (fact.to !== undefined && ch) {
        const spans = spansOf(ch, sub).map((s): Span => [s[0], s[1] ?? fact.to!]);
        sub.spans = spans.filter(([from, to]) => to! > from);
      }
      sub.active = false;
      break;
    }
    case "subChanged": {
      const sub = writableSub(state, fact.channelId, fact.userId);
      if (!sub) break;
      // isMuted and pushNotifications feed the send's cached lists.
      forgetSubscribers(state.subs[String(fact.channelId)]);
      Object.assign(sub, fact.changes as Record<string, Value>);
      break;
    }
    case "spansInit": {
      for (const [chId, subs] of Object.entries(state.subs)) {
        const ch = state.channels[chId];
        if (ch && ch.legacyCut === undefined && Object.values(subs).some((x) => !x.spans))
          writableChannel(state, chId)!.legacyCut = fact.cut;
      }
      state.spansReady = true;
      break;
    }
    case "dmConvListed":
      writableField(state, "dmConvs")[fact.key] = true;
      break;
    case "roleSeen":
      if (state.roleSeen === undefined) state.roleSeen = {};
      writableField(state, "roleSeen")[String(fact.userId)] = fact.role;
      break;
    case "handled": {
      if (state.handled === undefined) state.handled = [];
      const keys = writableField(state, "handled");
      keys.push(fact.key);
      if (keys.length > HANDLED_KEPT) keys.shift();
      break;
    }
    default:
      break; // a fact from a newer version: ignore, never throw
  }
  return state;
}

/**
 * The spans of a subscription. One made before spans existed receives from
 * the channel's legacy cut on while active (its earlier messages are rows
 * in the user actor); before the cut is set, and once inactive, nothing.
 */
export function spansOf(ch: Channel, sub: Sub): Span[] {
  if (sub.spans) return sub.spans;
  if (!sub.active || ch.legacyCut === undefined) return [];
  return [[ch.legacyCut, null]];
}

export function dirToSnapshot(state: DirState): string {
  return JSON.stringify(state);
}

export function dirFromSnapshot(data: string, ref: ActorRef): DirState {
  const out = { ...initialDir(ref), spansReady: false, ...(JSON.parse(data) as Partial<DirState>) };
  out.byName = dict(out.byName);
  out.dmConvs = dict(out.dmConvs);
  return out;
}

/**
 * A channel's active subscribers, ascending, and the two subsets every send
 * reads (who muted the channel, who turned its push notifications on). Every
 * send asks for them, so they are computed in one pass and kept per
 * subscription record until a subscription of the channel changes
 * (`forgetSubscribers`, called by applyDirFact); they are frozen, since
 * callers share them. `stamp` names the lists: unique to this process and
 * computation, so a caller holding lists under the same stamp holds these
 * (sendContext then leaves them out of its reply).
 */
export interface SubscriberLists {
  all: readonly number[];
  muted: readonly number[];
  pushOn: readonly number[];
  stamp: string;
}
const subscriberLists = new WeakMap<object, SubscriberLists>();
/** Every channel without subscribers has these (the same content, so one stamp). */
const NO_SUBSCRIBERS: SubscriberLists = Object.freeze({
  all: Object.freeze([]),
  muted: Object.freeze([]),
  pushOn: Object.freeze([]),
  stamp: "none",
});
/** This process's part of every stamp: lists computed by another process never share one. */
const STAMP_BOOT = randomBytes(9).toString("base64url");
let stampSeq = 0;

export function subscriberListsOf(state: DirState, channelId: number): SubscriberLists {
  const subs = state.subs[String(channelId)];
  if (!subs) return NO_SUBSCRIBERS;
  let lists = subscriberLists.get(subs);
  if (!lists) {
    const all: number[] = [];
    const muted: number[] = [];
    const pushOn: number[] = [];
    for (const [id, sub] of Object.entries(subs)) {
      if (!sub.active) continue;
      const n = Number(id);
      all.push(n);
      if (sub.isMuted) muted.push(n);
      if (sub.pushNotifications === true) pushOn.push(n);
    }
    const asc = (a: number, b: number) => a - b;
    lists = Object.freeze({
      all: Object.freeze(all.sort(asc)),
      muted: Object.freeze(muted.sort(asc)),
      pushOn: Object.freeze(pushOn.sort(asc)),
      stamp: `${STAMP_BOOT}.${++stampSeq}`,
    });
    subscriberLists.set(subs, lists);
  }
  return lists;
}

export function activeSubscriberIds(state: DirState, channelId: number): number[] {
  return subscriberListsOf(state, channelId).all as number[];
}

/** A subscription of the channel whose record this is changed: recompute its lists. */
export function forgetSubscribers(subs: object | undefined): void {
  if (subs) subscriberLists.delete(subs);
}
