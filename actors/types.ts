// What an actor is, as seen by actor code. The runtime in cluster/ drives these
// behaviours; actor code never sees the network or the store.
//
// An actor is event-sourced: a handler looks at its state and a command and
// *decides* (facts to persist, a reply, events to send). The runtime appends
// the facts to the actor's journal, awaits that append, folds them into the
// state with `apply`, and only then replies. Activation replays the journal
// over the latest snapshot with the same `apply`, so `apply` must be
// deterministic and must never throw for a fact it once accepted.
//
// Besides its state, an actor may keep records and ordered id indexes in its
// shard of the store (docs/storage.md): a decision's `writes` go into the
// same atomic, fenced append as its facts, and handlers read them back
// through the context (`getRecords`, `rangeIndex`, `indexSize`). Replay does
// not redo writes: they are durable with the facts they came with.

import type { Static, TSchema } from "typebox";

/**
 * A record or index write (the store's RecordWrite, cluster/storage/contract.ts:
 * the same shape, declared here because actor code imports nothing outside actors/).
 */
export type RecordWrite =
  | { op: "put"; key: string; value: Uint8Array }
  | { op: "delete"; key: string }
  | { op: "index"; index: string; add: number[] }
  | { op: "unindex"; index: string; remove: number[] };

/** An index range read (the store's IndexRange): exclusive anchors, ascending results, `reverse` takes the highest `limit`. */
export interface IndexRange {
  before?: number;
  after?: number;
  limit: number;
  reverse?: boolean;
}

export type Kind =
  | "realm"
  | "realmDirectory"
  | "user"
  | "channel"
  | "channelDirectory"
  | "group"
  | "queue"
  | "emoji"
  | "blob"
  | "uploads"
  | "webhook"
  | "webhookIndex";
export const KINDS: readonly Kind[] = [
  "realm",
  "realmDirectory",
  "user",
  "channel",
  "channelDirectory",
  "group",
  "queue",
  "emoji",
  "blob",
  "uploads",
  "webhook",
  "webhookIndex",
];

/** Plain data that crosses process boundaries (encoded as protobuf Value). */
export type Value = null | boolean | number | string | Value[] | { [key: string]: Value };
export type Obj = { [key: string]: Value };

/**
 * Identity of an actor. `realm` is the organization id; `key` is the
 * actor's id within the realm and kind ("realm" for an organization's realm
 * actor, the user id for a user...). The shard is derived from (realm, shardKey), where
 * shardKey defaults to key; a queue actor uses its owner's user id so a
 * user's queues live beside the user.
 */
export interface ActorRef {
  kind: Kind;
  realm: number;
  key: string;
  shardKey?: string;
}

/**
 * Where a request entered the node: "external" from the gateway-facing
 * transport (the gRPC server, the embedded gateway's client), "internal"
 * from inside the cluster (NATS between nodes, ctx.call, timers, bootstrap,
 * the CLI, node-side workers). Set by the transport that received the
 * request, never read from it: nothing on the wire says "internal".
 */
export type Origin = "internal" | "external";

/**
 * How far outside the cluster a method is reachable (Behavior.external):
 * "caller" with an authenticated caller, "anonymous" also without one.
 */
export type Exposure = "caller" | "anonymous";

/** The authenticated caller of a request, as the gateway resolved it. */
export interface Caller {
  realmId: number;
  userId: number;
  role: number;
  isBot: boolean;
}

/** A Zulip event and the users whose queues receive it (Zulip's send_event). */
export interface OutEvent {
  event: Obj;
  userIds: number[];
  /**
   * Also every user of the emitter's realm who has a queue and is
   * subscribed to this channel: the queue shards resolve it from their
   * index (cluster/event-router.ts), so a channel message's event does not
   * list the channel's subscribers.
   */
  channel?: number;
  /**
   * Also every user of the emitter's realm who has a queue, resolved the
   * same way: a realm-wide event does not list the realm's users, and costs
   * nothing for those who are not online. A deactivated user's queue,
   * until it expires, is reached too: the user cannot poll it.
   */
  everyone?: true;
  /** Users of the `channel` or `everyone` audience who do not get the event (listed ones still do). */
  except?: number[];
}

/**
 * A reply given as its JSON text, for a reply the handler assembles from
 * parts it keeps serialized (a history read's messages,
 * actors/channel/message-json.ts). The runtime sends the text as it is
 * (cluster/responses.ts `okResponse`); a caller that reads the value gets it
 * parsed. The text must be the JSON of a value of type _R, which names the
 * reply's type for the reader and is not checked (a decision that spreads
 * another's stays assignable).
 */
export class JsonText<_R = Value> {
  constructor(readonly text: string) {}
}

/** What a turn answers: a value, or its JSON text. */
export type TurnReply = Value | JsonText;

export interface Decision<R extends Value = Value> {
  /** Facts to append to the journal (awaited) and then apply. */
  facts?: Obj[];
  /**
   * Record and index writes on the actor's shard (keys and index names
   * namespaced by the actor), appended in the same atomic, fenced append as
   * the batch's facts: both are durable, or neither (a failed append
   * discards the activation, which reloads from the store). `apply` never
   * sees them. Writes of a batch apply in turn order.
   */
  writes?: RecordWrite[];
  /** Reply to the caller. */
  reply?: R;
  /** The reply as its JSON text, built by the handler (`JsonText`); then `reply` is left out. */
  replyJson?: JsonText<R>;
  /** Events emitted once the facts are durable. */
  events?: OutEvent[];
  /**
   * Cluster-wide notices published on the bus once the facts are durable,
   * as subject `notice.<subject>`: e.g. "auth.invalidate" with
   * {realmId, email} makes every gateway drop its cached credentials.
   */
  notices?: { subject: string; data: Obj }[];
  /**
   * Durable hand-offs to a node-side worker (e.g. outgoing-webhook
   * triggers): journaled in the same append as the turn's facts (the
   * outbox, docs/events.md), given to the node's handler for the subject
   * once durable, and given again at the next activation until the handler
   * acknowledges them. Handlers must be idempotent. Without facts in the
   * batch they are given once, unjournaled.
   */
  handoffs?: { subject: string; data: Obj }[];
  /**
   * Withhold the reply until the hand-offs of the turn's batch are
   * acknowledged (or refused): e.g. a send answers once every recipient's
   * flags are stored, while the actor goes on deciding later turns. With
   * replyAfterEvents too, the batch's hand-offs start once its events are
   * out, so the reply comes after both.
   */
  replyAfterHandoffs?: boolean;
  /**
   * Withhold the reply until the events of the turn's batch reached their
   * queue actors: e.g. a subscription change, so that a message the client
   * sends next is routed by queue shards that know of it
   * (cluster/event-router.ts, channel audiences).
   */
  replyAfterEvents?: boolean;
  /**
   * Deferred reply (long-polls): the turn's reply is withheld under this
   * key until a later decision names the key in `wake`. Not durable: the
   * runtime answers "moved" to parked turns when the activation ends, and the
   * caller retries at the next activation.
   */
  park?: string;
  /** Complete parked turns (of this activation) with these replies, once the facts are durable. */
  wake?: { key: string; reply: Value }[];
  /**
   * Decide the turn again, with these args, as soon as this decision's
   * facts are applied, before any other turn: only its facts, writes and
   * wakes take effect (its reply, events, hand-offs and notices do not).
   * E.g. a poll that finds log entries no delivery has applied yet applies
   * them, then answers from the state they make.
   */
  again?: Obj;
}

export interface ActorContext {
  readonly self: ActorRef;
  /**
   * Where the turn's request came from (absent: internal). An external
   * request reached the handler only through Behavior.external; a null
   * caller on it is a visitor without credentials, never the cluster.
   */
  readonly origin?: Origin;
  /** Milliseconds since the epoch; use this, never Date.now(), so tests can fix time. */
  now(): number;
  /** Send a message to another actor and await its reply (never to yourself). */
  call<P extends Protocol, M extends MethodOf<P>>(
    ref: Ref<P>,
    method: M,
    args: ArgsOf<P, M>,
    caller?: Caller | null,
  ): Promise<ReplyOf<P, M>>;
  /** Kinds without a protocol yet (see protocol.ts): goes when the last kind is converted. */
  call(ref: UntypedRef, method: string, args: Obj, caller?: Caller | null): Promise<Value>;
  /** Allocate the next id in a realm-wide counter ("user", "channel", ...). Never reused. */
  nextId(counter: string): Promise<number>;
  /**
   * Timer on the node's timer wheel: after delayMs the runtime sends
   * `method(args)` to this actor (caller null). At most one pending timer
   * per key and activation: scheduling a key that is pending is a no-op,
   * unless the new time is earlier (then the timer moves to it). Timers are
   * not durable, and a timer armed by an activation may still fire after
   * that activation passivated (it re-activates the actor): handlers must
   * tolerate early, late and repeated calls; an actor re-arms its timers
   * when it next runs.
   */
  schedule(key: string, delayMs: number, method: string, args: Obj): void;
  /** Keys of this activation's parked turns (see Decision.park), as they are now: iterate it, do not keep it. */
  parked(): Iterable<string>;
  /**
   * Records of this actor's shard (Decision.writes), null when missing; one
   * batched read. A turn sees every write of earlier turns (the catalog
   * commits a batch with writes before it decides a turn that is not
   * `Behavior.blind`); a reader (`Behavior.readers`) sees the writes of
   * durable batches. Absent only in unit-test contexts without a store.
   */
  getRecords?(keys: string[]): Promise<Array<Uint8Array | null>>;
  /** Ids of an index of this actor's shard in a range, ascending (Store.rangeIndex). */
  rangeIndex?(index: string, range: IndexRange): Promise<number[]>;
  /** Number of ids in an index of this actor's shard. */
  indexSize?(index: string): Promise<number>;
  /**
   * The facts of this actor's side log (Behavior.sideLog) after `after`
   * (up to `upTo` when given), in order, as an activation would replay them
   * (the queue kind: its shard's event log). Rejects when the log cannot be
   * read here. Absent without a side log (unit-test contexts).
   */
  sideLog?(after: number, upTo?: number): Promise<Obj[]>;
  /**
   * The same facts when they can be had at once (all durable and in
   * memory); null when not (read them with `sideLog`).
   */
  sideLogNow?(after: number, upTo?: number): Obj[] | null;
  /** The position of the last fact of this actor's side log (0: none). */
  sideLogHead?(): number;
}

export type Handler<S> = (
  state: S,
  args: Obj,
  ctx: ActorContext,
  caller: Caller | null,
) => Decision | Promise<Decision>;

export interface Behavior<S> {
  kind: Kind;
  /**
   * The kind under which this kind's actors keep their data (storage id
   * `<storedAs>.<realm>.<key>`): a kind split out of another keeps reading
   * what its actors wrote as that kind. Absent: its own kind. The two kinds'
   * keys must never meet.
   */
  storedAs?: Kind;
  /**
   * Whether a key names one of this kind's actors. Kinds that share storage
   * ids (one is `storedAs` the other) each answer for their own keys: the
   * runtime refuses a request to a key the kind does not own before any
   * activation, so neither kind ever loads the other's data (a forged ref,
   * such as a gateway's request to a channel conversation keyed
   * "directory"). Absent: every key.
   */
  ownsKey?(key: string): boolean;
  /** State of an actor that has never persisted anything. */
  initial(ref: ActorRef): S;
  /** Fold one persisted fact into the state. May mutate and return `state`. */
  apply(state: S, fact: Obj, ref: ActorRef): S;
  /**
   * Snapshot encoding. A field added to a state type needs a default in
   * `fromSnapshot`, because old snapshots in the store lack it.
   */
  toSnapshot(state: S): string;
  fromSnapshot(data: string, ref: ActorRef): S;
  handlers: Record<string, Handler<S>>;
  /**
   * The methods a request from outside the cluster (a gateway) may call,
   * and whether without a caller. Every other method is internal: the node
   * refuses it to an external request before the actor is even activated
   * (NodeRuntime.handle), so a handler may keep treating a null caller as
   * the cluster itself.
   */
  external?: Readonly<Record<string, Exposure>>;
  /**
   * The kind's declared methods (actors/protocol.ts): the node checks an
   * external request's args against the method's schema before the actor
   * is activated. Absent for kinds not converted yet.
   */
  protocol?: Protocol;
  /**
   * Methods whose handlers read nothing the batch's earlier `writes` change
   * (a send only adds): they are decided in the same batch after such
   * writes. Before any other method the catalog commits the pending batch,
   * so its handler reads the store as every earlier turn left it.
   */
  blind?: readonly string[];
  /**
   * Read-only methods, decided outside the mailbox's order: at once, beside
   * the writer's turns, never waiting for them and never making the
   * pending batch commit early. A reader sees the state and the store as of
   * the last durable batch (the runtime keeps a copy of the state that it
   * folds each batch's facts into once they are durable), so never a fact
   * or write that could still be lost, and always every turn already
   * acknowledged. Its decision may hold only a reply (a change is refused);
   * its handler must not mutate the state beyond caches. Since `apply` then
   * runs on two states, it must copy what it keeps of a fact.
   */
  readers?: readonly string[];
  /**
   * Leaf reads whose reply is a function of the actor's durable state and
   * the args alone: decided in a turn after the pending batch is durable
   * (neither `blind` nor a reader), calling nobody, reading no clock and
   * nothing kept outside the journal. A caller on another node reuses its
   * last reply to the same args while the actor's journal has not moved
   * (cluster/node/durable-reads.ts). A reply that did depend on more (it
   * asked another actor, or made facts) carries `volatile: true` and is
   * not reused.
   */
  durableReads?: readonly string[];
  /**
   * Whether this actor of the kind serves `readers` (default: all): the
   * runtime keeps the committed copy of its state from activation on. For
   * another, the copy is taken by its first reader, which waits for the
   * batch in flight, if any, to be durable.
   */
  servesReaders?(ref: ActorRef): boolean;
  /**
   * Data conversion at activation (e.g. an old state shape whose content
   * moves into records): called after replay, before any turn; when it
   * returns facts (and writes), they are appended (fenced) and applied like
   * a turn's, and it is called again, until it returns null.
   */
  upgrade?(state: S, ref: ActorRef): { facts: Obj[]; writes: RecordWrite[] } | null;
  /**
   * Facts the runtime applies in turn order like the others but never
   * journals: those durable elsewhere (the queue kind's deliveries, kept
   * once per shard in its event log, `sideLog`), and those that may be lost
   * with the activation (a poll's acknowledgement). A snapshot keeps their
   * effect; a state holding some is snapshotted within a minute or so, and
   * at passivation.
   */
  unjournaled?(fact: Obj): boolean;
  /**
   * A log of facts kept outside the actor's journal, shared with other
   * actors (the queue kind: the events of its shard, stored once per batch,
   * cluster/event-log.ts). `position(state)` is how far into it the state
   * is; `decidedAt(fact)` the position a journaled fact was decided at
   * (undefined for facts written before the log existed). Activation applies
   * the log's facts for the actor after its snapshot's position
   * (CatalogHooks.sideFacts), each before the first journaled fact decided
   * after it, so replay interleaves the two as the turns did.
   */
  sideLog?: { position(state: S): number; decidedAt(fact: Obj): number | undefined };
  /**
   * Synchronous deciders of some methods, which the runtime may run at once
   * instead of through the mailbox when the activation is idle (loaded, no
   * turn running or waiting): the same turn, without its promises. One
   * returns null when it cannot decide at once (e.g. what it needs is not
   * in memory); the runtime then sends the turn the usual way, and its
   * handler decides it. A decision that holds anything but unjournaled
   * facts, wakes and a reply is dropped the same way, so a decider must not
   * act beyond its decision (a timer it arms is armed again). The queue
   * kind's `deliver`: a fan-out to a thousand idle queues.
   */
  inline?: Readonly<
    Record<string, (state: S, args: Obj, ctx: ActorContext, caller: Caller | null) => Decision | null>
  >;
  /**
   * Passivate an activation of this kind after this long without a turn
   * (and with no parked turn), when that is sooner than the node's default.
   */
  idleMs?: number;
}

// ---- actor protocols (actors/protocol.ts builds on these; docs/architecture.md, "Actor protocols") ----

declare const replyType: unique symbol;
declare const protocolType: unique symbol;

/** The phantom type of a method's reply: replies are trusted, never checked at run time. */
export interface Reply<R> {
  readonly [replyType]?: R;
}

export interface MethodSpec<A extends TSchema = TSchema, R = unknown> {
  args: A;
  reply: Reply<R>;
  /** Reachable from a gateway (Behavior.external); absent: inside the cluster only. */
  external?: Exposure;
}

/** An actor kind's methods by name. */
export type Protocol = Readonly<Record<string, MethodSpec>>;

export type MethodOf<P extends Protocol> = keyof P & string;
export type ArgsOf<P extends Protocol, M extends MethodOf<P>> = Static<P[M]["args"]>;
export type ReplyOf<P extends Protocol, M extends MethodOf<P>> =
  P[M]["reply"] extends Reply<infer R> ? R : never;

/** An actor address that carries its kind's protocol: `call` on it is typed. */
export type Ref<P extends Protocol> = ActorRef & { readonly [protocolType]: P };

/**
 * An address of a kind without a protocol yet: the brand is absent, so a
 * typed Ref never falls back to the untyped `call` overload.
 */
export type UntypedRef = ActorRef & { readonly [protocolType]?: never };
