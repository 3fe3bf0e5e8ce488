// Who may see and change what, for one turn of the channel directory: the
// realm's roster (roles, for principals and event audiences) and the
// system groups, fetched once, plus Zulip's access rules.

import { errors } from "../errors.ts";
import { SYSTEM_GROUP_ID, groupDirectoryRef } from "../group/index.ts";
import { isUserInGroupSetting, systemGroupId } from "../permissions/index.ts";
import { roster, type RosterEntry } from "./roster-view.ts";
import type { ActorContext, Caller, Obj, OutEvent } from "../types.ts";
import type { SystemGroups } from "./format.ts";
import { activeSubscriberIds, type Channel, type DirState, type GroupValue } from "./state.ts";

export type { RosterEntry } from "./roster-view.ts";

const SYSTEM_GROUP_NAMES = [
  "role:nobody",
  "role:owners",
  "role:administrators",
  "role:moderators",
  "role:fullmembers",
  "role:members",
  "role:everyone",
  "role:internet",
];

export const isAdmin = (role: number) => role <= 200;
export const isGuest = (role: number) => role >= 600;

/**
 * The settings whose members have metadata access to a channel they are
 * not subscribed to (FL 349, Zulip's get_metadata_access_streams_via_group_ids).
 */
const METADATA_GROUP_SETTINGS = [
  "can_add_subscribers_group",
  "can_administer_channel_group",
  "can_subscribe_group",
] as const;

export class Turn {
  /**
   * Private channel id -> users who see its metadata through its group
   * settings; filled by `load(ctx, realmId, state)`. Empty (no group
   * access) when loaded without the state.
   */
  readonly viaGroups = new Map<number, Set<number>>();

  private constructor(
    readonly ctx: ActorContext,
    readonly realmId: number,
    readonly users: ReadonlyMap<number, RosterEntry>,
    /** The active guests' ids. */
    readonly guests: ReadonlySet<number>,
    readonly sys: SystemGroups,
  ) {}

  private emails: Map<string, RosterEntry> | undefined;
  /** Users by lowercased email, built on first use (principals given by email). */
  get byEmail(): ReadonlyMap<string, RosterEntry> {
    if (!this.emails) {
      this.emails = new Map();
      for (const u of this.users.values()) this.emails.set(u.email.toLowerCase(), u);
    }
    return this.emails;
  }

  static async load(ctx: ActorContext, realmId: number, state?: DirState): Promise<Turn> {
    const t = await Turn.loadRoster(ctx, realmId);
    if (state) await t.loadViaGroups(state);
    return t;
  }

  /**
   * Members of the metadata-granting settings of every private channel:
   * anonymous values' direct members, and one group-directory call per
   * distinct group named (none when every such setting is role:nobody or
   * an anonymous value without subgroups, the defaults).
   */
  private async loadViaGroups(state: DirState): Promise<void> {
    const groupIds = new Set<number>();
    const need: [Channel, GroupValue][] = [];
    for (const ch of Object.values(state.channels)) {
      if (!ch.inviteOnly || ch.isWebPublic) continue;
      for (const name of METADATA_GROUP_SETTINGS) {
        const v = ch.groups[name];
        if (v === undefined) continue;
        need.push([ch, v]);
        const ids = typeof v === "number" ? [v] : v.direct_subgroups;
        for (const id of ids) if (id !== SYSTEM_GROUP_ID["role:nobody"]) groupIds.add(id);
      }
    }
    const members = new Map<number, number[]>();
    for (const id of groupIds) {
      const r = (await this.ctx.call(groupDirectoryRef(this.realmId), "expandGroups", {
        groupIds: [id],
      })) as {
        userIds: number[];
      };
      members.set(id, r.userIds);
    }
    for (const [ch, v] of need) {
      const set = this.viaGroups.get(ch.id) ?? new Set<number>();
      const ids = typeof v === "number" ? [v] : v.direct_subgroups;
      for (const id of ids) for (const u of members.get(id) ?? []) set.add(u);
      if (typeof v !== "number") for (const u of v.direct_members) set.add(u);
      // Guests never hold these settings (role:everyone is refused for them).
      for (const u of set) if (isGuest(this.users.get(u)?.role ?? 600)) set.delete(u);
      if (set.size) this.viaGroups.set(ch.id, set);
    }
  }

  private static async loadRoster(ctx: ActorContext, realmId: number): Promise<Turn> {
    // This process's copy of the roster, brought up to date by the changes
    // since it was last asked for (roster-view.ts): not every user each turn.
    const { users, guests } = await roster(ctx, realmId);
    const sys: SystemGroups = {};
    for (const name of SYSTEM_GROUP_NAMES) sys[name] = await systemGroupId(ctx, realmId, name);
    return new Turn(ctx, realmId, users, guests, sys);
  }

  /** The acting user, as the realm knows them now (role from the roster, not the cached caller). */
  me(caller: Caller | null): RosterEntry {
    if (!caller) throw errors.accessDenied();
    const u = this.users.get(caller.userId);
    if (!u || !u.isActive) throw errors.accessDenied();
    return u;
  }

  activeUsers(): RosterEntry[] {
    return [...this.users.values()].filter((u) => u.isActive);
  }

  inGroup(value: GroupValue, userId: number): Promise<boolean> {
    return isUserInGroupSetting(this.ctx, this.realmId, value, userId);
  }
}

export function isSubscribed(state: DirState, ch: Channel, userId: number): boolean {
  return state.subs[String(ch.id)]?.[String(userId)]?.active === true;
}

/**
 * Metadata access (the channel appears in lists, its events reach the user):
 * subscribers; everyone but guests for public channels; anyone for
 * web-public ones; administrators for private ones, and (FL 349) members of
 * its can_add_subscribers_group, can_administer_channel_group or
 * can_subscribe_group, as `t` loaded them with the state.
 */
export function canSeeMetadata(state: DirState, ch: Channel, u: RosterEntry, t?: Turn): boolean {
  if (isSubscribed(state, ch, u.userId) || ch.isWebPublic) return true;
  if (!ch.inviteOnly) return !isGuest(u.role);
  return isAdmin(u.role) || t?.viaGroups.get(ch.id)?.has(u.userId) === true;
}

/** Content access (messages, subscriber list): subscribers, or a public channel for non-guests. */
export function canAccessContent(state: DirState, ch: Channel, u: { userId: number; role: number }): boolean {
  if (isSubscribed(state, ch, u.userId) || ch.isWebPublic) return true;
  return !ch.inviteOnly && !isGuest(u.role);
}

/**
 * Zulip's can_access_stream_history is false: a private channel with
 * protected history, whose subscribers read only the messages they
 * received (their flag entries, Zulip's UserMessage rows).
 */
export function historyProtected(ch: {
  invite_only: boolean;
  history_public_to_subscribers: boolean;
}): boolean {
  return ch.invite_only && !ch.history_public_to_subscribers;
}

/** Organization administrators and members of can_administer_channel_group. */
export async function canAdminister(t: Turn, ch: Channel, u: RosterEntry): Promise<boolean> {
  if (isAdmin(u.role)) return true;
  return t.inGroup(ch.groups.can_administer_channel_group!, u.userId);
}

/** Active users who may see the channel's metadata: the audience of stream events. */
export function metadataAudience(t: Turn, state: DirState, ch: Channel): number[] {
  return t
    .activeUsers()
    .filter((u) => canSeeMetadata(state, ch, u, t))
    .map((u) => u.userId);
}

/**
 * Audience of peer_add / peer_remove: everyone who may see the subscriber
 * list (subscribers, and for public channels every non-guest), minus `except`.
 */
export function peerAudience(t: Turn, state: DirState, ch: Channel, except: Set<number>): number[] {
  const subs = new Set(activeSubscriberIds(state, ch.id));
  return t
    .activeUsers()
    .filter((u) => !except.has(u.userId))
    .filter(
      (u) => subs.has(u.userId) || ch.isWebPublic || (!ch.inviteOnly && !isGuest(u.role)) || isAdmin(u.role),
    )
    .map((u) => u.userId);
}

/**
 * A peer_add or peer_remove `event` of `ch` to its peerAudience, or null
 * when that is nobody. For a public channel that is every active user but
 * the guests not subscribed to it, so the event goes to the realm
 * (OutEvent.everyone) with those guests, and `except`, left out: its cost
 * follows the guests and the users online, not the organization.
 */
export function peerEvent(
  t: Turn,
  state: DirState,
  ch: Channel,
  except: Set<number>,
  event: Obj,
): OutEvent | null {
  if (ch.isWebPublic || !ch.inviteOnly) {
    const out = new Set(except);
    if (!ch.isWebPublic) for (const g of t.guests) if (!isSubscribed(state, ch, g)) out.add(g);
    return out.size
      ? { event, userIds: [], everyone: true, except: [...out] }
      : { event, userIds: [], everyone: true };
  }
  const audience = peerAudience(t, state, ch, except);
  return audience.length ? { event, userIds: audience } : null;
}

/** The `op` peer event of each channel (id -> the users subscribed or unsubscribed) to its peerAudience. */
export function peerChanges(
  t: Turn,
  state: DirState,
  byChannel: Map<number, number[]>,
  op: "peer_add" | "peer_remove",
): OutEvent[] {
  const out: OutEvent[] = [];
  for (const [channelId, userIds] of byChannel) {
    const ch = state.channels[String(channelId)]!;
    const event = { type: "subscription", op, stream_ids: [channelId], user_ids: userIds };
    const peer = peerEvent(t, state, ch, new Set(userIds), event);
    if (peer) out.push(peer);
  }
  return out;
}
