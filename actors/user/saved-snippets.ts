// Saved snippets (Zulip's zerver/actions/saved_snippets.py): each user's own
// list, on their user actor. Events go to the user's own queues only.
// Titles and contents arrive stripped and length-checked by the gateway.

import { errors } from "../errors.ts";
import type { Caller, Handler, Obj } from "../types.ts";
import type { SavedSnippet, UserFact, UserState } from "./state.ts";
import { argString, optInt, optString } from "./validate.ts";

function fact(f: UserFact): Obj {
  return f as unknown as Obj;
}

function requireSelf(state: UserState, caller: Caller | null): void {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId)) {
    throw errors.accessDenied();
  }
}

function format(s: SavedSnippet): Obj {
  return { id: s.id, title: s.title, content: s.content, date_created: s.dateCreated };
}

function find(state: UserState, args: Obj): SavedSnippet {
  const id = optInt(args, "id");
  const s = state.savedSnippets.find((x) => x.id === id);
  if (!s) throw errors.savedSnippetNotFound();
  return s;
}

const savedSnippets: Handler<UserState> = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: { saved_snippets: state.savedSnippets.map(format) } };
};

const createSavedSnippet: Handler<UserState> = async (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const snippet: SavedSnippet = {
    id: await ctx.nextId(`savedSnippet.${state.realmId}`),
    title: argString(args, "title"),
    content: argString(args, "content"),
    dateCreated: Math.floor(ctx.now() / 1000),
  };
  return {
    facts: [fact({ type: "snippetSaved", snippet })],
    events: [
      {
        event: { type: "saved_snippets", op: "add", saved_snippet: format(snippet) },
        userIds: [state.userId],
      },
    ],
    reply: { saved_snippet_id: snippet.id },
  };
};

const editSavedSnippet: Handler<UserState> = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const old = find(state, args);
  const title = optString(args, "title");
  const content = optString(args, "content");
  // Zulip returns early, without an event, when neither is given.
  if (title === undefined && content === undefined) return { reply: {} };
  const snippet: SavedSnippet = { ...old, title: title ?? old.title, content: content ?? old.content };
  return {
    facts: [fact({ type: "snippetSaved", snippet })],
    events: [
      {
        event: { type: "saved_snippets", op: "update", saved_snippet: format(snippet) },
        userIds: [state.userId],
      },
    ],
    reply: {},
  };
};

const deleteSavedSnippet: Handler<UserState> = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const old = find(state, args);
  return {
    facts: [fact({ type: "snippetRemoved", id: old.id })],
    events: [
      { event: { type: "saved_snippets", op: "remove", saved_snippet_id: old.id }, userIds: [state.userId] },
    ],
    reply: {},
  };
};

export const savedSnippetHandlers: Record<string, Handler<UserState>> = {
  savedSnippets,
  createSavedSnippet,
  editSavedSnippet,
  deleteSavedSnippet,
};
