// What each export type leaves out (docs/export.md "Export types"), as
// Zulip's: a public export (1) has the organization, its users and its
// public channels with their messages; a full export with member consent
// (2) adds the private channels and direct messages that a consenting user
// (allow_private_data_export) received, and the consenting users' personal
// data. No export holds credentials (password hashes, API keys): a restore
// gives every user a new API key (`fillCredentials`).
//
// The store holds actors as snapshots and journals of facts; an actor whose
// content is filtered is exported as one snapshot of its filtered state at
// its latest seq, with an empty journal, and replays to exactly that.

import { behaviors } from "../actors/index.ts";
import type { ActorRef, Kind } from "../actors/types.ts";
import { isDmKey } from "../actors/addresses.ts";
import { convIndex } from "../actors/channel/conversation-state.ts";
import type { DirState } from "../actors/channel-directory/index.ts";
import type { RealmState } from "../actors/realm/state.ts";
import type { UserState } from "../actors/user/state.ts";
import { generateApiKey } from "../actors/user/validate.ts";
import { decodeFact } from "../proto/codec.ts";

/** Zulip's RealmExport.EXPORT_PUBLIC. */
const PUBLIC = 1;

/** The runtime's snapshot envelope and journal markers (cluster/catalog/snapshots.ts, outbox.ts): not state. */
const ENVELOPE = "\u0001";
const MARKERS = ["~outbox", "~sent", "~handoff"];

export interface StoredActor {
  snapshot: { seq: number; data: string } | null;
  journal: [number, string][];
}

/**
 * The actor a storage id names: the kind stored under that id's kind that
 * owns its key (Behavior.storedAs, ownsKey), e.g. "channel.1.directory" is
 * the channel directory's, "channel.1.5" a conversation's.
 */
export function parseActorId(actor: string): ActorRef | null {
  const a = actor.indexOf(".");
  const b = actor.indexOf(".", a + 1);
  if (a < 0 || b < 0) return null;
  const stored = actor.slice(0, a);
  const key = actor.slice(b + 1);
  for (const kind of Object.keys(behaviors) as Kind[]) {
    const behavior = behaviors[kind]!;
    if ((behavior.storedAs ?? kind) !== stored || behavior.ownsKey?.(key) === false) continue;
    return { kind, realm: Number(actor.slice(a + 1, b)), key };
  }
  return null;
}

/** The actor's state as its latest snapshot and journal make it, and its seq. */
export function replay(ref: ActorRef, stored: StoredActor): { state: unknown; seq: number } {
  const behavior = behaviors[ref.kind]!;
  let data = stored.snapshot?.data ?? null;
  if (data !== null && data.startsWith(ENVELOPE)) data = (JSON.parse(data.slice(1)) as { s: string }).s;
  let state: unknown = data !== null ? behavior.fromSnapshot(data, ref) : behavior.initial(ref);
  let seq = stored.snapshot?.seq ?? 0;
  for (const [s, b64] of stored.journal) {
    const f = decodeFact(new Uint8Array(Buffer.from(b64, "base64")));
    if (!MARKERS.some((m) => m in f)) state = behavior.apply(state, f, ref);
    seq = s;
  }
  return { state, seq };
}

function snapshotOf(ref: ActorRef, state: unknown, seq: number): StoredActor {
  return { snapshot: { seq, data: behaviors[ref.kind]!.toSnapshot(state) }, journal: [] };
}

/** What an export of one type keeps, decided from the users' consents and the channels. */
export class ExportScope {
  readonly consenting = new Set<number>();
  /** Channel ids whose channel (metadata, subscriptions, messages) is left out. */
  readonly droppedChannels = new Set<number>();
  /** Record and index name prefixes of the conversations left out. */
  private readonly droppedPrefixes: string[] = [];
  private dir: DirState | null = null;

  constructor(
    readonly realmId: number,
    readonly exportType: number,
  ) {}

  /** First pass: learn consents (user actors) and channels (the directory). */
  learn(ref: ActorRef, stored: StoredActor): void {
    if (ref.kind === "user") {
      const u = replay(ref, stored).state as UserState;
      if (u.created && !u.isBot && u.settings.allow_private_data_export === true)
        this.consenting.add(u.userId);
    } else if (ref.kind === "channelDirectory") {
      this.dir = replay(ref, stored).state as DirState;
    }
  }

  /** After `learn` saw every actor: which private channels stay. */
  settle(): void {
    if (!this.dir) return;
    for (const [id, ch] of Object.entries(this.dir.channels)) {
      if (!ch.inviteOnly) continue;
      const subscribers = Object.keys(this.dir.subs[id] ?? {}).map(Number);
      if (!this.hasConsent(subscribers)) this.droppedChannels.add(Number(id));
    }
  }

  private hasConsent(userIds: number[]): boolean {
    return this.exportType !== PUBLIC && userIds.some((id) => this.consenting.has(id));
  }

  private keepsPrivateDataOf(userId: number): boolean {
    return this.exportType !== PUBLIC && this.consenting.has(userId);
  }

  /** Is this conversation (a channel actor's key) exported? */
  keepsConversation(key: string): boolean {
    if (isDmKey(key)) {
      const ids = key
        .slice(3)
        .split(",")
        .map(Number)
        .filter((n) => n > 0);
      return this.hasConsent(ids);
    }
    return !/^\d+$/.test(key) || !this.droppedChannels.has(Number(key));
  }

  /**
   * The actor as exported: unchanged, filtered (one snapshot), or null
   * when it is left out with its records and indexes.
   */
  filter(ref: ActorRef, stored: StoredActor): StoredActor | null {
    if (ref.kind === "channel" && !this.keepsConversation(ref.key)) {
      const index = convIndex({ realmId: this.realmId, key: ref.key });
      this.droppedPrefixes.push(index.slice(0, -"ids".length));
      return null;
    }
    if (ref.kind === "user") {
      const { state, seq } = replay(ref, stored);
      this.filterUser(state as UserState);
      return snapshotOf(ref, state, seq);
    }
    if (ref.kind === "realm" && ref.key === "realm") {
      const { state, seq } = replay(ref, stored);
      for (const entry of Object.values((state as RealmState).users)) entry.apiKey = "";
      return snapshotOf(ref, state, seq);
    }
    if (ref.kind === "channelDirectory") {
      const { state, seq } = replay(ref, stored);
      const dir = state as DirState;
      // The retention list names who wrote to whom: only the conversations exported.
      const dropsDms = Object.keys(dir.dmConvs).some((k) => !this.keepsConversation(k));
      if (this.droppedChannels.size === 0 && !dropsDms) return stored;
      for (const k of Object.keys(dir.dmConvs)) if (!this.keepsConversation(k)) delete dir.dmConvs[k];
      for (const id of this.droppedChannels) {
        const name = dir.channels[String(id)]?.name;
        if (name !== undefined && dir.byName[name.toLowerCase()] === id)
          delete dir.byName[name.toLowerCase()];
        delete dir.channels[String(id)];
        delete dir.subs[String(id)];
      }
      return snapshotOf(ref, dir, seq);
    }
    return stored;
  }

  private filterUser(u: UserState): void {
    u.passwordHash = null;
    u.apiKey = "";
    const holder = u as UserState & {
      msgs?: { ids: number[]; entries: Record<string, [string, number, string, number]> };
      readThrough?: Record<string, number>;
      /** "<channel id>:<topic>" -> the user's topic setting (actors/user/topics.ts). */
      userTopics?: Record<string, unknown>;
    };
    if (holder.msgs) {
      const kept: number[] = [];
      for (const id of holder.msgs.ids) {
        const e = holder.msgs.entries[String(id)];
        if (e && this.keepsConversation(e[0])) kept.push(id);
        else delete holder.msgs.entries[String(id)];
      }
      holder.msgs.ids = kept;
    }
    if (holder.readThrough)
      for (const conv of Object.keys(holder.readThrough))
        if (!this.keepsConversation(conv)) delete holder.readThrough[conv];
    if (holder.userTopics)
      for (const key of Object.keys(holder.userTopics))
        if (this.droppedChannels.has(Number(key.slice(0, key.indexOf(":"))))) delete holder.userTopics[key];
    if (this.keepsPrivateDataOf(u.userId)) return;
    // Personal data of a user who did not consent: only what others see of them stays.
    u.drafts = [];
    u.scheduled = [];
    u.savedSnippets = [];
    u.alertWords = [];
    u.mutedUsers = [];
    u.pushTokens = [];
    u.devices = [];
  }

  /** Is this record or index (keyed "<realm>:...") exported? */
  keepsKey(key: string): boolean {
    return !this.droppedPrefixes.some((p) => key.startsWith(p));
  }
}

/**
 * Restore: give every user whose export carried no API key a new one, the
 * same in the realm actor (which checks it) and in the user's actor.
 */
export function fillCredentials(
  actors: { actor: string; snapshot: { seq: number; data: string } | null; journal: [number, string][] }[],
): void {
  const keys = new Map<number, string>();
  for (const a of actors) {
    const ref = parseActorId(a.actor);
    if (!ref || ref.kind !== "realm" || ref.key !== "realm" || !a.snapshot || a.journal.length) continue;
    const { state, seq } = replay(ref, a);
    const realm = state as RealmState;
    let changed = false;
    for (const entry of Object.values(realm.users)) {
      if (entry.apiKey !== "") continue;
      entry.apiKey = generateApiKey();
      keys.set(entry.userId, entry.apiKey);
      changed = true;
    }
    if (changed) a.snapshot = snapshotOf(ref, realm, seq).snapshot;
  }
  for (const a of actors) {
    const ref = parseActorId(a.actor);
    if (!ref || ref.kind !== "user" || !a.snapshot || a.journal.length) continue;
    const key = keys.get(Number(ref.key));
    if (key === undefined) continue;
    const { state, seq } = replay(ref, a);
    const u = state as UserState;
    if (u.apiKey !== "") continue;
    u.apiKey = key;
    a.snapshot = snapshotOf(ref, u, seq).snapshot;
  }
}
