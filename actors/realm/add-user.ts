// Adding a human user to the realm's directory: shared by the realm
// actor's own creation paths (realm-handlers.ts) and invitations
// (invites.ts), which is why it has a module of its own.

import { syncGroupMember } from "../group/index.ts";
import type { DecisionOf } from "../protocol.ts";
import type { ActorContext, Obj } from "../types.ts";
import { emailKey, generateApiKey, userRef } from "../user/index.ts";
import { realmSetting } from "./defaults.ts";
import type { DirEntry, RealmFact, RealmState } from "./state.ts";
import { newUserAddEvents } from "./user-access.ts";
import { newUserSettings, userDefault } from "./user-defaults.ts";

function fact(f: RealmFact): Obj {
  return f as unknown as Obj;
}

interface NewUser {
  email: string;
  password: string;
  fullName: string;
  role: number;
  canCreateUsers: boolean;
  /** POST /users: date_joined moves to the first login (FL 475). */
  awaitingFirstLogin?: boolean;
}

/**
 * Allocate an id, have the user actor create itself (it hashes the
 * password), then record the directory entry. Crash safety: the user's
 * `create` is idempotent for the same email, so a timed-out call may be
 * retried; if this turn dies after the user committed but before our fact
 * did, a retry allocates a fresh id and the first user actor is left
 * unreachable (no directory entry points to it), never half-visible.
 */
export async function addUser(
  state: RealmState,
  ctx: ActorContext,
  u: NewUser,
  prior: RealmFact[] = [],
): Promise<DecisionOf<{ userId: number; apiKey: string }>> {
  const userId = await ctx.nextId(`user.${state.realmId}`);
  const dateJoined = ctx.now();
  const settings = newUserSettings(state);
  const jdenticon = realmSetting(state, "default_avatar_source") === "J";
  const created = await ctx.call(userRef(state.realmId, userId), "create", {
    email: u.email,
    password: u.password,
    fullName: u.fullName,
    role: u.role,
    apiKey: generateApiKey(),
    dateJoined,
    settings,
    ...(jdenticon ? { avatarSource: "J" } : {}),
  });
  // System-group membership follows the role (one-way: groups never call us).
  await syncGroupMember(ctx, state.realmId, { userId, role: u.role, isActive: true, isBot: false });
  const entry: DirEntry = {
    userId,
    email: u.email,
    apiKey: created.apiKey,
    role: u.role,
    isBot: false,
    botType: null,
    isActive: true,
    canCreateUsers: u.canCreateUsers,
    // Zulip grants both special permissions only by server command.
    canChangeUserEmails: u.canCreateUsers,
    fullName: u.fullName,
    dateJoined,
    timezone: "",
    avatarVersion: 1,
    ...(jdenticon ? { avatarSource: "J" as const } : {}),
    botOwnerId: null,
    emailVisibility: userDefault(state, "email_address_visibility") as number,
    service: null,
    ...(settings.receives_typing_notifications === false ? { receivesTyping: false } : {}),
    ...(u.awaitingFirstLogin ? { awaitingFirstLogin: true } : {}),
  };
  return {
    facts: [...prior.map(fact), fact({ type: "userAdded", entry })],
    events: await newUserAddEvents(state, ctx, userId, created.person),
    // A gateway may have cached "no such email"; let it look again.
    notices: [{ subject: "auth.invalidate", data: { realmId: state.realmId, email: emailKey(u.email) } }],
    reply: { userId, apiKey: created.apiKey },
  };
}
