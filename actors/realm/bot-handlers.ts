// Bots on the realm actor (Zulip's add_bot_backend, get_bots_backend,
// patch_bot_backend, regenerate_bot_api_key, deactivate_bot_backend in
// zerver/views/users.py). A bot is a directory entry like any user, so the
// realm decides and records bot changes in one turn; the bot's user actor
// only holds what every user actor holds (settings, status).
//
// Who sees what: the API key and the outgoing-webhook token travel only in
// replies to, and realm_bot events for, the users who may administer the
// bot (its owner and the administrators). Everyone else learns about a bot
// through realm_user events and user objects, which carry neither.

import { errors } from "../errors.ts";
import { checkUniqueName } from "./unique-names.ts";
import { syncGroupMember } from "../group/index.ts";
import { isUserInGroupSetting, realmGroupSetting } from "../permissions/index.ts";
import type { ActorContext, Caller, Obj, OutEvent } from "../types.ts";
import {
  ROLES,
  ROLE_GUEST,
  ROLE_MEMBER,
  ROLE_OWNER,
  checkFullName,
  emailKey,
  generateApiKey,
  gravatarUrl,
  isAdminRole,
  isValidEmail,
  userRef,
} from "../user/index.ts";
import {
  activeAdminIds,
  actorOf,
  emailChangeEvents,
  botAudience,
  botsOf,
  canAdmin,
  groupView,
  invalidate,
  memberById,
  requireCreated,
  updateEvent,
} from "./member-helpers.ts";
import { deactivation } from "./member-handlers.ts";
import { apiEmail, fakeEmailDomain, formatMember } from "./members.ts";
import { isWebhookUrl } from "../webhook/index.ts";
import { emailHandoff } from "./member-handoffs.ts";
import type { RealmHandler } from "./handler.ts";
import type { BotService, DirEntry, MemberChanges, RealmFact, RealmState } from "./state.ts";

/** Zulip's UserProfile bot types. */
export const BOT_TYPES = { generic: 1, incomingWebhook: 2, outgoingWebhook: 3, embedded: 4 } as const;
/**
 * Types this server creates. Embedded bots (4) need a server-side bot
 * runner that Zulip enables only with EMBEDDED_BOTS_ENABLED (off by
 * default); without it Zulip's check_valid_bot_type refuses them too.
 */
const CREATABLE_BOT_TYPES: number[] = [
  BOT_TYPES.generic,
  BOT_TYPES.incomingWebhook,
  BOT_TYPES.outgoingWebhook,
];
/** Zulip's Service.GENERIC and Service.SLACK. */
const INTERFACE_TYPES = [1, 2];

function fact(f: RealmFact): Obj {
  return f as unknown as Obj;
}

/** Zulip's require_member_or_admin: no guests, no bots. */
export function memberOrAdmin(state: RealmState, caller: Caller | null): DirEntry {
  const me = actorOf(state, caller);
  if (me.role === ROLE_GUEST) throw errors.notAllowedForGuests();
  if (me.isBot) throw errors.botsNotAllowed();
  return me;
}

/** Zulip's access_bot_by_id. */
export function accessBot(state: RealmState, me: DirEntry, botId: number): DirEntry {
  const bot = memberById(state, botId);
  if (!bot || !bot.isBot) throw errors.noSuchBot();
  if (!canAdmin(me, bot)) throw errors.insufficientPermission();
  return bot;
}

/** Zulip's check_bot_name_available: no active user carries the name. */
function checkBotNameAvailable(state: RealmState, fullName: string): void {
  if (state.userIndex.activeNames.has(fullName.trim())) throw errors.botNameInUse();
}

function servicesOf(bot: DirEntry): Obj[] {
  if (!bot.service) return [];
  return [{ base_url: bot.service.baseUrl, interface: bot.service.interface, token: bot.service.token }];
}

function avatarOf(bot: DirEntry): string {
  return gravatarUrl(bot.email, bot.avatarVersion);
}

/**
 * The Bot object of realm_bot add events and /register's realm_bots. Since
 * feature level 474 it holds only what the user object lacks: the name,
 * email, avatar, type, owner and activity are read from realm_users, the
 * API key from GET /bots/{bot_id}/api_key.
 */
export function formatBot(bot: DirEntry): Obj {
  return {
    user_id: bot.userId,
    default_sending_stream: null,
    default_events_register_stream: null,
    default_all_public_streams: false,
    services: servicesOf(bot),
  };
}

function botEvent(op: string, bot: Obj): Obj {
  return { type: "realm_bot", op, bot };
}

/** Zulip's check_bot_creation_policy under the group-valued settings. */
async function checkBotCreationPolicy(
  state: RealmState,
  ctx: ActorContext,
  me: DirEntry,
  botType: number,
): Promise<void> {
  if (isAdminRole(me.role)) return;
  const all = await realmGroupSetting(ctx, state.realmId, "can_create_bots_group");
  if (await isUserInGroupSetting(ctx, state.realmId, all, me.userId, { allowEveryone: false })) return;
  if (botType === BOT_TYPES.incomingWebhook) {
    const writeOnly = await realmGroupSetting(ctx, state.realmId, "can_create_write_only_bots_group");
    if (await isUserInGroupSetting(ctx, state.realmId, writeOnly, me.userId, { allowEveryone: false }))
      return;
  }
  throw errors.insufficientPermission();
}

/** POST /bots. Checks in add_bot_backend's order. */
const createBot: RealmHandler<"createBot"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  const me = memberOrAdmin(state, caller);
  const shortName = args.shortName.trim();
  if (shortName === "") throw errors.badNameOrUsername();
  const botType = args.botType ?? BOT_TYPES.generic;
  const interfaceType = args.interfaceType ?? 1;
  const payloadUrl = args.payloadUrl ?? "";
  if (payloadUrl !== "" && !isWebhookUrl(payloadUrl)) throw errors.notAUrl("payload_url");
  const serviceName = args.serviceName || shortName;
  const fullName = checkFullName(args.fullName);
  checkUniqueName(state, fullName, null);
  const email = `${shortName}-bot@${fakeEmailDomain(state.host)}`;
  if (!isValidEmail(email)) throw errors.badNameOrUsername();
  if (state.users[emailKey(email)]) throw errors.usernameInUse();
  checkBotNameAvailable(state, fullName);
  await checkBotCreationPolicy(state, ctx, me, botType);
  if (!CREATABLE_BOT_TYPES.includes(botType)) throw errors.invalidBotType();
  if (!INTERFACE_TYPES.includes(interfaceType)) throw errors.invalidInterfaceType();

  const userId = await ctx.nextId(`user.${state.realmId}`);
  const dateJoined = ctx.now();
  const apiKey = generateApiKey();
  await ctx.call(userRef(state.realmId, userId), "create", {
    email,
    fullName,
    role: ROLE_MEMBER,
    isBot: true,
    botType,
    botOwnerId: me.userId,
    apiKey,
    dateJoined,
  });
  await syncGroupMember(ctx, state.realmId, { userId, role: ROLE_MEMBER, isActive: true, isBot: true });
  const service: BotService | null =
    botType === BOT_TYPES.outgoingWebhook
      ? { name: serviceName, baseUrl: payloadUrl, interface: interfaceType, token: generateApiKey() }
      : null;
  const entry: DirEntry = {
    userId,
    email,
    apiKey,
    role: ROLE_MEMBER,
    isBot: true,
    botType,
    isActive: true,
    canCreateUsers: false,
    fullName,
    dateJoined,
    timezone: "",
    avatarVersion: 1,
    botOwnerId: me.userId,
    emailVisibility: 1,
    service,
  };
  const audience = new Set(activeAdminIds(state));
  audience.add(me.userId);
  // A bot's user object is the same for every member viewer (bots' emails are never hidden).
  const person = formatMember(state, entry, me, { clientGravatar: false, includeCustomProfileFields: false });
  return {
    facts: [fact({ type: "userAdded", entry })],
    events: [
      { event: { type: "realm_user", op: "add", person }, userIds: [userId], everyone: true },
      { event: botEvent("add", formatBot(entry)), userIds: [...audience] },
    ],
    // A gateway may have cached "no such email"; let it look again.
    notices: [invalidate(state, entry)],
    reply: {
      user_id: userId,
      api_key: apiKey,
      avatar_url: avatarOf(entry),
      default_sending_stream: null,
      default_events_register_stream: null,
      default_all_public_streams: false,
    },
  };
};

/** GET /bots: the caller's own active bots, oldest first. */
const getBots: RealmHandler<"getBots"> = (state, _args, _ctx, caller) => {
  requireCreated(state);
  const me = memberOrAdmin(state, caller);
  const bots = botsOf(state, me.userId)
    .filter((u) => u.isActive)
    .sort((a, b) => a.dateJoined - b.dateJoined || a.userId - b.userId);
  return {
    reply: {
      bots: bots.map((b) => ({
        username: b.email,
        user_id: b.userId,
        full_name: b.fullName,
        api_key: b.apiKey,
        avatar_url: avatarOf(b),
        default_sending_stream: null,
        default_events_register_stream: null,
        default_all_public_streams: false,
      })),
    },
  };
};

/** /register realm_bots: every bot for administrators, else the caller's own (active or not). */
const administeredBots: RealmHandler<"administeredBots"> = (state, _args, _ctx, caller) => {
  requireCreated(state);
  const me = actorOf(state, caller);
  // canAdmin: every bot for administrators, else the caller's own.
  const bots = botsOf(state, isAdminRole(me.role) ? null : me.userId);
  return { reply: { bots: bots.map(formatBot) } };
};

/** PATCH /bots/{bot_id}: full_name, role, bot_owner_id, service_payload_url/service_interface. */
const updateBot: RealmHandler<"updateBot"> = async (state, args, ctx, caller) => {
  requireCreated(state);
  const me = memberOrAdmin(state, caller);
  const bot = accessBot(state, me, args.botId);
  const changes: MemberChanges = {};

  const rawName = args.fullName;
  if (rawName !== undefined && rawName.trim() !== bot.fullName) {
    // Zulip's check_change_bot_full_name.
    const name = checkFullName(rawName);
    if (name !== bot.fullName) {
      checkUniqueName(state, name, bot.userId);
      checkBotNameAvailable(state, name);
      changes.fullName = name;
    }
  }
  const role = args.role;
  if (role !== undefined && !ROLES.includes(role)) throw errors.invalid("role");
  if (role !== undefined && role !== bot.role) {
    if ((role === ROLE_OWNER || bot.role === ROLE_OWNER) && me.role !== ROLE_OWNER)
      throw errors.mustBeOwner();
    if (!isAdminRole(me.role)) throw errors.mustBeAdmin();
    changes.role = role;
  }
  const ownerId = args.botOwnerId;
  let newOwner: DirEntry | undefined;
  if (ownerId !== undefined) {
    newOwner = memberById(state, ownerId);
    if (!newOwner) throw errors.botOwnerNoSuchUser();
    if (!newOwner.isActive) throw errors.botOwnerDeactivated();
    if (newOwner.isBot) throw errors.botOwnerIsBot();
    if (newOwner.userId !== bot.botOwnerId) changes.botOwnerId = newOwner.userId;
  }
  const payloadUrl = args.servicePayloadUrl;
  if (payloadUrl !== undefined && !isWebhookUrl(payloadUrl)) throw errors.notAUrl("service_payload_url");
  const serviceInterface = args.serviceInterface ?? 1;
  if (payloadUrl !== undefined) {
    if (!INTERFACE_TYPES.includes(serviceInterface)) throw errors.invalidInterfaceType();
    // Only outgoing webhook bots have a service to point elsewhere.
    if (bot.service && (bot.service.baseUrl !== payloadUrl || bot.service.interface !== serviceInterface)) {
      changes.service = { ...bot.service, baseUrl: payloadUrl, interface: serviceInterface };
    }
  }

  // FL 447: a new short name moves the bot to `<short_name>-bot@<domain>`,
  // checked as at creation (Zulip's do_change_user_delivery_email).
  const rawShort = args.shortName;
  let newEmail: string | undefined;
  if (rawShort !== undefined) {
    const shortName = rawShort.trim();
    if (shortName === "") throw errors.badNameOrUsername();
    const email = `${shortName}-bot@${fakeEmailDomain(state.host)}`;
    if (!isValidEmail(email)) throw errors.badNameOrUsername();
    if (emailKey(email) !== emailKey(bot.email)) {
      if (state.users[emailKey(email)]) throw errors.usernameInUse();
      newEmail = email;
    }
  }

  const after: DirEntry = { ...bot, ...changes };
  const reply: Obj = {
    full_name: after.fullName,
    avatar_url: avatarOf(after),
    service_interface: serviceInterface,
    service_payload_url: payloadUrl ?? null,
    config_data: null,
    default_sending_stream: null,
    default_events_register_stream: null,
    default_all_public_streams: false,
  };
  if (after.botOwnerId !== null) {
    const owner = memberById(state, after.botOwnerId);
    // The API email: an administrator may not see the owner's real one.
    if (owner) reply.bot_owner = apiEmail(state, owner);
  }
  if (Object.keys(changes).length === 0 && newEmail === undefined) return { reply };

  const oldAudience = botAudience(state, bot);
  const events: OutEvent[] = [];
  if (changes.fullName !== undefined) {
    events.push({
      event: updateEvent(bot.userId, { full_name: changes.fullName }),
      userIds: [],
      everyone: true,
    });
  }
  if (changes.role !== undefined) {
    events.push({ event: updateEvent(bot.userId, { role: changes.role }), userIds: [], everyone: true });
    events.push({
      event: botEvent("update", { user_id: bot.userId, role: changes.role }),
      userIds: oldAudience,
    });
    await syncGroupMember(ctx, state.realmId, { ...groupView(bot), role: changes.role });
  }
  if (changes.service !== undefined && changes.service !== null) {
    events.push({
      event: botEvent("update", { user_id: bot.userId, services: servicesOf(after) }),
      userIds: oldAudience,
    });
  }
  if (changes.botOwnerId !== undefined) {
    // Zulip's do_change_bot_owner: the old owner loses the bot from their
    // list (unless they administer it anyway) and the new owner gains it;
    // the others see the owner change in realm_user (no realm_bot update
    // since feature level 474).
    const admins = new Set(activeAdminIds(state));
    const oldOwner = bot.botOwnerId;
    if (oldOwner !== null && !admins.has(oldOwner)) {
      events.push({ event: botEvent("delete", { user_id: bot.userId }), userIds: [oldOwner] });
    }
    if (!admins.has(changes.botOwnerId!)) {
      events.push({ event: botEvent("add", formatBot(after)), userIds: [changes.botOwnerId!] });
    }
    events.push({
      event: updateEvent(bot.userId, { bot_owner_id: changes.botOwnerId! }),
      userIds: [],
      everyone: true,
    });
  }
  const facts: Obj[] = [];
  const notices: { subject: string; data: Obj }[] = [];
  if (Object.keys(changes).length) facts.push(fact({ type: "memberUpdated", userId: bot.userId, changes }));
  if (changes.role !== undefined || newEmail !== undefined) notices.push(invalidate(state, bot));
  if (newEmail !== undefined) {
    facts.push(fact({ type: "memberEmailChanged", userId: bot.userId, email: newEmail }));
    events.push(...emailChangeEvents(state, bot, newEmail));
    // No realm_bot update: since feature level 474 bot objects carry no email.
    // Credentials cached under the old address die on every gateway now.
    notices.push({ subject: "auth.invalidate", data: { realmId: state.realmId, email: emailKey(newEmail) } });
    // The user actor's copy of the address resyncs once this is journaled (member-handoffs.ts).
    return {
      facts,
      events,
      notices,
      handoffs: [emailHandoff(state.realmId, bot.userId)],
      replyAfterHandoffs: true,
      reply,
    };
  }
  return { facts, events, notices, reply };
};

/** POST /bots/{bot_id}/api_key/regenerate: the old key stops working at once. */
const regenerateBotKey: RealmHandler<"regenerateBotKey"> = (state, args, _ctx, caller) => {
  requireCreated(state);
  const me = memberOrAdmin(state, caller);
  const bot = accessBot(state, me, args.botId);
  const apiKey = generateApiKey();
  return {
    facts: [fact({ type: "memberUpdated", userId: bot.userId, changes: { apiKey } })],
    // No realm_bot event since feature level 474: GET /bots/{bot_id}/api_key reads the key.
    notices: [invalidate(state, bot)],
    reply: { api_key: apiKey },
  };
};

/** DELETE /bots/{bot_id}. */
const deactivateBot: RealmHandler<"deactivateBot"> = (state, args, ctx, caller) => {
  requireCreated(state);
  const me = memberOrAdmin(state, caller);
  const bot = accessBot(state, me, args.botId);
  if (!bot.isActive) throw errors.userDeactivated();
  return deactivation(state, bot, ctx);
};

export const botHandlers = {
  createBot,
  getBots,
  administeredBots,
  updateBot,
  regenerateBotKey,
  deactivateBot,
};
