// The realm actor's methods (one organization, key "realm"; the handler
// files are listed in behavior.ts): their arguments, replies and which a
// gateway may call. How to add one: docs/architecture.md, "Actor protocols".
//
// A gateway's arguments are checked against these schemas at the node.
// Values a handler checks itself with Zulip's own errors stay loose:
// PATCH /realm's settings (`updates`), the raw JSON of custom profile
// fields and their values, the personal settings' defaults.

import { Type } from "typebox";
import { AnyObj, AnyValue, SafeInt, SafeIntList, reply, type MethodOf, type ReplyOf } from "../protocol.ts";
import type { RealmEmoji } from "../realm-emoji.ts";
import type { Obj, Value } from "../types.ts";
import type { AttemptResult } from "./rate-limit.ts";

/** A user named by id or by email (Zulip's access_user_by_id / _by_email); neither: no such user. */
const Target = {
  userId: Type.Optional(SafeInt),
  email: Type.Optional(Type.String()),
};

/** How user objects are formatted (GET /users, /register). */
const Format = {
  clientGravatar: Type.Optional(Type.Boolean()),
  includeCustomProfileFields: Type.Optional(Type.Boolean()),
};

/**
 * A restricted guest's access, which the gateway asked of the channel
 * directory and the caller's user actor (actors/realm/user-access.ts).
 */
const Access = {
  access: Type.Optional(Type.Object({ channelPeers: SafeIntList, dmPeers: SafeIntList })),
};

/** The owner of a new organization (the realm directory's create). */
const NewRealm = Type.Object({
  name: Type.String(),
  description: Type.Optional(Type.String()),
  host: Type.String(),
  ownerEmail: Type.String(),
  ownerPassword: Type.String(),
  ownerName: Type.String(),
});

const Email = Type.Object({ email: Type.String() });
const UserId = Type.Object({ userId: SafeInt });
const BotId = Type.Object({ botId: SafeInt });
const ExportId = Type.Object({ exportId: SafeInt });
/** PATCH /realm's settings by name, raw: the handler checks each with Zulip's errors. */
const Updates = Type.Object({ updates: AnyObj });

/** A custom profile field's definition as POST/PATCH /realm/profile_fields send it. */
const FieldDefinition = {
  name: Type.Optional(Type.String()),
  hint: Type.Optional(Type.String()),
  fieldType: Type.Optional(SafeInt),
  // Raw JSON: checked with Zulip's texts (check_profile_field_data).
  fieldData: Type.Optional(AnyValue),
  displayInProfileSummary: Type.Optional(Type.Boolean()),
  required: Type.Optional(Type.Boolean()),
  editableByUser: Type.Optional(Type.Boolean()),
  useForUserMatching: Type.Optional(Type.Boolean()),
};

const Linkifier = {
  pattern: Type.String(),
  url_template: Type.String(),
  example_input: Type.Optional(Type.String()),
  reverse_template: Type.Optional(Type.String()),
  alternative_url_templates: Type.Optional(Type.Array(Type.String())),
};

/** The parameters of POST /invites and /invites/multiuse, as parsed by the gateway. */
const Invitation = {
  /** The client's URL scheme, for the links. */
  scheme: Type.Optional(Type.String()),
  invitee_emails: Type.Optional(Type.String()),
  invite_expires_in_minutes: Type.Optional(Type.Union([SafeInt, Type.Null()])),
  invite_as: Type.Optional(SafeInt),
  stream_ids: Type.Optional(SafeIntList),
  group_ids: Type.Optional(Type.Union([SafeIntList, Type.Null()])),
  include_realm_default_subscriptions: Type.Optional(Type.Boolean()),
  notify_referrer_on_join: Type.Optional(Type.Boolean()),
  welcome_message_custom_text: Type.Optional(Type.String()),
};

const InviteId = Type.Object({ invite_id: SafeInt });

/** What the gateway caches of a credential (authVerify): never the key itself. */
export type AuthRecord = {
  userId: number;
  role: number;
  isBot: boolean;
  botType: number | null;
  isActive: boolean;
  realmDeactivated: boolean;
};

/** One user as the roster lists them (channels, drafts and scheduled messages read it). */
export type RosterEntry = {
  userId: number;
  /** The API email. */
  email: string;
  role: number;
  isBot: boolean;
  botType: number | null;
  botOwnerId: number | null;
  isActive: boolean;
  fullName: string;
  avatarVersion: number;
  avatarSource?: "J";
};

/**
 * The roster: every user (`users`), or for a caller holding a copy
 * (`since`) only the entries changed since (`changed`); with a `sender`,
 * what a send needs of the users' alert words and mutes (send-prefs.ts).
 */
export type RosterReply = {
  users?: RosterEntry[];
  changed?: RosterEntry[];
  epoch: string;
  version: number;
  linkifiers: Obj[];
  topicsPolicy: Value;
  mutedBy?: number[];
  allPublic?: number[];
  alertStamp?: string;
  alertWords?: Record<string, string[]>;
};

/** What the outgoing-webhook worker needs of a bot (webhook-handlers.ts). */
export type WebhookBotReply =
  | { found: false }
  | {
      found: true;
      botId: number;
      email: string;
      fullName: string;
      role: number;
      isActive: boolean;
      botType: number | null;
      ownerId: number | null;
      ownerEmail: string | null;
      realmHost: string;
      service: { baseUrl: string; interface: number; token: string } | null;
    };

type UserRef = { user_id: number; email: string };

/** The realm's message editing, deletion, moving and retention settings (`messageLimits`). */
export interface MessageLimits {
  allowEditing: boolean;
  editSeconds: number | null;
  deleteSeconds: number | null;
  moveWithinSeconds: number | null;
  moveBetweenSeconds: number | null;
  /** Days, or -1: kept forever. */
  retentionDays: number;
}

export const realmProtocol = {
  // ---- creation, credentials and login (realm-handlers.ts)
  /** Internal (the realm directory): create the organization and its owner; idempotent. */
  create: { args: NewRealm, reply: reply<{ realmId: number; userId: number; apiKey: string }>() },
  /** POST /users (caller); the CLI (no caller, any `role`): `{userId, apiKey}`. */
  createUser: {
    args: Type.Object({
      email: Type.String(),
      password: Type.String(),
      fullName: Type.String(),
      role: Type.Optional(SafeInt),
    }),
    reply: reply<{ user_id: number } | { userId: number; apiKey: string }>(),
    external: "caller",
  },
  /** The gateway's credential check: null for an unknown email and a wrong key alike. */
  authVerify: {
    args: Type.Object({ email: Type.String(), apiKey: Type.String() }),
    reply: reply<AuthRecord | null>(),
    external: "anonymous",
  },
  /** Internal (CLI, bootstrap): a user's id and API key by email. */
  apiKey: { args: Email, reply: reply<{ userId: number; apiKey: string } | null>() },
  /** POST /fetch_api_key, first step: the checks up to the password. */
  login: {
    args: Type.Object({ username: Type.String(), emptyPassword: Type.Optional(Type.Boolean()) }),
    reply: reply<{ userId: number }>(),
    external: "anonymous",
  },
  /** Internal (user actor): a password check elsewhere, counted against the same limit. */
  authAttempt: { args: Email, reply: reply<AttemptResult>() },
  /** Internal (user actor): may the password of an attempt `login` let through be checked? */
  authAdmitted: { args: Email, reply: reply<{ admitted: boolean }>() },
  /** Internal (user actor): a successful password check. */
  authSucceeded: { args: Email, reply: reply() },
  /** Internal (user and emoji actors): what a user's own changes need of the realm. */
  memberContext: {
    args: Type.Object({ email: Type.Optional(Type.String()) }),
    reply: reply<{
      nameChangesDisabled: boolean;
      emailChangesDisabled: boolean;
      realmEmoji: Record<string, RealmEmoji>;
      emailHolder: "active" | "deactivated" | null;
      activeGuestIds: number[];
    }>(),
  },
  /** Internal (user actor): PATCH /settings target_users, user and group ids -> human users. */
  resolveTargets: {
    args: Type.Object({ userIds: Type.Optional(SafeIntList), groupIds: Type.Optional(SafeIntList) }),
    reply: reply<{ userIds: number[] }>(),
  },
  /** Internal: the active users' ids. */
  userIds: { args: Type.Object({}), reply: reply<{ userIds: number[] }>() },
  /** GET /server_settings and others: the organization's public facts. */
  publicInfo: {
    args: Type.Object({}),
    reply: reply<{
      realmId: number;
      name: string;
      description: string;
      icon: string;
      host: string;
      webPublicAccessEnabled: boolean;
    }>(),
    external: "anonymous",
  },

  // ---- members (member-handlers.ts)
  /** POST /users/me/api_key/regenerate. */
  regenerateOwnKey: { args: Type.Object({}), reply: reply<{ api_key: string }>(), external: "caller" },
  /** Internal (user actor's syncEmail): a user's delivery email. */
  memberEmail: { args: UserId, reply: reply<{ email: string }>() },
  /** GET /users, /register's realm_users (spectators where the realm allows them). */
  getMembers: {
    args: Type.Object({
      ...Format,
      ...Access,
      userIds: Type.Optional(SafeIntList),
      unknownPlaceholders: Type.Optional(Type.Boolean()),
    }),
    reply: reply<{ members: Obj[] }>(),
    external: "anonymous",
  },
  /** GET /users/{user_id}, /users/{email}, /users/me. */
  getMember: {
    args: Type.Object({ ...Target, ...Format, ...Access }),
    reply: reply<{ user: Obj }>(),
    external: "anonymous",
  },
  /**
   * PATCH /users/{user_id}. A role or address change is followed in the
   * channel directory and the user actor before the reply (member-handoffs.ts).
   */
  updateMember: {
    args: Type.Object({
      ...Target,
      role: Type.Optional(SafeInt),
      fullName: Type.Optional(Type.String()),
      newEmail: Type.Optional(Type.String()),
      // Raw JSON: checked with Zulip's texts (validate_user_custom_profile_data).
      profileData: Type.Optional(AnyValue),
    }),
    reply: reply(),
    external: "caller",
  },
  /** DELETE /users/{user_id}: the user and their bots. */
  deactivateMember: { args: Type.Object(Target), reply: reply(), external: "caller" },
  /** DELETE /users/me. */
  deactivateSelf: { args: Type.Object({}), reply: reply(), external: "caller" },
  /** DELETE /users/{user_id} with actions: deactivateMember's checks, and whom it would deactivate. */
  planDeactivation: {
    args: Type.Object(Target),
    reply: reply<{ victims: number[] }>(),
    external: "caller",
  },
  /** POST /users/{user_id}/reactivate. */
  reactivateMember: { args: Type.Object(Target), reply: reply(), external: "caller" },
  /** Internal (user actor): its name, timezone, email visibility or typing setting changed. */
  syncMember: {
    args: Type.Object({
      ...Target,
      fullName: Type.Optional(Type.String()),
      timezone: Type.Optional(Type.String()),
      emailVisibility: Type.Optional(SafeInt),
      receivesTyping: Type.Optional(Type.Boolean()),
    }),
    reply: reply<{
      activeGuestIds: number[];
      apiEmail: string;
      changed: string[];
    }>(),
  },

  // ---- bots (bot-handlers.ts, bot-api-key.ts)
  /** POST /bots. */
  createBot: {
    args: Type.Object({
      fullName: Type.String(),
      shortName: Type.String(),
      botType: Type.Optional(SafeInt),
      payloadUrl: Type.Optional(Type.String()),
      serviceName: Type.Optional(Type.String()),
      interfaceType: Type.Optional(SafeInt),
    }),
    reply: reply<{
      user_id: number;
      api_key: string;
      avatar_url: string;
      default_sending_stream: null;
      default_events_register_stream: null;
      default_all_public_streams: boolean;
    }>(),
    external: "caller",
  },
  /** GET /bots. */
  getBots: { args: Type.Object({}), reply: reply<{ bots: Obj[] }>(), external: "caller" },
  /** /register's realm_bots. */
  administeredBots: { args: Type.Object({}), reply: reply<{ bots: Obj[] }>(), external: "caller" },
  /** PATCH /bots/{bot_id}: Zulip's reply, after a new address reached the bot's user actor (member-handoffs.ts). */
  updateBot: {
    args: Type.Object({
      botId: SafeInt,
      fullName: Type.Optional(Type.String()),
      role: Type.Optional(SafeInt),
      botOwnerId: Type.Optional(SafeInt),
      servicePayloadUrl: Type.Optional(Type.String()),
      serviceInterface: Type.Optional(SafeInt),
      shortName: Type.Optional(Type.String()),
    }),
    reply: reply<Obj>(),
    external: "caller",
  },
  /** POST /bots/{bot_id}/api_key/regenerate. */
  regenerateBotKey: { args: BotId, reply: reply<{ api_key: string }>(), external: "caller" },
  /** GET /bots/{bot_id}/api_key. */
  getBotKey: { args: BotId, reply: reply<{ api_key: string }>(), external: "caller" },
  /** DELETE /bots/{bot_id}. */
  deactivateBot: { args: BotId, reply: reply(), external: "caller" },
  /** Internal (outgoing-webhook worker): the bot's delivery facts, service token included. */
  webhookBot: { args: BotId, reply: reply<WebhookBotReply>() },

  // ---- custom profile fields (profile-fields.ts)
  /** GET /realm/profile_fields. */
  getProfileFields: { args: Type.Object({}), reply: reply<{ custom_fields: Obj[] }>(), external: "caller" },
  /** /register's custom_profile_fields (spectators too). */
  profileFieldsState: { args: Type.Object({}), reply: reply<{ fields: Obj[] }>(), external: "anonymous" },
  /** POST /realm/profile_fields. */
  createProfileField: {
    args: Type.Object(FieldDefinition),
    reply: reply<{ id: number }>(),
    external: "caller",
  },
  /** PATCH /realm/profile_fields/{field_id}. */
  updateProfileField: {
    args: Type.Object({ ...FieldDefinition, fieldId: SafeInt }),
    reply: reply(),
    external: "caller",
  },
  /** DELETE /realm/profile_fields/{field_id}. */
  deleteProfileField: { args: Type.Object({ fieldId: SafeInt }), reply: reply(), external: "caller" },
  /** PATCH /realm/profile_fields: raw JSON `order`, checked with Zulip's texts. */
  reorderProfileFields: { args: Type.Object({ order: AnyValue }), reply: reply(), external: "caller" },
  /** PATCH /users/me/profile_data: raw JSON `data`, checked with Zulip's texts. */
  updateOwnProfileData: { args: Type.Object({ data: AnyValue }), reply: reply(), external: "caller" },
  /** DELETE /users/me/profile_data: raw JSON `data`, checked with Zulip's texts. */
  removeOwnProfileData: { args: Type.Object({ data: AnyValue }), reply: reply(), external: "caller" },
  /** DELETE /users/{user_id} with delete_profile: Zulip's is_deleted, set before the deactivation. */
  markProfileDeleted: { args: Type.Object(Target), reply: reply(), external: "caller" },

  // ---- presence (presence-handlers.ts, push-presence.ts)
  /** /register's presences. */
  presenceState: {
    args: Type.Object({
      slimPresence: Type.Optional(Type.Boolean()),
      historyLimitDays: Type.Optional(SafeInt),
    }),
    reply: reply<{ presences: Obj; presence_last_update_id: number; server_timestamp: number }>(),
    external: "caller",
  },
  /** POST /users/me/presence: {} with ping_only, else the realm's presences. */
  updatePresence: {
    args: Type.Object({
      status: Type.String(),
      pingOnly: Type.Optional(Type.Boolean()),
      slimPresence: Type.Optional(Type.Boolean()),
      lastUpdateId: Type.Optional(SafeInt),
      historyLimitDays: Type.Optional(SafeInt),
    }),
    reply: reply<Obj>(),
    external: "caller",
  },
  /** GET /realm/presence. */
  realmPresence: {
    args: Type.Object({}),
    reply: reply<{ presences: Obj; server_timestamp: number }>(),
    external: "caller",
  },
  /** GET /users/{user_id_or_email}/presence. */
  userPresence: {
    args: Type.Object({ userIdOrEmail: Type.String() }),
    reply: reply<{ presence: Obj }>(),
    external: "caller",
  },
  /** Internal (push worker): which of these users are idle. */
  presenceIdle: { args: Type.Object({ user_ids: SafeIntList }), reply: reply<{ idle: number[] }>() },
  /** Internal (push worker): the settings a notification's payload follows. */
  pushSettings: { args: Type.Object({}), reply: reply<{ requireE2ee: boolean }>() },

  // ---- leaf reads for other actors (roster-handlers.ts, typing.ts, send-prefs.ts)
  /** Internal: the users, or what changed since the caller's copy (`since`). */
  roster: {
    args: Type.Object({
      since: Type.Optional(Type.Object({ epoch: Type.String(), version: SafeInt })),
      sender: Type.Optional(SafeInt),
      alertStamp: Type.Optional(Type.String()),
    }),
    reply: reply<RosterReply>(),
  },
  /** Internal: the roster entries of these users (unknown ids left out). */
  rosterEntries: { args: Type.Object({ userIds: SafeIntList }), reply: reply<{ users: RosterEntry[] }>() },
  /** POST /messages `to` by email: the users' ids, or "Invalid email". */
  resolveEmails: {
    args: Type.Object({ emails: Type.Array(Type.String()) }),
    reply: reply<{ ids: number[] }>(),
    external: "caller",
  },
  /** Internal: today's API emails, names and avatar versions of `userIds` (unknown ids left out). */
  apiEmails: {
    args: Type.Object({ userIds: SafeIntList }),
    reply: reply<{
      emails: Record<string, string>;
      fullNames: Record<string, string>;
      avatarVersions: Record<string, number>;
    }>(),
  },
  /** Internal: who a typing notification names and who hears it. */
  typingAudience: {
    args: Type.Object({
      senderId: SafeInt,
      userIds: SafeIntList,
      validate: Type.Optional(Type.Boolean()),
      channel: Type.Optional(Type.Boolean()),
    }),
    reply: reply<{ sender: UserRef; notify: number[]; recipients?: UserRef[] }>(),
  },
  /** Internal (user and queue actors): a user's alert words, a mute, a public-channels queue. */
  syncSendPrefs: {
    args: Type.Object({
      userId: SafeInt,
      alertWords: Type.Optional(Type.Array(Type.String())),
      mutedId: Type.Optional(SafeInt),
      muted: Type.Optional(Type.Boolean()),
      allPublic: Type.Optional(Type.Boolean()),
    }),
    reply: reply(),
  },
  /** GET /users/{user_id}/status: may the caller read that user? */
  statusTarget: { args: UserId, reply: reply(), external: "caller" },
  /** POST /users/{user_id}/status: may the caller (an administrator) change that user's? */
  adminStatusTarget: { args: UserId, reply: reply(), external: "caller" },
  /** Internal (user actor): who hears a change of allow_private_data_export. */
  exportConsentAudience: { args: Type.Object({}), reply: reply<{ ids: number[] }>() },

  // ---- organization settings (register-handlers.ts, settings-handlers.ts, message-limits.ts)
  /** /register's realm_* settings (spectators too). */
  registerRealmState: {
    args: Type.Object({}),
    reply: reply<{ settings: Obj; dateCreated: number }>(),
    external: "anonymous",
  },
  /** PATCH /realm's group-valued settings, forwarded to the group directory. */
  updateRealmGroupSettings: { args: Updates, reply: reply<Obj>(), external: "caller" },
  /** PATCH /realm's boolean, choice, integer and string settings, name and description. */
  updateRealmProperties: { args: Updates, reply: reply<Obj>(), external: "caller" },
  /** PATCH /realm's channel-valued settings (the gateway checked the channels). */
  updateAnnouncementStreams: { args: Updates, reply: reply<Obj>(), external: "caller" },
  /** PATCH /realm's message editing, deletion, moving and retention settings. */
  updateMessageLimits: { args: Updates, reply: reply<Obj>(), external: "caller" },
  /** Internal (conversations, retention): the message limits. */
  messageLimits: { args: Type.Object({}), reply: reply<MessageLimits>() },
  /** What an automated message needs: the bot and the channels it posts to. */
  notificationContext: {
    args: Type.Object({}),
    reply: reply<{
      botId: number;
      newStreamAnnouncementsStreamId: Value;
      moderationRequestChannelId: Value;
    }>(),
    external: "caller",
  },
  /** /register's cross_realm_bots (spectators too). */
  crossRealmBots: { args: Type.Object({}), reply: reply<{ bots: Obj[] }>(), external: "anonymous" },

  // ---- linkifiers (linkifier-handlers.ts) and playgrounds (playgrounds.ts)
  /** GET /realm/linkifiers, /register (spectators too). */
  listLinkifiers: { args: Type.Object({}), reply: reply<{ linkifiers: Obj[] }>(), external: "anonymous" },
  /** POST /realm/filters. */
  addLinkifier: { args: Type.Object(Linkifier), reply: reply<{ id: number }>(), external: "caller" },
  /** PATCH /realm/filters/{filter_id}. */
  updateLinkifier: {
    args: Type.Object({ ...Linkifier, id: SafeInt }),
    reply: reply(),
    external: "caller",
  },
  /** DELETE /realm/filters/{filter_id}. */
  removeLinkifier: { args: Type.Object({ id: SafeInt }), reply: reply(), external: "caller" },
  /** PATCH /realm/linkifiers. */
  reorderLinkifiers: { args: Type.Object({ ids: SafeIntList }), reply: reply(), external: "caller" },
  /** POST /realm/playgrounds. */
  addPlayground: {
    args: Type.Object({ name: Type.String(), pygments_language: Type.String(), url_template: Type.String() }),
    reply: reply<{ id: number }>(),
    external: "caller",
  },
  /** DELETE /realm/playgrounds/{playground_id}. */
  removePlayground: { args: Type.Object({ id: SafeInt }), reply: reply(), external: "caller" },
  /** /register's realm_playgrounds (spectators too). */
  listPlaygrounds: {
    args: Type.Object({}),
    reply: reply<{ realm_playgrounds: Obj[] }>(),
    external: "anonymous",
  },

  // ---- new users' settings (user-defaults.ts)
  /** PATCH /realm/user_settings_defaults: settings by name, checked like PATCH /settings. */
  updateUserSettingsDefaults: { args: AnyObj, reply: reply(), external: "caller" },
  /** /register's realm_user_settings_defaults. */
  userSettingsDefaults: {
    args: Type.Object({}),
    reply: reply<{ realm_user_settings_defaults: Obj }>(),
    external: "caller",
  },

  // ---- exports (export.ts)
  /** GET /export/realm/consents: whose consent to ask. */
  exportConsentUsers: { args: Type.Object({}), reply: reply<{ user_ids: number[] }>(), external: "caller" },
  /** GET /export/realm. */
  listExports: { args: Type.Object({}), reply: reply<{ exports: Obj[] }>(), external: "caller" },
  /** POST /export/realm: a type name the gateway did not know reaches the handler as sent. */
  requestExport: {
    args: Type.Object({ export_type: Type.Optional(Type.Union([SafeInt, Type.String()])) }),
    reply: reply<{ id: number }>(),
    external: "caller",
  },
  /** Internal (export worker): the file is written. */
  completeExport: {
    args: Type.Object({ exportId: SafeInt, file: Type.String() }),
    reply: reply<{ done: boolean }>(),
  },
  /** Internal (export worker, restore): the export cannot be produced. */
  failExport: { args: ExportId, reply: reply<{ failed: boolean }>() },
  /** Internal (export worker): a requested export. */
  exportJob: {
    args: ExportId,
    reply: reply<{ pending: boolean; secret: string; exportType: number; host: string } | null>(),
  },
  /** The download of a finished export (administrators). */
  exportDownload: {
    args: Type.Object({ secret: Type.String(), name: Type.String() }),
    reply: reply<{ file: string } | null>(),
    external: "caller",
  },

  // ---- invitations (invites.ts)
  /** POST /invites and /invites/multiuse, first step: may the caller invite at all? */
  checkInvite: {
    args: Type.Object({ ...Invitation, multiuse: Type.Boolean() }),
    reply: reply(),
    external: "caller",
  },
  /** POST /invites, after the channel and group checks. */
  createInvites: {
    args: Type.Object({ ...Invitation, invitee_emails: Type.String() }),
    reply: reply<{ skipped: [string, string, boolean][] }>(),
    external: "caller",
  },
  /** POST /invites/multiuse, after the channel and group checks. */
  createMultiuseInvite: {
    args: Type.Object(Invitation),
    reply: reply<{ invite_link: string }>(),
    external: "caller",
  },
  /** GET /invites. */
  listInvites: {
    args: Type.Object({ scheme: Type.Optional(Type.String()) }),
    reply: reply<{ invites: Obj[] }>(),
    external: "caller",
  },
  /** DELETE /invites/{invite_id}. */
  revokeInvite: { args: InviteId, reply: reply(), external: "caller" },
  /** DELETE /invites/multiuse/{invite_id}. */
  revokeMultiuseInvite: { args: InviteId, reply: reply(), external: "caller" },
  /** POST /invites/{invite_id}/resend. */
  resendInvite: {
    args: Type.Object({ invite_id: SafeInt, scheme: Type.Optional(Type.String()) }),
    reply: reply(),
    external: "caller",
  },
  /** The sign-up page's form: a visitor holding the link's key. */
  inviteInfo: {
    args: Type.Object({ key: Type.String() }),
    reply: reply<{ realmName: string; email: string | null }>(),
    external: "anonymous",
  },
  /** The sign-up page's POST: the account, made from the invitation. */
  acceptInvite: {
    args: Type.Object({
      key: Type.String(),
      email: Type.Optional(Type.String()),
      fullName: Type.String(),
      password: Type.String(),
    }),
    reply: reply<{ userId: number; email: string }>(),
    external: "anonymous",
  },

  // ---- scheduled messages (scheduled-index.ts, internal)
  /** A user has a scheduled message waiting. */
  markScheduled: { args: UserId, reply: reply() },
  /** A user has none waiting any more. */
  clearScheduled: { args: UserId, reply: reply() },
  /** For the sweep of a node that took over shards. */
  scheduledUsers: { args: Type.Object({}), reply: reply<{ userIds: number[] }>() },
} as const;

export type RealmProtocol = typeof realmProtocol;

/** The reply type of the realm kind's method M. */
export type ReplyOfRealm<M extends MethodOf<RealmProtocol>> = ReplyOf<RealmProtocol, M>;
