// Structured logs: one pino logger per process, JSON lines on stdout, the
// level from LOG_LEVEL (trace, debug, info, warn, error, fatal, silent;
// default info). The process's entry point names the logger once
// (startProcess in compose/process.ts calls setRootLogger); components take
// a child of it (per node, shard, actor kind, component), so every line
// carries where it came from. A line written while a sampled trace is
// active also carries its trace_id and span_id (the mixin below), so logs
// and traces join; lines about a request carry its req_id.
import { trace } from "@opentelemetry/api";
import { pino, type Logger } from "pino";

export type { Logger };

const LEVELS = new Set(["trace", "debug", "info", "warn", "error", "fatal", "silent"]);

export function logLevelFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const v = (env.LOG_LEVEL ?? "").trim().toLowerCase();
  if (v === "") return "info";
  if (!LEVELS.has(v))
    throw new Error(`LOG_LEVEL must be one of ${[...LEVELS].join(", ")}, got ${env.LOG_LEVEL}`);
  return v;
}

/** The active span's ids, when a sampled trace is being recorded. */
function traceIds(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (span === undefined || !span.isRecording()) return {};
  const c = span.spanContext();
  return { trace_id: c.traceId, span_id: c.spanId };
}

/** A logger with `base` on every line (e.g. {service: "zulip-node", node: "n1"}). */
export function createLogger(base: Record<string, unknown>, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level: logLevelFromEnv(),
    base: { pid: process.pid, ...base },
    mixin: traceIds,
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}

let root: Logger | null = null;

/** The process's logger; until an entry point sets one, a logger named by the process alone. */
export function rootLogger(): Logger {
  return (root ??= createLogger({}));
}

/** Called once by the process's entry point. */
export function setRootLogger(logger: Logger): void {
  root = logger;
}

/** The logger of one component: a child of the root unless one is given. */
export function componentLogger(component: string, given?: Logger): Logger {
  return (given ?? rootLogger()).child({ component });
}
