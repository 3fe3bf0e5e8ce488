// Tracing: OpenTelemetry's trace SDK (@opentelemetry/sdk-trace-base), started
// first by every process (server.ts, cluster/node-main.ts,
// gateway/gateway-main.ts). Not @opentelemetry/sdk-node: it loads the
// metrics, logs and every exporter's packages (~300 modules, a third of a
// second at every start) for pipelines this server does not use.
//
// One trace per request. The gateway's HTTP span is the root (or the child
// of an incoming `traceparent`); every hop after it carries the W3C
// `traceparent` of its caller's span inside the message itself (the
// ActorRequest field over gRPC, where many requests share one long-lived
// stream; a NATS header between nodes), and each hop creates its spans by
// hand: gRPC client/server, NATS client/server, the actor turn, the store
// calls. Actor code never sees any of it: ctx.call carries the turn's
// context through cluster/node.ts.
//
// Sampling is decided once, at the gateway: parent-based with a trace-id
// ratio (OTEL_TRACES_SAMPLER_ARG, default 0.01). Downstream hops only
// continue a trace whose traceparent says "sampled"; an unsampled request
// carries no traceparent and costs the nodes nothing.
//
// The unsampled path is meant to be nearly free (docs/benchmarks.md
// "Tracing cost" has the benchmark): the gateway decides before any span exists (startHttpSpan: one
// Math.random() without a traceparent, a regex over it with one), so an
// unsampled request allocates no span, ids or attributes; the SDK's own
// sampler (DecidedSampler) only records what was decided here. The active
// span is a module variable set by withSpan, so a store call outside a
// trace is one comparison, and with tracing off the store is not wrapped.
//
// Environment (the OpenTelemetry conventions):
// - OTEL_SDK_DISABLED=true: no SDK at all (tracing off).
// - OTEL_TRACES_SAMPLER: parentbased_traceidratio (default), traceidratio,
//   parentbased_always_on, always_on, parentbased_always_off, always_off.
// - OTEL_TRACES_SAMPLER_ARG: the ratio, 0..1 (default 0.01).
// - OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: OTLP
//   over HTTP (JSON) through a BatchSpanProcessor (OTEL_BSP_* apply). Unset:
//   no exporter, so sampled spans are recorded and dropped.
// - OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: the resource.
import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  isSpanContextValid,
  SamplingDecision,
  type Attributes,
  type Context,
  type ContextManager,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import { parseTraceParent } from "@opentelemetry/core";
import type * as OtlpHttp from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  NoopSpanProcessor,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SamplingResult,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { createRequire } from "node:module";
import type { ActorRef } from "../actors/types.ts";
import type { Store } from "./storage/contract.ts";
import type { ActorResponse } from "./transport/contract.ts";
import { componentLogger } from "./log.ts";

export { SpanKind, type Span };

export const DEFAULT_SAMPLE_RATIO = 0.01;
const TRACER_NAME = "zulip-actors";

export interface SamplerConfig {
  /** Follow the parent's sampled flag when there is a parent. */
  parentBased: boolean;
  /** Share of root traces sampled, 0..1. */
  ratio: number;
}

/** OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG, with our default of parent-based 1%. */
export function samplerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): SamplerConfig {
  const name = (env.OTEL_TRACES_SAMPLER ?? "").trim().toLowerCase();
  const rawArg = (env.OTEL_TRACES_SAMPLER_ARG ?? "").trim();
  const arg = rawArg === "" ? NaN : Number(rawArg);
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : DEFAULT_SAMPLE_RATIO;
  switch (name) {
    case "always_on":
      return { parentBased: false, ratio: 1 };
    case "always_off":
      return { parentBased: false, ratio: 0 };
    case "parentbased_always_on":
      return { parentBased: true, ratio: 1 };
    case "parentbased_always_off":
      return { parentBased: true, ratio: 0 };
    case "traceidratio":
      return { parentBased: false, ratio };
    default:
      if (name !== "" && name !== "parentbased_traceidratio")
        componentLogger("tracing").warn(
          { sampler: name },
          "unknown OTEL_TRACES_SAMPLER, using parentbased_traceidratio",
        );
      return { parentBased: true, ratio };
  }
}

/**
 * The configured sampling (its ratio can be changed at run time: tests,
 * benchmarks). The gateway decides in startHttpSpan, before any span
 * exists; the SDK's sampler below only records what was decided.
 */
let samplerCfg: SamplerConfig = { parentBased: true, ratio: DEFAULT_SAMPLE_RATIO };
/** Non-parent-based modes: the ratio applied to an incoming trace id. */
let byTraceId = new TraceIdRatioBasedSampler(DEFAULT_SAMPLE_RATIO);

function configureSampling(cfg: SamplerConfig): void {
  samplerCfg = cfg;
  byTraceId = new TraceIdRatioBasedSampler(cfg.ratio);
}

/** Marks a context whose span the gateway decided to sample. */
const DECIDED = Symbol("zulip.sampled");
const SAMPLED_ROOT = ROOT_CONTEXT.setValue(DECIDED, true);

/**
 * The SDK's sampler: a span the gateway decided to trace (SAMPLED_ROOT) is
 * recorded; any other span follows its parent's sampled flag (every hop
 * after the gateway only continues sampled parents); a root started
 * elsewhere (none in this code) gets the ratio.
 */
class DecidedSampler implements Sampler {
  shouldSample(ctx: Context): SamplingResult {
    if (ctx.getValue(DECIDED) === true) return RECORD;
    const parent = trace.getSpanContext(ctx);
    if (parent !== undefined && isSpanContextValid(parent))
      return (parent.traceFlags & TraceFlags.SAMPLED) !== 0 ? RECORD : DROP;
    return Math.random() < samplerCfg.ratio ? RECORD : DROP;
  }
  toString(): string {
    return `DecidedSampler{${samplerCfg.parentBased ? "parentbased_" : ""}traceidratio ${samplerCfg.ratio}}`;
  }
}
const RECORD: SamplingResult = { decision: SamplingDecision.RECORD_AND_SAMPLED };
const DROP: SamplingResult = { decision: SamplingDecision.NOT_RECORD };

export interface TracingOptions {
  /** service.name of this process (OTEL_SERVICE_NAME wins). */
  service: string;
  /** service.instance.id (e.g. the node id). */
  instance?: string;
  /** Extra processors (tests: a SimpleSpanProcessor over an InMemorySpanExporter). */
  spanProcessors?: SpanProcessor[];
  /** Override the environment's sampler. */
  sampler?: SamplerConfig;
}

let provider: BasicTracerProvider | null = null;
let tracer: Tracer = trace.getTracer(TRACER_NAME);

/** The OTLP exporter's package, loaded only when an endpoint is configured. */
function otlpHttp(): typeof OtlpHttp {
  return createRequire(import.meta.url)("@opentelemetry/exporter-trace-otlp-http") as typeof OtlpHttp;
}

/**
 * Start tracing for this process (idempotent: the first call wins). Returns
 * false when tracing is disabled (OTEL_SDK_DISABLED=true).
 */
export function startTracing(o: TracingOptions): boolean {
  if (provider !== null) return true;
  if (/^(true|1)$/i.test((process.env.OTEL_SDK_DISABLED ?? "").trim())) return false;
  const processors: SpanProcessor[] = [...(o.spanProcessors ?? [])];
  const endpoint = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (endpoint) processors.push(new BatchSpanProcessor(new (otlpHttp().OTLPTraceExporter)()));
  // Without a processor spans are still sampled (the ids reach the logs), and dropped.
  if (processors.length === 0) processors.push(new NoopSpanProcessor());
  configureSampling(o.sampler ?? samplerConfigFromEnv());
  const service = process.env.OTEL_SERVICE_NAME || o.service;
  const attrs: Attributes = { "service.name": service };
  if (o.instance) attrs["service.instance.id"] = o.instance;
  // OTEL_RESOURCE_ATTRIBUTES adds to (and overrides) ours, except the service name.
  const resource = resourceFromAttributes(attrs)
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ "service.name": service }));
  provider = new BasicTracerProvider({ resource, sampler: new DecidedSampler(), spanProcessors: processors });
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new SyncContextManager());
  tracer = trace.getTracer(TRACER_NAME);
  return true;
}

/** Flush and stop (on process exit). */
export async function shutdownTracing(): Promise<void> {
  const p = provider;
  if (p === null) return;
  try {
    await p.shutdown();
  } catch {
    // exporter unreachable: spans are lost, the process still exits
  }
}

/** Whether this process records spans at all. */
export function tracingActive(): boolean {
  return provider !== null;
}

/** Change the root sampling ratio at run time (tests and benchmarks). */
export function setSamplingRatio(ratio: number): void {
  configureSampling({ ...samplerCfg, ratio });
}

/** W3C traceparent of a span. */
export function traceparentOf(span: Span): string {
  const sc = span.spanContext();
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The context of a traceparent that says "sampled", or null. */
function sampledParent(tp: string): Context | null {
  const sc = parseTraceParent(tp);
  if (sc === null || (sc.traceFlags & TraceFlags.SAMPLED) === 0) return null;
  return trace.setSpanContext(ROOT_CONTEXT, sc);
}

/**
 * A span continuing the trace of `tp` (the caller's traceparent), or null
 * when tracing is off or the caller's trace is not sampled. Every hop after
 * the gateway uses this: nodes never start traces of their own.
 */
export function continueSpan(name: string, kind: SpanKind, tp: string, attributes?: Attributes): Span | null {
  if (provider === null) return null;
  const parent = sampledParent(tp);
  if (parent === null) return null;
  const span = tracer.startSpan(name, { kind, attributes }, parent);
  return span.isRecording() ? span : null;
}

/** End a span with the outcome of an actor request. */
export function endWithResponse(span: Span, res: ActorResponse): void {
  if (!res.ok) {
    span.setAttribute("actor.error.kind", res.kind);
    if (res.code) span.setAttribute("actor.error.code", res.code);
    if (res.kind !== "zulip" || res.status >= 500)
      span.setStatus({ code: SpanStatusCode.ERROR, message: res.msg });
  }
  span.end();
}

/** End a span with a thrown error (or none). */
export function endWithError(span: Span, err?: unknown): void {
  if (err !== undefined) {
    const status = (err as { status?: unknown } | null)?.status;
    if (typeof status !== "number" || status >= 500) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: err instanceof Error ? err.message : String(err),
      });
    }
    if (err instanceof Error) span.setAttribute("exception.type", err.name);
  }
  span.end();
}

/** The span of the innermost withSpan running now (what tracedStore checks, without the context API). */
let activeSpan: Span | null = null;

/**
 * Run `fn` with `span` as the active span: store calls `fn` makes before its
 * first await become the span's children (tracedStore reads activeSpan; the
 * OpenTelemetry context, for any other reader, is SyncContextManager below).
 */
export function withSpan<T>(span: Span, fn: () => T): T {
  const prev = activeSpan;
  activeSpan = span;
  try {
    return context.with(trace.setSpan(ROOT_CONTEXT, span), fn);
  } finally {
    activeSpan = prev;
  }
}

/** withSpan when there is a span, else just `fn()`. */
export function inSpan<T>(span: Span | null | undefined, fn: () => T): T {
  return span ? withSpan(span, fn) : fn();
}

/**
 * The active context lasts for the synchronous run of `context.with` only.
 * Every hop passes its trace context explicitly, so nothing needs it to
 * follow awaits; an AsyncLocalStorage manager would (on Node 20) turn on
 * promise hooks for every promise of the process once the first sampled
 * request ran, which costs the unsampled requests too.
 */
class SyncContextManager implements ContextManager {
  private current: Context = ROOT_CONTEXT;
  active(): Context {
    return this.current;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const prev = this.current;
    this.current = ctx;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.current = prev;
    }
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== "function") return target;
    const f = target as unknown as (...a: unknown[]) => unknown;
    return ((...a: unknown[]) => this.with(ctx, () => f(...a))) as unknown as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.current = ROOT_CONTEXT;
    return this;
  }
}

// ---- Gateway ----------------------------------------------------------------------

/**
 * The gateway's HTTP server span for a request, or null when not sampled.
 * An incoming `traceparent` is honoured (parent-based sampling: its sampled
 * flag decides; otherwise the ratio over its trace id); without one (or
 * with a malformed one) the ratio decides. The decision comes first, so an
 * unsampled request costs a random draw (or the traceparent regex) and
 * allocates nothing.
 */
export function startHttpSpan(method: string, route: string, tpHeader: string | undefined): Span | null {
  if (provider === null) return null;
  let parent = SAMPLED_ROOT;
  const sc = tpHeader === undefined ? null : parseTraceParent(tpHeader);
  if (sc === null || !isSpanContextValid(sc)) {
    if (!(Math.random() < samplerCfg.ratio)) return null;
  } else {
    const keep = samplerCfg.parentBased
      ? (sc.traceFlags & TraceFlags.SAMPLED) !== 0
      : byTraceId.shouldSample(ROOT_CONTEXT, sc.traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
    if (!keep) return null;
    parent = trace.setSpanContext(SAMPLED_ROOT, { ...sc, isRemote: true });
  }
  const span = tracer.startSpan(
    `${method} ${route}`,
    { kind: SpanKind.SERVER, attributes: { "http.request.method": method, "http.route": route } },
    parent,
  );
  return span.isRecording() ? span : null;
}

export function endHttpSpan(span: Span, status: number, urlPath: string): void {
  span.setAttribute("http.response.status_code", status);
  span.setAttribute("url.path", urlPath);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

// ---- Actor turns ----------------------------------------------------------------------

export function actorAttributes(ref: ActorRef, method: string): Attributes {
  return { "actor.kind": ref.kind, "actor.realm": ref.realm, "actor.key": ref.key, "actor.method": method };
}

/**
 * The span of one actor turn; `settle` (the turn's resolve/reject) is
 * wrapped so the span ends when the turn's reply is released.
 */
export function startTurnSpan(
  ref: ActorRef,
  method: string,
  tp: string,
  turn: { resolve(v: never): void; reject(e: unknown): void },
): Span | null {
  const span = continueSpan(`${ref.kind}.${method}`, SpanKind.INTERNAL, tp, actorAttributes(ref, method));
  if (span === null) return null;
  const resolve = turn.resolve.bind(turn);
  const reject = turn.reject.bind(turn);
  turn.resolve = (v: never) => {
    span.end();
    resolve(v);
  };
  turn.reject = (e: unknown) => {
    endWithError(span, e);
    reject(e);
  };
  return span;
}

// ---- Store ----------------------------------------------------------------------

/**
 * Wrap a store so its calls made inside a recorded span (the actor turn,
 * an activation) get a client span each: `redis append`, `redis nextId`, ...
 * Calls outside a trace (lease renewals, unsampled turns) pass straight
 * through.
 */
export function tracedStore<S extends Store>(store: S, system: "redis" | "lmdb"): S {
  // Tracing off (startTracing runs first in every process): the store itself, nothing to pay.
  if (provider === null) return store;
  const cache = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== "function" || typeof prop !== "string" || prop === "close") return v;
      let w = cache.get(prop);
      if (w === undefined) {
        const fn = v as (...a: unknown[]) => unknown;
        const name = `${system} ${prop}`;
        w = function (this: unknown, ...args: unknown[]) {
          const parent = activeSpan;
          if (parent === null || !parent.isRecording()) return fn.apply(target, args);
          const span = tracer.startSpan(
            name,
            { kind: SpanKind.CLIENT, attributes: { "db.system.name": system, "db.operation.name": prop } },
            trace.setSpan(ROOT_CONTEXT, parent),
          );
          let out: unknown;
          try {
            out = fn.apply(target, args);
          } catch (err) {
            endWithError(span, err);
            throw err;
          }
          if (out instanceof Promise) {
            return out.then(
              (r) => {
                span.end();
                return r;
              },
              (err) => {
                endWithError(span, err);
                throw err;
              },
            );
          }
          span.end();
          return out;
        };
        cache.set(prop, w);
      }
      return w;
    },
  });
}
