// Muted users (Zulip's zerver/views/muted_users.py, actions/muted_users.py):
// each user's own list, on their user actor. Every change is also reported
// to the realm's send view (actors/realm/send-prefs.ts): a message from a
// muted sender then arrives already read for the muter, which is what keeps
// it out of their unread counts, mentions and notifications. The realm's
// `syncSendPrefs` also checks that the muted user exists, so a bad id
// changes nothing anywhere.

import { errors } from "../errors.ts";
import { realmRef } from "../addresses.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj, OutEvent } from "../types.ts";
import { FLAG_BITS, flagDecision, msgsOf } from "./flags.ts";
import type { UserProtocol } from "./protocol.ts";
import type { MutedUser, UserFact, UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "mutedUsers" | "muteUser" | "unmuteUser">;

function requireSelf(state: UserState, caller: Caller | null): void {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId)) {
    throw errors.accessDenied();
  }
}

function format(list: MutedUser[]): Obj[] {
  return list.map((m) => ({ id: m.id, timestamp: m.timestamp }));
}

function fact(f: UserFact): Obj {
  return f as unknown as Obj;
}

async function sync(state: UserState, ctx: ActorContext, mutedId: number, muted: boolean): Promise<void> {
  await ctx.call(realmRef(state.realmId), "syncSendPrefs", { userId: state.userId, mutedId, muted });
}

const mutedUsers: Handlers["mutedUsers"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: { muted_users: format(state.mutedUsers) } };
};

const muteUser: Handlers["muteUser"] = async (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const id = args.mutedId;
  if (id === state.userId) throw errors.cannotMuteSelf();
  // Zulip's order: the target's existence, then the duplicate.
  await sync(state, ctx, id, true);
  if (state.mutedUsers.some((m) => m.id === id)) throw errors.userAlreadyMuted();
  const muted: MutedUser = { id, timestamp: Math.floor(ctx.now() / 1000) };
  const list = [...state.mutedUsers, muted];
  const facts: Obj[] = [fact({ type: "userMuted", muted })];
  const events: OutEvent[] = [
    { event: { type: "muted_users", muted_users: format(list) }, userIds: [state.userId] },
  ];
  // Zulip marks what the muted user already sent as read, at once.
  const m = msgsOf(state);
  const read = FLAG_BITS.read!;
  const unread: number[] = [];
  for (const mid of m.ids) {
    const e = m.entries[String(mid)]!;
    if (e[3] === id && !(e[1] & read)) unread.push(mid);
  }
  // Received rows without an entry (the gateway located the unread ones) become read entries.
  const fresh: [number, string, number, string, number][] = [];
  for (const [mid, conv, topic, sender] of args.received ?? [])
    if (sender === id && !m.entries[String(mid)]) fresh.push([mid, conv, read, topic, sender]);
  unread.push(...fresh.map((f) => f[0]));
  unread.sort((a, b) => a - b);
  const d = flagDecision(state, unread, "read", "add", {}, fresh);
  facts.push(...(d.facts ?? []));
  events.push(...(d.events ?? []));
  return { facts, events, reply: {} };
};

const unmuteUser: Handlers["unmuteUser"] = async (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const id = args.mutedId;
  await sync(state, ctx, id, false);
  if (!state.mutedUsers.some((m) => m.id === id)) throw errors.userNotMuted();
  const list = state.mutedUsers.filter((m) => m.id !== id);
  return {
    facts: [fact({ type: "userUnmuted", id })],
    events: [{ event: { type: "muted_users", muted_users: format(list) }, userIds: [state.userId] }],
    reply: {},
  };
};

export const mutedUserHandlers: Handlers = { mutedUsers, muteUser, unmuteUser };
