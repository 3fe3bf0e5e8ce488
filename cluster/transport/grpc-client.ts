// Gateway side of the gateway -> node path, for one node address: a few
// long-lived bidirectional streams; requests issued in the same tick leave in
// one RequestBatch on the next stream (round robin); replies are matched by
// correlation id. Nothing is sent after a request's deadline (its start-by);
// a request sent is awaited until deadline + grace (retry.ts), enforced by
// one sweep every SWEEP_MS for all pending requests of the client, never a
// timer per request.
import * as grpc from "@grpc/grpc-js";
import { decodeResponseBatch, encodeRequestBatch, fromPbResponse, toPbRequest } from "../../proto/codec.ts";
import type { GrpcTls } from "../config.ts";
import type { ActorRequest, ActorResponse } from "./contract.ts";
import { GRPC_OPTIONS, MAX_BATCH, STREAM_PATH } from "./grpc-server.ts";
import { CONNECTION_LOST, replyWaitUntil, unavailable } from "./retry.ts";
import { actorAttributes, continueSpan, endWithResponse, SpanKind, traceparentOf } from "../tracing.ts";

export interface GrpcNodeClientOptions {
  /** Long-lived streams to open to the node (default 2). */
  streams?: number;
  /** Period of the deadline sweep (default 50 ms). */
  sweepMs?: number;
  channelOptions?: grpc.ChannelOptions;
  /** The gateway's certificate and the CA that signed the nodes' (GRPC_TLS_*); plaintext when absent. */
  tls?: GrpcTls | null;
}

/** TLS with a client certificate, verifying the node's certificate against the cluster's CA. */
export function grpcClientCredentials(tls: GrpcTls | null | undefined): grpc.ChannelCredentials {
  if (!tls) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(tls.ca, tls.key, tls.cert);
}

interface Pending {
  corr: number;
  req: ActorRequest | null;
  /** deadline + grace: when the sweep gives up on the reply. */
  until: number;
  resolve: (r: ActorResponse) => void;
  stream: ClientStream | null;
}

interface ClientStream {
  call: grpc.ClientDuplexStream<Buffer, Buffer>;
  index: number;
  dead: boolean;
}

const identity = (b: Buffer): Buffer => b;

/** Per-request spans of the gRPC hop (the stream carries many requests; see cluster/tracing.ts). */
export const RPC_SPAN = STREAM_PATH.slice(1);
export const RPC_ATTRIBUTES = {
  "rpc.system": "grpc",
  "rpc.service": "zulipactors.Actors",
  "rpc.method": "Stream",
};

export class GrpcNodeClient {
  private readonly client: grpc.Client;
  private readonly streams: (ClientStream | null)[];
  private readonly pending = new Map<number, Pending>();
  private outbox: Pending[] = [];
  private flushScheduled = false;
  private rr = 0;
  private corr = 0;
  private sweeper: NodeJS.Timeout | null = null;
  private readonly sweepMs: number;
  private closed = false;
  private readonly flushBound = () => this.flush();
  private readonly sweepBound = () => this.sweep();

  constructor(
    readonly address: string,
    opts: GrpcNodeClientOptions = {},
  ) {
    this.streams = new Array<ClientStream | null>(Math.max(1, opts.streams ?? 2)).fill(null);
    this.sweepMs = opts.sweepMs ?? 50;
    this.client = new grpc.Client(address, grpcClientCredentials(opts.tls), {
      ...GRPC_OPTIONS,
      // A restarted node must be reachable again quickly, not after grpc's
      // default exponential backoff (up to two minutes).
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1000,
      "grpc.use_local_subchannel_pool": 1,
      // grpc-js buffers every message written on a call for transparent
      // retries (up to 256 KB per call before it commits): pointless on
      // streams that live for hours and carry their own correlation.
      "grpc.enable_retries": 0,
      ...opts.channelOptions,
    });
  }

  /**
   * Send one request. Resolves the node's reply; `unavailable()` when asked
   * after the deadline, or when no reply came by deadline + grace; CONNECTION_LOST (compare by identity) when the stream broke
   * or the node could not be reached, which the caller may retry. Never rejects.
   */
  request(req: ActorRequest): Promise<ActorResponse> {
    if (req.traceparent !== undefined) {
      // A sampled request gets its own client span; the batch is invisible to the trace.
      const span = continueSpan(RPC_SPAN, SpanKind.CLIENT, req.traceparent, {
        ...RPC_ATTRIBUTES,
        "server.address": this.address,
        ...actorAttributes(req.ref, req.method),
      });
      if (span !== null) {
        return this.send({ ...req, traceparent: traceparentOf(span) }).then((res) => {
          endWithResponse(span, res);
          return res;
        });
      }
    }
    return this.send(req);
  }

  private send(req: ActorRequest): Promise<ActorResponse> {
    if (this.closed) return Promise.resolve(CONNECTION_LOST);
    if (Date.now() >= req.deadline) return Promise.resolve(unavailable());
    return new Promise<ActorResponse>((resolve) => {
      let corr = (this.corr + 1) >>> 0;
      while (corr === 0 || this.pending.has(corr)) corr = (corr + 1) >>> 0;
      this.corr = corr;
      const p: Pending = { corr, req, until: replyWaitUntil(req), resolve, stream: null };
      this.pending.set(corr, p);
      this.outbox.push(p);
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(this.flushBound);
      }
      if (this.sweeper === null) this.sweeper = setInterval(this.sweepBound, this.sweepMs);
    });
  }

  /** Streams currently open to the node. */
  openStreams(): number {
    let n = 0;
    for (const s of this.streams) if (s !== null && !s.dead) n++;
    return n;
  }

  /** Requests awaiting a reply. */
  pendingCount(): number {
    return this.pending.size;
  }

  /** Close the streams and the channel; pending requests resolve CONNECTION_LOST. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.outbox = [];
    for (const s of this.streams) if (s) this.broken(s);
    this.failAll();
    this.client.close();
  }

  // ---- internals ---------------------------------------------------------------

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.outbox;
    if (batch.length === 0 || this.closed) return;
    this.outbox = [];
    const s = this.pickStream();
    if (s === null) {
      for (const p of batch) this.settle(p, CONNECTION_LOST);
      return;
    }
    let items: ReturnType<typeof toPbRequest>[] = [];
    for (let i = 0; i < batch.length; i++) {
      const p = batch[i];
      if (p.req === null || !this.pending.has(p.corr)) continue; // settled before it left
      p.stream = s;
      items.push(toPbRequest(p.corr, p.req));
      p.req = null;
      if (items.length === MAX_BATCH) {
        if (!this.write(s, items)) return;
        items = [];
      }
    }
    if (items.length > 0) this.write(s, items);
  }

  private write(s: ClientStream, items: ReturnType<typeof toPbRequest>[]): boolean {
    if (s.dead) {
      this.broken(s);
      return false;
    }
    try {
      const u = encodeRequestBatch(items);
      s.call.write(Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength));
      return true;
    } catch {
      this.broken(s);
      return false;
    }
  }

  private pickStream(): ClientStream | null {
    const n = this.streams.length;
    const index = this.rr++ % n;
    const cur = this.streams[index];
    if (cur !== null && !cur.dead) return cur;
    try {
      const call = this.client.makeBidiStreamRequest<Buffer, Buffer>(
        STREAM_PATH,
        identity,
        identity,
        new grpc.Metadata(),
        {},
      );
      const s: ClientStream = { call, index, dead: false };
      call.on("data", (buf: Buffer) => this.onData(buf));
      call.on("error", () => this.broken(s));
      call.on("end", () => this.broken(s));
      call.on("status", () => this.broken(s));
      this.streams[index] = s;
      return s;
    } catch {
      return null;
    }
  }

  private onData(buf: Buffer): void {
    let items;
    try {
      items = decodeResponseBatch(buf);
    } catch {
      return;
    }
    for (let i = 0; i < items.length; i++) {
      const p = this.pending.get(items[i].corr);
      if (p !== undefined) this.settle(p, fromPbResponse(items[i]).res);
    }
  }

  private settle(p: Pending, res: ActorResponse): void {
    if (!this.pending.delete(p.corr)) return;
    p.req = null;
    p.stream = null;
    if (this.pending.size === 0) this.stopSweeper();
    p.resolve(res);
  }

  /** A stream ended or failed: drop it (reopened lazily) and fail what it carried. */
  private broken(s: ClientStream): void {
    if (s.dead) return;
    s.dead = true;
    if (this.streams[s.index] === s) this.streams[s.index] = null;
    try {
      s.call.cancel();
    } catch {
      // already finished
    }
    for (const p of this.pending.values()) if (p.stream === s) this.settle(p, CONNECTION_LOST);
  }

  private failAll(): void {
    for (const p of [...this.pending.values()]) this.settle(p, CONNECTION_LOST);
    this.stopSweeper();
  }

  private sweep(): void {
    const now = Date.now();
    for (const p of this.pending.values()) if (now >= p.until) this.settle(p, unavailable());
  }

  private stopSweeper(): void {
    if (this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}
