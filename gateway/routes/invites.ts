// Invitations (Zulip's zerver/views/invite.py): GET/POST /invites, POST
// /invites/multiuse, revoking and resending. The realm actor decides them
// (actors/realm/invites.ts); a new invitation's channels and groups are
// checked first by their own directories, which call the realm themselves,
// so the realm never waits on them inside its turn. The sign-up page the
// links open is gateway/signup-page.ts.

import { INVITE_AS, channelDirectoryRef, groupDirectoryRef, realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { ArgsOf } from "../../actors/protocol.ts";
import type { RealmProtocol } from "../../actors/realm/index.ts";
import { c, defineRoute, p, param, type ParamValues, type RouteDef, type RouteRequest } from "../index.ts";
import type { Checker } from "../params.ts";
import { WELCOME_MESSAGE_CUSTOM_TEXT_MAX } from "../../actors/realm/realm-properties.ts";

const intOrNull: Checker<number | null> = c.nullable(c.int());
const int = c.int();
/** Zulip's check_int_in_validator(INVITE_AS): an integer, then one of the roles. */
const inviteAs: Checker<number> = (v, name) => {
  const n = int(v, name);
  if (!INVITE_AS.includes(n)) throw errors.invalid(name);
  return n;
};

/** The parameters both kinds of invitation take. */
const COMMON = {
  invite_expires_in_minutes: param(p.json(intOrNull)),
  invite_as: param(p.json(inviteAs)),
  stream_ids: param(p.json(c.list(c.int()))),
  group_ids: param(p.json(c.nullable(c.list(c.int())))),
  include_realm_default_subscriptions: param(p.bool()),
  // FL 416: Welcome Bot's custom text for this invitation (administrators only).
  welcome_message_custom_text: param(p.string({ maxLength: WELCOME_MESSAGE_CUSTOM_TEXT_MAX })),
};

type Invitation = ArgsOf<RealmProtocol, "createMultiuseInvite">;

/** The parameters sent (those not sent stay undefined), as the realm's invitation methods take them. */
function inviteArgs(
  req: RouteRequest<
    ParamValues<typeof COMMON> & { invitee_emails?: string; notify_referrer_on_join?: boolean | undefined }
  >,
): Invitation {
  const sent = req.params;
  return {
    scheme: req.scheme,
    invite_expires_in_minutes: sent.invite_expires_in_minutes,
    invite_as: sent.invite_as,
    stream_ids: sent.stream_ids,
    group_ids: sent.group_ids,
    include_realm_default_subscriptions: sent.include_realm_default_subscriptions,
    welcome_message_custom_text: sent.welcome_message_custom_text,
    invitee_emails: sent.invitee_emails,
    notify_referrer_on_join: sent.notify_referrer_on_join,
  };
}

/** Zulip's order: the caller may invite, then the channels, then the groups. */
async function precheck(req: RouteRequest, args: Invitation, multiuse: boolean): Promise<void> {
  await req.call(realmRef(req.realmId), "checkInvite", { ...args, multiuse });
  const streamIds = args.stream_ids ?? [];
  if (streamIds.length)
    await req.call(channelDirectoryRef(req.realmId), "checkInviteChannels", { stream_ids: streamIds });
  const groupIds = args.group_ids ?? [];
  if (groupIds.length)
    await req.call(groupDirectoryRef(req.realmId), "checkInviteGroups", { group_ids: groupIds });
}

function inviteId(req: RouteRequest): number {
  const raw = req.path.invite_id!;
  // Zulip's URL pattern takes digits only; anything else matches no route.
  if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : 0;
}

const listInvites = defineRoute({
  method: "GET",
  path: "/invites",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "listInvites", { scheme: req.scheme });
  },
});

const sendInvites = defineRoute({
  method: "POST",
  path: "/invites",
  auth: "required",
  params: {
    ...COMMON,
    invitee_emails: param(p.string(), { required: true }),
    stream_ids: param(p.json(c.list(c.int())), { required: true }),
    notify_referrer_on_join: param(p.bool()),
  },
  async handler(req) {
    const args = { ...inviteArgs(req), invitee_emails: req.params.invitee_emails };
    await precheck(req, args, false);
    const r = await req.call(realmRef(req.realmId), "createInvites", args);
    if (r.skipped.length)
      throw errors.invitationFailed(
        "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
        r.skipped,
        true,
      );
    return {};
  },
});

const createMultiuse = defineRoute({
  method: "POST",
  path: "/invites/multiuse",
  auth: "required",
  params: COMMON,
  async handler(req) {
    const args = inviteArgs(req);
    await precheck(req, args, true);
    return await req.call(realmRef(req.realmId), "createMultiuseInvite", args);
  },
});

const revokeInvite = defineRoute({
  method: "DELETE",
  path: "/invites/:invite_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "revokeInvite", { invite_id: inviteId(req) });
  },
});

const revokeMultiuse = defineRoute({
  method: "DELETE",
  path: "/invites/multiuse/:invite_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "revokeMultiuseInvite", { invite_id: inviteId(req) });
  },
});

const resendInvite = defineRoute({
  method: "POST",
  path: "/invites/:invite_id/resend",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(realmRef(req.realmId), "resendInvite", {
      invite_id: inviteId(req),
      scheme: req.scheme,
    });
  },
});

export const inviteRoutes: RouteDef[] = [
  listInvites,
  sendInvites,
  createMultiuse,
  revokeInvite,
  revokeMultiuse,
  resendInvite,
];
