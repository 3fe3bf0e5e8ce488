// Restricted user access for the events a user actor emits about its user
// (Zulip's get_user_ids_who_can_access_user, feature levels 228, 303): the
// guests among their recipients are taken out and handed to the channel
// directory. The realm does the same for its own events
// (actors/realm/user-access.ts withholdFromGuests); this half is here
// because the realm imports the user kind, never the reverse.

import { SYSTEM_GROUP_ID, groupDirectoryRef } from "../group/index.ts";
import type { ActorContext, Obj, OutEvent } from "../types.ts";

/** Hand-off subject: events about a user for the guests who may access them (actors/channel-directory/user-access.ts). */
export const ACCESS_RELAY = "access.relay";

/** withholdFromGuests (actors/realm/user-access.ts) for an emitter that knows the realm's guests (`guests`), e.g. a user actor. */
export async function withholdGuestCopies(
  ctx: ActorContext,
  realmId: number,
  subjectId: number,
  guests: Set<number>,
  events: OutEvent[],
): Promise<{ subject: string; data: Obj }[]> {
  // The guests an event reaches: those it lists, and for a realm-wide one
  // (OutEvent.everyone) every guest it does not leave out.
  const guestsOf = (e: OutEvent): number[] => {
    const listed = e.userIds.filter((id) => id !== subjectId && guests.has(id));
    if (!e.everyone) return listed;
    const out = new Set(listed);
    const except = new Set(e.except);
    for (const id of guests) if (id !== subjectId && !except.has(id)) out.add(id);
    return [...out];
  };
  if (!events.some((e) => guestsOf(e).length > 0)) return [];
  const value = await ctx.call(groupDirectoryRef(realmId), "realmSetting", {
    name: "can_access_all_users_group",
  });
  if (value === SYSTEM_GROUP_ID["role:everyone"]) return [];
  const handoffs: { subject: string; data: Obj }[] = [];
  for (const e of events) {
    const withheld = new Set(guestsOf(e));
    if (!withheld.size) continue;
    e.userIds = e.userIds.filter((id) => !withheld.has(id));
    if (e.everyone) e.except = [...(e.except ?? []), ...withheld];
    handoffs.push({
      subject: ACCESS_RELAY,
      data: { realmId, subjectId, event: e.event, candidates: [...withheld] },
    });
  }
  return handoffs;
}
