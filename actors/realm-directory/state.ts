// State of the realm directory (kind "realmDirectory", realm 0, key
// "directory"): the global host -> realm id map.
//
// STORAGE NOTE: this actor was the "directory" role of the realm kind and
// keeps that kind's storage id (`realm.0.directory`, Behavior.storedAs), so
// its journal and snapshots are the ones written before the split. Those
// snapshots carry `role: "directory"`, which is read and dropped.
//
// SNAPSHOT NOTE: a field added here needs a default in
// `directoryFromSnapshot`, because snapshots written before it lack it.

import { dict } from "../dict.ts";
import type { Obj } from "../types.ts";

export interface DirectoryState {
  /** realm id (as string) -> its host. */
  realms: Record<string, { realmId: number; host: string }>;
  /** lowercased host -> realm id (null prototype: see dict.ts). */
  hosts: Record<string, number>;
  /** The first registered realm (SINGLE_ORGANIZATION: every host reaches it while it is the only one). */
  defaultRealmId: number | null;
}

export type DirectoryFact = { type: "realmRegistered"; realmId: number; host: string };

export function initialDirectory(): DirectoryState {
  return { realms: {}, hosts: dict(), defaultRealmId: null };
}

export function applyDirectoryFact(state: DirectoryState, fact: Obj): DirectoryState {
  const f = fact as unknown as DirectoryFact;
  if (f.type === "realmRegistered") {
    state.realms[String(f.realmId)] = { realmId: f.realmId, host: f.host };
    state.hosts[f.host.toLowerCase()] = f.realmId;
    state.defaultRealmId ??= f.realmId;
  }
  // Any other fact is from a newer version: ignore, never throw.
  return state;
}

export function directoryToSnapshot(state: DirectoryState): string {
  return JSON.stringify(state);
}

export function directoryFromSnapshot(data: string): DirectoryState {
  // `role` is the realm kind's role tag of snapshots written before the split.
  const { role: _role, ...snap } = JSON.parse(data) as Partial<DirectoryState> & { role?: string };
  const base = initialDirectory();
  return {
    realms: snap.realms ?? base.realms,
    hosts: dict(snap.hosts),
    defaultRealmId: snap.defaultRealmId ?? base.defaultRealmId,
  };
}
