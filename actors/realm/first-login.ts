// Feature level 475: a user created through the API (POST /users) keeps the
// creation time as date_joined until their first login, which then becomes
// their date_joined, announced with a realm_user update. Other accounts
// (the bootstrap owner, invitation sign-ups) joined when they were created.

import type { DecisionOf } from "../protocol.ts";
import type { Obj, OutEvent } from "../types.ts";
import { emailKey, isoMinutes } from "../user/index.ts";
import { updateEvent } from "./member-helpers.ts";
import type { RealmFact, RealmState } from "./state.ts";

/** The facts and event of `email`'s first login, or nothing when it is not one. */
export function firstLoginDecision(
  state: RealmState,
  email: string,
  now: number,
): DecisionOf<Record<string, never>> {
  const entry = state.users[emailKey(email)];
  if (!entry || entry.awaitingFirstLogin !== true) return { reply: {} };
  const f: RealmFact = {
    type: "memberUpdated",
    userId: entry.userId,
    changes: { dateJoined: now, awaitingFirstLogin: false },
  };
  const events: OutEvent[] = [
    { event: updateEvent(entry.userId, { date_joined: isoMinutes(now) }), userIds: [], everyone: true },
  ];
  return { facts: [f as unknown as Obj], events, reply: {} };
}
