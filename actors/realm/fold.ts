// Folding the realm's facts into its state, and its snapshots. Kept apart
// from state.ts (the types), because it calls the fact folding of the files
// that own parts of the state (linkifiers, invites, exports...), which
// themselves import state.ts's types.

import { dict } from "../dict.ts";
import { ROLE_GUEST } from "../user/index.ts";
import type { ActorRef, Obj } from "../types.ts";
import { applyLinkifierFact, isLinkifierFact } from "./linkifiers.ts";
import { applySendPrefsFact, isSendPrefsFact } from "./send-prefs.ts";
import { applyPlaygroundFact, isPlaygroundFact } from "./playgrounds.ts";
import { applyScheduledIndexFact, isScheduledIndexFact } from "./scheduled-index.ts";
import { applyUserDefaultsFact, isUserDefaultsFact } from "./user-defaults.ts";
import { applyInviteFact, invitesFromSnapshot, isInviteFact } from "./invites.ts";
import { applyExportFact, isExportFact } from "./export.ts";
import { AuthRateLimiter } from "./rate-limit.ts";
import { foldName } from "./unique-names.ts";
import {
  emptyUserIndex,
  entryDefaults,
  initialRealm,
  newRosterLog,
  type DirEntry,
  type RealmFact,
  type RealmState,
  type UserIndex,
} from "./state.ts";

function indexUser(state: RealmState, u: DirEntry, sign: 1 | -1): void {
  const ix = state.userIndex;
  if (u.isBot) indexBot(ix, u, sign);
  indexFoldedName(ix, u, sign);
  if (!u.isActive) return;
  if (sign > 0) ix.active.add(u.userId);
  else ix.active.delete(u.userId);
  if (u.role === ROLE_GUEST) {
    if (sign > 0) ix.activeGuests.add(u.userId);
    else ix.activeGuests.delete(u.userId);
  }
  const n = (ix.activeNames.get(u.fullName) ?? 0) + sign;
  if (n > 0) ix.activeNames.set(u.fullName, n);
  else ix.activeNames.delete(u.fullName);
  // Administrators and owners (Zulip's is_realm_admin).
  if (u.role === 100 || u.role === 200) {
    if (sign > 0) ix.activeAdmins.add(u.userId);
    else ix.activeAdmins.delete(u.userId);
  }
}

/** Bots, active or not, by owner (GET /bots, /register's realm_bots, deactivations). */
function indexBot(ix: UserIndex, u: DirEntry, sign: 1 | -1): void {
  const owner = u.botOwnerId ?? null;
  let owned = owner === null ? undefined : ix.botsByOwner.get(owner);
  if (sign > 0) {
    ix.bots.add(u.userId);
    if (owner !== null) {
      if (owned === undefined) ix.botsByOwner.set(owner, (owned = new Set()));
      owned.add(u.userId);
    }
  } else {
    ix.bots.delete(u.userId);
    if (owned !== undefined) {
      owned.delete(u.userId);
      if (owned.size === 0) ix.botsByOwner.delete(owner!);
    }
  }
}

/** Every user's folded full name, deactivated users and bots included (checkUniqueName). */
function indexFoldedName(ix: UserIndex, u: DirEntry, sign: 1 | -1): void {
  const key = foldName(u.fullName);
  let ids = ix.foldedNames.get(key);
  if (sign > 0) {
    if (ids === undefined) ix.foldedNames.set(key, (ids = new Set()));
    ids.add(u.userId);
  } else if (ids !== undefined) {
    ids.delete(u.userId);
    if (ids.size === 0) ix.foldedNames.delete(key);
  }
}

function buildUserIndex(state: RealmState): UserIndex {
  state.userIndex = emptyUserIndex();
  for (const u of Object.values(state.users)) indexUser(state, u, 1);
  return state.userIndex;
}

/** Changes kept: a copy older than that gets the whole roster. */
const ROSTER_LOG_MAX = 1024;

function noteRosterChange(state: RealmState, userId: number): void {
  const log = state.rosterLog;
  log.changes.push({ version: ++log.version, userId });
  if (log.changes.length > 2 * ROSTER_LOG_MAX) {
    // Trimmed in halves: one copy per ROSTER_LOG_MAX changes, not per change.
    const drop = log.changes.length - ROSTER_LOG_MAX;
    log.floor = log.changes[drop - 1]!.version;
    log.changes = log.changes.slice(drop);
  }
}

export function applyRealmFact(state: RealmState, raw: Obj): RealmState {
  const fact = raw as unknown as RealmFact;
  switch (fact.type) {
    case "created":
      Object.assign(state, {
        created: true,
        name: fact.name,
        description: fact.description,
        host: fact.host,
        dateCreated: fact.dateCreated,
        settings: renameLegacySettings(fact.settings),
      });
      break;
    case "userAdded": {
      const key = fact.entry.email.toLowerCase();
      const old = state.users[key];
      if (old) indexUser(state, old, -1);
      state.users[key] = entryDefaults(fact.entry);
      indexUser(state, state.users[key], 1);
      state.emailById[String(fact.entry.userId)] = key;
      noteRosterChange(state, fact.entry.userId);
      break;
    }
    case "memberUpdated": {
      const key = state.emailById[String(fact.userId)];
      const entry = key === undefined ? undefined : state.users[key];
      if (entry) {
        indexUser(state, entry, -1);
        Object.assign(entry, fact.changes);
        indexUser(state, entry, 1);
      }
      noteRosterChange(state, fact.userId);
      break;
    }
    case "memberEmailChanged": {
      noteRosterChange(state, fact.userId);
      const oldKey = state.emailById[String(fact.userId)];
      const entry = oldKey === undefined ? undefined : state.users[oldKey];
      if (!entry) break;
      const key = fact.email.toLowerCase();
      delete state.users[oldKey!];
      entry.email = fact.email;
      state.users[key] = entry;
      state.emailById[String(fact.userId)] = key;
      break;
    }
    case "profileFieldsSet":
      state.profileFields = fact.fields.map((f) => ({ ...f }));
      break;
    case "profileFieldDeleted": {
      const id = String(fact.fieldId);
      state.profileFields = state.profileFields.filter((f) => f.id !== fact.fieldId);
      for (const u of Object.values(state.users)) if (u.profileData) delete u.profileData[id];
      break;
    }
    case "profileDataSet": {
      const key = state.emailById[String(fact.userId)];
      const entry = key === undefined ? undefined : state.users[key];
      if (!entry) break;
      const data = { ...(entry.profileData ?? {}) };
      for (const [id, v] of Object.entries(fact.values)) {
        if (v === null) delete data[id];
        else data[id] = { ...v };
      }
      entry.profileData = data;
      break;
    }
    case "settingsChanged":
      state.settings = { ...state.settings, ...renameLegacySettings(fact.values) };
      break;
    case "identityChanged":
      if (fact.name !== undefined) state.name = fact.name;
      if (fact.description !== undefined) state.description = fact.description;
      break;
    default:
      if (isLinkifierFact(fact)) applyLinkifierFact(state, fact);
      else if (isSendPrefsFact(fact)) applySendPrefsFact(state, fact);
      else if (isPlaygroundFact(fact)) applyPlaygroundFact(state, fact);
      else if (isScheduledIndexFact(fact)) applyScheduledIndexFact(state, fact);
      else if (isUserDefaultsFact(fact)) applyUserDefaultsFact(state, fact);
      else if (isInviteFact(fact)) applyInviteFact(state, fact);
      else if (isExportFact(fact)) applyExportFact(state, fact);
      break; // otherwise a fact from a newer version: ignore, never throw
  }
  return state;
}

export function realmToSnapshot(state: RealmState): string {
  // `attempts`, `presence`, `presenceLog`, `rosterLog` and `userIndex` are deliberately left out (see RealmState).
  return JSON.stringify(state, (key, value) =>
    key === "attempts" ||
    key === "presence" ||
    key === "presenceUpdateId" ||
    key === "presenceLog" ||
    key === "rosterLog" ||
    key === "userIndex"
      ? undefined
      : value,
  );
}

/**
 * Settings Zulip renamed after this server first stored them, old name ->
 * new (giphy_rating became gif_rating_policy at feature level 453): journals
 * and snapshots written before keep the old name, read as the new one.
 */
const RENAMED_SETTINGS: Readonly<Record<string, string>> = { giphy_rating: "gif_rating_policy" };

function renameLegacySettings(values: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(values))
    out[Object.hasOwn(RENAMED_SETTINGS, k) ? RENAMED_SETTINGS[k]! : k] = v;
  return out;
}

export function realmFromSnapshot(data: string, ref: ActorRef): RealmState {
  // `role` is the role tag of snapshots written before the realm directory became its own kind.
  const { role: _role, ...snap } = JSON.parse(data) as Partial<RealmState> & { role?: string };
  const out: RealmState = {
    ...initialRealm(ref),
    ...snap,
    attempts: new AuthRateLimiter(),
    presence: new Map(),
    presenceUpdateId: 0,
    presenceLog: { ids: [], users: [] },
    rosterLog: newRosterLog(),
  };
  out.settings = renameLegacySettings(out.settings);
  out.users = dict(out.users);
  for (const [k, e] of Object.entries(out.users)) out.users[k] = entryDefaults(e);
  invitesFromSnapshot(out);
  buildUserIndex(out);
  return out;
}
