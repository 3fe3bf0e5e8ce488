// The directory's part in deleting many messages at once (DELETE
// /users/{id} with `actions`, Zulip's delete_deactivated_user_messages):
// which channels count as public for the gateway's sorting. The deletions
// themselves run in the conversations (actors/channel/bulk-delete-handlers.ts).

import { errors } from "../errors.ts";
import type { Caller } from "../types.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";

/** Internal callers, or an administrator of this realm acting through the gateway. */
function requireAdminOrInternal(realmId: number, caller: Caller | null): void {
  if (caller && (caller.realmId !== realmId || caller.role > 200)) throw errors.accessDenied();
}

/**
 * {} -> {public: [ids]}: the channels whose messages count as public
 * channel messages for deletion, as Zulip's get_public_streams_queryset
 * decides (not invite-only and with public history; archived ones too).
 * Every other channel is private.
 */
const publicChannelIds: DirHandler<"publicChannelIds"> = (state, _args, _ctx, caller) => {
  requireAdminOrInternal(state.realmId, caller);
  const ids = Object.values(state.channels)
    .filter((ch) => !ch.inviteOnly && ch.historyPublic)
    .map((ch) => ch.id)
    .sort((a, b) => a - b);
  return { reply: { public: ids } };
};

export const bulkDeleteDirectoryHandlers: DirHandlers<"publicChannelIds"> = { publicChannelIds };
