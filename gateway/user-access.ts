// The caller's user access for the realm's user reads (Zulip's
// can_access_all_users_group; actors/realm/user-access.ts): undefined when
// they may see everyone, else the ids a restricted guest shares a channel
// or a DM conversation with. Non-guests return at once without a call; a
// guest's answer is computed once per request however many reads use it.

import { channelDirectoryRef, userRef } from "../actors/index.ts";
import type { ArgsOf, TypedCall } from "../actors/protocol.ts";
import type { RealmProtocol } from "../actors/realm/index.ts";
import type { Caller } from "../actors/types.ts";

const ROLE_GUEST = 600;

interface Source {
  caller: Caller | null;
  realmId: number;
  call: TypedCall;
}

/** A restricted guest's access, as the realm's user reads take it. */
type Access = NonNullable<ArgsOf<RealmProtocol, "getMembers">["access"]>;

const perRequest = new WeakMap<Source, Promise<Access | undefined>>();

async function compute(src: Source): Promise<Access | undefined> {
  const caller = src.caller;
  if (caller === null || caller.role !== ROLE_GUEST) return undefined;
  const [dir, user] = await Promise.all([
    src.call(channelDirectoryRef(src.realmId), "accessibleUsers", {}),
    src.call(userRef(src.realmId, caller.userId), "dmPeers", {}),
  ]);
  if (dir.all) return undefined;
  return { channelPeers: dir.channel_peers ?? [], dmPeers: user.dm_peers };
}

/** `{access}` to spread into a realm user read's arguments, or {} when unrestricted. */
export async function accessArgs(src: Source): Promise<{ access?: Access }> {
  let p = perRequest.get(src);
  if (!p) {
    p = compute(src);
    perRequest.set(src, p);
  }
  const access = await p;
  return access === undefined ? {} : { access };
}
