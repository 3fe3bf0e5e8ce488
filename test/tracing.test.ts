// Tracing (cluster/tracing.ts, docs/operations.md "Tracing"): one trace per request from
// the gateway's HTTP span through the gRPC hop, the actor turn, NATS to
// another actor and the store calls; parent-based ratio sampling that
// honours an incoming sampled traceparent; nothing recorded for unsampled
// requests.
//
// Embedded mode runs in this process with an in-memory exporter. Cluster
// mode runs real node and gateway processes that export OTLP/JSON to a small
// HTTP receiver started here (test/support/otlp-receiver.ts).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { SpanKind } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { samplerConfigFromEnv, setSamplingRatio, startTracing } from "../cluster/tracing.ts";
import {
  basicAuth,
  formEncode,
  startCluster,
  startEmbedded,
  type Creds,
  type EmbeddedHandle,
  type TestCluster,
} from "./support/index.ts";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./support/otlp-receiver.ts";

// OTLP's SpanKind numbers (the API's plus one).
const SERVER = 2;
const CLIENT = 3;

function newTraceparent(sampled: boolean): { tp: string; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString("hex");
  const spanId = randomBytes(8).toString("hex");
  return { tp: `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`, traceId, spanId };
}

/** One HTTP request with an optional traceparent header. */
async function send(
  baseUrl: string,
  method: string,
  path: string,
  params: Record<string, unknown>,
  auth: Creds,
  traceparent?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = {
    authorization: basicAuth(auth),
    "content-type": "application/x-www-form-urlencoded",
  };
  if (traceparent !== undefined) headers.traceparent = traceparent;
  const res = await fetch(`${baseUrl}/api/v1${path}`, { method, headers, body: formEncode(params) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let seq = 0;
const newEmail = () => `traced${++seq}-${Date.now()}@example.com`;

test("sampler - OTEL_TRACES_SAMPLER(_ARG) with a parent-based 1% default", () => {
  assert.deepEqual(samplerConfigFromEnv({}), { parentBased: true, ratio: 0.01 });
  assert.deepEqual(samplerConfigFromEnv({ OTEL_TRACES_SAMPLER_ARG: "0.25" }), {
    parentBased: true,
    ratio: 0.25,
  });
  assert.deepEqual(samplerConfigFromEnv({ OTEL_TRACES_SAMPLER_ARG: "1.5" }), {
    parentBased: true,
    ratio: 0.01,
  });
  assert.deepEqual(samplerConfigFromEnv({ OTEL_TRACES_SAMPLER_ARG: "abc" }), {
    parentBased: true,
    ratio: 0.01,
  });
  assert.deepEqual(
    samplerConfigFromEnv({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.5" }),
    {
      parentBased: false,
      ratio: 0.5,
    },
  );
  assert.deepEqual(samplerConfigFromEnv({ OTEL_TRACES_SAMPLER: "always_off" }), {
    parentBased: false,
    ratio: 0,
  });
  assert.deepEqual(samplerConfigFromEnv({ OTEL_TRACES_SAMPLER: "parentbased_always_on" }), {
    parentBased: true,
    ratio: 1,
  });
});

describe("embedded mode (in-memory exporter)", () => {
  const mem = new InMemorySpanExporter();
  let srv: EmbeddedHandle;

  before(async () => {
    // Root ratio 0: only requests that arrive with a sampled traceparent are traced.
    assert.equal(
      startTracing({
        service: "zulip-embedded-test",
        spanProcessors: [new SimpleSpanProcessor(mem)],
        sampler: { parentBased: true, ratio: 0 },
      }),
      true,
    );
    srv = await startEmbedded();
  });
  after(async () => {
    await srv.stop();
  });

  const ofTrace = (traceId: string) =>
    mem.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
  const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId ?? "";
  async function waitFor(traceId: string, pred: (spans: ReadableSpan[]) => boolean): Promise<ReadableSpan[]> {
    for (let i = 0; i < 100; i++) {
      const spans = ofTrace(traceId);
      if (pred(spans)) return spans;
      await sleep(20);
    }
    return ofTrace(traceId);
  }

  test("a sampled traceparent gives HTTP span -> actor turn -> store spans, one trace", async () => {
    const { tp, traceId, spanId } = newTraceparent(true);
    const r = await send(srv.baseUrl, "PATCH", "/settings", { web_font_size_px: 17 }, srv.owner, tp);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const spans = await waitFor(traceId, (s) => s.some((x) => x.name === "lmdb append"));
    const http = spans.find((s) => s.name === "PATCH /api/v1/settings");
    assert.ok(http, `HTTP span among ${spans.map((s) => s.name)}`);
    assert.equal(http.kind, SpanKind.SERVER);
    assert.equal(parentOf(http), spanId, "the incoming traceparent is the HTTP span's parent");
    assert.equal(http.attributes["http.route"], "/api/v1/settings");
    assert.equal(http.attributes["http.request.method"], "PATCH");
    assert.equal(http.attributes["http.response.status_code"], 200);
    const turn = spans.find((s) => s.name === "user.updateSettings");
    assert.ok(turn, `turn span among ${spans.map((s) => s.name)}`);
    assert.equal(parentOf(turn), http.spanContext().spanId);
    assert.equal(turn.attributes["actor.kind"], "user");
    assert.equal(turn.attributes["actor.method"], "updateSettings");
    assert.equal(turn.attributes["actor.key"], String(srv.owner.userId));
    assert.equal(typeof turn.attributes["actor.realm"], "number");
    const append = spans.find((s) => s.name === "lmdb append");
    assert.ok(append);
    assert.equal(parentOf(append), turn.spanContext().spanId, "the journal append is under the turn");
    assert.equal(append.kind, SpanKind.CLIENT);
  });

  test("ctx.call from an actor continues the turn's trace", async () => {
    const { tp, traceId } = newTraceparent(true);
    const r = await send(
      srv.baseUrl,
      "POST",
      "/users",
      { email: newEmail(), password: "a-long-password-123", full_name: "Traced" },
      srv.owner,
      tp,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const spans = await waitFor(traceId, (s) => s.some((x) => x.name === "user.create"));
    const http = spans.find((s) => s.name === "POST /api/v1/users")!;
    assert.ok(http);
    const realmTurn = spans.find((s) => s.name === "realm.createUser");
    assert.ok(realmTurn, `realm turn among ${spans.map((s) => s.name)}`);
    assert.equal(parentOf(realmTurn), http.spanContext().spanId);
    const userTurn = spans.find((s) => s.name === "user.create")!;
    assert.equal(parentOf(userTurn), realmTurn.spanContext().spanId, "the called actor's turn is a child");
  });

  test("unsampled requests record nothing at ratio 0; ratio 1 starts root traces", async () => {
    mem.reset();
    const unsampled = newTraceparent(false);
    assert.equal(
      (await send(srv.baseUrl, "PATCH", "/settings", { web_font_size_px: 15 }, srv.owner)).status,
      200,
    );
    assert.equal(
      (await send(srv.baseUrl, "PATCH", "/settings", { web_font_size_px: 16 }, srv.owner, unsampled.tp))
        .status,
      200,
    );
    await sleep(100);
    assert.deepEqual(
      mem.getFinishedSpans().map((s) => s.name),
      [],
      "no spans for unsampled requests",
    );
    setSamplingRatio(1);
    try {
      assert.equal(
        (await send(srv.baseUrl, "PATCH", "/settings", { web_font_size_px: 17 }, srv.owner)).status,
        200,
      );
      // The incoming "not sampled" decision is honoured even at ratio 1.
      const again = newTraceparent(false);
      assert.equal(
        (await send(srv.baseUrl, "PATCH", "/settings", { web_font_size_px: 15 }, srv.owner, again.tp)).status,
        200,
      );
    } finally {
      setSamplingRatio(0);
    }
    await sleep(100);
    const spans = mem.getFinishedSpans();
    const http = spans.filter((s) => s.name === "PATCH /api/v1/settings");
    assert.equal(http.length, 1, "one root trace");
    assert.equal(parentOf(http[0]!), "", "a root span");
    assert.ok(
      spans.some((s) => s.name === "user.updateSettings" && parentOf(s) === http[0]!.spanContext().spanId),
    );
  });
});

describe("cluster mode (OTLP to a receiver)", () => {
  let receiver: OtlpReceiver;
  let c: TestCluster;

  before(async () => {
    receiver = await startOtlpReceiver();
    const saved = { ...process.env };
    // The child processes inherit these (bench/procs.ts passes process.env on).
    Object.assign(process.env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0",
    });
    delete process.env.OTEL_SDK_DISABLED;
    try {
      c = await startCluster({ nodes: ["n1", "n2"], shards: 16 });
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
  after(async () => {
    await c?.stop();
    await receiver?.stop();
  });

  const ofTrace = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);

  async function waitFor(traceId: string, pred: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
    for (let i = 0; i < 100; i++) {
      const spans = ofTrace(traceId);
      if (pred(spans)) return spans;
      await sleep(50);
    }
    return ofTrace(traceId);
  }

  test("span tree: HTTP -> gRPC client -> gRPC server -> turn -> NATS -> turn, store spans, one trace", async () => {
    // realm.createUser calls user.create; the new user's shard is on the other
    // node for some user ids: create users until one call crosses NATS.
    let spans: ReceivedSpan[] = [];
    let traceId = "";
    let rootParent = "";
    for (let attempt = 0; attempt < 12; attempt++) {
      const t = newTraceparent(true);
      const r = await send(
        c.baseUrl,
        "POST",
        "/users",
        { email: newEmail(), password: "a-long-password-123", full_name: "Traced" },
        c.owner,
        t.tp,
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      // Each process exports on its own; wait for the gateway's span and both turns.
      const got = await waitFor(
        t.traceId,
        (s) =>
          s.some((x) => x.name === "POST /api/v1/users") &&
          s.some((x) => x.name === "user.create") &&
          s.filter((x) => x.name === "redis append").length >= 1,
      );
      if (got.some((s) => s.name === "user.create send")) {
        spans = got;
        traceId = t.traceId;
        rootParent = t.spanId;
        break;
      }
    }
    assert.ok(traceId, "some user.create call crossed NATS within 12 attempts");
    // Let late exports arrive: each node's batch exporter flushes on its own
    // clock, so wait for both appends and for every span's parent (but the
    // root's, which is the caller's) before judging the tree.
    spans = await waitFor(traceId, (s) => {
      const ids = new Set(s.map((x) => x.spanId));
      const orphans = s.filter((x) => !ids.has(x.parentSpanId) && x.parentSpanId !== rootParent);
      return s.filter((x) => x.name === "redis append").length >= 2 && orphans.length === 0;
    });
    const names = spans.map((s) => `${s.name} [${s.resource["service.name"]}]`);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const one = (name: string, parent?: ReceivedSpan): ReceivedSpan => {
      const found = spans.filter(
        (s) => s.name === name && (parent === undefined || s.parentSpanId === parent.spanId),
      );
      assert.equal(
        found.length,
        1,
        `exactly one "${name}" under ${parent?.name ?? "-"} in ${names.join(", ")}`,
      );
      return found[0]!;
    };

    assert.ok(
      spans.every((s) => s.traceId === traceId),
      "one trace id",
    );
    const http = one("POST /api/v1/users");
    assert.equal(http.parentSpanId, rootParent, "incoming traceparent honoured");
    assert.equal(http.kind, SERVER);
    assert.equal(http.resource["service.name"], "zulip-gateway");
    assert.equal(http.attributes["http.response.status_code"], 200);
    assert.equal(http.attributes["http.route"], "/api/v1/users");

    // POST /users makes two calls (createUser, then joinDefaultChannels):
    // follow the one to the realm.
    const rpcClients = spans.filter(
      (s) =>
        s.name === "zulipactors.Actors/Stream" &&
        s.parentSpanId === http.spanId &&
        s.attributes["actor.method"] === "createUser",
    );
    assert.equal(
      rpcClients.length,
      1,
      `exactly one createUser call under POST /api/v1/users in ${names.join(", ")}`,
    );
    const rpcClient = rpcClients[0]!;
    assert.equal(rpcClient.kind, CLIENT);
    assert.equal(rpcClient.resource["service.name"], "zulip-gateway");
    assert.equal(rpcClient.attributes["rpc.system"], "grpc");
    assert.equal(rpcClient.attributes["actor.kind"], "realm");
    assert.equal(rpcClient.attributes["actor.method"], "createUser");

    const rpcServer = one("zulipactors.Actors/Stream", rpcClient);
    assert.equal(rpcServer.kind, SERVER);
    assert.equal(rpcServer.resource["service.name"], "zulip-node");

    const realmTurn = one("realm.createUser", rpcServer);
    assert.equal(realmTurn.attributes["actor.kind"], "realm");
    assert.equal(realmTurn.attributes["actor.method"], "createUser");
    const realmNode = realmTurn.resource["service.instance.id"];

    const natsClient = one("user.create send", realmTurn);
    assert.equal(natsClient.kind, CLIENT);
    assert.equal(natsClient.attributes["messaging.system"], "nats");
    assert.match(String(natsClient.attributes["messaging.destination.name"]), /^act\.\d+\.user\./);
    const natsServer = one("user.create process", natsClient);
    assert.equal(natsServer.kind, SERVER);
    assert.notEqual(natsServer.resource["service.instance.id"], realmNode, "handled on the other node");

    const userTurn = one("user.create", natsServer);
    assert.equal(userTurn.attributes["actor.kind"], "user");
    assert.equal(userTurn.resource["service.instance.id"], natsServer.resource["service.instance.id"]);

    // Redis calls hang under a turn or under an activation (snapshot + journal reads).
    const underTurnOrActivation = (s: ReceivedSpan): boolean => {
      for (let p = byId.get(s.parentSpanId); p; p = byId.get(p.parentSpanId)) {
        if (p.attributes["actor.method"] !== undefined && p.kind === 1) return true;
        if (p.name.endsWith(" activate")) return true;
      }
      return false;
    };
    const appends = spans.filter((s) => s.name === "redis append");
    assert.ok(
      appends.some((s) => s.parentSpanId === userTurn.spanId),
      `user.create's journal append is its child: ${names.join(", ")}`,
    );
    assert.ok(
      appends.some((s) => s.parentSpanId === realmTurn.spanId),
      `realm.createUser's journal append is its child: ${names.join(", ")}`,
    );
    for (const s of spans.filter((x) => x.name.startsWith("redis "))) {
      assert.equal(s.kind, CLIENT);
      assert.equal(s.attributes["db.system.name"], "redis");
      assert.ok(underTurnOrActivation(s), `${s.name} hangs under a turn or an activation`);
    }
    // Every span's parent is in the trace, except the root's (the caller's span).
    for (const s of spans)
      if (s !== http) assert.ok(byId.has(s.parentSpanId), `${s.name} has its parent here`);
  });

  test("unsampled requests at ratio 0 export no spans", async () => {
    await sleep(500); // earlier traces flushed
    const before = receiver.spans.length;
    const unsampled = newTraceparent(false);
    assert.equal(
      (await send(c.baseUrl, "PATCH", "/settings", { web_font_size_px: 15 }, c.owner)).status,
      200,
    );
    assert.equal(
      (await send(c.baseUrl, "PATCH", "/settings", { web_font_size_px: 16 }, c.owner, unsampled.tp)).status,
      200,
    );
    const r = await send(
      c.baseUrl,
      "POST",
      "/users",
      { email: newEmail(), password: "a-long-password-123", full_name: "Untraced" },
      c.owner,
    );
    assert.equal(r.status, 200);
    await sleep(800);
    assert.deepEqual(
      receiver.spans.slice(before).map((s) => s.name),
      [],
      "nothing exported",
    );
    assert.equal(ofTrace(unsampled.traceId).length, 0);
  });
});
