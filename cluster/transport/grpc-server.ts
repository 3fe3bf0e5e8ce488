// Node side of the gateway -> node path: one bidirectional streaming method.
// Every request it receives is "external" (ActorRequest.origin).
// Each inbound message is a protobuf RequestBatch; requests are handled
// concurrently and every reply produced in the same tick leaves in one
// ResponseBatch write. Replies are matched by correlation id on the client.
import * as grpc from "@grpc/grpc-js";
import { decodeRequestBatch, encodeResponseBatch, fromPbRequest, toPbResponse } from "../../proto/codec.ts";
import type { GrpcTls } from "../config.ts";
import type { ActorRequest, ActorResponse, RequestHandler } from "./contract.ts";
import { internalError, MOVED_CLOSING, unavailable } from "./retry.ts";
import {
  actorAttributes,
  continueSpan,
  endWithResponse,
  SpanKind,
  traceparentOf,
  type Span,
} from "../tracing.ts";

const identity = (b: Buffer): Buffer => b;

/** The one service: /zulipactors.Actors/Stream, raw protobuf bytes both ways. */
export const ACTOR_SERVICE = {
  Stream: {
    path: "/zulipactors.Actors/Stream",
    requestStream: true,
    responseStream: true,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
    originalName: "stream",
  },
} satisfies grpc.ServiceDefinition;

export const STREAM_PATH = ACTOR_SERVICE.Stream.path;

/** Most requests one batch carries; bigger ticks are split. */
export const MAX_BATCH = 512;

/** Shared by both ends: big batches pass, dead peers are noticed. */
export const GRPC_OPTIONS: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": 64 * 1024 * 1024,
  "grpc.max_send_message_length": 64 * 1024 * 1024,
  "grpc.keepalive_time_ms": 10_000,
  "grpc.keepalive_timeout_ms": 5_000,
  "grpc.keepalive_permit_without_calls": 1,
  // Each stream's receive window (HTTP/2's default is 64 KB). A page of
  // 100 messages is about 40 KB, so at the default a node's replies waited
  // for the gateway's window updates: 55 ms from the gateway's send to its
  // answer against 6 ms in the node, under 50 readers.
  "grpc-node.flow_control_window": 16 * 1024 * 1024,
};

export interface GrpcServerHandle {
  port: number;
  /** Finish in-flight requests, end every stream, stop listening (forced after graceMs). */
  close(graceMs?: number): Promise<void>;
  /** Streams currently open (for leak checks and metrics). */
  openStreams(): number;
  /** Requests being handled right now. */
  inFlight(): number;
}

type PbResponse = ReturnType<typeof toPbResponse>;
type Call = grpc.ServerDuplexStream<Buffer, Buffer>;

class ServerState {
  readonly streams = new Set<StreamState>();
  closing = false;
  inflight = 0;
  constructor(readonly handler: RequestHandler) {}
}

class StreamState {
  private out: PbResponse[] = [];
  private scheduled = false;
  private halfClosed = false;
  closed = false;
  inflight = 0;
  private readonly flushBound = () => this.flush();

  constructor(
    readonly call: Call,
    readonly srv: ServerState,
  ) {}

  onData(buf: Buffer): void {
    if (this.closed) return;
    let items;
    try {
      items = decodeRequestBatch(buf);
    } catch {
      // A peer that speaks garbage gets its stream closed.
      this.fail(grpc.status.INVALID_ARGUMENT, "bad RequestBatch");
      return;
    }
    const now = Date.now();
    for (let i = 0; i < items.length; i++) {
      const { corr, req } = fromPbRequest(items[i]);
      // Whoever reaches this port speaks for a gateway at most: the node
      // checks what that may call (NodeRuntime.handle).
      req.origin = "external";
      if (this.srv.closing) this.reply(corr, MOVED_CLOSING, false);
      else if (req.deadline <= now) this.reply(corr, unavailable(), false);
      else {
        this.inflight++;
        this.srv.inflight++;
        void run(this, corr, req);
      }
    }
  }

  reply(corr: number, res: ActorResponse, counted: boolean): void {
    if (counted) {
      this.inflight--;
      this.srv.inflight--;
    }
    if (this.closed) return;
    this.out.push(toPbResponse(corr, res));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushBound);
    }
  }

  private flush(): void {
    this.scheduled = false;
    if (this.closed) return;
    const out = this.out;
    if (out.length > 0) {
      this.out = [];
      try {
        for (let i = 0; i < out.length; i += MAX_BATCH) {
          const chunk = i === 0 && out.length <= MAX_BATCH ? out : out.slice(i, i + MAX_BATCH);
          this.call.write(asBuffer(encodeResponseBatch(chunk)));
        }
      } catch {
        this.finish();
        return;
      }
    }
    this.maybeEnd();
  }

  onEnd(): void {
    this.halfClosed = true;
    this.maybeEnd();
  }

  /** End our half once the peer has ended its half (or we are closing) and nothing is pending. */
  maybeEnd(): void {
    if (this.closed || this.inflight > 0 || this.out.length > 0) return;
    if (!this.halfClosed && !this.srv.closing) return;
    try {
      this.call.end();
    } catch {
      // already gone
    }
    this.finish();
  }

  private fail(code: grpc.status, details: string): void {
    try {
      this.call.destroy(Object.assign(new Error(details), { code, details }));
    } catch {
      // already gone
    }
    this.finish();
  }

  finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.out = [];
    this.srv.streams.delete(this);
  }
}

async function run(s: StreamState, corr: number, req: ActorRequest): Promise<void> {
  let span: Span | null = null;
  if (req.traceparent !== undefined) {
    span = continueSpan(STREAM_PATH.slice(1), SpanKind.SERVER, req.traceparent, {
      "rpc.system": "grpc",
      "rpc.service": "zulipactors.Actors",
      "rpc.method": "Stream",
      ...actorAttributes(req.ref, req.method),
    });
    // The node's spans (the actor turn) become children of this one.
    if (span !== null) req.traceparent = traceparentOf(span);
  }
  let res: ActorResponse;
  try {
    res = await s.srv.handler(req);
  } catch {
    res = internalError();
  }
  if (span !== null) endWithResponse(span, res);
  s.reply(corr, res, true);
}

function asBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

/**
 * TLS only, and a client certificate signed by `tls.ca` is required: with it
 * the only peers a node serves are gateways holding a key of the cluster.
 */
export function grpcServerCredentials(tls: GrpcTls | null): grpc.ServerCredentials {
  if (tls === null) return grpc.ServerCredentials.createInsecure();
  return grpc.ServerCredentials.createSsl(tls.ca, [{ cert_chain: tls.cert, private_key: tls.key }], true);
}

export async function startGrpcServer(
  handler: RequestHandler,
  port: number,
  host = "127.0.0.1",
  tls: GrpcTls | null = null,
): Promise<GrpcServerHandle> {
  const state = new ServerState(handler);
  const server = new grpc.Server(GRPC_OPTIONS);
  server.addService(ACTOR_SERVICE, {
    Stream: (call: Call) => {
      const s = new StreamState(call, state);
      state.streams.add(s);
      call.on("data", (buf: Buffer) => s.onData(buf));
      call.on("end", () => s.onEnd());
      call.on("cancelled", () => s.finish());
      call.on("error", () => s.finish());
      call.on("close", () => s.finish());
    },
  });
  const bound = await new Promise<number>((resolve, reject) => {
    // An IPv6 address (GRPC_BIND=::) needs brackets before the port.
    const addr = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
    server.bindAsync(`${addr}:${port}`, grpcServerCredentials(tls), (err, p) =>
      err ? reject(err) : resolve(p),
    );
  });
  let closed: Promise<void> | null = null;
  return {
    port: bound,
    openStreams: () => state.streams.size,
    inFlight: () => state.inflight,
    close(graceMs = 2000) {
      closed ??= new Promise<void>((resolve) => {
        state.closing = true;
        for (const s of [...state.streams]) s.maybeEnd();
        const force = setTimeout(() => {
          server.forceShutdown();
          for (const s of [...state.streams]) s.finish();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          for (const s of [...state.streams]) s.finish();
          resolve();
        });
      });
      return closed;
    },
  };
}
