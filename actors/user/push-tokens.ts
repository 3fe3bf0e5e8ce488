// Legacy push device tokens (Zulip's zerver/views/push_notifications.py:
// add_apns_device_token, add_android_reg_id and their removals). They live
// on the user's own actor; registering the same token again only refreshes
// it, like Zulip's update_or_create.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { Caller, Obj } from "../types.ts";
import type { UserProtocol } from "./protocol.ts";
import type { PushToken, UserFact, UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "addPushToken" | "removePushToken">;

const MAX_TOKEN_LENGTH = 4096;

function fact(f: UserFact): Obj {
  return f as unknown as Obj;
}

/** Zulip's human_users_only on the caller's own actor. */
function requireHumanSelf(state: UserState, caller: Caller | null): void {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId)) {
    throw errors.accessDenied();
  }
  if (state.isBot) throw errors.botsNotAllowed();
}

/** Python's bytes.fromhex: pairs of hex digits, whitespace allowed between pairs. */
function isHexBytes(s: string): boolean {
  return /^\s*(?:[0-9a-fA-F]{2}\s*)*$/.test(s);
}

/** Zulip's validate_token. */
function checkToken(kind: string, token: string): void {
  if (token === "" || token.length > MAX_TOKEN_LENGTH) throw errors.emptyOrInvalidToken();
  if (kind === "apns" && !isHexBytes(token)) throw errors.invalidApnsToken();
}

const addPushToken: Handlers["addPushToken"] = (state, args, ctx, caller) => {
  requireHumanSelf(state, caller);
  const { kind, token } = args;
  checkToken(kind, token);
  const appId = kind === "apns" ? (args.appId ?? null) : null;
  // Zulip's ApnsAppId check.
  if (kind === "apns" && (appId === null || !/^[.a-zA-Z0-9-]+$/.test(appId))) throw errors.invalidAppId();
  const t: PushToken = { kind, token, appId, lastUpdated: ctx.now() };
  return { facts: [fact({ type: "pushTokenAdded", token: t })], reply: {} };
};

const removePushToken: Handlers["removePushToken"] = (state, args, _ctx, caller) => {
  requireHumanSelf(state, caller);
  const { kind, token } = args;
  checkToken(kind, token);
  if (!state.pushTokens.some((x) => x.kind === kind && x.token === token)) throw errors.tokenDoesNotExist();
  return { facts: [fact({ type: "pushTokenRemoved", kind, token })], reply: {} };
};

export const pushTokenHandlers: Handlers = { addPushToken, removePushToken };
