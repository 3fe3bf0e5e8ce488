// Structured logs (cluster/log.ts): JSON lines with the process's base
// fields, the level from LOG_LEVEL, child loggers' context, and the active
// trace's ids on lines written inside a recorded span.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { createLogger, logLevelFromEnv } from "../cluster/log.ts";
import { shutdownTracing, startHttpSpan, startTracing, withSpan } from "../cluster/tracing.ts";

function capture(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  let text = "";
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  return {
    stream,
    lines: () =>
      text
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

test("log - lines are JSON with base fields, child context and the level from LOG_LEVEL", () => {
  const saved = process.env.LOG_LEVEL;
  try {
    process.env.LOG_LEVEL = "warn";
    const out = capture();
    const log = createLogger({ service: "zulip-node", node: "n1" }, out.stream);
    log.info("not shown");
    log.child({ component: "catalog", shard: 7 }).warn({ kind: "user" }, "shown");
    const lines = out.lines();
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.msg, "shown");
    assert.equal(lines[0]!.level, 40);
    assert.equal(lines[0]!.service, "zulip-node");
    assert.equal(lines[0]!.node, "n1");
    assert.equal(lines[0]!.component, "catalog");
    assert.equal(lines[0]!.shard, 7);
    assert.equal(lines[0]!.kind, "user");
    assert.equal(typeof lines[0]!.time, "string");
    assert.equal(lines[0]!.trace_id, undefined);
  } finally {
    if (saved === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = saved;
  }
});

test("log - LOG_LEVEL is checked", () => {
  assert.equal(logLevelFromEnv({}), "info");
  assert.equal(logLevelFromEnv({ LOG_LEVEL: " DEBUG " }), "debug");
  assert.throws(() => logLevelFromEnv({ LOG_LEVEL: "loud" }), /LOG_LEVEL must be one of/);
});

test("log - a line written inside a recorded span carries its trace and span ids", async () => {
  startTracing({ service: "log-test", sampler: { parentBased: true, ratio: 1 } });
  try {
    const out = capture();
    const log = createLogger({ service: "t" }, out.stream);
    const span = startHttpSpan("GET", "/x", undefined);
    assert.ok(span, "sampled at ratio 1");
    withSpan(span, () => log.info("inside"));
    span.end();
    log.info("outside");
    const [inside, outside] = out.lines();
    assert.equal(inside!.trace_id, span.spanContext().traceId);
    assert.equal(inside!.span_id, span.spanContext().spanId);
    assert.equal(outside!.trace_id, undefined);
  } finally {
    await shutdownTracing();
  }
});
