// The messages a user sent, read from the user's own flag index (a sender
// always receives their message, so the index lists it with its
// conversation and sender): what DELETE /users/{id} with `actions` deletes.
// A leaf: calls nobody.
//
// Known gap: a message moved into a channel its sender is not subscribed to
// leaves the sender's index (actors/channel completeMove), so it is not
// found here.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import { msgsOf } from "./flags.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";
import { isAdminRole } from "./validate.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "sentMessages">;

/**
 * {} -> {items: [[id, conv]]} ascending, conv being a channel id as a string
 * or "dm:<ids>". Internal callers, or an administrator of the user's realm
 * (the gateway coordinating a deactivation calls as the acting admin).
 */
const sentMessages: Handlers["sentMessages"] = (state, _args, _ctx, caller) => {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.realmId !== state.realmId || !isAdminRole(caller.role))) throw errors.accessDenied();
  const m = msgsOf(state);
  const items: [number, string][] = [];
  for (const id of m.ids) {
    const [conv, , , sender] = m.entries[String(id)]!;
    if (sender === state.userId) items.push([id, conv]);
  }
  return { reply: { items } };
};

export const sentMessageHandlers: Handlers = { sentMessages };
