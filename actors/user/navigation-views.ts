// Navigation views (Zulip's zerver/actions/navigation_views.py, FL 390):
// each user's own settings for built-in views and their custom views, on
// their user actor. Events go to the user's own queues only. Fragments and
// names arrive stripped and non-empty from the gateway.
//
// SNAPSHOT NOTE: the state lives in `UserState.navigationViews`;
// `initialUser` supplies [] to snapshots written before it.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { Caller, Obj } from "../types.ts";
import type { UserProtocol } from "./protocol.ts";
import type { NavigationView, UserState } from "./state.ts";

type Handlers = SomeHandlersOf<
  UserState,
  UserProtocol,
  "navigationViews" | "addNavigationView" | "updateNavigationView" | "removeNavigationView"
>;

/** Zulip's BUILT_IN_VIEW_FRAGMENTS: these take no custom name. */
export const BUILT_IN_VIEW_FRAGMENTS: ReadonlySet<string> = new Set([
  "inbox",
  "recent",
  "feed",
  "drafts",
  "narrow/has/reaction/sender/me",
  "narrow/is/mentioned",
  "narrow/is/starred",
  "scheduled",
]);

/** Zulip keeps any number; an actor's state must stay bounded. */
export const NAVIGATION_VIEWS_MAX = 1000;

type NavigationViewFact =
  { type: "navigationViewSaved"; view: NavigationView } | { type: "navigationViewRemoved"; fragment: string };

/** Folds the navigation view facts (applyUserFact ignores them). */
export function applyNavigationViewFact(state: UserState, raw: Obj): UserState {
  const fact = raw as unknown as NavigationViewFact;
  switch (fact.type) {
    case "navigationViewSaved": {
      const i = state.navigationViews.findIndex((v) => v.fragment === fact.view.fragment);
      if (i >= 0) state.navigationViews[i] = { ...fact.view };
      else state.navigationViews.push({ ...fact.view });
      break;
    }
    case "navigationViewRemoved":
      state.navigationViews = state.navigationViews.filter((v) => v.fragment !== fact.fragment);
      break;
    default:
      break;
  }
  return state;
}

function requireSelf(state: UserState, caller: Caller | null): void {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId)) {
    throw errors.accessDenied();
  }
}

function format(v: NavigationView): Obj {
  return { fragment: v.fragment, is_pinned: v.isPinned, name: v.name };
}

function nameTaken(state: UserState, name: string): boolean {
  return state.navigationViews.some((v) => v.name === name);
}

const navigationViews: Handlers["navigationViews"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: { navigation_views: state.navigationViews.map(format) } };
};

/** {fragment, is_pinned, name?}: Zulip's add_navigation_view checks, in its order. */
const addNavigationView: Handlers["addNavigationView"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const fragment = args.fragment;
  const name = args.name ?? null;
  if (BUILT_IN_VIEW_FRAGMENTS.has(fragment)) {
    if (name !== null) throw errors.builtInViewNamed();
  } else if (name === null) {
    throw errors.customViewUnnamed();
  }
  if (state.navigationViews.some((v) => v.fragment === fragment)) throw errors.navigationViewExists();
  if (name !== null && nameTaken(state, name)) throw errors.navigationViewExists();
  if (state.navigationViews.length >= NAVIGATION_VIEWS_MAX)
    throw errors.tooManyNavigationViews(NAVIGATION_VIEWS_MAX);
  const view: NavigationView = { fragment, isPinned: args.is_pinned, name };
  return {
    facts: [{ type: "navigationViewSaved", view } as unknown as Obj],
    events: [
      {
        event: { type: "navigation_view", op: "add", navigation_view: format(view) },
        userIds: [state.userId],
      },
    ],
    reply: {},
  };
};

/** {fragment, is_pinned?, name?}: the event's data carries only what was given. */
const updateNavigationView: Handlers["updateNavigationView"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const { fragment, name } = args;
  const isPinned = args.is_pinned;
  if (BUILT_IN_VIEW_FRAGMENTS.has(fragment) && name !== undefined) throw errors.builtInViewNamed();
  if (name !== undefined && nameTaken(state, name)) throw errors.navigationViewExists();
  const old = state.navigationViews.find((v) => v.fragment === fragment);
  if (!old) throw errors.navigationViewNotFound();
  const data: Obj = {};
  if (name !== undefined) data.name = name;
  if (isPinned !== undefined) data.is_pinned = isPinned;
  const view: NavigationView = { ...old, name: name ?? old.name, isPinned: isPinned ?? old.isPinned };
  return {
    facts: [{ type: "navigationViewSaved", view } as unknown as Obj],
    events: [{ event: { type: "navigation_view", op: "update", fragment, data }, userIds: [state.userId] }],
    reply: {},
  };
};

const removeNavigationView: Handlers["removeNavigationView"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const fragment = args.fragment;
  if (!state.navigationViews.some((v) => v.fragment === fragment)) throw errors.navigationViewNotFound();
  return {
    facts: [{ type: "navigationViewRemoved", fragment } as unknown as Obj],
    events: [{ event: { type: "navigation_view", op: "remove", fragment }, userIds: [state.userId] }],
    reply: {},
  };
};

export const navigationViewHandlers: Handlers = {
  navigationViews,
  addNavigationView,
  updateNavigationView,
  removeNavigationView,
};
