// A leaf read for the channel kind: who is in the organization, with the
// role and email needed to check principals and address events. Calls
// nobody, so channel actors may call it inside their turns.

import { errors } from "../errors.ts";
import type { Handler } from "../types.ts";
import { formatLinkifiers } from "./linkifiers.ts";
import type { RealmState } from "./state.ts";

const roster: Handler<RealmState> = (state, _args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created) throw errors.invalidSubdomain();
  return {
    reply: {
      users: Object.values(state.users).map((u) => ({
        userId: u.userId,
        email: u.email,
        role: u.role,
        isBot: u.isBot,
        botType: u.botType,
        isActive: u.isActive,
        fullName: u.fullName,
        avatarVersion: u.avatarVersion,
      })),
      // For message rendering (patterns and URL templates).
      linkifiers: formatLinkifiers(state),
    },
  };
};

/**
 * Direct-message recipients by email (POST /messages `to`): ids of active
 * users of the caller's realm, or "Invalid email '<email>'".
 */
const resolveEmails: Handler<RealmState> = (state, args, _ctx, caller) => {
  if (!state.created) throw errors.invalidSubdomain();
  if (caller && caller.realmId !== state.realmId) throw errors.accessDenied();
  const emails = Array.isArray(args.emails) ? args.emails.map(String) : [];
  const ids = emails.map((email) => {
    const u = state.users[email.trim().toLowerCase()];
    if (!u || !u.isActive) throw errors.invalidEmail(email);
    return u.userId;
  });
  return { reply: { ids } };
};

export const rosterHandlers: Record<string, Handler<RealmState>> = { roster, resolveEmails };
