// A leaf read for the channel kind: who is in the organization, with the
// role and email needed to check principals and address events. Calls
// nobody, so channel actors may call it inside their turns.

import { errors } from "../errors.ts";
import { realmSetting } from "./defaults.ts";
import { formatLinkifiers } from "./linkifiers.ts";
import { memberById } from "./member-helpers.ts";
import { apiEmail, findByEmail } from "./members.ts";
import type { RealmHandler } from "./handler.ts";
import type { RosterEntry } from "./protocol.ts";
import { sendPrefsReply } from "./send-prefs.ts";
import type { DirEntry, RealmState } from "./state.ts";

function rosterEntry(state: RealmState, u: DirEntry): RosterEntry {
  return {
    userId: u.userId,
    // The API email: what messages, reactions and principals name users by.
    email: apiEmail(state, u),
    role: u.role,
    isBot: u.isBot,
    botType: u.botType,
    // Members may unsubscribe bots they own (channel unsubscribe).
    botOwnerId: u.botOwnerId ?? null,
    isActive: u.isActive,
    fullName: u.fullName,
    avatarVersion: u.avatarVersion,
    ...(u.avatarSource === "J" ? { avatarSource: "J" as const } : {}),
  };
}

/**
 * The organization's users, or, for a caller holding a copy (args `since`:
 * the `epoch` and `version` of its copy, see RosterLog), only the entries
 * that changed since (`changed`), so a send costs the same in any size of
 * organization. Every reply carries the current `epoch` and `version`.
 */
const roster: RealmHandler<"roster"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created) throw errors.invalidSubdomain();
  const log = state.rosterLog;
  const since = args.since;
  const from = since !== undefined && since.epoch === log.epoch ? since.version : null;
  const users: { users?: RosterEntry[]; changed?: RosterEntry[] } = {};
  if (from !== null && from >= log.floor && from <= log.version) {
    const ids = new Set<number>();
    for (let i = log.changes.length - 1; i >= 0 && log.changes[i]!.version > from; i--)
      ids.add(log.changes[i]!.userId);
    const changed: RosterEntry[] = [];
    for (const id of ids) {
      const u = memberById(state, id);
      if (u) changed.push(rosterEntry(state, u));
    }
    users.changed = changed;
  } else {
    users.users = Object.values(state.users).map((u) => rosterEntry(state, u));
  }
  return {
    reply: {
      ...users,
      epoch: log.epoch,
      version: log.version,
      // For message rendering (patterns and URL templates).
      linkifiers: formatLinkifiers(state),
      // Where a channel's topics_policy is "inherit" (FL 392).
      topicsPolicy: realmSetting(state, "topics_policy"),
      // For a send (args sender, alertStamp): mutes and alert words.
      ...sendPrefsReply(state, args),
    },
  };
};

/**
 * The roster entries of `userIds` only (unknown ids left out): what a
 * direct-message draft or scheduled message checks of its recipients,
 * without the whole organization's roster.
 */
const rosterEntries: RealmHandler<"rosterEntries"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created) throw errors.invalidSubdomain();
  const users: RosterEntry[] = [];
  for (const id of args.userIds) {
    const u = memberById(state, id);
    if (u) users.push(rosterEntry(state, u));
  }
  return { reply: { users } };
};

/**
 * Direct-message recipients by email (POST /messages `to`): ids of active
 * users of the caller's realm, or "Invalid email '<email>'". A real address
 * resolves only for a caller who may see it (findByEmail).
 */
const resolveEmails: RealmHandler<"resolveEmails"> = (state, args, _ctx, caller) => {
  if (!state.created) throw errors.invalidSubdomain();
  if (caller && caller.realmId !== state.realmId) throw errors.accessDenied();
  const viewer = caller ? (memberById(state, caller.userId) ?? null) : null;
  const ids = args.emails.map((email) => {
    const u = findByEmail(state, viewer, email);
    if (!u || !u.isActive) throw errors.invalidEmail(email);
    return u.userId;
  });
  return { reply: { ids } };
};

/**
 * The current API emails, full names and avatar versions of `userIds`
 * (unknown ids left out): messages are stored with the sender as of their
 * sending time, and are shown with today's (a user may have renamed
 * themselves or hidden their address since).
 */
const apiEmails: RealmHandler<"apiEmails"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created) throw errors.invalidSubdomain();
  const emails: Record<string, string> = {};
  const fullNames: Record<string, string> = {};
  const avatarVersions: Record<string, number> = {};
  for (const id of args.userIds) {
    const u = memberById(state, id);
    if (!u) continue;
    emails[String(id)] = apiEmail(state, u);
    fullNames[String(id)] = u.fullName;
    avatarVersions[String(id)] = u.avatarVersion;
  }
  return { reply: { emails, fullNames, avatarVersions } };
};

export const rosterHandlers = { roster, rosterEntries, resolveEmails, apiEmails };
