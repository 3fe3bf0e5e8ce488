// Saved snippets (Zulip's zerver/actions/saved_snippets.py): each user's own
// list, on their user actor. Events go to the user's own queues only.
// Titles and contents arrive stripped and length-checked by the gateway.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { Caller, Obj } from "../types.ts";
import type { UserProtocol } from "./protocol.ts";
import type { SavedSnippet, UserFact, UserState } from "./state.ts";

type Handlers = SomeHandlersOf<
  UserState,
  UserProtocol,
  "savedSnippets" | "createSavedSnippet" | "editSavedSnippet" | "deleteSavedSnippet"
>;

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

function find(state: UserState, id: number): SavedSnippet {
  const s = state.savedSnippets.find((x) => x.id === id);
  if (!s) throw errors.savedSnippetNotFound();
  return s;
}

const savedSnippets: Handlers["savedSnippets"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: { saved_snippets: state.savedSnippets.map(format) } };
};

const createSavedSnippet: Handlers["createSavedSnippet"] = async (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const snippet: SavedSnippet = {
    id: await ctx.nextId(`savedSnippet.${state.realmId}`),
    title: args.title,
    content: args.content,
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

const editSavedSnippet: Handlers["editSavedSnippet"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const old = find(state, args.id);
  const { title, content } = args;
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

const deleteSavedSnippet: Handlers["deleteSavedSnippet"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const old = find(state, args.id);
  return {
    facts: [fact({ type: "snippetRemoved", id: old.id })],
    events: [
      { event: { type: "saved_snippets", op: "remove", saved_snippet_id: old.id }, userIds: [state.userId] },
    ],
    reply: {},
  };
};

export const savedSnippetHandlers: Handlers = {
  savedSnippets,
  createSavedSnippet,
  editSavedSnippet,
  deleteSavedSnippet,
};
