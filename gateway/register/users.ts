// /register fetch type "realm_user": realm_users, realm_non_active_users,
// cross_realm_bots and the caller's own user fields (as Zulip's POST /register).

import { realmRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";
import { accessArgs } from "../user-access.ts";
import { isJdenticonUrl, mediumAvatarUrl } from "../../actors/user/avatar.ts";

const ROLE_OWNER = 100;
const ROLE_ADMINISTRATOR = 200;
const ROLE_MODERATOR = 300;
const ROLE_GUEST = 600;

export const usersArea: RegisterArea = {
  fetchTypes: ["realm_user"],
  async fetch(ctx): Promise<Obj> {
    // Zulip's register includes profile_data for humans (authenticated callers).
    const [{ members }, { bots }] = await Promise.all([
      ctx.call(realmRef(ctx.realmId), "getMembers", {
        clientGravatar: ctx.params.client_gravatar,
        includeCustomProfileFields: ctx.caller !== null,
        // Inaccessible users: left out for clients with user_list_incomplete, else "Unknown user".
        unknownPlaceholders: ctx.params.client_capabilities.user_list_incomplete !== true,
        ...(await accessArgs(ctx)),
      }),
      // The realm's Notification Bot (actors/realm/system-bot.ts).
      ctx.call(realmRef(ctx.realmId), "crossRealmBots", {}),
    ]);
    const active: Obj[] = [];
    const inactive: Obj[] = [];
    for (const m of members) {
      // Zulip's post_process_state drops is_active from both lists.
      const { is_active, ...rest } = m;
      (is_active === false ? inactive : active).push(rest);
    }
    const out: Obj = { realm_users: active, realm_non_active_users: inactive, cross_realm_bots: bots };
    if (!ctx.caller) return out;
    // The caller's own fields use the real avatar URL whatever client_gravatar says.
    const { members: mine } = await ctx.call(realmRef(ctx.realmId), "getMembers", {
      clientGravatar: false,
      userIds: [ctx.caller.userId],
    });
    const me = mine[0]!;
    const role = me.role as number;
    const avatar = String(me.avatar_url);
    // Channel-creation and invite rights by role under the default realm
    // group settings (members may create public and private channels and
    // invite; only owners may create web-public channels).
    const member = role !== ROLE_GUEST;
    return {
      ...out,
      user_id: me.user_id!,
      email: me.email!,
      delivery_email: me.delivery_email!,
      full_name: me.full_name!,
      is_admin: role === ROLE_OWNER || role === ROLE_ADMINISTRATOR,
      is_owner: role === ROLE_OWNER,
      // Since FL 380 administrators and owners count as moderators too.
      is_moderator: role === ROLE_OWNER || role === ROLE_ADMINISTRATOR || role === ROLE_MODERATOR,
      is_guest: role === ROLE_GUEST,
      avatar_source: isJdenticonUrl(avatar) ? "J" : "G",
      avatar_url: avatar,
      avatar_url_medium: mediumAvatarUrl(avatar),
      can_create_streams: member,
      can_create_public_streams: member,
      can_create_private_streams: member,
      can_create_web_public_streams: role === ROLE_OWNER,
      can_invite_others_to_realm: member,
    };
  },
};
