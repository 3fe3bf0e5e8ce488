// The user actor's methods (behavior.ts and the files whose handler parts
// it spreads): their arguments, replies and which a gateway may call. A
// gateway asks its caller's own actor (requireSelf), anyone's status, and
// without a caller only the password check of POST /fetch_api_key. How to
// add a method: docs/architecture.md, "Actor protocols".

import { Type, type Static } from "typebox";
import { AnyObj, SafeInt, SafeIntList, reply } from "../protocol.ts";
import type { Obj } from "../types.ts";

const Str = Type.String();
const Bool = Type.Boolean();
const Strings = Type.Array(Str);
const NoArgs = Type.Object({});
const Id = Type.Object({ id: SafeInt });
const Ids = Type.Object({ ids: SafeIntList });

/** A message row the caller located: [id, conversation key, topic, sender id]. */
const RowRefSchema = Type.Tuple([SafeInt, Str, Str, SafeInt]);
export type RowRef = Static<typeof RowRefSchema>;
const RowRefs = Type.Array(RowRefSchema);

/** What a conversation delivers: [id, conversation key, flag names, topic, sender id]. */
const DeliverySchema = Type.Tuple([SafeInt, Str, Strings, Str, SafeInt]);
export type Delivery = Static<typeof DeliverySchema>;

/** A received row of a moved message's source: [id, source conversation key, sender id]. */
const MovedRowSchema = Type.Tuple([SafeInt, Str, SafeInt]);

/** Conversation key -> its newest id (read through). */
const Newest = Type.Record(Type.String(), SafeInt);

/** A draft as the gateway parsed it (Zulip's DraftData); the actor checks the rest. */
const DraftInSchema = Type.Object({
  type: Type.Union([Type.Literal("stream"), Type.Literal("private"), Type.Literal("")]),
  to: SafeIntList,
  topic: Str,
  content: Str,
  timestamp: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
});
export type DraftIn = Static<typeof DraftInSchema>;

/** A status change's fields (POST /users/me/status and /users/{id}/status). */
const statusFields = {
  status_text: Type.Optional(Str),
  emoji_name: Type.Optional(Str),
  emoji_code: Type.Optional(Str),
  reaction_type: Type.Optional(Str),
};
const StatusChangeSchema = Type.Object({ away: Type.Optional(Bool), ...statusFields });
export type StatusChange = Static<typeof StatusChangeSchema>;

/** Stripped and non-empty (the gateway refuses empty ones with Zulip's error). */
const NonEmpty = Type.String({ minLength: 1 });
const PushTokenKind = Type.Union([Type.Literal("apns"), Type.Literal("fcm")]);
const MessageType = Type.Union([Type.Literal("stream"), Type.Literal("private")]);

/** {id: flag names} of a user's messages (messageFlags). */
export type FlagMap = Record<string, readonly string[]>;
/** messageFlags with `withReadThrough`: the entries' flags, the read-through mark, the read entries. */
export type FlagsWithReadThrough = { flags: FlagMap; readThrough: number; read: number[] };
/** An unread entry of the user's index (unreads). */
export type UnreadEntry = {
  id: number;
  conv: string;
  topic: string;
  sender: number;
  mentioned: boolean;
  wildcard: boolean;
};
/** A topic visibility policy (Zulip's UserTopic row). */
export type UserTopic = {
  stream_id: number;
  topic_name: string;
  last_updated: number;
  visibility_policy: number;
};
/** A legacy push token as a notification goes to it. */
export type PushTokenOut = { kind: string; token: string; app_id: string | null };
/** An active E2EE push device as encrypting for it needs it. */
export type PushDeviceOut = {
  device_id: number;
  push_key: string;
  push_key_id: number;
  push_token_id: string;
  push_token_kind: string;
};
/** What registerPushDevice asks the gateway to forward to the push relay. */
export type RelayRegistration = {
  device_id: number;
  token_id: string;
  bouncer_public_key: string;
  encrypted_push_registration: string;
};

export const userProtocol = {
  // ---- the account (behavior.ts)
  /** The realm creates a freshly allocated user (idempotent for the same email). */
  create: {
    args: Type.Object({
      email: Str,
      fullName: Str,
      apiKey: Str,
      password: Type.Optional(Str),
      role: Type.Optional(SafeInt),
      isBot: Type.Optional(Bool),
      botType: Type.Optional(SafeInt),
      botOwnerId: Type.Optional(SafeInt),
      dateJoined: Type.Optional(SafeInt),
      avatarSource: Type.Optional(Str),
      /** The realm's defaults for new users, checked here setting by setting. */
      settings: Type.Optional(AnyObj),
    }),
    reply: reply<{ userId: number; apiKey: string; person: Obj }>(),
  },
  /** The user object with the real address: the user themself and internal callers only. */
  profile: { args: NoArgs, reply: reply<Obj>() },
  /** /register's user_settings object. */
  userSettings: { args: NoArgs, reply: reply<Obj>(), external: "caller" },
  /** GET /users/{id}/status and /register's user_status entry. */
  userStatus: { args: NoArgs, reply: reply<Obj>(), external: "caller" },
  /** POST /fetch_api_key's password check, after the realm's `login` step. */
  login: {
    args: Type.Object({ password: Str }),
    reply: reply<{ api_key: string; email: string; user_id: number }>(),
    external: "anonymous",
  },
  /**
   * PATCH /settings: settings and personal fields by name, and
   * target_users; the handler checks each with Zulip's errors.
   */
  updateSettings: { args: AnyObj, reply: reply(), external: "caller" },
  /** An administrator's target_users change reaching another user (a user actor calls, with the caller). */
  applySettings: {
    args: Type.Object({ values: AnyObj, skipIfAlreadyEdited: Type.Optional(Bool) }),
    reply: reply(),
  },
  /** POST /users/me/status. */
  updateStatus: { args: StatusChangeSchema, reply: reply(), external: "caller" },
  /** POST /users/{id}/status: an administrator sets the user's status (admin-status.ts). */
  updateStatusByAdmin: { args: Type.Object(statusFields), reply: reply(), external: "caller" },
  /** Internal (the realm's MEMBER_EMAIL hand-off): the user actor's copy of its address follows the realm's (email-sync.ts). */
  syncEmail: { args: NoArgs, reply: reply() },
  /** GET /export/realm/consents, one user (export-consent.ts). */
  exportConsent: {
    args: NoArgs,
    reply: reply<{ user_id: number; consented: boolean }>(),
    external: "caller",
  },

  // ---- message flags (flags.ts, mark-read.ts, read-receipts.ts, sent-messages.ts)
  /**
   * A conversation delivers messages (idempotent). With a send's delivery:
   * `own`, the user's own channel sends ([id, initiated, channel_muted]),
   * and `mention_follows`, the ids of humans' channel sends, whose
   * automatic topic policies are set with the rows (auto-topics.ts).
   */
  receiveMessages: {
    args: Type.Object({
      items: Type.Array(DeliverySchema),
      own: Type.Optional(Type.Array(Type.Tuple([SafeInt, Bool, Bool]))),
      mention_follows: Type.Optional(SafeIntList),
    }),
    reply: reply(),
  },
  /** Flags of messages by id, or of a conversation; with withReadThrough: FlagsWithReadThrough. */
  messageFlags: {
    args: Type.Object({
      ids: Type.Optional(SafeIntList),
      conv: Type.Optional(Str),
      unread: Type.Optional(Bool),
      withReadThrough: Type.Optional(Bool),
    }),
    reply: reply<FlagMap | FlagsWithReadThrough>(),
  },
  /** The candidates of a GET /messages narrow not bound to one channel. */
  selectMessages: {
    args: Type.Object({
      flags: Type.Optional(Strings),
      notFlags: Type.Optional(Strings),
      convs: Type.Optional(Strings),
      dmOnly: Type.Optional(Bool),
      ids: Type.Optional(SafeIntList),
    }),
    reply: reply<{
      items: [id: number, conv: string, flags: string[], topic: string, sender: number][];
      readThrough: Record<string, number>;
    }>(),
    external: "caller",
  },
  /** POST /messages/flags (and its narrow form); `op` and `flag` are checked with Zulip's errors. */
  updateFlags: {
    args: Type.Object({
      messages: SafeIntList,
      op: Str,
      flag: Str,
      historical: Type.Optional(RowRefs),
      received: Type.Optional(RowRefs),
    }),
    reply: reply<{ messages: number[] }>(),
    external: "caller",
  },
  /** Messages moved to another channel or topic; {held}: how many the user had. */
  messagesMoved: {
    args: Type.Object({
      ids: SafeIntList,
      conv: Str,
      topic: Str,
      received: Type.Optional(Type.Array(MovedRowSchema)),
    }),
    reply: reply<{ held: number }>(),
  },
  /** Messages deleted; {held}: how many the user had. */
  messagesDeleted: { args: Ids, reply: reply<{ held: number }>() },
  /** /register's unread_msgs, from the user's entries. */
  unreads: {
    args: NoArgs,
    reply: reply<{
      items: UnreadEntry[];
      readThrough: Record<string, number>;
      entries: Record<string, number[]>;
    }>(),
    external: "caller",
  },
  /** The newest message id the user has (GET /users/me, /register). */
  maxMessageId: { args: NoArgs, reply: reply<{ max_message_id: number }>(), external: "caller" },
  /** POST /mark_all_as_read. */
  markAllAsRead: {
    args: Type.Object({ newest: Type.Optional(Newest) }),
    reply: reply<{ complete: boolean }>(),
    external: "caller",
  },
  /** POST /mark_stream_as_read and /mark_topic_as_read. */
  markChannelAsRead: {
    args: Type.Object({
      stream_id: SafeInt,
      topic: Type.Optional(Str),
      received: Type.Optional(RowRefs),
      newest: Type.Optional(Newest),
      topicExists: Type.Optional(Bool),
    }),
    reply: reply(),
    external: "caller",
  },
  /** Whether the user read a message and lets others know (GET /messages/{id}/read_receipts). */
  readReceipt: {
    args: Type.Object({ message_id: SafeInt, conv: Str, received: Bool }),
    reply: reply<{ read: boolean }>(),
  },
  /** The messages the user sent: [[id, conv]] (DELETE /users/{id} with `actions`). */
  sentMessages: { args: NoArgs, reply: reply<{ items: [number, string][] }>(), external: "caller" },

  // ---- reads of the flag index for /register (register-state.ts, dm-peers.ts)
  starredMessages: { args: NoArgs, reply: reply<{ starred_messages: number[] }>(), external: "caller" },
  recentPrivateConversations: {
    args: NoArgs,
    reply: reply<{ recent_private_conversations: { max_message_id: number; user_ids: number[] }[] }>(),
    external: "caller",
  },
  /** The direct-message conversations the user holds rows of, for `manage migrate`. */
  dmConversationKeys: { args: NoArgs, reply: reply<{ keys: string[] }>() },
  /** The users a guest shares a direct-message conversation with. */
  dmPeers: { args: NoArgs, reply: reply<{ dm_peers: number[] }>(), external: "caller" },

  // ---- topic visibility (topics.ts, auto-topics.ts)
  /** POST /user_topics; the policy is checked with Zulip's error. */
  setUserTopic: {
    args: Type.Object({ stream_id: SafeInt, topic: Str, visibility_policy: SafeInt }),
    reply: reply(),
    external: "caller",
  },
  /** PATCH /users/me/subscriptions/muted_topics. */
  muteTopicLegacy: {
    args: Type.Object({
      stream_id: SafeInt,
      topic: Str,
      op: Type.Union([Type.Literal("add"), Type.Literal("remove")]),
    }),
    reply: reply(),
    external: "caller",
  },
  /** /register's user_topics. */
  userTopics: { args: NoArgs, reply: reply<{ user_topics: UserTopic[] }>(), external: "caller" },
  /** After the caller's own channel send: automatic_new_visibility_policy when its delivery changed it. */
  autoTopicOutcome: {
    args: Type.Object({ message_id: SafeInt }),
    reply: reply<{ visibility_policy?: number }>(),
    external: "caller",
  },
  /** The user's reaction in a channel (participation): the conversation's hand-off (channel/participation.ts). */
  autoTopicOnParticipation: {
    args: Type.Object({ stream_id: SafeInt, topic: Str, channel_muted: Type.Optional(Bool), key: Str }),
    reply: reply(),
  },

  // ---- typing (typing.ts)
  /** POST /typing, as the gateway parsed it; the rest is checked in Zulip's order. */
  typing: {
    args: Type.Object({
      op: Type.Union([Type.Literal("start"), Type.Literal("stop")]),
      type: Type.Union([Type.Literal("direct"), Type.Literal("stream")]),
      to: Type.Optional(Type.Union([SafeIntList, Type.Null()])),
      stream_id: Type.Optional(Type.Union([SafeInt, Type.Null()])),
      topic: Type.Optional(Type.Union([Str, Type.Null()])),
    }),
    reply: reply(),
    external: "caller",
  },
  /** The user's typing settings, for POST /messages/{id}/typing (the conversation asks). */
  typingSettings: { args: NoArgs, reply: reply<{ direct: boolean; stream: boolean }>() },

  // ---- drafts (drafts.ts)
  /** GET /drafts (also the sync setting's check before a parse error). */
  drafts: { args: NoArgs, reply: reply<{ count: number; drafts: Obj[] }>(), external: "caller" },
  /** /register's drafts. */
  draftsState: { args: NoArgs, reply: reply<{ drafts: Obj[] }>(), external: "caller" },
  createDrafts: {
    args: Type.Object({ drafts: Type.Array(DraftInSchema) }),
    reply: reply<{ ids: number[] }>(),
    external: "caller",
  },
  editDraft: { args: Type.Object({ id: SafeInt, draft: DraftInSchema }), reply: reply(), external: "caller" },
  deleteDraft: { args: Id, reply: reply(), external: "caller" },

  // ---- scheduled messages (scheduled-messages.ts) and reminders (reminders.ts)
  scheduledMessages: {
    args: NoArgs,
    reply: reply<{ scheduled_messages: Obj[] }>(),
    external: "caller",
  },
  /** POST /scheduled_messages: `to` is the raw text, read once the type is known. */
  createScheduledMessage: {
    args: Type.Object({
      type: MessageType,
      to: Str,
      topic: Type.Optional(Str),
      content: Str,
      deliver_at: SafeInt,
      read_by_sender: Type.Optional(Bool),
      client: Type.Optional(Str),
    }),
    reply: reply<{ scheduled_message_id: number }>(),
    external: "caller",
  },
  /** PATCH /scheduled_messages/{id}: only what changes. */
  editScheduledMessage: {
    args: Type.Object({
      id: SafeInt,
      client: Type.Optional(Str),
      type: Type.Optional(MessageType),
      to: Type.Optional(Str),
      topic: Type.Optional(Str),
      content: Type.Optional(Str),
      deliver_at: Type.Optional(SafeInt),
    }),
    reply: reply(),
    external: "caller",
  },
  deleteScheduledMessage: { args: Id, reply: reply(), external: "caller" },
  /** The timer, and the poke of a node that took over the user's shard. */
  deliverScheduled: { args: NoArgs, reply: reply() },
  /** The delivery worker's report of one attempt: sent (messageId), or refused (error). */
  scheduledResult: {
    args: Type.Object({
      id: SafeInt,
      attempt: SafeInt,
      messageId: Type.Optional(SafeInt),
      error: Type.Optional(Str),
      /** false: the user is not told of the failure (their account is what failed). */
      notify: Type.Optional(Bool),
    }),
    reply: reply(),
  },
  reminders: { args: NoArgs, reply: reply<{ reminders: Obj[] }>(), external: "caller" },
  /** POST /reminders: the gateway checked the message and wrote the text. */
  createReminder: {
    args: Type.Object({ message_id: SafeInt, deliver_at: SafeInt, content: Str }),
    reply: reply<{ reminder_id: number }>(),
    external: "caller",
  },
  deleteReminder: { args: Id, reply: reply(), external: "caller" },

  // ---- the user's own lists (saved-snippets.ts, alert-words.ts, muted-users.ts, navigation-views.ts)
  savedSnippets: { args: NoArgs, reply: reply<{ saved_snippets: Obj[] }>(), external: "caller" },
  /** Title and content arrive stripped and length-checked by the gateway. */
  createSavedSnippet: {
    args: Type.Object({ title: Str, content: Str }),
    reply: reply<{ saved_snippet_id: number }>(),
    external: "caller",
  },
  editSavedSnippet: {
    args: Type.Object({ id: SafeInt, title: Type.Optional(Str), content: Type.Optional(Str) }),
    reply: reply(),
    external: "caller",
  },
  deleteSavedSnippet: { args: Id, reply: reply(), external: "caller" },
  alertWords: { args: NoArgs, reply: reply<{ alert_words: string[] }>(), external: "caller" },
  /** The words arrive stripped, empty ones dropped. */
  addAlertWords: {
    args: Type.Object({ words: Strings }),
    reply: reply<{ alert_words: string[] }>(),
    external: "caller",
  },
  removeAlertWords: {
    args: Type.Object({ words: Strings }),
    reply: reply<{ alert_words: string[] }>(),
    external: "caller",
  },
  mutedUsers: { args: NoArgs, reply: reply<{ muted_users: Obj[] }>(), external: "caller" },
  /** `received`: the caller's unread received rows (those of the muted user become read). */
  muteUser: {
    args: Type.Object({ mutedId: SafeInt, received: Type.Optional(RowRefs) }),
    reply: reply(),
    external: "caller",
  },
  unmuteUser: { args: Type.Object({ mutedId: SafeInt }), reply: reply(), external: "caller" },
  navigationViews: { args: NoArgs, reply: reply<{ navigation_views: Obj[] }>(), external: "caller" },
  /** Fragments and names arrive stripped and non-empty from the gateway. */
  addNavigationView: {
    args: Type.Object({ fragment: NonEmpty, is_pinned: Bool, name: Type.Optional(NonEmpty) }),
    reply: reply(),
    external: "caller",
  },
  updateNavigationView: {
    args: Type.Object({ fragment: NonEmpty, is_pinned: Type.Optional(Bool), name: Type.Optional(NonEmpty) }),
    reply: reply(),
    external: "caller",
  },
  removeNavigationView: { args: Type.Object({ fragment: NonEmpty }), reply: reply(), external: "caller" },

  // ---- push notifications (push-tokens.ts, push-test.ts, push-notify.ts, devices.ts)
  /** POST /users/me/apns_device_token and /android_gcm_reg_id (appId: apns only). */
  addPushToken: {
    args: Type.Object({ kind: PushTokenKind, token: Str, appId: Type.Optional(Str) }),
    reply: reply(),
    external: "caller",
  },
  removePushToken: {
    args: Type.Object({ kind: PushTokenKind, token: Str }),
    reply: reply(),
    external: "caller",
  },
  /** POST /mobile_push/test_notification: the legacy tokens to notify (one, or all). */
  testPushTokens: {
    args: Type.Object({ token: Type.Optional(Str) }),
    reply: reply<{ tokens: PushTokenOut[] }>(),
    external: "caller",
  },
  /** The push worker: whether a new message's notification is due for the user, and where to. */
  pushTarget: {
    args: Type.Object({
      trigger: Str,
      senderId: SafeInt,
      streamId: Type.Optional(SafeInt),
      topic: Type.Optional(Str),
    }),
    reply: reply<
      { due: false } | { due: true; online_push: boolean; tokens: PushTokenOut[]; devices: PushDeviceOut[] }
    >(),
  },
  registerClientDevice: { args: NoArgs, reply: reply<{ device_id: number }>(), external: "caller" },
  removeClientDevice: { args: Type.Object({ deviceId: SafeInt }), reply: reply(), external: "caller" },
  /** POST /mobile_push/register; `relay`: what the gateway forwards to the push relay, if anything. */
  registerPushDevice: {
    args: Type.Object({
      relayConfigured: Bool,
      deviceId: SafeInt,
      tokenKind: Type.Optional(PushTokenKind),
      pushKey: Type.Optional(Str),
      pushKeyId: Type.Optional(SafeInt),
      bouncerPublicKey: Type.Optional(Str),
      encryptedPushRegistration: Type.Optional(Str),
      tokenId: Type.Optional(Str),
    }),
    reply: reply<{ relay: RelayRegistration | null }>(),
    external: "caller",
  },
  /** The relay's answer to a registration the gateway forwarded: ok, or its error code. */
  completePushRegistration: {
    args: Type.Object({ deviceId: SafeInt, tokenId: Str, errorCode: Type.Optional(Str) }),
    reply: reply(),
    external: "caller",
  },
  /** POST /mobile_push/e2ee/test_notification: the active devices (all, or the one asked for). */
  activePushDevices: {
    args: Type.Object({ deviceId: Type.Optional(SafeInt) }),
    reply: reply<{ devices: PushDeviceOut[] }>(),
    external: "caller",
  },
  /** /register's devices. */
  devices: { args: NoArgs, reply: reply<{ devices: Obj }>(), external: "caller" },
  /** Internal (the realm's MEMBER_KEY hand-off after a new API key): the E2EE push devices go with the old key. */
  dropPushDevices: { args: Type.Object({ key: Str }), reply: reply() },
} as const;

export type UserProtocol = typeof userProtocol;
