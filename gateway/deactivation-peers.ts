// After the realm deactivates users: the channel directory announces that
// they left their channels (peer_remove, Zulip feature levels 377/428).
// The realm's reply names them in `deactivated`, which clients never see.

import { channelDirectoryRef } from "../actors/index.ts";
import type { Obj } from "../actors/types.ts";
import type { RouteRequest } from "./index.ts";

export async function announceDeactivated(
  req: RouteRequest,
  realmReply: { deactivated: number[] },
): Promise<Obj> {
  const { deactivated, ...reply } = realmReply;
  if (deactivated.length) {
    await req.call(channelDirectoryRef(req.realmId), "peersOfDeactivated", { user_ids: deactivated });
  }
  return reply;
}
