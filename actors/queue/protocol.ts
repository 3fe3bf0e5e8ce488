// The queue actor's methods (behavior.ts): their arguments, replies and
// which a gateway may call. How to add one: docs/architecture.md, "Actor
// protocols".

import { Type } from "typebox";
import { AnyValue, SafeInt, reply } from "../protocol.ts";
import type { Obj } from "../types.ts";

const QueueId = Type.Object({ queueId: Type.String() });

export const queueProtocol = {
  /**
   * POST /register (and GET /events without a queue): the queue's
   * registration as the gateway parsed it. `narrow` and `capabilities` are
   * the parsed request values, read leniently (readRegistration).
   */
  register: {
    args: Type.Object({
      eventTypes: Type.Optional(Type.Union([Type.Null(), Type.Array(Type.String())])),
      narrow: Type.Optional(AnyValue),
      capabilities: Type.Optional(AnyValue),
      applyMarkdown: Type.Optional(Type.Boolean()),
      clientGravatar: Type.Optional(Type.Boolean()),
      allPublicStreams: Type.Optional(Type.Boolean()),
      timeoutSecs: Type.Optional(Type.Number()),
    }),
    reply: reply<{ queue_id: string; last_event_id: number; idle_queue_timeout_secs: number }>(),
    external: "caller",
  },
  /** GET /events: the events after lastEventId, or a parked poll. */
  poll: {
    args: Type.Object({
      queueId: Type.String(),
      lastEventId: Type.Optional(SafeInt),
      dontBlock: Type.Optional(Type.Boolean()),
      /** Set by the poll itself when it decides again after applying pending log entries (behavior.ts). */
      caughtUp: Type.Optional(Type.Boolean()),
    }),
    reply: reply<{ events: Obj[]; queue_id?: string }>(),
    external: "caller",
  },
  /** DELETE /events. */
  delete: { args: QueueId, reply: reply(), external: "caller" },
  /** POST /register's cut: the newest event id of a queue. */
  newest: {
    args: Type.Object({
      queueId: Type.String(),
      /** As poll's. */
      caughtUp: Type.Optional(Type.Boolean()),
    }),
    reply: reply<{ last_event_id: number }>(),
    external: "caller",
  },

  // ---- the node's timers and the event router (internal)
  heartbeat: { args: QueueId, reply: reply<{ delivered: number } | undefined>() },
  expire: { args: Type.Object({}), reply: reply<undefined>() },
  /**
   * Events for this user. `entry`: the shard's event log holds them
   * (cluster/event-log.ts), at this position; the actor applies every entry
   * for its user up to there that it has not applied. Otherwise `events`,
   * journaled by the actor (a node without a log, a batch for a shard that
   * moved); `key` makes a retried batch a no-op.
   */
  deliver: {
    args: Type.Object({
      entry: Type.Optional(SafeInt),
      events: Type.Optional(Type.Array(Type.Unsafe<Obj>(Type.Object({})))),
      key: Type.Optional(Type.String()),
    }),
    reply: reply<{ delivered: number; duplicate?: boolean }>(),
  },
  /** Apply the event log's entries for this user not applied yet (a missed delivery, a takeover). */
  catchUp: { args: Type.Object({}), reply: reply<{ delivered: number; duplicate?: boolean } | undefined>() },
  /** The user's queues, for inspection and tests. */
  list: {
    args: Type.Object({}),
    reply:
      reply<{ queue_id: string; next_id: number; pruned: number; pending: number; last_poll: number }[]>(),
  },
} as const;

export type QueueProtocol = typeof queueProtocol;
