// A conversation's methods (conversation-handlers.ts and the files
// behavior.ts lists): their arguments, replies and which a gateway may
// call. How to add one: docs/architecture.md, "Actor protocols".

import { Type, type Static } from "typebox";
import type { Span } from "../spans.ts";
import {
  SafeInt,
  SafeIntList,
  reply,
  trusted,
  type HandlerOf,
  type MethodOf,
  type SomeHandlersOf,
} from "../protocol.ts";
import type { Obj } from "../types.ts";
import type { ConvState, Msg } from "./conversation-state.ts";

const MessageId = { message_id: SafeInt };
const Flag = Type.Optional(Type.Boolean());
const Term = <V extends Parameters<typeof Type.Object>[0]>(fields: V) =>
  Type.Array(Type.Object({ ...fields, negated: Type.Boolean() }));

/**
 * A narrow's message-level terms, evaluated where the message lives (the
 * gateway's narrow planner builds them; see gateway/narrow.ts). Ids are
 * any numbers: a term naming no message matches none.
 */
const FiltersSchema = Type.Object({
  topics: Type.Optional(Term({ value: Type.String() })),
  senders: Type.Optional(Term({ value: Type.Number() })),
  search: Type.Optional(Type.String()),
  is: Type.Optional(Term({ flag: Type.String() })),
  /** has: link | image | attachment | reaction. */
  has: Type.Optional(Term({ operand: Type.String() })),
  /** mentions: (FL 446): users the current content personally mentions (not silently). */
  mentions: Type.Optional(Term({ value: Type.Number() })),
  /** id terms. */
  ids: Type.Optional(Term({ value: Type.Number() })),
  /** GET /messages' message_ids: only these messages. */
  idIn: Type.Optional(Type.Array(Type.Number())),
  /** in:home inside one channel: the user's muted topics there (lowercased). */
  home: Type.Optional(Type.Object({ negated: Type.Boolean(), mutedTopics: Type.Array(Type.String()) })),
  /** Zulip's ok_to_include_history is false (an is: term): only the user's own messages. */
  noHistory: Flag,
});
export type Filters = Static<typeof FiltersSchema>;

/** How a client wants messages shaped (GET /messages' options). */
const ClientOpts = { apply_markdown: Flag, client_gravatar: Flag, allow_empty_topic_name: Flag };

/**
 * A moved message as the source's `move` shaped it, which its hand-off
 * gives the target's moveIn: its identity and content are checked, the
 * rest is taken as the source wrote it.
 */
const MovedMsg = Type.Unsafe<Msg>(
  Type.Object({
    id: SafeInt,
    senderId: SafeInt,
    topic: Type.String(),
    content: Type.String(),
    rendered: Type.String(),
    timestamp: Type.Number(),
  }),
);

/**
 * A send's reply: the new message, or with `check_only` the message as it
 * would be sent. `auto_topic`: a human's channel send, whose delivery may
 * have changed the sender's topic policy (the user actor's `autoTopicOutcome`).
 */
export type SendReply =
  { id: number; auto_topic?: true } | { content: string; rendered: string; topic: string };

/** A channel-bound GET /messages window (conversation-handlers.ts `fetch`). */
export type FetchReply = {
  anchor: number;
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
  history_limited: boolean;
  messages: Obj[];
};

/** A received row: [message id, topic, sender id]. */
export type Row = [id: number, topic: string, sender: number];

export const channelProtocol = {
  // ---- messages (conversation-handlers.ts)
  /**
   * POST /messages, and the cluster's own sends. `notification_bot` and
   * `welcome_bot` make the realm's bots send (see the handler for who may
   * ask); `send_key` (a retried delivery answers the message it sent) and
   * `check_only` (every check, and the rendering, without sending) are
   * honoured for internal callers only.
   */
  send: {
    args: Type.Object({
      content: Type.String(),
      topic: Type.Optional(Type.String()),
      client: Type.Optional(Type.String()),
      queue_id: Type.Optional(Type.String()),
      local_id: Type.Optional(Type.String()),
      read_by_sender: Flag,
      notification_bot: Flag,
      welcome_bot: Flag,
      send_key: Type.Optional(Type.String()),
      check_only: Flag,
    }),
    reply: reply<SendReply>(),
    external: "caller",
  },
  /** GET /messages bound to this channel: anchor, window, filters, the caller's flags. */
  fetch: {
    args: Type.Object({
      anchor: Type.Union([Type.Number(), Type.Literal("first_unread")]),
      num_before: Type.Optional(SafeInt),
      num_after: Type.Optional(SafeInt),
      include_anchor: Flag,
      filters: Type.Optional(FiltersSchema),
      /** The channel as the client named it, for the error of an inaccessible one. */
      operand: Type.Optional(Type.String()),
      ...ClientOpts,
    }),
    reply: reply<FetchReply>(),
    external: "caller",
  },
  /** Messages by id (of the caller's own flag index); with `matchOnly`, the ids matching `filters`. */
  getByIds: {
    args: Type.Object({
      ids: SafeIntList,
      search: Type.Optional(Type.String()),
      matchOnly: Flag,
      filters: Type.Optional(FiltersSchema),
      ...ClientOpts,
    }),
    reply: reply<{ messages: Record<string, Obj> } | { matching: number[] }>(),
    external: "caller",
  },
  /** Which of `ids` are messages of this channel the caller may read without having received them. */
  locateIds: {
    args: Type.Object({ ids: SafeIntList }),
    reply: reply<{ items: Row[] }>(),
    external: "caller",
  },
  topics: {
    args: Type.Object({ allow_empty_topic_name: Flag }),
    reply: reply<{ topics: { name: string; max_id: number }[] }>(),
    external: "caller",
  },
  react: {
    args: Type.Object({
      ...MessageId,
      op: Type.Union([Type.Literal("add"), Type.Literal("remove")]),
      emoji_name: Type.Optional(Type.String()),
      emoji_code: Type.Optional(Type.String()),
      reaction_type: Type.Optional(Type.String()),
    }),
    // An add in a channel answers once the reactor's automatic topic policies ran (participation.ts).
    reply: reply(),
    external: "caller",
  },
  /** PATCH /messages/{id}: content and/or topic (within this channel). */
  edit: {
    args: Type.Object({
      ...MessageId,
      content: Type.Optional(Type.String()),
      topic: Type.Optional(Type.String()),
      propagate_mode: Type.Optional(Type.String()),
      prev_content_sha256: Type.Optional(Type.String()),
      // A topic change's breadcrumbs (breadcrumbs.ts), posted by the edit's hand-off.
      send_notification_to_old_thread: Flag,
      send_notification_to_new_thread: Flag,
      link_origin: Type.Object({ scheme: Type.String(), host: Type.String() }),
    }),
    reply: reply<{ detached_uploads?: Obj[] }>(),
    external: "caller",
  },
  remove: { args: Type.Object(MessageId), reply: reply(), external: "caller" },
  /** Internal (`manage migrate`): what the conversation holds. */
  storeStatus: {
    args: Type.Object({}),
    reply: reply<{ count: number; topics: number; legacy: boolean }>(),
  },

  // ---- moves between channels: one turn of the source and a hand-off (move.ts)
  /**
   * PATCH /messages/{id} with another stream_id (source): every check, then
   * the move journaled with its hand-off; answers once it is complete.
   */
  move: {
    args: Type.Object({
      ...MessageId,
      stream_id: SafeInt,
      content: Type.Optional(Type.String()),
      topic: Type.Optional(Type.String()),
      propagate_mode: Type.Optional(Type.String()),
      prev_content_sha256: Type.Optional(Type.String()),
      send_notification_to_old_thread: Flag,
      send_notification_to_new_thread: Flag,
      /** For the breadcrumbs' links (breadcrumbs.ts LinkOrigin). */
      link_origin: Type.Object({ scheme: Type.String(), host: Type.String() }),
    }),
    reply: reply(),
    external: "caller",
  },
  /** The move's hand-off (target): take the moved messages in, once per move. Internal. */
  moveIn: {
    args: Type.Object({ msgs: Type.Array(MovedMsg), move_id: Type.String() }),
    reply: reply<{ preexisting: boolean }>(),
  },
  /**
   * The move's hand-off (source): drop the moved messages, re-point the
   * users' rows, tell; once per pending move. Internal.
   */
  completeMove: {
    args: Type.Object({
      ids: SafeIntList,
      ...MessageId,
      stream_id: SafeInt,
      topic: Type.String(),
      orig_topic: Type.String(),
      topic_changed: Type.Boolean(),
      propagate_mode: Type.String(),
      timestamp: Type.Number(),
      move_id: Type.String(),
    }),
    reply: reply(),
  },

  // ---- deleting many messages (bulk-delete-handlers.ts, channel-extras.ts, retention.ts)
  /** Those of `ids` that are messages here (others skipped): internal callers or an administrator. */
  removeMany: {
    args: Type.Object({ ids: SafeIntList }),
    reply: reply<{ deleted: number[] }>(),
    external: "caller",
  },
  /** POST /streams/{id}/delete_topic, one batch. */
  deleteTopicBatch: {
    args: Type.Object({ topic_name: Type.String() }),
    reply: reply<{ deleted: number; more: boolean }>(),
    external: "caller",
  },
  /** Internal (the retention sweep): a page of the messages sent before `before` (UNIX seconds). */
  expireMessages: {
    args: Type.Object({ before: Type.Number() }),
    reply: reply<{ deleted: number[]; more: boolean }>(),
  },

  // ---- reads about single messages (message-extras.ts)
  messageEditHistory: {
    args: Type.Object({ ...MessageId, allow_empty_topic_name: Flag }),
    reply: reply<{ message_history: Obj[] }>(),
    external: "caller",
  },
  readReceipts: {
    args: Type.Object(MessageId),
    reply: reply<{ user_ids: number[] }>(),
    external: "caller",
  },
  /** GET /messages/matches_narrow: of `ids` (the caller's rows), those matching `filters`. */
  matchNarrow: {
    args: Type.Object({ ids: SafeIntList, filters: Type.Optional(FiltersSchema) }),
    reply: reply<{ messages: Record<string, { match_content: string; match_subject: string }> }>(),
    external: "caller",
  },

  // ---- the rest
  /** POST /messages/{id}/typing (typing.ts). */
  editTyping: {
    args: Type.Object({ ...MessageId, op: Type.Union([Type.Literal("start"), Type.Literal("stop")]) }),
    reply: reply(),
    external: "caller",
  },
  /** The caller's received rows of this channel (received.ts); the gateway adds the flags. */
  receivedRows: {
    args: Type.Object({
      after: Type.Optional(SafeInt),
      topic: Type.Optional(Type.String()),
      ids: Type.Optional(SafeIntList),
    }),
    reply: reply<{ rows: Row[]; newest: number; topicExists: boolean; lastReceived: number }>(),
    external: "caller",
  },
  /** Internal (markdown-links.ts): the latest id `userId` may read of each topic, lowercased. */
  topicLatest: {
    args: Type.Object({
      topics: Type.Array(Type.String()),
      userId: SafeInt,
      /** The user's spans, when the channel's history is protected. */
      spans: Type.Optional(trusted<Span[]>()),
    }),
    reply: reply<Record<string, number>>(),
  },
} as const;

export type ChannelProtocol = typeof channelProtocol;

/** A handler of a conversation's method M. */
export type ConvHandler<M extends MethodOf<ChannelProtocol>> = HandlerOf<ConvState, ChannelProtocol, M>;

/** The handlers of some of a conversation's methods, kept in one file and spread into behavior.ts's table. */
export type ConvHandlers<M extends MethodOf<ChannelProtocol>> = SomeHandlersOf<ConvState, ChannelProtocol, M>;
