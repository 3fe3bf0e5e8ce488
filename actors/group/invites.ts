// The group directory's part in invitations (actors/realm/invites.ts):
// checking an invitation's groups before it is made, and adding the user
// who accepted it.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import { groupById, isActiveUser } from "./graph.ts";
import { accessForUpdate, draft, requireMember } from "./handlers.ts";
import type { GroupProtocol } from "./protocol.ts";
import type { GroupDirState } from "./state.ts";

type Handlers = SomeHandlersOf<GroupDirState, GroupProtocol, "checkInviteGroups" | "joinInvitedGroups">;

/** POST /invites and /invites/multiuse: Zulip's access_user_groups_for_invite (can_add_members_group). */
const checkInviteGroups: Handlers["checkInviteGroups"] = (state, args, _ctx, caller) => {
  const me = requireMember(caller).userId;
  for (const id of new Set(args.group_ids)) accessForUpdate(state, id, me, "can_add_members_group", false);
  return { reply: {} };
};

/**
 * The invite worker, once an invitation was accepted: add the new user to
 * its groups (those still active). Idempotent: a group already holding the
 * user is skipped.
 */
const joinInvitedGroups: Handlers["joinInvitedGroups"] = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const userId = args.user_id;
  if (!isActiveUser(state, userId)) return { reply: {} };
  const d = draft(state);
  for (const id of new Set(args.group_ids)) {
    const g = groupById(d.state, id);
    if (!g || g.deactivated || g.isSystem || g.members.includes(userId)) continue;
    d.push(
      { type: "membersAdded", groupId: id, userIds: [userId] },
      { type: "user_group", op: "add_members", group_id: id, user_ids: [userId] },
    );
  }
  return d.decision();
};

export const inviteGroupHandlers: Handlers = {
  checkInviteGroups,
  joinInvitedGroups,
};
