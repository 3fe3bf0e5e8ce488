// Alert words (Zulip's zerver/lib/alert_words.py and actions/alert_words.py):
// each user's own list, on their user actor. Every change is also reported
// to the realm's send view (actors/realm/send-prefs.ts), where a send finds
// the words of all its recipients at once. The gateway strips the words to
// add and drops the empty ones, as Zulip's view does.

import { errors } from "../errors.ts";
import { realmRef } from "../realm/index.ts";
import type { ActorContext, Caller, Decision, Handler, Obj } from "../types.ts";
import type { UserFact, UserState } from "./state.ts";

function requireSelf(state: UserState, caller: Caller | null): void {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId)) {
    throw errors.accessDenied();
  }
}

function words(args: Obj): string[] {
  const v = args.words;
  if (!Array.isArray(v) || !v.every((w) => typeof w === "string")) throw errors.internal();
  return v as string[];
}

/**
 * The list after the change, the realm told of it, and Zulip's event,
 * which it sends even when nothing changed.
 */
async function change(state: UserState, next: string[], ctx: ActorContext): Promise<Decision> {
  const same = next.length === state.alertWords.length && next.every((w, i) => w === state.alertWords[i]);
  if (!same) {
    await ctx.call(realmRef(state.realmId), "syncSendPrefs", { userId: state.userId, alertWords: next });
  }
  const f: UserFact = { type: "alertWords", words: next };
  return {
    facts: same ? [] : [f as unknown as Obj],
    events: [{ event: { type: "alert_words", alert_words: [...next] }, userIds: [state.userId] }],
    reply: { alert_words: [...next] },
  };
}

const alertWords: Handler<UserState> = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: { alert_words: [...state.alertWords] } };
};

/** Case-insensitively new words are appended; of duplicates the last spelling wins. */
const addAlertWords: Handler<UserState> = (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const existing = new Set(state.alertWords.map((w) => w.toLowerCase()));
  const added = new Map<string, string>();
  for (const w of words(args)) {
    const key = w.toLowerCase();
    if (!existing.has(key)) added.set(key, w);
  }
  return change(state, [...state.alertWords, ...added.values()], ctx);
};

/** Removal matches case-insensitively; unknown words are ignored. */
const removeAlertWords: Handler<UserState> = (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const gone = new Set(words(args).map((w) => w.toLowerCase()));
  return change(
    state,
    state.alertWords.filter((w) => !gone.has(w.toLowerCase())),
    ctx,
  );
};

export const alertWordHandlers: Record<string, Handler<UserState>> = {
  alertWords,
  addAlertWords,
  removeAlertWords,
};
