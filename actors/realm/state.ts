// State of the realm kind (key "realm"): one organization with its
// settings and its user directory (email -> id, API key, role...), the data
// every authenticated request needs. The deployment's host -> realm id map
// is the realm directory's (actors/realm-directory/).
//
// SNAPSHOT NOTE: a field added here needs a default in `realmFromSnapshot`
// (fold.ts), because snapshots written before it lack it. Snapshots written
// before the realm directory became its own kind carry `role: "realm"`,
// which is read and dropped.

import { randomUUID } from "node:crypto";
import { dict } from "../dict.ts";
import type { RealmEmoji } from "../realm-emoji.ts";
import type { ActorRef, Obj } from "../types.ts";
import type { LinkifierState } from "./linkifiers.ts";
import { AuthRateLimiter } from "./rate-limit.ts";

/** One user as the realm's directory knows them. */
export interface DirEntry {
  userId: number;
  /** The delivery email as given (the index key is its lowercase form). */
  email: string;
  apiKey: string;
  role: number;
  isBot: boolean;
  botType: number | null;
  isActive: boolean;
  /** Zulip's can_create_users: POST /users needs it besides an admin role. */
  canCreateUsers: boolean;
  /** Zulip's can_change_user_emails special permission (absent: false). */
  canChangeUserEmails?: boolean;
  // The user-object summary below lets the realm answer GET /users in one
  // turn. The realm is the authority for these fields (role, activation,
  // name...); the user actor reports its own name, timezone and
  // email_address_visibility changes here (syncMember). Entries from
  // snapshots older than these fields get defaults in `entryDefaults`.
  fullName: string;
  /** ms since the epoch. */
  dateJoined: number;
  timezone: string;
  avatarVersion: number;
  /**
   * "J": a Jdenticon avatar (the realm's default_avatar_source when the user
   * was created). Absent: "G" (SNAPSHOT NOTE: older entries lack it).
   */
  avatarSource?: "J";
  botOwnerId: number | null;
  /** The user's email_address_visibility setting (1 everyone ... 5 moderators). */
  emailVisibility: number;
  /** Custom profile field values by field id (humans only); absent when none is set. */
  profileData?: Record<string, ProfileValue>;
  /** An outgoing webhook bot's service (Zulip's Service row); null for everyone else. */
  service?: BotService | null;
  /**
   * The user's receives_typing_notifications setting, mirrored here (syncMember) so a
   * typing notification finds its audience in one realm turn; absent: true.
   */
  receivesTyping?: boolean;
  /**
   * The account's data was removed (DELETE /users/{id} delete_profile):
   * Zulip's is_deleted (FL 490), a subset of deactivated users. Absent:
   * false (SNAPSHOT NOTE: older entries lack it and stay not deleted).
   */
  isDeleted?: boolean;
  /**
   * Created through the API and not yet logged in: the first login resets
   * dateJoined (FL 475). Absent: false (SNAPSHOT NOTE: older entries lack it).
   */
  awaitingFirstLogin?: boolean;
}

/** One user's value of one custom profile field; `rendered` for the Markdown-capable types. */
export interface ProfileValue {
  value: string;
  rendered?: string;
}

/** A custom profile field definition (Zulip's CustomProfileField). */
export interface ProfileField {
  id: number;
  name: string;
  type: number;
  hint: string;
  /** JSON text for select and external account fields, else "". */
  fieldData: string;
  order: number;
  required: boolean;
  editableByUser: boolean;
  displayInProfileSummary: boolean;
  /**
   * Whether typeahead matches users by this field's values (FL 455).
   * Absent: false (SNAPSHOT NOTE: fields stored before it lack it).
   */
  useForUserMatching?: boolean;
}

/** Where an outgoing webhook bot's messages go, and the fixed token it sends along. */
export interface BotService {
  name: string;
  baseUrl: string;
  /** 1 generic, 2 Slack-compatible. */
  interface: number;
  token: string;
}

/** The part of a DirEntry a memberUpdated fact may change. */
export type MemberChanges = Partial<
  Pick<
    DirEntry,
    | "fullName"
    | "role"
    | "isActive"
    | "timezone"
    | "emailVisibility"
    | "apiKey"
    | "botOwnerId"
    | "service"
    | "receivesTyping"
    | "isDeleted"
    | "dateJoined"
    | "awaitingFirstLogin"
  >
>;

/** Parallel arrays: ids[i] is the update id of users[i]'s change; ids ascend. */
export interface PresenceLog {
  ids: number[];
  users: number[];
}

/** Presence of one user: in memory only (see RealmState.presence). Seconds since the epoch. */
export interface PresenceEntry {
  activeTimestamp: number;
  idleTimestamp: number;
  /** presenceUpdateId when this entry last changed (last_update_id queries). */
  updateId: number;
}

// The parts of RealmState that send-prefs.ts, playgrounds.ts and invites.ts
// fold and serve: declared here, so that state.ts imports none of them.

/** RealmState.sendPrefs (absent until the first; see send-prefs.ts). */
export interface SendPrefsState {
  /** user id -> that user's alert words; users without any are absent. */
  alertWords: Record<string, string[]>;
  /** A new value with every alert word change: the key of a sender's cached matcher. */
  alertStamp: string;
  /** muted user id -> ids of the users who muted them. */
  mutedBy: Record<string, number[]>;
  /** Users with a live queue that watches public channels (ids, no order). */
  allPublic?: number[];
}

export interface Playground {
  id: number;
  name: string;
  pygments_language: string;
  url_template: string;
}

/** RealmState.playgrounds (absent on realms that never had one), in creation order. */
export interface PlaygroundState {
  items: Playground[];
}

export interface InviteBase {
  id: number;
  referrerId: number;
  /** ms since the epoch. */
  invitedAt: number;
  /** ms since the epoch; null: never expires. */
  expiresAt: number | null;
  invitedAs: number;
  streamIds: number[];
  groupIds: number[];
  includeDefaults: boolean;
  /** The confirmation key of the link. */
  key: string;
  /**
   * FL 416: Welcome Bot's custom text for this invitation's new users
   * ("" none); absent (old snapshots, or not given): the realm's setting.
   */
  welcomeText?: string;
}

export interface EmailInvite extends InviteBase {
  email: string;
  notifyReferrer: boolean;
  /** 0 pending, 1 used, 2 revoked. */
  status: number;
}

export interface MultiuseInvite extends InviteBase {
  revoked: boolean;
}

/** RealmState.invites (absent until the first invitation). */
export interface InviteState {
  email: Record<string, EmailInvite>;
  multiuse: Record<string, MultiuseInvite>;
  /** confirmation key -> invitation (null prototype: keys come from links). */
  keys: Record<string, { multiuse: boolean; id: number }>;
  /** When each of the last day's emails went out (the daily limit). */
  sent: number[];
}

export function entryDefaults(e: Partial<DirEntry> & { userId: number; email: string }): DirEntry {
  return {
    apiKey: "",
    role: 400,
    isBot: false,
    botType: null,
    isActive: true,
    canCreateUsers: false,
    fullName: "",
    dateJoined: 0,
    timezone: "",
    avatarVersion: 1,
    botOwnerId: null,
    emailVisibility: 1,
    service: null,
    ...e,
  };
}

export interface RealmState {
  realmId: number;
  created: boolean;
  name: string;
  /** Markdown source; served rendered. */
  description: string;
  host: string;
  deactivated: boolean;
  dateCreated: number;
  /** Realm settings (realm_<name> in /register), defaults in defaults.ts. */
  settings: Obj;
  /** Custom emoji by id. None can be added yet; the checks use this map. */
  realmEmoji: Record<string, RealmEmoji>;
  /** Linkifiers in order (linkifiers.ts); absent until the first one is added. */
  linkifiers?: LinkifierState;
  /** lowercased email -> entry (null prototype: see dict.ts). */
  users: Record<string, DirEntry>;
  /** user id (as string) -> lowercased email. */
  emailById: Record<string, string>;
  /**
   * Login attempts per username (Zulip's authenticate_by_username limit).
   * In memory only, never journaled or snapshotted: the single activation of
   * this actor makes it cluster-wide, and a restart forgetting it is what
   * Zulip's own Redis-backed limiter does on a flush.
   */
  attempts: AuthRateLimiter;
  /**
   * Presence by user id, coalesced and never journaled or snapshotted:
   * presence is the hottest write (about a third of a real deployment's
   * requests), it is stale within minutes anyway, and losing it on
   * failover only makes users look offline until their next heartbeat.
   */
  presence: Map<number, PresenceEntry>;
  /**
   * Zulip's presence_last_update_id; in memory like `presence`. 0 until the
   * first heartbeat after an activation, which seeds it from the clock so
   * ids stay increasing across failovers (presence-handlers.ts nextUpdateId).
   */
  presenceUpdateId: number;
  /**
   * (update id, user id) of presence changes in update-id order, so a poll
   * with last_update_id walks only what changed since. An entry is stale
   * once its user has a newer one; stale entries are dropped when they
   * outnumber the live ones, which keeps this under two per user.
   */
  presenceLog: PresenceLog;
  /** Custom profile fields, in display order. */
  profileFields: ProfileField[];
  /** Users' alert words and mutes, for sends (send-prefs.ts); absent until the first. */
  sendPrefs?: SendPrefsState;
  /** Code playgrounds (playgrounds.ts); absent until the first one is added. */
  playgrounds?: PlaygroundState;
  /** Users with scheduled messages waiting (scheduled-index.ts); absent until the first. */
  scheduledUsers?: number[];
  /** New users' settings that differ from the server's (user-defaults.ts); absent until one does. */
  userDefaults?: Obj;
  /** Invitations (invites.ts); absent until the first one. */
  invites?: InviteState;
  /** Which users' roster entries changed lately; in memory like `presence`. */
  rosterLog: RosterLog;
  /** Derived from `users` as facts apply (never snapshotted): see UserIndex. */
  userIndex: UserIndex;
}

/**
 * What creating a user asks of every other user, kept as facts apply so
 * that it costs the same in any size of organization: whether an active
 * user carries a name (check_bot_name_available) and who the active
 * administrators are (realm_bot audiences).
 */
export interface UserIndex {
  /** Every active user's id (Zulip's active_user_ids). */
  active: Set<number>;
  /** The active guests' ids (guest audiences of events about users, user-access.ts). */
  activeGuests: Set<number>;
  /** Exact full name -> active users carrying it. */
  activeNames: Map<string, number>;
  activeAdmins: Set<number>;
  /** Every bot's id (active or not), ascending when read through `botsOf`. */
  bots: Set<number>;
  /** Owner's id -> the ids of the bots they own (active or not). */
  botsByOwner: Map<number, Set<number>>;
  /** Every user's full name, NFKC-normalised and lowercased -> the users carrying it (unique-names.ts). */
  foldedNames: Map<string, Set<number>>;
}

/**
 * Changes of roster entries (roster-handlers.ts), so a caller holding a
 * copy of the roster is sent only the entries that changed since, not the
 * whole organization. `epoch` is new with every activation: a copy from
 * another activation gets the whole roster again.
 */
export interface RosterLog {
  epoch: string;
  version: number;
  /** Versions up to this one are no longer in `changes`. */
  floor: number;
  /** Ascending by version. */
  changes: { version: number; userId: number }[];
}

export function newRosterLog(): RosterLog {
  return { epoch: randomUUID(), version: 0, floor: 0, changes: [] };
}

export type RealmFact =
  | {
      type: "created";
      name: string;
      description: string;
      host: string;
      dateCreated: number;
      settings: Obj;
    }
  | { type: "userAdded"; entry: DirEntry }
  | { type: "memberUpdated"; userId: number; changes: MemberChanges }
  /** PATCH /users new_email: the entry moves to its new index key. */
  | { type: "memberEmailChanged"; userId: number; email: string }
  /** The whole field list after a create, edit or reorder. */
  | { type: "profileFieldsSet"; fields: ProfileField[] }
  /** A field and every user's value of it are gone. */
  | { type: "profileFieldDeleted"; fieldId: number }
  /** One user's values: a null value removes it. */
  | { type: "profileDataSet"; userId: number; values: Record<string, ProfileValue | null> }
  /** Realm settings changed (PATCH /realm): name -> new value. */
  | { type: "settingsChanged"; values: Obj }
  /** PATCH /realm name or description. */
  | { type: "identityChanged"; name?: string; description?: string };

export function initialRealm(ref: ActorRef): RealmState {
  return {
    realmId: ref.realm,
    created: false,
    name: "",
    description: "",
    host: "",
    deactivated: false,
    dateCreated: 0,
    settings: {},
    realmEmoji: {},
    users: dict(),
    emailById: {},
    attempts: new AuthRateLimiter(),
    presence: new Map(),
    presenceUpdateId: 0,
    presenceLog: { ids: [], users: [] },
    profileFields: [],
    rosterLog: newRosterLog(),
    userIndex: emptyUserIndex(),
  };
}

/** A UserIndex of no users (fold.ts fills it as users apply). */
export function emptyUserIndex(): UserIndex {
  return {
    active: new Set(),
    activeGuests: new Set(),
    activeNames: new Map(),
    activeAdmins: new Set(),
    bots: new Set(),
    botsByOwner: new Map(),
    foldedNames: new Map(),
  };
}
