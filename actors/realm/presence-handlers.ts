// Presence (Zulip's zerver/actions/presence.py and lib/presence.py), kept
// off the journal: a heartbeat mutates the realm's in-memory presence map
// in its turn and persists nothing, so the hottest request costs no store
// write. The map is lost on failover by design (users look offline until
// their next heartbeat, at most a minute). Events go out only when a user
// comes online or becomes active again, so steady heartbeats fan out nothing,
// and only in organizations of at most PRESENCE_EVENTS_USER_LIMIT active
// users: beyond that, clients learn of changes from their own heartbeats'
// replies (presence_last_update_id), as in Zulip.

import { errors } from "../errors.ts";
import type { Caller, Obj } from "../types.ts";
import { realmSetting } from "./defaults.ts";
import { apiEmail, findByEmail } from "./members.ts";
import { activeIds, memberById } from "./member-helpers.ts";
import type { RealmHandler } from "./handler.ts";
import type { DirEntry, PresenceEntry, RealmState } from "./state.ts";

/** Zulip's OFFLINE_THRESHOLD_SECS: no heartbeat for this long means offline. */
const OFFLINE_THRESHOLD_SECS = 140;
/** Zulip's PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS. */
const LEGACY_ACTIVITY_OFFSET_SECS = 70;
/**
 * Zulip's USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS: above this many
 * active users, nobody gets a `presence` event. Each event goes to every
 * active user, and users come online at a rate that grows with the
 * organization, so the events would grow with its square.
 */
export const PRESENCE_EVENTS_USER_LIMIT = 100;
/** Default presence_history_limit_days. */
const HISTORY_LIMIT_DAYS = 14;

function me(state: RealmState, caller: Caller | null): DirEntry {
  if (!state.created) throw errors.invalidSubdomain();
  if (caller === null) throw errors.notLoggedIn();
  const entry = caller.realmId === state.realmId ? memberById(state, caller.userId) : undefined;
  if (!entry || !entry.isActive) throw errors.accessDenied();
  return entry;
}

/** The legacy per-client shape (format_legacy_presence_dict). */
function legacyInfo(p: PresenceEntry): Obj {
  const active = p.activeTimestamp + LEGACY_ACTIVITY_OFFSET_SECS >= p.idleTimestamp;
  const website = {
    client: "website",
    status: active ? "active" : "idle",
    timestamp: active ? p.activeTimestamp : p.idleTimestamp,
    pushable: false,
  };
  return {
    aggregated: { client: website.client, status: website.status, timestamp: website.timestamp },
    website,
  };
}

function modernInfo(p: PresenceEntry): Obj {
  return { active_timestamp: p.activeTimestamp, idle_timestamp: p.idleTimestamp };
}

/** Slack before presenceLog is compacted, so small realms don't compact on every beat. */
const LOG_SLACK = 64;

/**
 * The next presence update id. A fresh activation (failover, restart) has
 * forgotten the counter; seeding it from the clock at a thousand ids per
 * millisecond keeps every new id above the ones issued before, so a client
 * polling with an id from the previous activation still gets every row
 * written since instead of nothing.
 */
function nextUpdateId(state: RealmState, nowMs: number): number {
  if (state.presenceUpdateId === 0) state.presenceUpdateId = Math.floor(nowMs) * 1000;
  return ++state.presenceUpdateId;
}

/** Store a changed row and append it to the update-ordered log. */
function recordPresence(state: RealmState, userId: number, entry: PresenceEntry): void {
  state.presence.set(userId, entry);
  const log = state.presenceLog;
  log.ids.push(entry.updateId);
  log.users.push(userId);
  // Amortized O(1) per update; memory stays under two log entries per user.
  if (log.ids.length > 2 * state.presence.size + LOG_SLACK) {
    let w = 0;
    for (let r = 0; r < log.ids.length; r++) {
      if (state.presence.get(log.users[r]!)?.updateId !== log.ids[r]) continue;
      log.ids[w] = log.ids[r]!;
      log.users[w] = log.users[r]!;
      w++;
    }
    log.ids.length = w;
    log.users.length = w;
  }
}

/** Index of the first log entry with an update id above `id` (ids ascend). */
function firstAfter(ids: number[], id: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface PresenceQuery {
  slim: boolean;
  /** The client's last_update_id; absent means "everything". */
  sinceId?: number;
  historyLimitDays?: number;
}

/**
 * Presences of the realm's active human users (Zulip's
 * get_presence_dict_by_realm) and presence_last_update_id: the newest id
 * among the rows returned, else the client's own id, else -1. With a
 * positive last_update_id the history limit is moot and only the log's tail
 * past that id is read, so a poll costs O(changes since), not O(users).
 */
function fetchPresences(
  state: RealmState,
  nowSecs: number,
  q: PresenceQuery,
): { presences: Obj; lastId: number } {
  const presences: Obj = {};
  if (realmSetting(state, "presence_disabled") === true) return { presences, lastId: -1 };
  let lastId = -1;
  const add = (userId: number, p: PresenceEntry): void => {
    const u = memberById(state, userId);
    if (!u || !u.isActive || u.isBot) return;
    if (q.slim) presences[String(userId)] = modernInfo(p);
    else presences[apiEmail(state, u)] = legacyInfo(p);
    if (p.updateId > lastId) lastId = p.updateId;
  };
  // history_limit_days=0 asks for no presence data at all.
  if (q.historyLimitDays !== 0) {
    if (q.sinceId === undefined || q.sinceId <= 0) {
      const cutoff = nowSecs - (q.historyLimitDays ?? HISTORY_LIMIT_DAYS) * 86400;
      const since = q.sinceId ?? -1;
      for (const [userId, p] of state.presence) {
        if (p.idleTimestamp >= cutoff && p.updateId > since) add(userId, p);
      }
    } else {
      const { ids, users } = state.presenceLog;
      for (let i = firstAfter(ids, q.sinceId); i < ids.length; i++) {
        const p = state.presence.get(users[i]!);
        // A stale entry: the user changed again later in the log.
        if (p !== undefined && p.updateId === ids[i]) add(users[i]!, p);
      }
    }
  }
  if (lastId === -1 && q.sinceId !== undefined) lastId = q.sinceId;
  return { presences, lastId };
}

/** POST /users/me/presence. */
const updatePresence: RealmHandler<"updatePresence"> = (state, args, ctx, caller) => {
  const user = me(state, caller);
  const status = args.status;
  if (status !== "active" && status !== "idle") throw errors.invalidWithDetail("status", status);
  const pingOnly = args.pingOnly ?? false;
  const lastUpdateId = args.lastUpdateId;
  const slim = (args.slimPresence ?? false) || lastUpdateId !== undefined;
  const nowMs = ctx.now();
  const now = Math.floor(nowMs / 1000);

  const events = [];
  if (!user.isBot && realmSetting(state, "presence_disabled") !== true) {
    const prev = state.presence.get(user.userId);
    const wasOffline = !prev || prev.idleTimestamp < now - OFFLINE_THRESHOLD_SECS;
    const becameActive =
      status === "active" &&
      (!prev || prev.activeTimestamp + LEGACY_ACTIVITY_OFFSET_SECS < prev.idleTimestamp);
    const activeTimestamp = status === "active" ? now : (prev?.activeTimestamp ?? 0);
    // A beat that changes neither timestamp (another tab within the same
    // second) is no change: no new update id, nothing for pollers to fetch.
    const unchanged =
      prev !== undefined && prev.activeTimestamp === activeTimestamp && prev.idleTimestamp === now;
    const next: PresenceEntry = unchanged
      ? prev
      : { activeTimestamp, idleTimestamp: now, updateId: nextUpdateId(state, nowMs) };
    // In-memory only: this mutation is the whole write (see the file comment).
    if (!unchanged) recordPresence(state, user.userId, next);
    if ((wasOffline || becameActive) && state.userIndex.active.size <= PRESENCE_EVENTS_USER_LIMIT) {
      const email = apiEmail(state, user);
      events.push({
        event: {
          type: "presence",
          user_id: user.userId,
          email,
          server_timestamp: nowMs / 1000,
          presence: { website: legacyInfo(next).website as Obj },
          // The simplified_presence_events form; a queue sends the clients
          // with that capability only this key (the presence event, https://zulip.com/api/get-events).
          presences: { [String(user.userId)]: modernInfo(next) },
        },
        userIds: activeIds(state).filter((id) => id !== user.userId),
      });
    }
  }
  if (pingOnly) return { events, reply: {} };
  const { presences, lastId } = fetchPresences(state, now, {
    slim,
    sinceId: lastUpdateId,
    historyLimitDays: args.historyLimitDays,
  });
  const reply: Obj = {
    presences,
    server_timestamp: nowMs / 1000,
    zephyr_mirror_active: false,
    presence_last_update_id: lastId,
  };
  return { events, reply };
};

/** GET /realm/presence. */
const realmPresence: RealmHandler<"realmPresence"> = (state, _args, ctx, caller) => {
  me(state, caller);
  const nowMs = ctx.now();
  return {
    reply: {
      presences: fetchPresences(state, Math.floor(nowMs / 1000), { slim: false }).presences,
      server_timestamp: nowMs / 1000,
    },
  };
};

/**
 * GET /users/{user_id_or_email}/presence: the modern timestamps (feature
 * level 487) beside the legacy shape without `client` and `pushable`, whose
 * aggregated status is "offline" once the newest timestamp is older than
 * the offline threshold (Zulip's get_presence_backend). Zulip dropped the
 * legacy keys at 487 and restored them at 497; keeping them serves clients
 * of every level.
 */
const userPresence: RealmHandler<"userPresence"> = (state, args, ctx, caller) => {
  const viewer = me(state, caller);
  const key = args.userIdOrEmail;
  // A hidden real address answers like an unknown one (findByEmail).
  const target = /^\d+$/.test(key) ? memberById(state, Number(key)) : findByEmail(state, viewer, key);
  if (!target || !target.isActive) throw errors.noSuchUser();
  if (target.isBot) throw errors.badRequest("Presence is not supported for bot users.");
  const p = state.presence.get(target.userId);
  if (!p) throw errors.badRequest(`No presence data for ${key}`);
  const website = legacyInfo(p).website as Obj;
  const timestamp = website.timestamp as number;
  const offline = Math.floor(ctx.now() / 1000) - timestamp > OFFLINE_THRESHOLD_SECS;
  return {
    reply: {
      presence: {
        ...modernInfo(p),
        aggregated: { status: offline ? "offline" : website.status, timestamp },
        website: { status: website.status, timestamp },
      },
    },
  };
};

/**
 * POST /register's presence state: presences (modern format keyed by user
 * id for slim clients, else legacy keyed by email), the newest update id
 * the map reflects, and the server's time of the read.
 */
const presenceState: RealmHandler<"presenceState"> = (state, args, ctx, caller) => {
  me(state, caller);
  const nowMs = ctx.now();
  const { presences, lastId } = fetchPresences(state, Math.floor(nowMs / 1000), {
    slim: args.slimPresence ?? false,
    historyLimitDays: args.historyLimitDays,
  });
  return {
    reply: {
      presences,
      // The same rule as the poll's (-1 while no row is returned), so this id
      // is a valid last_update_id for the client's first poll.
      presence_last_update_id: lastId,
      server_timestamp: nowMs / 1000,
    },
  };
};

export const presenceHandlers = {
  presenceState,
  updatePresence,
  realmPresence,
  userPresence,
};
