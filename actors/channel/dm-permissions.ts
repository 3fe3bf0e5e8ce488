// Feature level 270: the realm's direct_message_permission_group (every
// direct message must include a member of it, as sender or recipient) and
// direct_message_initiator_group (only its members may send the first
// message of a conversation). Bots send and receive without either check,
// and so does a conversation with oneself.

import { errors } from "../errors.ts";
import { isUserInGroupSetting, realmGroupSetting, systemGroupId } from "../permissions/index.ts";
import type { ActorContext } from "../types.ts";
import type { RosterEntry } from "../channel-directory/index.ts";

const EVERYONE_GROUP = 7;

type GroupValue = Awaited<ReturnType<typeof realmGroupSetting>>;

async function isEmptySetting(ctx: ActorContext, realmId: number, value: GroupValue): Promise<boolean> {
  if (typeof value === "number") return value === (await systemGroupId(ctx, realmId, "role:nobody"));
  return value.direct_members.length === 0 && value.direct_subgroups.length === 0;
}

export async function checkDirectMessagePolicy(
  ctx: ActorContext,
  realmId: number,
  sender: { userId: number; isBot: boolean },
  participants: number[],
  users: { get(id: number): RosterEntry | undefined },
  firstMessage: boolean,
): Promise<void> {
  if (sender.isBot) return;
  const others = participants.filter((id) => id !== sender.userId);
  // Messages to oneself or only to bots need nobody's authorization.
  if (others.every((id) => users.get(id)?.isBot === true)) return;
  const inGroup = async (value: GroupValue, id: number) =>
    value === EVERYONE_GROUP || (await isUserInGroupSetting(ctx, realmId, value, id));

  const permission = await realmGroupSetting(ctx, realmId, "direct_message_permission_group");
  if (!(await inGroup(permission, sender.userId))) {
    let authorized = false;
    // One check per participant: a direct message's participants are its own list.
    for (const id of others) {
      if (await inGroup(permission, id)) {
        authorized = true;
        break;
      }
    }
    if (!authorized) {
      throw (await isEmptySetting(ctx, realmId, permission))
        ? errors.directMessagesDisabled()
        : errors.directMessageNotAuthorized();
    }
  }
  if (firstMessage) {
    const initiator = await realmGroupSetting(ctx, realmId, "direct_message_initiator_group");
    if (!(await inGroup(initiator, sender.userId))) throw errors.cannotInitiateDirectMessages();
  }
}
