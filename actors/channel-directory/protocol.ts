// The channel directory's methods (handlers.ts and the files behavior.ts
// lists): their arguments, replies and which a gateway may call. How to
// add one: docs/architecture.md, "Actor protocols".

import { Type } from "typebox";
import {
  AnyObj,
  SafeInt,
  SafeIntList,
  reply,
  trusted,
  type HandlerOf,
  type MethodOf,
  type SomeHandlersOf,
} from "../protocol.ts";
import type { Obj } from "../types.ts";
import type { Span } from "../spans.ts";
import type { DirState, GroupValue } from "./state.ts";

const StreamId = Type.Object({ stream_id: SafeInt });
/** A user named by id and role, for a leaf access check on their behalf. */
const UserAndRole = { userId: SafeInt, role: SafeInt };
const Flag = Type.Optional(Type.Boolean());
/** Group-valued settings by name: raw JSON values, checked with Zulip's errors. */
const Groups = Type.Optional(AnyObj);
/** include_subscribers: a boolean, or as /register passes it "true", "false" or "partial" (FL 412). */
const IncludeSubscribers = Type.Optional(
  Type.Union([Type.Boolean(), Type.Literal("true"), Type.Literal("false"), Type.Literal("partial")]),
);
/** A principal: a user id or an email. */
const Principals = Type.Optional(Type.Array(Type.Union([SafeInt, Type.String()])));

/** A new channel's settings (POST /channels/create and the legacy subscribe); checked with Zulip's errors. */
const creationArgs = {
  description: Type.Optional(Type.String()),
  invite_only: Flag,
  is_web_public: Flag,
  is_default_stream: Flag,
  history_public_to_subscribers: Flag,
  /** Json[str | int]: "realm_default", "unlimited" or a number of days. */
  message_retention_days: Type.Optional(Type.Union([Type.String(), Type.Number()])),
  topics_policy: Type.Optional(Type.String()),
  folder_id: Type.Optional(Type.Union([SafeInt, Type.Null()])),
  groups: Groups,
};

const SubscribeItems = Type.Array(
  Type.Object({ name: Type.String(), description: Type.Optional(Type.String()) }),
);

/** What a conversation needs of its channel to accept, show or change a message (`sendContext`). */
export type ChannelInfo = {
  stream_id: number;
  name: string;
  invite_only: boolean;
  is_web_public: boolean;
  history_public_to_subscribers: boolean;
  is_archived: boolean;
  topics_policy: string;
  groups: Record<string, GroupValue>;
  /** Active subscribers, ascending (binary-searched by the conversation). */
  subscribers: number[];
  /** For the send's recently-active check (recently-active.ts). */
  recently_active: boolean;
  last_message_day: number | null;
  /** Subscribers who muted the channel. */
  muted_by: number[];
  /** The `userId` asked about, when they have content access through the channel's groups (FL 354). */
  content_access_user?: number;
  /** Subscribers with the channel's push_notifications on. */
  push_on: number[];
};

/** The subscriber lists of a ChannelInfo, which `sendContext` leaves out when the caller holds them. */
export type ChannelLists = "subscribers" | "muted_by" | "push_on";

/**
 * `sendContext`'s reply: a ChannelInfo with `lists`, the stamp of its
 * subscriber lists, which it leaves out when the caller named that stamp;
 * `volatile` when it depends on more than the directory's journal.
 */
export type ChannelContext = Omit<ChannelInfo, ChannelLists> &
  Partial<Pick<ChannelInfo, ChannelLists>> & { lists: string; volatile?: true };

/**
 * What a history read needs of its channel and its caller (`readContext`):
 * the settings access depends on, whether the caller is subscribed, and
 * the caller's received spans there.
 */
export type ReadContext = {
  stream_id: number;
  name: string;
  invite_only: boolean;
  is_web_public: boolean;
  history_public_to_subscribers: boolean;
  /** The caller is an active subscriber. */
  subscribed: boolean;
  /** The caller has content access through the channel's groups (FL 354). */
  content_access_user?: number;
  spans: Span[];
};

/** The gateway's narrow planner's view of the caller's channels (`narrowContext`). */
export type NarrowContext = {
  muted: number[];
  public: number[];
  webPublic: number[];
  archived: number[];
  readable: number[];
  subscribed: number[];
  /** Channel id -> the caller's received spans there (those with any). */
  spans: Record<string, Span[]>;
};

/** Channel ids by lowercased name: [id, name]. */
type ChannelNames = Record<string, [number, string]>;

/** A topic link's target channel (markdown-links.ts), with the writer's spans where history is protected. */
export type TopicLinkTarget = { id: number; spans?: Span[] };

/** A guest's gained and lost users (user-access.ts ACCESS_CHANGE, less their DM partners). */
export type AccessChange = { guest: number; gained: number[]; lost: number[] };

/** An ACCESS_RELAY item (actors/user/guest-access.ts), with the guests who share a DM with its subject. */
export type AccessRelay = {
  subjectId: number;
  event: Obj;
  candidates: number[];
  others?: Obj[];
  dmPeers: number[];
};

export const channelDirectoryProtocol = {
  // ---- channels and subscriptions (handlers.ts)
  /** POST /channels/create; `announce` has the Notification Bot tell (bot-posts.ts). */
  createChannel: {
    args: Type.Object({
      name: Type.String(),
      subscribers: Type.Optional(SafeIntList),
      announce: Flag,
      ...creationArgs,
    }),
    reply: reply<{ id: number }>(),
    external: "caller",
  },
  /** POST /users/me/subscriptions: the legacy subscribe, creating the channels it names that do not exist. */
  subscribe: {
    args: Type.Object({
      subscriptions: Type.Optional(SubscribeItems),
      principals: Principals,
      authorization_errors_fatal: Flag,
      announce: Flag,
      send_new_subscription_messages: Flag,
      ...creationArgs,
    }),
    // `created` is for PATCH /users/me/subscriptions (stripped from the HTTP reply).
    reply: reply<{
      subscribed: Record<string, string[]>;
      already_subscribed: Record<string, string[]>;
      unauthorized?: string[];
      new_subscription_messages_sent?: boolean;
      created: { id: number; name: string }[];
    }>(),
    external: "caller",
  },
  unsubscribe: {
    args: Type.Object({ subscriptions: Type.Optional(Type.Array(Type.String())), principals: Principals }),
    reply: reply<{ removed: string[]; not_removed: string[] }>(),
    external: "caller",
  },
  mySubscriptions: {
    args: Type.Object({ include_subscribers: IncludeSubscribers }),
    reply: reply<{ subscriptions: Obj[] }>(),
    external: "caller",
  },
  /** GET /streams: the include_* filters (Zulip's get_streams_for_user). */
  listChannels: {
    args: Type.Object({
      include_public: Flag,
      include_web_public: Flag,
      include_subscribed: Flag,
      exclude_archived: Flag,
      include_all: Flag,
      include_default: Flag,
      include_can_access_content: Flag,
    }),
    reply: reply<{ streams: Obj[] }>(),
    external: "caller",
  },
  getChannel: { args: StreamId, reply: reply<{ stream: Obj }>(), external: "caller" },
  channelIdByName: {
    args: Type.Object({ stream: Type.String() }),
    reply: reply<{ stream_id: number }>(),
    external: "caller",
  },
  members: { args: StreamId, reply: reply<{ subscribers: number[] }>(), external: "caller" },
  /** PATCH /streams/{id}: the parameters the client sent. */
  updateChannel: {
    args: Type.Object({
      stream_id: SafeInt,
      description: Type.Optional(Type.String()),
      new_name: Type.Optional(Type.String()),
      is_private: Flag,
      is_web_public: Flag,
      history_public_to_subscribers: Flag,
      is_default_stream: Flag,
      message_retention_days: creationArgs.message_retention_days,
      default_push_notifications: Flag,
      is_archived: Flag,
      folder_id: creationArgs.folder_id,
      topics_policy: Type.Optional(Type.String()),
      groups: Groups,
    }),
    reply: reply(),
    external: "caller",
  },
  archiveChannel: { args: StreamId, reply: reply(), external: "caller" },
  /** PATCH /users/me/subscriptions/{id} and POST /users/me/subscriptions/properties. */
  setSubProperties: {
    args: Type.Object({
      data: Type.Array(
        Type.Object({
          stream_id: SafeInt,
          property: Type.String(),
          // A colour, or a boolean: the handler checks which the property takes.
          value: Type.Union([Type.Boolean(), Type.String()]),
        }),
      ),
    }),
    reply: reply(),
    external: "caller",
  },
  /** POST /register: subscriptions, unsubscribed, never_subscribed and streams. */
  registerState: {
    args: Type.Object({ include_subscribers: IncludeSubscribers, archived_channels: Flag }),
    reply: reply<{ subscriptions: Obj[]; unsubscribed: Obj[]; never_subscribed: Obj[]; streams: Obj[] }>(),
    external: "caller",
  },
  /** Internal (`manage migrate`): every channel's id, archived ones too. */
  allChannelIds: { args: Type.Object({}), reply: reply<{ ids: number[] }>() },

  // ---- leaf reads for conversations, user actors and the gateway (handlers.ts)
  /**
   * A channel's settings and current subscribers. `forSend`: a send (an
   * unknown channel is then "Channel with ID ... does not exist", and the
   * first send after an upgrade sets the legacy cuts); `userId`: the user
   * whose content access through the channel's groups is asked; `lists`:
   * the stamp of the subscriber lists the caller holds (channel-info.ts).
   */
  sendContext: {
    args: Type.Object({
      stream_id: SafeInt,
      forSend: Flag,
      userId: Type.Optional(SafeInt),
      lists: Type.Optional(Type.String({ maxLength: 64 })),
    }),
    reply: reply<ChannelContext>(),
    external: "caller",
  },
  /**
   * Internal, a reader (beside the directory's turns): what a history read
   * of the channel needs about `userId` (ReadContext); an unknown channel
   * is "Invalid channel ID".
   */
  readContext: {
    args: Type.Object({ stream_id: SafeInt, userId: SafeInt }),
    reply: reply<ReadContext>(),
  },
  /** Live channels by name (case-insensitive) for #**channel** links and `to`. */
  lookupNames: {
    args: Type.Object({ names: Type.Optional(Type.Array(Type.String())) }),
    reply: reply<ChannelNames>(),
    external: "caller",
  },
  /** Internal: every live channel by lowercased name (markdown channel links). */
  allNames: { args: Type.Object({}), reply: reply<ChannelNames>() },
  /** Internal: may this user read the channel's content? Its name when so. */
  contentAccess: {
    args: Type.Object({ stream_id: SafeInt, ...UserAndRole }),
    reply: reply<{ ok: boolean; name?: string }>(),
  },
  /** The gateway's narrow planner: the caller's muted, readable, subscribed... channels and spans. */
  narrowContext: { args: Type.Object({}), reply: reply<NarrowContext>(), external: "caller" },
  /** Internal (cluster/event-router.ts): the channels each user is subscribed to, by user id. */
  subscribedChannels: {
    args: Type.Object({ user_ids: SafeIntList }),
    reply: reply<Record<string, number[]>>(),
  },

  // ---- /register reads (register-state.ts)
  defaultChannelIds: { args: Type.Object({}), reply: reply<{ ids: number[] }>(), external: "caller" },
  /** Names of the given channel ids (unknown ids are left out): {id: name}. */
  channelNamesByIds: {
    args: Type.Object({ ids: SafeIntList }),
    reply: reply<Record<string, string>>(),
    external: "caller",
  },

  // ---- channel extras (channel-extras.ts)
  setDefaultChannel: {
    args: Type.Object({ stream_id: SafeInt, is_default: Type.Boolean() }),
    reply: reply(),
    external: "caller",
  },
  /** Internal (the realm's MEMBER_DEFAULTS hand-off, the CLI): a just-created human user joins the realm's default channels. */
  joinDefaultChannels: {
    args: Type.Object({ user_id: SafeInt }),
    reply: reply<{ stream_ids: number[] }>(),
  },
  subscriptionStatus: {
    args: Type.Object({ user_id: SafeInt, stream_id: SafeInt }),
    reply: reply<{ is_subscribed: boolean }>(),
    external: "caller",
  },
  /** PATCH /users/me/subscriptions: the legacy subscribe, then the unsubscribe, in one turn. */
  updateSubscriptions: {
    args: Type.Object({
      add: Type.Optional(SubscribeItems),
      delete: Type.Optional(Type.Array(Type.String())),
    }),
    reply: reply<{
      subscribed: Record<string, string[]>;
      already_subscribed: Record<string, string[]>;
      removed: string[];
      not_removed: string[];
      created: { id: number; name: string }[];
    }>(),
    external: "caller",
  },

  // ---- the rest of the API
  /** Users whose deactivation the roster shows: peer_remove for their channels (deactivated-peers.ts). */
  peersOfDeactivated: { args: Type.Object({ user_ids: SafeIntList, key: Type.String() }), reply: reply() },
  /** Internal (the realm's MEMBER_ROLE hand-off): after a role change, the user's clients hear of the channels that came into or went out of view (role-access.ts). */
  roleAccessChanged: {
    args: Type.Object({ userId: SafeInt, oldRole: SafeInt }),
    reply: reply(),
  },
  /** The channels whose messages count as public for deleting a user's messages (bulk-delete-handlers.ts). */
  publicChannelIds: { args: Type.Object({}), reply: reply<{ public: number[] }>(), external: "caller" },
  /** POST /messages/render (message-extras.ts). */
  renderPreview: {
    args: Type.Object({ content: Type.String() }),
    reply: reply<{ rendered: string }>(),
    external: "caller",
  },
  /** GET /users/{user_id}/channels (user-channels.ts). */
  userChannels: {
    args: Type.Object({ user_id: SafeInt }),
    reply: reply<{ subscribed_channel_ids: number[] }>(),
    external: "caller",
  },
  /** Which users the caller may know about (user-access.ts): all, or their channel peers. */
  accessibleUsers: {
    args: Type.Object({}),
    reply: reply<{ all: boolean; channel_peers?: number[] }>(),
    external: "caller",
  },
  /** Internal (the node's ACCESS_CHANGE worker): realm_user add/remove events for guests. */
  emitAccessChanges: { args: Type.Object({ items: trusted<AccessChange[]>() }), reply: reply() },
  /** Internal (the node's ACCESS_RELAY worker): each event to its candidate guests who share a channel with its subject. */
  relayToAccessors: { args: Type.Object({ items: trusted<AccessRelay[]>() }), reply: reply() },

  // ---- invitations (invites.ts)
  checkInviteChannels: {
    args: Type.Object({ stream_ids: SafeIntList }),
    reply: reply(),
    external: "caller",
  },
  /** Internal (the invite worker): the accepted invitation's channels, and the defaults when it says so. */
  joinInvitedChannels: {
    args: Type.Object({ user_id: SafeInt, stream_ids: SafeIntList, include_defaults: Flag }),
    reply: reply<{ stream_ids: number[] }>(),
  },

  // ---- POST /typing to a channel (typing.ts, internal: the user actor asks)
  typingChannel: {
    args: Type.Object({ stream_id: SafeInt, ...UserAndRole }),
    reply: reply<{ ok: false } | { ok: true; canSend: GroupValue; subscribers: number[] | null }>(),
  },

  // ---- received rows (received.ts, internal: conversations ask)
  userSpans: {
    args: Type.Object({ stream_id: SafeInt, userId: SafeInt }),
    reply: reply<{ spans: Span[] }>(),
  },
  /** Every user's spans in a channel (those with any), by user id. */
  channelSpans: { args: StreamId, reply: reply<{ spans: Record<string, Span[]> }>() },

  // ---- topic links (markdown-links.ts, internal)
  /** The live channels of those (lowercased) names whose content the user may access. */
  topicLinkTargets: {
    args: Type.Object({ names: Type.Array(Type.String()), ...UserAndRole }),
    reply: reply<Record<string, TopicLinkTarget>>(),
  },

  // ---- a channel's first message and its last send day (first-message.ts, recently-active.ts; internal)
  /** `event` false (a send): set only while unset, silently; true (a deletion or move): set, and tell. */
  setFirstMessageId: {
    args: Type.Object({
      stream_id: SafeInt,
      message_id: Type.Union([SafeInt, Type.Null()]),
      event: Type.Boolean(),
    }),
    reply: reply(),
  },
  recordMessageDay: { args: Type.Object({ stream_id: SafeInt, day: SafeInt }), reply: reply() },
  /** `now` in milliseconds; the channels that turned inactive. */
  sweepRecentlyActive: { args: Type.Object({ now: Type.Number() }), reply: reply<{ inactive: number[] }>() },

  // ---- message retention (retention.ts, internal)
  /** The channels whose messages expire, and the DM conversations when the realm's retention is not unlimited. */
  retentionPlan: {
    args: Type.Object({ realmDays: SafeInt }),
    reply: reply<{ channels: { streamId: number; days: number }[]; dms: string[] }>(),
  },
  /** Remember a DM conversation (once; a known one writes nothing). */
  listDmConversation: { args: Type.Object({ key: Type.String() }), reply: reply() },

  // ---- channel folders (folders.ts)
  createChannelFolder: {
    args: Type.Object({ name: Type.String(), description: Type.Optional(Type.String()) }),
    reply: reply<{ channel_folder_id: number }>(),
    external: "caller",
  },
  channelFolders: {
    args: Type.Object({ include_archived: Flag }),
    reply: reply<{ channel_folders: Obj[] }>(),
    external: "caller",
  },
  updateChannelFolder: {
    args: Type.Object({
      id: SafeInt,
      name: Type.Optional(Type.String()),
      description: Type.Optional(Type.String()),
      is_archived: Flag,
    }),
    reply: reply(),
    external: "caller",
  },
  /** Every folder of the realm, in the new order. */
  reorderChannelFolders: { args: Type.Object({ order: SafeIntList }), reply: reply(), external: "caller" },
  registerChannelFolders: {
    args: Type.Object({}),
    reply: reply<{ channel_folders: Obj[] }>(),
    external: "caller",
  },
} as const;

export type ChannelDirectoryProtocol = typeof channelDirectoryProtocol;

/** A handler of the directory's method M. */
export type DirHandler<M extends MethodOf<ChannelDirectoryProtocol>> = HandlerOf<
  DirState,
  ChannelDirectoryProtocol,
  M
>;

/** The handlers of some of the directory's methods, kept in one file and spread into behavior.ts's table. */
export type DirHandlers<M extends MethodOf<ChannelDirectoryProtocol>> = SomeHandlersOf<
  DirState,
  ChannelDirectoryProtocol,
  M
>;
