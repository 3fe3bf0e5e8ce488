// The user actor's copy of its delivery email follows the realm directory,
// which is the authority (PATCH /users new_email changes it there). The
// realm may not call a user actor inside its turn (users call the realm:
// a cycle would deadlock), so the realm's turn journals a MEMBER_EMAIL
// hand-off (actors/realm/member-handoffs.ts) that asks the user actor to
// resync; the handler takes no argument and reads the address from the
// realm (a leaf call, the allowed direction), so a repeat changes nothing.

import { errors } from "../errors.ts";
import { realmRef } from "../addresses.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { Obj } from "../types.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "syncEmail">;

const syncEmail: Handlers["syncEmail"] = async (state, _args, ctx, caller) => {
  if (!state.created) throw errors.noSuchUser();
  if (caller) throw errors.accessDenied();
  const r = await ctx.call(realmRef(state.realmId), "memberEmail", { userId: state.userId });
  if (r.email === state.email) return { reply: {} };
  return { facts: [{ type: "email", email: r.email } as Obj], reply: {} };
};

export const emailSyncHandlers: Handlers = { syncEmail };
