// What follows a member's change in other actors. The realm is the
// authority for members, but may not call a user actor or the channel
// directory inside its turn (they call the realm: a cycle would deadlock),
// so its turn journals the rest with the change as durable hand-offs, and
// answers once they ran (replyAfterHandoffs). A node that dies in between
// gives them again at the realm's next activation; each target call is
// idempotent:
//
// - MEMBER_EMAIL (updateMember, updateBot): the user actor's copy of its
//   address follows the realm's (`syncEmail`, actors/user/email-sync.ts).
//   It reads the address from the realm and journals only a difference.
// - MEMBER_ROLE (updateMember): the channels that came into or went out of
//   the user's view (FL 205; `roleAccessChanged`,
//   actors/channel-directory/role-access.ts). The directory journals the
//   role whose view it told and tells only the difference from it.
// - MEMBER_GONE (deactivation): peer_remove for the channels of the users
//   deactivated (FL 377; `peersOfDeactivated`,
//   actors/channel-directory/deactivated-peers.ts), once per key the turn
//   drew, which the directory journals with the events.
// - MEMBER_DEFAULTS (POST /users): the new user joins the default channels
//   (`joinDefaultChannels`, actors/channel-directory/channel-extras.ts),
//   once per user: the directory journals the user as done.
// - MEMBER_KEY (a user's new API key, level 492): the user's E2EE push
//   devices go (`dropPushDevices`, actors/user/devices.ts), once per key the
//   turn drew, which the user actor journals: a device registered with the
//   new key stays.

import { randomBytes } from "node:crypto";
import { channelDirectoryRef, userRef } from "../addresses.ts";
import type { ZulipError } from "../errors.ts";
import { eachHandoff } from "../errors.ts";
import type { TypedCall } from "../protocol.ts";
import type { Obj } from "../types.ts";

export const MEMBER_EMAIL = "member.email";
export const MEMBER_ROLE = "member.role";
export const MEMBER_GONE = "member.gone";
export const MEMBER_DEFAULTS = "member.defaults";
export const MEMBER_KEY = "member.key";

/** A key for a hand-off's target to journal, drawn by the deciding turn. */
function drawKey(): string {
  return randomBytes(8).toString("hex");
}

type Handoff = { subject: string; data: Obj };

/** The user actor of `userId` resyncs its address (MEMBER_EMAIL). */
export function emailHandoff(realm: number, userId: number): Handoff {
  return { subject: MEMBER_EMAIL, data: { realm, userId } };
}

/** The channel directory tells `userId` of its changed channel view (MEMBER_ROLE). */
export function roleHandoff(realm: number, userId: number, oldRole: number): Handoff {
  return { subject: MEMBER_ROLE, data: { realm, userId, oldRole } };
}

/** The channel directory announces that `userIds` left their channels (MEMBER_GONE). */
export function goneHandoff(realm: number, userIds: number[]): Handoff {
  return { subject: MEMBER_GONE, data: { realm, userIds, key: drawKey() } };
}

/** A new human user joins the default channels (MEMBER_DEFAULTS). */
export function defaultsHandoff(realm: number, userId: number): Handoff {
  return { subject: MEMBER_DEFAULTS, data: { realm, userId } };
}

/** The user's E2EE push devices go with its old API key (MEMBER_KEY). */
export function keyHandoff(realm: number, userId: number): Handoff {
  return { subject: MEMBER_KEY, data: { realm, userId, key: drawKey() } };
}

/** A target refused for good (a Zulip error): reported and acknowledged; anything else is given again. */
export type MemberHandoffRefused = (subject: string, data: Obj, err: ZulipError) => void;

/** Each subject's call to its target, for one hand-off's data. */
const TARGET_CALLS: Record<string, (d: Obj, call: TypedCall) => Promise<unknown>> = {
  [MEMBER_EMAIL]: (d, call) => call(userRef(Number(d.realm), Number(d.userId)), "syncEmail", {}),
  [MEMBER_ROLE]: (d, call) =>
    call(channelDirectoryRef(Number(d.realm)), "roleAccessChanged", {
      userId: Number(d.userId),
      oldRole: Number(d.oldRole),
    }),
  [MEMBER_GONE]: (d, call) =>
    call(channelDirectoryRef(Number(d.realm)), "peersOfDeactivated", {
      user_ids: (d.userIds as number[]).map(Number),
      key: String(d.key),
    }),
  [MEMBER_DEFAULTS]: (d, call) =>
    call(channelDirectoryRef(Number(d.realm)), "joinDefaultChannels", { user_id: Number(d.userId) }),
  [MEMBER_KEY]: (d, call) =>
    call(userRef(Number(d.realm), Number(d.userId)), "dropPushDevices", { key: String(d.key) }),
};

/** Every member hand-off subject, for the node to register (cluster/compose/domain.ts). */
export const MEMBER_SUBJECTS: readonly string[] = Object.keys(TARGET_CALLS);

/** Run the hand-offs of one member subject (one batch of the realm's turns, in order). */
export function runMemberHandoffs(
  subject: string,
  handoffs: Obj[],
  call: TypedCall,
  refused: MemberHandoffRefused,
): Promise<boolean> {
  const target = TARGET_CALLS[subject]!;
  return eachHandoff(
    handoffs,
    (d) => target(d, call),
    (data, err) => refused(subject, data, err),
  );
}
