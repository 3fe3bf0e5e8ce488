// What follows a member's change in other actors. The realm is the
// authority for a member's address and role, but may not call a user actor
// or the channel directory inside its turn (they call the realm: a cycle
// would deadlock), so updateMember and updateBot journal the rest with the
// change as durable hand-offs, and answer once they ran
// (replyAfterHandoffs). A node that dies in between gives them again at
// the realm's next activation; each target call is idempotent:
//
// - MEMBER_EMAIL: the user actor's copy of its address follows the realm's
//   (`syncEmail`, actors/user/email-sync.ts). It reads the address from the
//   realm and journals only a difference, so a repeat changes nothing.
// - MEMBER_ROLE: the channels that came into or went out of the user's view
//   (FL 205; `roleAccessChanged`, actors/channel-directory/role-access.ts).
//   The directory journals the role whose view it told and tells only the
//   difference from it, so a repeat tells nothing.

import { channelDirectoryRef, userRef } from "../addresses.ts";
import { ZulipError } from "../errors.ts";
import type { TypedCall } from "../protocol.ts";
import type { Obj } from "../types.ts";

export const MEMBER_EMAIL = "member.email";
export const MEMBER_ROLE = "member.role";

type Handoff = { subject: string; data: Obj };

/** The user actor of `userId` resyncs its address (MEMBER_EMAIL). */
export function emailHandoff(realm: number, userId: number): Handoff {
  return { subject: MEMBER_EMAIL, data: { realm, userId } };
}

/** The channel directory tells `userId` of its changed channel view (MEMBER_ROLE). */
export function roleHandoff(realm: number, userId: number, oldRole: number): Handoff {
  return { subject: MEMBER_ROLE, data: { realm, userId, oldRole } };
}

/** A target refused for good (a Zulip error): reported and acknowledged; anything else is given again. */
export type MemberHandoffRefused = (subject: string, data: Obj, err: ZulipError) => void;

async function each(
  subject: string,
  handoffs: Obj[],
  run: (data: Obj) => Promise<unknown>,
  refused: MemberHandoffRefused,
): Promise<boolean> {
  for (const data of handoffs) {
    try {
      await run(data);
    } catch (err) {
      if (!(err instanceof ZulipError)) return false;
      refused(subject, data, err);
    }
  }
  return true;
}

/** Run MEMBER_EMAIL hand-offs (one batch of the realm's turns, in order). */
export function runEmailSyncs(
  handoffs: Obj[],
  call: TypedCall,
  refused: MemberHandoffRefused,
): Promise<boolean> {
  return each(
    MEMBER_EMAIL,
    handoffs,
    (d) => call(userRef(Number(d.realm), Number(d.userId)), "syncEmail", {}),
    refused,
  );
}

/** Run MEMBER_ROLE hand-offs (one batch of the realm's turns, in order). */
export function runRoleAccess(
  handoffs: Obj[],
  call: TypedCall,
  refused: MemberHandoffRefused,
): Promise<boolean> {
  return each(
    MEMBER_ROLE,
    handoffs,
    (d) =>
      call(channelDirectoryRef(Number(d.realm)), "roleAccessChanged", {
        userId: Number(d.userId),
        oldRole: Number(d.oldRole),
      }),
    refused,
  );
}
