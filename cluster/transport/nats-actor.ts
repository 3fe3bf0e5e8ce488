// Node -> node path: requests to actors on other nodes travel over NATS
// request/reply on the actor's subject `act.<shard>.<kind>.<realm>.<key>`;
// the owner of the shard subscribes to `act.<shard>.>`. Payloads are one
// protobuf ActorRequest / ActorResponse each.
//
// The client multiplexes replies on one inbox subscription and enforces
// deadlines with one shared sweep, instead of the NATS client's per-request
// timer. "No responders" (nobody serves the shard right now) and "moved" are
// retried with backoff until the deadline; a request that was sent is
// awaited until deadline + grace. This is the hop a turn's calls to actors
// on other nodes take, so the callee gets a start-by NESTED_START_RESERVE_MS
// earlier than the caller's: its reply (or a definite "unavailable") then
// arrives while the calling turn still has time to append and answer its own
// caller (retry.ts explains the nesting).
//
// NATS refuses a message over the server's max_payload (1 MiB by default).
// A request or reply that large (a whole roster of a big organization, or a
// router's batch of events under load) travels in parts, each with an
// `actor-part: <i>/<n>` header, published in order on one connection (so
// NATS delivers them in order); the receiver joins them before decoding. A
// server that cannot join a request (a later part without the first, the
// shard having come here mid-request) answers "moved", so it is sent again.
import {
  createInbox,
  headers as natsHeaders,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import { fromPbRequest, fromPbResponse, pb, toPbRequest, toPbResponse } from "../../proto/codec.ts";
import { actorSubject, shardSubject } from "../addressing.ts";
import { componentLogger } from "../log.ts";
import type { ActorClient, ActorRequest, ActorResponse, RequestHandler } from "./contract.ts";
import {
  BACKOFF_MIN_MS,
  CONNECTION_LOST,
  delay,
  graceOf,
  internalError,
  NESTED_START_RESERVE_MS,
  nextBackoff,
  unavailable,
} from "./retry.ts";
import {
  actorAttributes,
  continueSpan,
  endWithResponse,
  SpanKind,
  traceparentOf,
  type Span,
} from "../tracing.ts";

/** NATS header carrying the W3C trace context of a sampled request. */
export const TRACEPARENT_HEADER = "traceparent";
/** NATS header of one part of a message sent in parts: `<index>/<count>`. */
export const PART_HEADER = "actor-part";
/** Room left in each message for its headers and protocol line. */
const HEADER_ROOM = 4096;
/** At most this many parts (64 MiB at NATS's default max_payload); more is not a message of ours. */
const MAX_PARTS = 64;
/** Requests being joined at once by one server; past it a new one is answered "moved" (sent again). */
const MAX_JOINING = 256;
/** A request whose parts stopped coming is forgotten after this long (past any deadline and grace). */
const JOIN_FORGET_MS = 60_000;

/** Answer to a part that cannot be joined here: the caller sends the whole request again. */
const MOVED_PART: ActorResponse = Object.freeze({
  ok: false,
  kind: "moved",
  code: "MOVED",
  msg: "request arrived in part",
  status: 503,
}) as ActorResponse;

/** The largest message body the connection's server accepts with our headers. */
function bodyLimit(nc: NatsConnection): number {
  return (nc.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM;
}

/**
 * `data` cut into parts of at most `limit` bytes, each with the headers to
 * send it with (`base`'s, and its place); one part, with `base`, when it
 * fits. Null when even MAX_PARTS would not carry it.
 */
function partsOf(
  data: Uint8Array,
  limit: number,
  base: MsgHdrs | undefined,
): { data: Uint8Array; headers: MsgHdrs | undefined }[] | null {
  if (data.length <= limit) return [{ data, headers: base }];
  const n = Math.ceil(data.length / limit);
  if (n > MAX_PARTS) return null;
  return Array.from({ length: n }, (_, i) => {
    const headers = natsHeaders();
    for (const [k, v] of base ?? []) for (const one of v) headers.append(k, one);
    headers.set(PART_HEADER, `${i}/${n}`);
    return { data: data.subarray(i * limit, (i + 1) * limit), headers };
  });
}

/** The parts of one message as they arrive. */
class Joiner {
  private readonly chunks: (Uint8Array | undefined)[];
  private got = 0;
  readonly at = Date.now();

  private constructor(n: number) {
    this.chunks = new Array<Uint8Array | undefined>(n);
  }

  /** A joiner for the part `msg` is, or null when its header is not ours. */
  static start(msg: Msg): Joiner | null {
    const n = partPlace(msg)?.n;
    return n === undefined ? null : new Joiner(n);
  }

  /**
   * Take `msg`: the whole once every part is in, null while parts are
   * missing, undefined when `msg` is no part of this message.
   */
  add(msg: Msg): Uint8Array | null | undefined {
    const place = partPlace(msg);
    if (place === null || place.n !== this.chunks.length) return undefined;
    if (this.chunks[place.i] === undefined) {
      // A copy: the message's bytes are a view of the client's read buffer.
      this.chunks[place.i] = msg.data.slice();
      this.got++;
    }
    return this.got < this.chunks.length ? null : Buffer.concat(this.chunks as Uint8Array[]);
  }
}

function partPlace(msg: Msg): { i: number; n: number } | null {
  const m = /^(\d{1,2})\/(\d{1,2})$/.exec(msg.headers?.get(PART_HEADER) ?? "");
  if (m === null) return null;
  const i = Number(m[1]);
  const n = Number(m[2]);
  return n >= 2 && n <= MAX_PARTS && i < n ? { i, n } : null;
}

function isPart(msg: Msg): boolean {
  return msg.headers?.has(PART_HEADER) ?? false;
}

export interface NatsActorClientOptions {
  /**
   * Give up on one attempt after this long and retry (default: never, the
   * attempt lasts until deadline + grace). Retrying after a timeout can run
   * a request twice; only enable it for idempotent calls.
   */
  attemptTimeoutMs?: number;
  /** Period of the deadline sweep (default 50 ms). */
  sweepMs?: number;
}

interface Pending {
  until: number;
  final: boolean; // `until` is the request's deadline + grace (not an attempt timeout)
  resolve: (r: ActorResponse) => void;
  /** The parts of a reply sent in parts, as they arrive. */
  parts?: Joiner;
}

type PbRequest = Parameters<typeof fromPbRequest>[0];
type PbResponse = Parameters<typeof fromPbResponse>[0];

export class NatsActorClient implements ActorClient {
  private prefix = "";
  private sub: Subscription | null = null;
  private readonly pending = new Map<number, Pending>();
  private corr = 0;
  private sweeper: NodeJS.Timeout | null = null;
  private readonly attemptTimeoutMs: number;
  private readonly sweepMs: number;
  private closed = false;
  private readonly sweepBound = () => this.sweep();

  constructor(
    readonly nc: NatsConnection,
    opts: NatsActorClientOptions = {},
  ) {
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? Infinity;
    this.sweepMs = opts.sweepMs ?? 50;
  }

  async request(req: ActorRequest): Promise<ActorResponse> {
    const subject = actorSubject(req.ref, req.shard);
    // A sampled request: a client span, whose context travels in a NATS header.
    let span: Span | null = null;
    let hdrs: MsgHdrs | undefined;
    if (req.traceparent !== undefined) {
      span = continueSpan(`${req.ref.kind}.${req.method} send`, SpanKind.CLIENT, req.traceparent, {
        "messaging.system": "nats",
        "messaging.operation.type": "send",
        "messaging.destination.name": subject,
        ...actorAttributes(req.ref, req.method),
      });
      if (span !== null) {
        hdrs = natsHeaders();
        hdrs.set(TRACEPARENT_HEADER, traceparentOf(span));
        req = { ...req, traceparent: undefined };
      }
    }
    const res = await this.send(subject, req, hdrs);
    if (span !== null) endWithResponse(span, res);
    return res;
  }

  private async send(subject: string, req: ActorRequest, hdrs: MsgHdrs | undefined): Promise<ActorResponse> {
    const grace = graceOf(req);
    // The callee's start-by: earlier than ours by the reserve our own turn
    // keeps for its append and reply (not needed by callers without grace).
    const startBy = grace > 0 ? req.deadline - NESTED_START_RESERVE_MS : req.deadline;
    let payload: Uint8Array;
    try {
      payload = pb()
        .ActorRequest.encode(toPbRequest(0, { ...req, deadline: startBy }))
        .finish();
    } catch {
      return internalError();
    }
    const parts = partsOf(payload, bodyLimit(this.nc), hdrs);
    if (parts === null) {
      componentLogger("nats-actor").error(
        { method: `${req.ref.kind}.${req.method}`, bytes: payload.length },
        "actor request too large even in parts",
      );
      return internalError();
    }
    let backoff = BACKOFF_MIN_MS;
    for (;;) {
      if (this.closed || this.nc.isClosed()) return unavailable();
      if (Date.now() >= startBy) return unavailable();
      const res = await this.once(subject, parts, startBy + grace);
      if (res !== CONNECTION_LOST && (res.ok || res.kind !== "moved")) return res;
      const left = startBy - Date.now();
      if (left <= 0) return unavailable();
      await delay(Math.min(backoff, left));
      backoff = nextBackoff(backoff);
    }
  }

  /** Requests awaiting a reply. */
  pendingCount(): number {
    return this.pending.size;
  }

  /** Stop the reply subscription; pending requests resolve "unavailable". */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.failAll(unavailable);
    if (this.sub && !this.sub.isClosed()) {
      try {
        this.sub.unsubscribe();
      } catch {
        // connection already closed
      }
    }
    this.sub = null;
  }

  /** One attempt, awaited until `waitUntil` (deadline + grace) or the attempt timeout. */
  private once(
    subject: string,
    parts: { data: Uint8Array; headers: MsgHdrs | undefined }[],
    waitUntil: number,
  ): Promise<ActorResponse> {
    if (this.sub === null) {
      this.prefix = `${createInbox()}.`;
      this.sub = this.nc.subscribe(`${this.prefix}*`, { callback: (err, msg) => this.onReply(err, msg) });
      void this.sub.closed.then(() => {
        this.sub = null;
        this.failAll(() => CONNECTION_LOST);
      });
    }
    let corr = (this.corr + 1) >>> 0;
    while (corr === 0 || this.pending.has(corr)) corr = (corr + 1) >>> 0;
    this.corr = corr;
    const attemptEnd = Date.now() + this.attemptTimeoutMs;
    const final = attemptEnd >= waitUntil;
    return new Promise<ActorResponse>((resolve) => {
      const reply = this.prefix + corr;
      try {
        for (const { data, headers } of parts)
          this.nc.publish(subject, data, headers === undefined ? { reply } : { reply, headers });
      } catch {
        resolve(CONNECTION_LOST);
        return;
      }
      this.pending.set(corr, { until: final ? waitUntil : attemptEnd, final, resolve });
      if (this.sweeper === null) this.sweeper = setInterval(this.sweepBound, this.sweepMs);
    });
  }

  private onReply(err: Error | null, msg: Msg): void {
    if (err) return;
    const corr = Number(msg.subject.substring(this.prefix.length));
    const p = this.pending.get(corr);
    if (p === undefined) return;
    let res: ActorResponse;
    if (msg.data.length === 0 && msg.headers?.code === 503)
      res = CONNECTION_LOST; // no responders
    else {
      const data = this.whole(p, msg);
      if (data === null) return; // more parts to come
      try {
        res =
          data === undefined
            ? internalError()
            : fromPbResponse(pb().ActorResponse.decode(data) as unknown as PbResponse).res;
      } catch {
        res = internalError();
      }
    }
    this.settle(corr, p, res);
  }

  /**
   * The reply's bytes: the message's own, or once every part has arrived
   * their concatenation; null while parts are missing, undefined for a
   * part that is not ours.
   */
  private whole(p: Pending, msg: Msg): Uint8Array | null | undefined {
    if (!isPart(msg)) return msg.data;
    p.parts ??= Joiner.start(msg) ?? undefined;
    return p.parts?.add(msg);
  }

  private settle(corr: number, p: Pending, res: ActorResponse): void {
    this.pending.delete(corr);
    if (this.pending.size === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
    p.resolve(res);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [corr, p] of this.pending) {
      if (now >= p.until) this.settle(corr, p, p.final ? unavailable() : CONNECTION_LOST);
    }
  }

  private failAll(res: () => ActorResponse): void {
    for (const [corr, p] of [...this.pending]) this.settle(corr, p, res());
  }
}

// ---- Serving side --------------------------------------------------------------

export interface ShardSubjects {
  /** Start serving `act.<shard>.>` (idempotent). */
  add(shard: number): void;
  /**
   * Stop serving a shard. The subscription is drained, not dropped: requests
   * the NATS server routed here before it saw the unsubscribe still reach the
   * handler (which answers "moved" once the shard is released), so no caller
   * waits out its deadline for a reply that never comes.
   */
  remove(shard: number): void;
  /** Stop serving every shard; resolves once every request taken is answered. */
  close(): Promise<void>;
  /** Shards served now, ascending. */
  shards(): number[];
}

/** Subscribe to the subjects of the shards this node owns and dispatch to `handler`. */
export function serveShardSubjects(nc: NatsConnection, handler: RequestHandler): ShardSubjects {
  const subs = new Map<number, Subscription>();
  const inFlight = new Set<Promise<void>>();
  // Requests arriving in parts, by reply subject (one per attempt).
  const joining = new Map<string, Joiner>();
  const callback = (err: Error | null, msg: Msg): void => {
    if (err || !msg.reply) return;
    let data = msg.data;
    if (isPart(msg)) {
      let j = joining.get(msg.reply);
      if (j === undefined) {
        const now = Date.now();
        for (const [k, old] of joining) if (now - old.at > JOIN_FORGET_MS) joining.delete(k);
        // A request's first part, unless too many are being joined; a later
        // part without the first (the shard came here mid-request) cannot be
        // served: either way the caller is told to try again.
        const started = joining.size < MAX_JOINING && partPlace(msg)?.i === 0 ? Joiner.start(msg) : null;
        if (started === null) return answer(msg, MOVED_PART);
        joining.set(msg.reply, (j = started));
      }
      const whole = j.add(msg);
      if (whole === null) return;
      joining.delete(msg.reply);
      if (whole === undefined) return answer(msg, internalError());
      data = whole;
    }
    const p = serveOne(handler, msg, data, nc).finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const drop = async (sub: Subscription): Promise<void> => {
    if (sub.isClosed() || nc.isClosed()) return;
    try {
      await sub.drain();
    } catch {
      // connection closed or draining: nothing more will arrive
    }
  };
  return {
    add(shard) {
      if (subs.has(shard) || nc.isClosed()) return;
      subs.set(shard, nc.subscribe(shardSubject(shard), { callback }));
    },
    remove(shard) {
      const sub = subs.get(shard);
      if (sub === undefined) return;
      subs.delete(shard);
      void drop(sub);
    },
    async close() {
      const draining = [...subs.values()].map(drop);
      subs.clear();
      await Promise.all(draining);
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
    shards() {
      return [...subs.keys()].sort((a, b) => a - b);
    },
  };
}

async function serveOne(
  handler: RequestHandler,
  msg: Msg,
  data: Uint8Array,
  nc: NatsConnection,
): Promise<void> {
  let res: ActorResponse;
  let span: Span | null = null;
  let method = "";
  try {
    const { req } = fromPbRequest(pb().ActorRequest.decode(data) as unknown as PbRequest);
    method = `${req.ref.kind}.${req.method}`;
    const tp = msg.headers?.get(TRACEPARENT_HEADER);
    if (tp) {
      span = continueSpan(`${req.ref.kind}.${req.method} process`, SpanKind.SERVER, tp, {
        "messaging.system": "nats",
        "messaging.operation.type": "process",
        "messaging.destination.name": msg.subject,
        ...actorAttributes(req.ref, req.method),
      });
      req.traceparent = span === null ? tp : traceparentOf(span);
    }
    res = Date.now() >= req.deadline ? unavailable() : await handler(req);
  } catch {
    res = internalError();
  }
  if (span !== null) endWithResponse(span, res);
  try {
    respond(msg, pb().ActorResponse.encode(toPbResponse(0, res)).finish(), bodyLimit(nc), method);
  } catch {
    // connection closed: the caller times out and retries
  }
}

/** Answer a request that is not served (small answers only: no parts). */
function answer(msg: Msg, res: ActorResponse): void {
  try {
    msg.respond(pb().ActorResponse.encode(toPbResponse(0, res)).finish());
  } catch {
    // connection closed: the caller times out and retries
  }
}

/** Answer with `out`, in parts when it is larger than `limit`. */
function respond(msg: Msg, out: Uint8Array, limit: number, method: string): void {
  const parts = partsOf(out, limit, undefined);
  if (parts === null) {
    componentLogger("nats-actor").error({ method, bytes: out.length }, "actor reply too large even in parts");
    answer(msg, internalError());
    return;
  }
  for (const { data, headers } of parts) msg.respond(data, headers === undefined ? undefined : { headers });
}
