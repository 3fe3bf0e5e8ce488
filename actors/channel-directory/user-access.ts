// Restricted user access (Zulip's can_access_all_users_group, feature
// levels 225, 228, 314): which users a guest may know about. The channel
// directory holds every subscription, so the sets are computed here; the
// realm actor, which formats users, may not call this actor (the directory
// calls the realm inside its turns), so the gateway asks here first and
// hands the answer to the realm (gateway/user-access.ts).

import { errors } from "../errors.ts";
import { SYSTEM_GROUP_ID } from "../group/index.ts";
import { realmGroupSetting } from "../permissions/index.ts";
import { UNKNOWN_USER_NAME } from "../realm/index.ts";
import { realmRef } from "../addresses.ts";
import { userRef } from "../user/index.ts";
import type { TypedCall } from "../protocol.ts";
import type { ActorContext, Caller, Obj, OutEvent, Value } from "../types.ts";
import { channelDirectoryRef } from "./refs.ts";
import type { Turn } from "./access.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";
import { activeSubscriberIds, type DirState } from "./state.ts";

const ROLE_GUEST = 600;

/**
 * Whether the realm restricts guests at all: the setting allows only
 * role:everyone and role:members, and guests are in the first only.
 */
export async function guestsRestricted(ctx: ActorContext, realmId: number) {
  const value = await realmGroupSetting(ctx, realmId, "can_access_all_users_group");
  return value !== SYSTEM_GROUP_ID["role:everyone"];
}

/**
 * The users who share a channel subscription with `userId` (Zulip's
 * get_subscribers_of_target_user_subscriptions for channels), ascending.
 * Costs the subscriber lists of that user's channels only.
 */
export function channelPeers(state: DirState, userId: number): number[] {
  const key = String(userId);
  const out = new Set<number>();
  for (const [channelId, subs] of Object.entries(state.subs)) {
    if (subs[key]?.active !== true) continue;
    for (const id of activeSubscriberIds(state, Number(channelId))) out.add(id);
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * The caller's access: `{all: true}` when they may see every user, else
 * `{all: false, channel_peers}`. A non-guest answers at once, without any
 * call (the common case).
 */
const accessibleUsers: DirHandler<"accessibleUsers"> = async (state, _args, ctx, caller) => {
  if (!caller || caller.realmId !== state.realmId) throw errors.accessDenied();
  if (caller.role === ROLE_GUEST && (await guestsRestricted(ctx, state.realmId)))
    return { reply: { all: false, channel_peers: channelPeers(state, caller.userId) } };
  return { reply: { all: true } };
};

/**
 * realm_user add/remove events for guests who gain or lose access to users
 * through a subscription change of `channelIds` (Zulip's
 * send_user_creation_events_on_adding_subscriptions and
 * send_user_remove_events_on_removing_subscriptions; feature level 228).
 * Only the guests subscribed to those channels before or after can be
 * affected; nothing is computed unless one is and the realm restricts guests.
 */
export async function accessChangeHandoffs(
  t: Turn,
  before: DirState,
  after: DirState,
  channelIds: Iterable<number>,
): Promise<{ subject: string; data: Obj }[]> {
  const guests = new Set<number>();
  for (const id of new Set(channelIds)) {
    for (const s of [before, after]) {
      for (const u of activeSubscriberIds(s, id)) {
        const r = t.users.get(u);
        if (r?.isActive && r.role === ROLE_GUEST) guests.add(u);
      }
    }
  }
  if (!guests.size || !(await guestsRestricted(t.ctx, t.realmId))) return [];
  const changes: { subject: string; data: Obj }[] = [];
  for (const g of [...guests].sort((a, b) => a - b)) {
    // Bots are always accessible; deactivated users are not listed by channel peers.
    const counts = (id: number) => {
      const r = t.users.get(id);
      return id !== g && r !== undefined && r.isActive && !r.isBot;
    };
    const was = new Set(channelPeers(before, g));
    const now = channelPeers(after, g);
    const nowSet = new Set(now);
    const gained = now.filter((id) => !was.has(id) && counts(id));
    const lost = [...was].filter((id) => !nowSet.has(id) && counts(id)).sort((a, b) => a - b);
    if (gained.length || lost.length)
      changes.push({ subject: ACCESS_CHANGE, data: { realmId: t.realmId, guest: g, gained, lost } });
  }
  return changes;
}

/**
 * The ACCESS_CHANGE hand-offs, once the node has taken out the users the
 * guest shares a direct-message conversation with (who stay accessible):
 * realm_user add with the user as the guest may see them, or remove with the
 * "Unknown user" placeholder. Internal.
 */
const emitAccessChanges: DirHandler<"emitAccessChanges"> = async (state, args, ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const events: OutEvent[] = [];
  for (const { guest: g, gained, lost } of args.items) {
    if (gained.length) {
      const viewer: Caller = { realmId: state.realmId, userId: g, role: ROLE_GUEST, isBot: false };
      const { members } = await ctx.call(
        realmRef(state.realmId),
        "getMembers",
        { userIds: gained, clientGravatar: false, includeCustomProfileFields: true },
        viewer,
      );
      for (const person of members)
        events.push({ event: { type: "realm_user", op: "add", person }, userIds: [g] });
    }
    for (const id of lost) {
      events.push({
        event: { type: "realm_user", op: "remove", person: { user_id: id, full_name: UNKNOWN_USER_NAME } },
        userIds: [g],
      });
    }
  }
  return { events, reply: {} };
};

/**
 * The ACCESS_RELAY hand-offs (actors/user/guest-access.ts): each event to
 * its candidate guests who share a channel with its subject.
 */
const relayToAccessors: DirHandler<"relayToAccessors"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const events: OutEvent[] = [];
  for (const item of args.items) {
    const peers = new Set(channelPeers(state, item.subjectId));
    // Guests who share a direct-message conversation with the subject (the node asked them).
    for (const id of item.dmPeers) peers.add(id);
    const userIds = item.candidates.filter((id) => peers.has(id));
    if (userIds.length) events.push({ event: item.event, userIds });
    const strangers = item.candidates.filter((id) => !peers.has(id));
    if (strangers.length) for (const event of item.others ?? []) events.push({ event, userIds: strangers });
  }
  return { events, reply: {} };
};

export const userAccessDirectoryHandlers: DirHandlers<
  "accessibleUsers" | "relayToAccessors" | "emitAccessChanges"
> = {
  accessibleUsers,
  relayToAccessors,
  emitAccessChanges,
};

/** A hand-off's list of user ids (journaled data: anything else counts as none). */
function idsOf(v: Value | undefined): number[] {
  return Array.isArray(v) ? v.filter((x): x is number => typeof x === "number") : [];
}

function isObj(v: Value | undefined): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Hand-off subject of a guest's gained and lost channel peers (accessChangeHandoffs). */
export const ACCESS_CHANGE = "access.change";

/** The users each guest shares a direct-message conversation with, one user-actor call per guest. */
async function dmPeersOf(
  realmId: number,
  guests: Iterable<number>,
  call: TypedCall,
): Promise<Map<number, Set<number>>> {
  const out = new Map<number, Set<number>>();
  await Promise.all(
    [...new Set(guests)].map(async (g) => {
      const r = await call(userRef(realmId, g), "dmPeers", {});
      out.set(g, new Set(r.dm_peers));
    }),
  );
  return out;
}

/** The node's handler of ACCESS_CHANGE: DM partners stay accessible, so they are neither added nor removed. */
export async function emitAccessChangeEvents(handoffs: Obj[], call: TypedCall): Promise<boolean> {
  const byRealm = new Map<number, Obj[]>();
  for (const h of handoffs) {
    const realmId = Number(h.realmId);
    (byRealm.get(realmId) ?? byRealm.set(realmId, []).get(realmId)!).push(h);
  }
  await Promise.all(
    [...byRealm].map(async ([realmId, items]) => {
      const peers = await dmPeersOf(
        realmId,
        items.map((i) => Number(i.guest)),
        call,
      );
      const kept = items.map((i) => {
        const dm = peers.get(Number(i.guest)) ?? new Set<number>();
        const keep = (ids: Value | undefined) => idsOf(ids).filter((id) => !dm.has(id));
        return { guest: Number(i.guest), gained: keep(i.gained), lost: keep(i.lost) };
      });
      await call(channelDirectoryRef(realmId), "emitAccessChanges", { items: kept });
    }),
  );
  return true;
}

/** The node's handler of ACCESS_RELAY: one directory call per realm for a batch. */
export async function relayAccessEvents(handoffs: Obj[], call: TypedCall): Promise<boolean> {
  const byRealm = new Map<number, Obj[]>();
  for (const h of handoffs) {
    const realmId = Number(h.realmId);
    (byRealm.get(realmId) ?? byRealm.set(realmId, []).get(realmId)!).push(h);
  }
  await Promise.all(
    [...byRealm].map(async ([realmId, batch]) => {
      // Guests who share a DM with the subject may access them too (Zulip's
      // get_accessible_user_ids counts direct-message partners).
      const peers = await dmPeersOf(
        realmId,
        batch.flatMap((i) => idsOf(i.candidates)),
        call,
      );
      const items = batch.map((i) => {
        const subjectId = Number(i.subjectId);
        const candidates = idsOf(i.candidates);
        return {
          subjectId,
          event: isObj(i.event) ? i.event : {},
          candidates,
          ...(Array.isArray(i.others) ? { others: i.others.filter(isObj) } : {}),
          dmPeers: candidates.filter((g) => peers.get(g)?.has(subjectId)),
        };
      });
      await call(channelDirectoryRef(realmId), "relayToAccessors", { items });
    }),
  );
  return true;
}
