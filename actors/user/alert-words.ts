// Alert words (Zulip's zerver/lib/alert_words.py and actions/alert_words.py):
// each user's own list, on their user actor. Every change is also reported
// to the realm's send view (actors/realm/send-prefs.ts), where a send finds
// the words of all its recipients at once. The gateway strips the words to
// add and drops the empty ones, as Zulip's view does.

import { errors } from "../errors.ts";
import { realmRef } from "../addresses.ts";
import type { DecisionOf, SomeHandlersOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj } from "../types.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserFact, UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "alertWords" | "addAlertWords" | "removeAlertWords">;

function requireSelf(state: UserState, caller: Caller | null): void {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId)) {
    throw errors.accessDenied();
  }
}

/**
 * The list after the change, the realm told of it, and Zulip's event,
 * which it sends even when nothing changed.
 */
async function change(
  state: UserState,
  next: string[],
  ctx: ActorContext,
): Promise<DecisionOf<{ alert_words: string[] }>> {
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

const alertWords: Handlers["alertWords"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: { alert_words: [...state.alertWords] } };
};

/** Case-insensitively new words are appended; of duplicates the last spelling wins. */
const addAlertWords: Handlers["addAlertWords"] = (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const existing = new Set(state.alertWords.map((w) => w.toLowerCase()));
  const added = new Map<string, string>();
  for (const w of args.words) {
    const key = w.toLowerCase();
    if (!existing.has(key)) added.set(key, w);
  }
  return change(state, [...state.alertWords, ...added.values()], ctx);
};

/** Removal matches case-insensitively; unknown words are ignored. */
const removeAlertWords: Handlers["removeAlertWords"] = (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const gone = new Set(args.words.map((w) => w.toLowerCase()));
  return change(
    state,
    state.alertWords.filter((w) => !gone.has(w.toLowerCase())),
    ctx,
  );
};

export const alertWordHandlers: Handlers = {
  alertWords,
  addAlertWords,
  removeAlertWords,
};
