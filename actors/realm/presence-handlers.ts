// Presence (Zulip's zerver/actions/presence.py and lib/presence.py), kept
// off the journal: a heartbeat mutates the realm's in-memory presence map
// in its turn and persists nothing, so the hottest request costs no store
// write. The map is lost on failover by design (users look offline until
// their next heartbeat, at most a minute). Events go out only when a user
// comes online or becomes active again, so steady heartbeats fan out nothing.

import { errors } from "../errors.ts";
import type { Caller, Handler, Obj } from "../types.ts";
import { argString, optBool, optInt } from "../user/index.ts";
import { realmSetting } from "./defaults.ts";
import { apiEmail, findByEmail } from "./members.ts";
import { activeIds, memberById } from "./member-handlers.ts";
import type { DirEntry, PresenceEntry, RealmState } from "./state.ts";

/** Zulip's OFFLINE_THRESHOLD_SECS: no heartbeat for this long means offline. */
const OFFLINE_THRESHOLD_SECS = 140;
/** Zulip's PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS. */
const LEGACY_ACTIVITY_OFFSET_SECS = 70;
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

/** Presence of the realm's active human users seen within the history limit. */
function presenceMap(state: RealmState, nowSecs: number, slim: boolean, days: number, sinceId: number): Obj {
  const out: Obj = {};
  const cutoff = nowSecs - days * 86400;
  for (const [userId, p] of state.presence) {
    if (p.idleTimestamp < cutoff || p.updateId <= sinceId) continue;
    const u = memberById(state, userId);
    if (!u || !u.isActive || u.isBot) continue;
    if (slim) out[String(userId)] = modernInfo(p);
    else out[apiEmail(state, u)] = legacyInfo(p);
  }
  return out;
}

/** POST /users/me/presence. */
const updatePresence: Handler<RealmState> = (state, args, ctx, caller) => {
  const user = me(state, caller);
  const status = argString(args, "status");
  if (status !== "active" && status !== "idle") throw errors.invalidWithDetail("status", status);
  const pingOnly = optBool(args, "pingOnly") ?? false;
  const lastUpdateId = optInt(args, "lastUpdateId");
  const slim = (optBool(args, "slimPresence") ?? false) || lastUpdateId !== undefined;
  const days = optInt(args, "historyLimitDays") ?? HISTORY_LIMIT_DAYS;
  const nowMs = ctx.now();
  const now = Math.floor(nowMs / 1000);

  const events = [];
  if (!user.isBot && realmSetting(state, "presence_disabled") !== true) {
    const prev = state.presence.get(user.userId);
    const wasOffline = !prev || prev.idleTimestamp < now - OFFLINE_THRESHOLD_SECS;
    const becameActive =
      status === "active" &&
      (!prev || prev.activeTimestamp + LEGACY_ACTIVITY_OFFSET_SECS < prev.idleTimestamp);
    // In-memory only: this mutation is the whole write (see the file comment).
    state.presenceUpdateId++;
    const next: PresenceEntry = {
      activeTimestamp: status === "active" ? now : (prev?.activeTimestamp ?? 0),
      idleTimestamp: now,
      updateId: state.presenceUpdateId,
    };
    state.presence.set(user.userId, next);
    if (wasOffline || becameActive) {
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
  const reply: Obj = {
    presences: presenceMap(state, now, slim, days, lastUpdateId ?? -1),
    server_timestamp: nowMs / 1000,
    zephyr_mirror_active: false,
  };
  if (lastUpdateId !== undefined) reply.presence_last_update_id = state.presenceUpdateId;
  return { events, reply };
};

/** GET /realm/presence. */
const realmPresence: Handler<RealmState> = (state, args, ctx, caller) => {
  me(state, caller);
  const nowMs = ctx.now();
  return {
    reply: {
      presences: presenceMap(state, Math.floor(nowMs / 1000), false, HISTORY_LIMIT_DAYS, -1),
      server_timestamp: nowMs / 1000,
    },
  };
};

/** GET /users/{user_id_or_email}/presence. */
const userPresence: Handler<RealmState> = (state, args, _ctx, caller) => {
  const viewer = me(state, caller);
  const key = argString(args, "userIdOrEmail");
  // A hidden real address answers like an unknown one (findByEmail).
  const target = /^\d+$/.test(key) ? memberById(state, Number(key)) : findByEmail(state, viewer, key);
  if (!target) throw errors.noSuchUser();
  if (target.isBot) throw errors.badRequest("Presence is not supported for bot users.");
  const p = state.presence.get(target.userId);
  if (!p) throw errors.badRequest(`No presence data for ${key}`);
  return { reply: { presence: legacyInfo(p) } };
};

/**
 * POST /register's presence state: presences (modern format keyed by user
 * id for slim clients, else legacy keyed by email), the newest update id
 * the map reflects, and the server's time of the read.
 */
const presenceState: Handler<RealmState> = (state, args, ctx, caller) => {
  me(state, caller);
  const nowMs = ctx.now();
  const slim = optBool(args, "slimPresence") ?? false;
  const days = optInt(args, "historyLimitDays") ?? HISTORY_LIMIT_DAYS;
  return {
    reply: {
      presences: presenceMap(state, Math.floor(nowMs / 1000), slim, days, -1),
      // Zulip sends -1 while no presence row exists.
      presence_last_update_id: state.presenceUpdateId || -1,
      server_timestamp: nowMs / 1000,
    },
  };
};

export const presenceHandlers: Record<string, Handler<RealmState>> = {
  presenceState,
  updatePresence,
  realmPresence,
  userPresence,
};
