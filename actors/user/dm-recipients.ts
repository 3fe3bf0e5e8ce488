// The recipients of a direct-message draft or scheduled message, checked
// as Zulip's recipient checks do: every id a user of the realm (else
// "Invalid user ID"), then every one active (else "'<email>' is no longer
// using Zulip."). The realm answers for these users only (rosterEntries),
// so a check costs the same in any size of organization.

import { realmRef } from "../addresses.ts";
import { errors } from "../errors.ts";
import type { ActorContext } from "../types.ts";
import type { UserState } from "./state.ts";

interface Recipient {
  email: string;
  isActive: boolean;
}

/** Users already looked up in one request (null: not a user of the realm). */
export type RecipientCache = Map<number, Recipient | null>;

/**
 * The conversation's recipients as Zulip stores them: a 1:1 conversation
 * (possibly with oneself) names the other user, a group everyone else.
 */
export async function dmRecipients(
  ctx: ActorContext,
  state: UserState,
  to: number[],
  cache: RecipientCache = new Map(),
): Promise<number[]> {
  const ids = [...new Set(to)].sort((a, b) => a - b);
  const missing = ids.filter((id) => !cache.has(id));
  if (missing.length) {
    const { users } = await ctx.call(realmRef(state.realmId), "rosterEntries", { userIds: missing });
    for (const id of missing) cache.set(id, null);
    for (const u of users) cache.set(u.userId, { email: u.email, isActive: u.isActive });
  }
  const found: Recipient[] = [];
  for (const id of ids) {
    const u = cache.get(id);
    if (!u) throw errors.invalidRecipientId(id);
    found.push(u);
  }
  for (const u of found) if (!u.isActive) throw errors.noLongerUsingZulip(u.email);
  return ids.length === 1 ? ids : ids.filter((id) => id !== state.userId);
}
