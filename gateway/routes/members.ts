// User administration and presence (Zulip's zerver/views/users.py and
// zerver/views/presence.py): parse, one realm-actor call, reply; except
// DELETE /users/{id} with `actions`, which coordinates several actors.

import { channelConvRef, channelDirectoryRef, dmConvRef, realmRef, userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { ArgsOf } from "../../actors/protocol.ts";
import type { RealmProtocol } from "../../actors/realm/index.ts";
import { c, defineRoute, p, param, type ParamValues, type RouteDef, type RouteRequest } from "../index.ts";
import { accessArgs } from "../user-access.ts";

const READ_PARAMS = {
  client_gravatar: param(p.bool(), { default: true }),
  include_custom_profile_fields: param(p.bool(), { default: false }),
};

function readArgs(req: RouteRequest<ParamValues<typeof READ_PARAMS>>): {
  clientGravatar: boolean;
  includeCustomProfileFields: boolean;
} {
  return {
    clientGravatar: req.params.client_gravatar,
    includeCustomProfileFields: req.params.include_custom_profile_fields,
  };
}

/** A path segment naming a user: an id, or (where Zulip allows it) an email. */
function target(req: RouteRequest, allowEmail: boolean): { userId: number } | { email: string } {
  const raw = req.path.user_id!;
  if (/^\d+$/.test(raw)) {
    const userId = Number(raw);
    // Beyond any id we allocate: Zulip's int path converter, then "No such user".
    return Number.isSafeInteger(userId) ? { userId } : { userId: 0 };
  }
  // Zulip's URL patterns accept only digits here; anything else matches no route.
  if (!allowEmail) throw errors.noSuchRoute();
  return { email: raw };
}

const getMembers = defineRoute({
  method: "GET",
  path: "/users",
  auth: "optional",
  params: { ...READ_PARAMS, user_ids: param(p.intList()) },
  async handler(req) {
    const ids = req.params.user_ids;
    return await req.call(realmRef(req.realmId), "getMembers", {
      ...readArgs(req),
      ...(ids !== undefined ? { userIds: ids } : {}),
      ...(await accessArgs(req)),
    });
  },
});

const getMember = defineRoute({
  method: "GET",
  path: "/users/:user_id",
  auth: "optional",
  params: READ_PARAMS,
  async handler(req) {
    return await req.call(realmRef(req.realmId), "getMember", {
      ...readArgs(req),
      ...target(req, true),
      ...(await accessArgs(req)),
    });
  },
});

const updateMember = defineRoute({
  method: "PATCH",
  path: "/users/:user_id",
  auth: "required",
  params: {
    full_name: param(p.string()),
    role: param(p.int()),
    profile_data: param(p.json()),
    new_email: param(p.string()),
  },
  async handler(req) {
    const args: ArgsOf<RealmProtocol, "updateMember"> = target(req, true);
    if (req.params.profile_data !== undefined) args.profileData = req.params.profile_data;
    if (req.params.full_name !== undefined) args.fullName = req.params.full_name;
    if (req.params.role !== undefined) args.role = req.params.role;
    if (req.params.new_email !== undefined) args.newEmail = req.params.new_email;
    // The user actor's copy of an address and the channels a role change
    // brings into or out of view follow in the realm's hand-offs, before
    // it answers (actors/realm/member-handoffs.ts).
    return await req.call(realmRef(req.realmId), "updateMember", args);
  },
});

/** Zulip's limit on deactivate_user_backend's deactivation_notification_comment. */
const NOTIFICATION_COMMENT_MAX = 2000;

/** What delete_profile renames a user to (Zulip's API documentation of `actions`). */
const DELETED_USER_NAME = "Deleted user";

type DeactivateActions = {
  delete_profile?: boolean;
  delete_public_channel_messages?: boolean;
  delete_private_channel_messages?: boolean;
  delete_direct_messages?: boolean;
};

// Zulip's DeactivateUserActions: a pydantic model without extra="forbid",
// validated strictly, so every value must be a JSON boolean and other keys
// are dropped unreported.
const actionsChecker = c.dict<DeactivateActions>(
  {
    delete_profile: { check: c.bool() },
    delete_public_channel_messages: { check: c.bool() },
    delete_private_channel_messages: { check: c.bool() },
    delete_direct_messages: { check: c.bool() },
  },
  { allowExtra: true },
);

/** The conversation actor of a conversation key (a channel id, or "dm:<ids>"). */
function convRef(realmId: number, conv: string) {
  return conv.startsWith("dm:")
    ? dmConvRef(realmId, conv.slice(3).split(",").map(Number))
    : channelConvRef(realmId, Number(conv));
}

/**
 * Zulip's delete_deactivated_user_messages for one user: the messages they
 * sent in the chosen scopes, deleted conversation by conversation.
 */
async function deleteSentMessages(
  req: RouteRequest,
  userId: number,
  a: DeactivateActions,
  publicIds: () => Promise<Set<number>>,
): Promise<void> {
  const { items } = await req.call(userRef(req.realmId, userId), "sentMessages", {});
  const byConv = new Map<string, number[]>();
  for (const [id, conv] of items) {
    const dm = conv.startsWith("dm:");
    let wanted: boolean;
    if (dm) wanted = a.delete_direct_messages === true;
    else if ((await publicIds()).has(Number(conv))) wanted = a.delete_public_channel_messages === true;
    else wanted = a.delete_private_channel_messages === true;
    if (!wanted) continue;
    const list = byConv.get(conv) ?? [];
    list.push(id);
    byConv.set(conv, list);
  }
  for (const [conv, ids] of byConv) await req.call(convRef(req.realmId, conv), "removeMany", { ids });
}

const deactivateMember = defineRoute({
  method: "DELETE",
  path: "/users/:user_id",
  auth: "required",
  // A non-null comment asks Zulip to mail the user about the deactivation.
  // This server has no mail transport: the comment is validated like
  // Zulip's and accepted, and no mail is sent (docs/architecture.md "Deactivating users").
  params: {
    deactivation_notification_comment: param(p.string({ maxLength: NOTIFICATION_COMMENT_MAX })),
    actions: param(p.json(actionsChecker)),
  },
  async handler(req) {
    const who = target(req, false);
    const a = req.params.actions ?? {};
    const deleting =
      a.delete_public_channel_messages === true ||
      a.delete_private_channel_messages === true ||
      a.delete_direct_messages === true;
    if (deleting || a.delete_profile === true) {
      // The actions span actors, so this route coordinates them. The
      // realm's checks come first (a refused request changes nothing); then,
      // for the user's bots and then the user, the messages and the
      // profile; the deactivation itself is the last step. Every step
      // before it is idempotent, so a request that fails midway leaves
      // the user active and a retry completes it.
      const { victims } = await req.call(realmRef(req.realmId), "planDeactivation", who);
      let publicSet: Set<number> | null = null;
      const publicIds = async () => {
        if (publicSet === null) {
          const r = await req.call(channelDirectoryRef(req.realmId), "publicChannelIds", {});
          publicSet = new Set(r.public);
        }
        return publicSet;
      };
      for (const userId of victims) {
        if (deleting) await deleteSentMessages(req, userId, a, publicIds);
        if (a.delete_profile === true) {
          await req.call(realmRef(req.realmId), "updateMember", { userId, fullName: DELETED_USER_NAME });
          await req.call(realmRef(req.realmId), "markProfileDeleted", { userId });
        }
      }
    }
    // peer_remove for their channels follows in the realm's hand-off (actors/realm/member-handoffs.ts).
    return await req.call(realmRef(req.realmId), "deactivateMember", who);
  },
});

const deactivateSelf = defineRoute({
  method: "DELETE",
  path: "/users/me",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "deactivateSelf", {});
  },
});

const reactivateMember = defineRoute({
  method: "POST",
  path: "/users/:user_id/reactivate",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "reactivateMember", target(req, false));
  },
});

// The presence routes answer the realm actor's reply unchanged (`relay`): a
// presence answer lists every user active lately, and in cluster mode the
// gateway would otherwise parse it and write it again.
const updatePresence = defineRoute({
  method: "POST",
  path: "/users/me/presence",
  auth: "required",
  params: {
    status: param(p.string(), { required: true }),
    ping_only: param(p.bool(), { default: false }),
    new_user_input: param(p.bool(), { default: false }),
    slim_presence: param(p.bool(), { default: false }),
    last_update_id: param(p.int()),
    history_limit_days: param(p.int({ min: 0 })),
  },
  async handler(req) {
    const args: ArgsOf<RealmProtocol, "updatePresence"> = {
      status: req.params.status,
      pingOnly: req.params.ping_only,
      slimPresence: req.params.slim_presence,
    };
    if (req.params.last_update_id !== undefined) args.lastUpdateId = req.params.last_update_id;
    if (req.params.history_limit_days !== undefined) {
      args.historyLimitDays = req.params.history_limit_days;
    }
    return await req.relay(realmRef(req.realmId), "updatePresence", args);
  },
});

const realmPresence = defineRoute({
  method: "GET",
  path: "/realm/presence",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.relay(realmRef(req.realmId), "realmPresence", {});
  },
});

const userPresence = defineRoute({
  method: "GET",
  path: "/users/:user_id/presence",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.relay(realmRef(req.realmId), "userPresence", { userIdOrEmail: req.path.user_id! });
  },
});

export const memberRoutes: RouteDef[] = [
  getMembers,
  getMember,
  updateMember,
  deactivateMember,
  deactivateSelf,
  reactivateMember,
  updatePresence,
  realmPresence,
  userPresence,
];
