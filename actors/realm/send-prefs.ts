// The realm's copy of the per-user preferences that change how a new
// message is delivered: alert words (has_alert_word) and muted users (the
// muter gets the message already read). The user actor owns them
// (actors/user/alert-words.ts, muted-users.ts) and reports every change
// here (`syncSendPrefs`, a leaf), so a send learns them from the roster it
// already asks for, instead of asking each recipient. Most users have
// neither, and then the view is empty and the roster reply unchanged.
//
// It also holds who has a live event queue that watches public channels
// (all_public_streams or a narrow: Zulip's realm_clients_all_streams): a queue actor lives on its user's shard, so
// the node that emits a channel message cannot see it; the queue actor
// reports here when the user's first such queue appears and when the last
// one goes (`syncSendPrefs` with `allPublic`), and a send to a public
// channel adds those users to the event's recipients. An entry may outlive
// its queues (a failed report): the queue actor then drops the event and
// reports again.
//
// SNAPSHOT NOTE: `RealmState.sendPrefs` is optional; snapshots without it
// mean no alert words and no mutes. `allPublic` is optional in it: absent
// means nobody has such a queue.

import { randomUUID } from "node:crypto";
import { errors } from "../errors.ts";
import type { Obj } from "../types.ts";
import { ROLE_GUEST } from "../user/index.ts";
import { accessUser, actorOf, memberById } from "./member-helpers.ts";
import type { RealmHandler } from "./handler.ts";
import type { RosterReply } from "./protocol.ts";
import type { RealmState } from "./state.ts";
import { isSystemBot } from "./system-bot.ts";

export type SendPrefsFact =
  | { type: "alertWordsSynced"; userId: number; words: string[]; stamp: string }
  | { type: "muteSynced"; userId: number; mutedId: number; muted: boolean }
  | { type: "allPublicSynced"; userId: number; on: boolean };

export function isSendPrefsFact(f: { type: string }): f is SendPrefsFact {
  return f.type === "alertWordsSynced" || f.type === "muteSynced" || f.type === "allPublicSynced";
}

export function applySendPrefsFact(state: RealmState, fact: SendPrefsFact): void {
  const v = (state.sendPrefs ??= { alertWords: {}, alertStamp: "", mutedBy: {} });
  if (fact.type === "alertWordsSynced") {
    if (fact.words.length) v.alertWords[String(fact.userId)] = [...fact.words];
    else delete v.alertWords[String(fact.userId)];
    v.alertStamp = fact.stamp;
    return;
  }
  if (fact.type === "allPublicSynced") {
    const rest = (v.allPublic ?? []).filter((id) => id !== fact.userId);
    if (fact.on) rest.push(fact.userId);
    if (rest.length) v.allPublic = rest;
    else delete v.allPublic;
    return;
  }
  const key = String(fact.mutedId);
  const muters = (v.mutedBy[key] ?? []).filter((id) => id !== fact.userId);
  if (fact.muted) muters.push(fact.userId);
  if (muters.length) v.mutedBy[key] = muters;
  else delete v.mutedBy[key];
}

/**
 * What a send needs from the view, added to the roster reply: the users
 * who muted `sender`, and every user's alert words unless the caller's
 * cached copy (`alertStamp`) is current. Nothing when the view is empty.
 */
export function sendPrefsReply(
  state: RealmState,
  args: { sender?: number; alertStamp?: string },
): Pick<RosterReply, "mutedBy" | "allPublic" | "alertStamp" | "alertWords"> {
  const v = state.sendPrefs;
  // Other roster reads (no sender) get none of it.
  const sender = args.sender;
  if (!v || sender === undefined) return {};
  const out: Pick<RosterReply, "mutedBy" | "allPublic" | "alertStamp" | "alertWords"> = {};
  const muters = v.mutedBy[String(sender)];
  if (muters?.length) out.mutedBy = [...muters];
  if (v.allPublic?.length) out.allPublic = [...v.allPublic];
  if (Object.keys(v.alertWords).length) {
    out.alertStamp = v.alertStamp;
    if (args.alertStamp !== v.alertStamp) out.alertWords = structuredClone(v.alertWords);
  }
  return out;
}

/**
 * Leaf for the user actor: `alertWords` (the whole new list) and/or
 * `mutedId` with `muted`; for the queue actor: `allPublic` (whether the
 * user has a live queue that watches public channels). Idempotent, so an actor
 * retrying after a failed turn converges the view.
 */
const syncSendPrefs: RealmHandler<"syncSendPrefs"> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created) throw errors.invalidSubdomain();
  const userId = args.userId;
  const facts: Obj[] = [];
  const words = args.alertWords;
  if (words !== undefined) {
    const old = state.sendPrefs?.alertWords[String(userId)] ?? [];
    if (old.length !== words.length || old.some((w, i) => w !== words[i]))
      facts.push({ type: "alertWordsSynced", userId, words, stamp: randomUUID() });
  }
  const { mutedId, muted } = args;
  if (mutedId !== undefined && muted !== undefined) {
    // Zulip's access_user_by_id_including_cross_realm with bots and
    // deactivated users allowed: only an unknown id is refused.
    if (!isSystemBot(mutedId) && !memberById(state, mutedId)) throw errors.noSuchUser();
    const now = (state.sendPrefs?.mutedBy[String(mutedId)] ?? []).includes(userId);
    if (now !== muted) facts.push({ type: "muteSynced", userId, mutedId, muted });
  }
  const allPublic = args.allPublic;
  if (allPublic !== undefined) {
    // Zulip's can_access_public_streams: never a guest (the gateway refuses
    // the registration; this keeps a forged report out of the view too).
    const member = memberById(state, userId);
    const on = allPublic && member !== undefined && member.role !== ROLE_GUEST;
    if ((state.sendPrefs?.allPublic ?? []).includes(userId) !== on)
      facts.push({ type: "allPublicSynced", userId, on });
  }
  return { facts, reply: {} };
};

/**
 * GET /users/{user_id}/status: Zulip's access_user_by_id for reading
 * (no bots, no deactivated users). The status itself is the user actor's.
 */
const statusTarget: RealmHandler<"statusTarget"> = (state, args, _ctx, caller) => {
  if (!state.created) throw errors.invalidSubdomain();
  const me = actorOf(state, caller);
  accessUser(state, { userId: args.userId }, me, {});
  return { reply: {} };
};

export const sendPrefsHandlers = { syncSendPrefs, statusTarget };
