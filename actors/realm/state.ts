// State of the realm kind. One behaviour, two roles chosen by ref.key:
// "directory" (realm 0): the global host -> realm id map; "realm": one
// organization with its settings and its user directory (email -> id, API
// key, role...), the data every authenticated request needs.
//
// SNAPSHOT NOTE: a field added to either state needs a default in
// `realmKindFromSnapshot`, because snapshots written before it lack it.

import type { RealmEmoji } from "../emoji/index.ts";
import type { ActorRef, Obj } from "../types.ts";
import { AuthRateLimiter } from "./rate-limit.ts";

export interface DirectoryState {
  role: "directory";
  /** realm id (as string) -> its host. */
  realms: Record<string, { realmId: number; host: string }>;
  /** lowercased host -> realm id. */
  hosts: Record<string, number>;
  /** The first registered realm: serves every host that matches none. */
  defaultRealmId: number | null;
}

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
}

export interface RealmState {
  role: "realm";
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
  /** lowercased email -> entry. */
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
}

export type RealmKindState = DirectoryState | RealmState;

export type DirectoryFact = { type: "realmRegistered"; realmId: number; host: string };

export type RealmFact =
  | {
      type: "created";
      name: string;
      description: string;
      host: string;
      dateCreated: number;
      settings: Obj;
    }
  | { type: "userAdded"; entry: DirEntry };

export function isDirectoryRef(ref: ActorRef): boolean {
  return ref.key === "directory";
}

export function initialRealmKind(ref: ActorRef): RealmKindState {
  if (isDirectoryRef(ref)) return { role: "directory", realms: {}, hosts: {}, defaultRealmId: null };
  return {
    role: "realm",
    realmId: ref.realm,
    created: false,
    name: "",
    description: "",
    host: "",
    deactivated: false,
    dateCreated: 0,
    settings: {},
    realmEmoji: {},
    users: {},
    emailById: {},
    attempts: new AuthRateLimiter(),
  };
}

function applyDirectoryFact(state: DirectoryState, fact: DirectoryFact): DirectoryState {
  if (fact.type === "realmRegistered") {
    state.realms[String(fact.realmId)] = { realmId: fact.realmId, host: fact.host };
    state.hosts[fact.host.toLowerCase()] = fact.realmId;
    state.defaultRealmId ??= fact.realmId;
  }
  return state;
}

function applyRealmFact(state: RealmState, fact: RealmFact): RealmState {
  switch (fact.type) {
    case "created":
      Object.assign(state, {
        created: true,
        name: fact.name,
        description: fact.description,
        host: fact.host,
        dateCreated: fact.dateCreated,
        settings: { ...fact.settings },
      });
      break;
    case "userAdded": {
      const key = fact.entry.email.toLowerCase();
      state.users[key] = { ...fact.entry };
      state.emailById[String(fact.entry.userId)] = key;
      break;
    }
    default:
      break; // a fact from a newer version: ignore, never throw
  }
  return state;
}

export function applyRealmKindFact(state: RealmKindState, fact: Obj): RealmKindState {
  if (state.role === "directory") return applyDirectoryFact(state, fact as unknown as DirectoryFact);
  return applyRealmFact(state, fact as unknown as RealmFact);
}

export function realmKindToSnapshot(state: RealmKindState): string {
  // `attempts` is deliberately left out (see RealmState).
  return JSON.stringify(state, (key, value) => (key === "attempts" ? undefined : value));
}

export function realmKindFromSnapshot(data: string, ref: ActorRef): RealmKindState {
  const base = initialRealmKind(ref);
  const snap = JSON.parse(data) as Partial<RealmKindState>;
  return {
    ...base,
    ...snap,
    ...(base.role === "realm" ? { attempts: new AuthRateLimiter() } : {}),
  } as RealmKindState;
}
