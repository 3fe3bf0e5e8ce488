// This process's copy of each realm's roster, for the channel kinds'
// actors: a rendering's mentions and linkifiers, a send's recipients. A send used to fetch (and the realm to serialize) every user of the
// organization, so a 1-subscriber channel got slower as the organization
// grew. The realm now tells a caller holding a copy only the entries that
// changed since (actors/realm/roster-handlers.ts, RosterLog), and the copy
// keeps an index of active users' names for mentions.
//
// Shared by every actor of the process, whose turns interleave: the copy
// only ever moves forward within one realm activation (`epoch`), a delta
// is applied only over the version it was asked for or a later one, and a
// whole roster replaces the copy with a new object, so a turn holding the
// old one keeps a consistent view.

import { realmRef } from "../addresses.ts";
import { ROLE_GUEST } from "../user/index.ts";
import type { ActorContext, Obj } from "../types.ts";
import type { Mentions, MentionTarget, RenderEnv } from "../markdown/index.ts";

/** A user as the realm's `roster` lists them. */
export interface RosterEntry {
  userId: number;
  email: string;
  role: number;
  isBot: boolean;
  /** A bot's owner (absent in copies made before the roster carried it). */
  botOwnerId?: number | null;
  isActive: boolean;
  fullName: string;
  avatarVersion: number;
  /** "J": a Jdenticon avatar; absent: a gravatar. */
  avatarSource?: "J";
}

export interface RosterView {
  epoch: string;
  version: number;
  users: Map<number, RosterEntry>;
  mentions: Mentions;
  /** The active guests' ids, kept with `users` (realm-wide audiences leave them out). */
  guests: Set<number>;
}

function noteGuest(guests: Set<number>, u: RosterEntry): void {
  if (u.isActive && u.role === ROLE_GUEST) guests.add(u.userId);
  else guests.delete(u.userId);
}

/** What the realm's `roster` answers (without the per-send extras). */
export interface RosterReply {
  epoch?: string;
  version?: number;
  users?: RosterEntry[];
  changed?: RosterEntry[];
}

const views = new Map<number, RosterView>();

/** The `since` argument of a roster request from this process. */
export function rosterSince(realmId: number): { epoch: string; version: number } | undefined {
  const v = views.get(realmId);
  return v && { epoch: v.epoch, version: v.version };
}

/** Active users by lowercased full name: several users may share one. */
class NameIndex implements Mentions {
  private readonly byName = new Map<string, Set<number>>();
  constructor(private readonly users: Map<number, RosterEntry>) {}

  add(u: RosterEntry): void {
    if (!u.isActive) return;
    const key = u.fullName.toLowerCase();
    let ids = this.byName.get(key);
    if (!ids) this.byName.set(key, (ids = new Set()));
    ids.add(u.userId);
  }

  remove(u: RosterEntry): void {
    const key = u.fullName.toLowerCase();
    const ids = this.byName.get(key);
    if (!ids) return;
    ids.delete(u.userId);
    if (!ids.size) this.byName.delete(key);
  }

  find(name: string, id?: number): MentionTarget | undefined {
    if (id !== undefined) {
      const u = this.users.get(id);
      return u && u.isActive && u.fullName === name ? u : undefined;
    }
    const ids = this.byName.get(name.toLowerCase());
    if (!ids) return undefined;
    // Of several active users with the name, the earliest created (as the
    // realm lists them).
    let best: number | undefined;
    for (const i of ids) if (best === undefined || i < best) best = i;
    return this.users.get(best!);
  }
}

function build(epoch: string, version: number, list: RosterEntry[]): RosterView {
  const users = new Map(list.map((u) => [u.userId, u]));
  const index = new NameIndex(users);
  const guests = new Set<number>();
  for (const u of list) {
    index.add(u);
    noteGuest(guests, u);
  }
  return { epoch, version, users, mentions: index, guests };
}

/**
 * Bring the copy of `realmId` up to the realm's reply, and return the view
 * to use for the turn: the reply's own data or newer. Undefined when the
 * copy was replaced meanwhile (another activation of the realm): ask again
 * without `since`.
 */
export function applyRoster(realmId: number, r: RosterReply): RosterView | undefined {
  const epoch = r.epoch ?? "";
  const version = r.version ?? 0;
  const cur = views.get(realmId);
  if (r.users) {
    if (cur && cur.epoch === epoch && cur.version >= version) return cur;
    const view = build(epoch, version, r.users);
    views.set(realmId, view);
    return view;
  }
  // A delta answers the `since` we sent; it holds every entry changed after
  // it, as of `version`, so it brings any copy between the two up to date.
  if (!cur || cur.epoch !== epoch) return undefined;
  if (cur.version >= version) return cur;
  const index = cur.mentions as NameIndex;
  for (const u of r.changed ?? []) {
    const old = cur.users.get(u.userId);
    if (old) index.remove(old);
    cur.users.set(u.userId, u);
    index.add(u);
    noteGuest(cur.guests, u);
  }
  cur.version = version;
  return cur;
}

type Linkifiers = RenderEnv["linkifiers"];
/**
 * For a send, also the realm's send view (actors/realm/send-prefs.ts):
 * mutes, alert words and who has a queue watching public channels (all_public_streams, narrows).
 */
interface SendPrefs {
  mutedBy?: number[];
  alertStamp?: string;
  alertWords?: Record<string, string[]>;
  allPublic?: number[];
}
export interface Roster {
  get(userId: number): RosterEntry | undefined;
  /** Every user, by id: this process's shared copy (read it, never change it). */
  users: ReadonlyMap<number, RosterEntry>;
  /** The active guests' ids (shared too). */
  guests: ReadonlySet<number>;
  linkifiers: Linkifiers;
  prefs: SendPrefs;
  mentions: Mentions;
  /** The realm's topics_policy, for channels that inherit it. */
  topicsPolicy: string;
}

/**
 * The realm's users (this process's copy, brought up to date: see
 * above), its linkifiers, and for a send (args `sender`) the sender's
 * send preferences. The map is shared: read it, never change it.
 */
export async function roster(ctx: ActorContext, realmId: number, args: Obj = {}): Promise<Roster> {
  const since = rosterSince(realmId);
  const ask = async (withSince: boolean) =>
    (await ctx.call(
      realmRef(realmId),
      "roster",
      withSince && since ? { ...args, since } : args,
    )) as unknown as {
      linkifiers?: Linkifiers;
      topicsPolicy?: string;
    } & RosterReply &
      SendPrefs;
  let r = await ask(true);
  let view = applyRoster(realmId, r);
  if (!view) view = applyRoster(realmId, (r = await ask(false)))!;
  const users = view.users;
  return {
    get: (userId) => users.get(userId),
    users,
    guests: view.guests,
    linkifiers: r.linkifiers ?? [],
    prefs: { mutedBy: r.mutedBy, alertStamp: r.alertStamp, alertWords: r.alertWords, allPublic: r.allPublic },
    mentions: view.mentions,
    topicsPolicy: r.topicsPolicy ?? "allow_empty_topic",
  };
}
