// One conformance suite for the transport contract (cluster/transport/contract.ts),
// run against (a) the in-process transport and (b) the cluster transport: a
// real nats-server, a gRPC server reached through ClusterClient, and the
// NATS node-to-node path through NatsActorClient.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { ActorRef, Obj, Value } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import { ownerOf } from "../cluster/placement/rendezvous.ts";
import {
  ClusterClient,
  createInProcessTransport,
  Membership,
  NatsActorClient,
  NatsBus,
  openNatsConnections,
  serveShardSubjects,
  startGrpcServer,
  type ActorClient,
  type ActorRequest,
  type ActorResponse,
  type Bus,
  type GrpcServerHandle,
  type MemoryBus,
  type MembershipOptions,
  type RequestHandler,
  type ShardSubjects,
} from "../cluster/transport/index.ts";
import { NESTED_START_RESERVE_MS } from "../cluster/transport/retry.ts";
import { errorToResponse } from "../cluster/responses.ts";
import { UnavailableError } from "../cluster/runtime-errors.ts";
import { requireBinaries, sleep, startNats, waitFor, type Service } from "./support/index.ts";

const SHARDS = 16;

interface PeerBus {
  bus: Bus;
  /** Resolves once subscriptions made so far are in effect. */
  flush(): Promise<void>;
}

interface MovedSetup {
  clients: { name: string; client: ActorClient }[];
  /** Placement moves to the second server (it joins the cluster). */
  switchOver(): Promise<void>;
  close(): Promise<void>;
}

interface Harness {
  clients: { name: string; client: ActorClient }[];
  /** Install the node's request handler. */
  serve(h: RequestHandler): void;
  /** A bus as another process sees it. */
  bus(): Promise<PeerBus>;
  membership(bus: Bus, opts?: MembershipOptions): Membership;
  /**
   * Two servers: `first` serves the shard now; after switchOver() placement
   * says `second` owns it.
   */
  moved(first: RequestHandler, second: RequestHandler, shard: number): Promise<MovedSetup>;
  /** The node-to-node client a turn's calls to other nodes use (cluster only). */
  nested?: ActorClient;
  /** Close everything; then report what is still open (streams, connections, subscriptions). */
  close(): Promise<Record<string, number>>;
}

// ---- helpers ---------------------------------------------------------------------

const ref: ActorRef = { kind: "user", realm: 7, key: "42" };
const caller = { realmId: 7, userId: 42, role: 400, isBot: false };

function mkReq(method: string, args: Obj, deadlineIn = 5000, over: Partial<ActorRequest> = {}): ActorRequest {
  return {
    ref,
    shard: shardOf(ref, SHARDS),
    method,
    args,
    caller,
    deadline: Date.now() + deadlineIn,
    ...over,
  };
}

/** Waits until `cond` holds (test/support's waitFor) and returns how long that took, in ms. */
async function timeUntil(cond: () => boolean, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  await waitFor(cond, { timeoutMs, stepMs: 10 });
  return Date.now() - t0;
}

const ERROR_FULL: ActorResponse = {
  ok: false,
  kind: "zulip",
  code: "REQUEST_VARIABLE_INVALID",
  msg: "Bad value for 'x': ü 😀",
  status: 400,
  extra: { var_name: "x", bad_value: "y", nested: { list: [1, null, "a", { deep: true }] }, n: -3.5 },
  headers: { "Retry-After": "3", "X-Custom": "v" },
};
const ERROR_BARE: ActorResponse = {
  ok: false,
  kind: "zulip",
  code: "BAD_REQUEST",
  msg: "No such user",
  status: 400,
};

/** Turns the "turn" method started (it refuses after its deadline, like the runtime). */
let turnsStarted = 0;

/** The node-side handler every variant serves. */
const handler: RequestHandler = async (req): Promise<ActorResponse> => {
  switch (req.method) {
    case "echo":
      return {
        ok: true,
        value: {
          args: req.args,
          caller: req.caller as unknown as Value,
          ref: req.ref as unknown as Value,
          shard: req.shard,
          traceparent: req.traceparent ?? null,
        },
      };
    case "error":
      return req.args.bare ? ERROR_BARE : ERROR_FULL;
    case "throw":
      throw new Error("boom");
    case "slow":
      await sleep(Number(req.args.ms));
      return { ok: true, value: "late" };
    case "turn":
      // As the actor runtime does: wait in the mailbox, refuse to start
      // after the deadline, else run (and journal) the turn.
      if (req.args.queueMs !== undefined) await sleep(Number(req.args.queueMs));
      if (req.deadline < Date.now()) {
        return errorToResponse(new UnavailableError("deadline exceeded before the turn started"));
      }
      turnsStarted++;
      await sleep(Number(req.args.ms));
      return { ok: true, value: "committed" };
    case "big":
      // An answer larger than NATS's default max_payload (1 MiB).
      return { ok: true, value: { s: "x".repeat(Number(req.args.bytes)), end: "ü" } };
    case "jitter":
      if (Math.random() < 0.5) await sleep(Math.floor(Math.random() * 5));
      else await Promise.resolve();
      return { ok: true, value: { i: req.args.i } };
    default:
      return { ok: false, kind: "zulip", code: "BAD_REQUEST", msg: `no method ${req.method}`, status: 400 };
  }
};

const ARGS: Obj = {
  s: "héllo wörld ✓ 😀 中文",
  empty: "",
  ключ: "значение",
  int: 42,
  neg: -7,
  int32min: -2147483648,
  int32max: 2147483647,
  over32: 2147483648,
  big: Number.MAX_SAFE_INTEGER,
  negBig: -Number.MAX_SAFE_INTEGER,
  float: 3.14159,
  negFloat: -0.5,
  tiny: 5e-324,
  huge: 1e300,
  zero: 0,
  nul: null,
  t: true,
  f: false,
  list: [1, "a", null, [2, { x: 1 }], []],
  nested: { deep: { deeper: { v: "x", l: [true, false] } }, emptyObj: {} },
};

// ---- the suite -------------------------------------------------------------------

function conformance(name: string, factory: () => Promise<Harness>, skip?: string): void {
  describe(name, { skip }, () => {
    let h: Harness;
    let closed = false;

    before(async () => {
      h = await factory();
      h.serve(handler);
    });
    after(async () => {
      if (h && !closed) await h.close();
    });

    test("round trip of args and caller", async () => {
      for (const { name: cn, client } of h.clients) {
        const req = mkReq("echo", ARGS, 5000, {
          traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
          ref: { kind: "queue", realm: 7, key: "q:1/ü", shardKey: "42" },
        });
        const res = await client.request(req);
        assert.ok(res.ok, `${cn}: ${JSON.stringify(res)}`);
        assert.deepEqual(res.value, {
          args: ARGS,
          caller,
          ref: req.ref as unknown as Value,
          shard: req.shard,
          traceparent: req.traceparent as string,
        });
        const anon = await client.request(mkReq("echo", {}, 5000, { caller: null }));
        assert.ok(anon.ok, cn);
        assert.equal((anon.value as Obj).caller, null, cn);
        assert.equal((anon.value as Obj).traceparent, null, cn);
      }
    });

    test("an error response passes through intact", async () => {
      for (const { name: cn, client } of h.clients) {
        assert.deepEqual(await client.request(mkReq("error", {})), ERROR_FULL, cn);
        assert.deepEqual(await client.request(mkReq("error", { bare: true })), ERROR_BARE, cn);
        const thrown = await client.request(mkReq("throw", {}));
        assert.deepEqual(
          thrown,
          { ok: false, kind: "zulip", code: "", msg: "Internal server error", status: 500 },
          cn,
        );
      }
    });

    test("500 concurrent requests complete with correct correlation", async () => {
      for (const { name: cn, client } of h.clients) {
        const n = 500;
        const res = await Promise.all(
          Array.from({ length: n }, (_, i) => client.request(mkReq("jitter", { i }))),
        );
        for (let i = 0; i < n; i++) {
          const r = res[i];
          assert.ok(r.ok, `${cn} #${i}: ${JSON.stringify(r)}`);
          assert.deepEqual(r.value, { i }, cn);
        }
      }
    });

    test("an answer larger than NATS's max_payload arrives whole", async () => {
      for (const { name: cn, client } of h.clients) {
        for (const bytes of [3 * 1024 * 1024 + 17, 1024 * 1024 - 100]) {
          const t0 = Date.now();
          const res = await client.request(mkReq("big", { bytes }));
          assert.ok(res.ok, `${cn}: ${JSON.stringify(res).slice(0, 300)}`);
          const v = res.value as { s: string; end: string };
          assert.equal(v.s.length, bytes, cn);
          assert.equal(v.end, "ü", cn);
          assert.ok(Date.now() - t0 < 4000, `${cn}: ${Date.now() - t0} ms`);
        }
      }
    });

    test("a request larger than NATS's max_payload arrives whole", async () => {
      for (const { name: cn, client } of h.clients) {
        const big = "y".repeat(2 * 1024 * 1024 + 5);
        const res = await client.request(
          mkReq("echo", { big }, 5000, {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
          }),
        );
        assert.ok(res.ok, `${cn}: ${JSON.stringify(res).slice(0, 300)}`);
        const v = res.value as { args: { big: string }; traceparent: string | null };
        assert.equal(v.args.big, big, cn);
        assert.ok(v.traceparent, cn);
      }
    });

    // The deadline is a start-by time (cluster/transport/retry.ts): a turn
    // that started before it is answered with its outcome even if it ends
    // after it; one that could not start is "unavailable". The handlers
    // below play the runtime's part (the start check of cluster/catalog.ts).
    // Every NATS request carries a start-by NESTED_START_RESERVE_MS earlier
    // than the caller's, so deadlines here leave room for it.
    const R = NESTED_START_RESERVE_MS;

    test("a turn started before the deadline and ending after it is answered with its outcome", async () => {
      turnsStarted = 0;
      const runs = h.clients.map(async ({ name: cn, client }) => {
        const deadlineIn = R + 300;
        const t0 = Date.now();
        // Starts at once, and takes 500 ms longer than the caller's deadline.
        const res = await client.request(mkReq("turn", { ms: deadlineIn + 500 }, deadlineIn));
        const took = Date.now() - t0;
        assert.deepEqual(res, { ok: true, value: "committed" }, cn);
        assert.ok(took >= deadlineIn + 400, `${cn}: answered after ${took} ms, past the deadline`);
      });
      await Promise.all(runs);
      assert.equal(turnsStarted, h.clients.length);
    });

    test("a turn that could not start before the deadline is unavailable", async () => {
      turnsStarted = 0;
      const runs = h.clients.map(async ({ name: cn, client }) => {
        const deadlineIn = R + 200;
        const t0 = Date.now();
        // A busy mailbox: the turn's start check comes after its deadline.
        const res = await client.request(mkReq("turn", { queueMs: deadlineIn + 300, ms: 10 }, deadlineIn));
        const took = Date.now() - t0;
        assert.equal(res.ok, false, cn);
        if (!res.ok) {
          assert.equal(res.kind, "unavailable", cn);
          assert.equal(res.code, "SERVICE_UNAVAILABLE", cn);
          assert.equal(res.status, 503, cn);
        }
        // The node's refusal is passed on as it comes, not after the grace.
        assert.ok(took < deadlineIn + 300 + 1000, `${cn}: took ${took} ms`);
        // Already past its deadline: answered at once, nothing sent.
        const t1 = Date.now();
        const past = await client.request(mkReq("turn", { ms: 10 }, -1));
        assert.equal(past.ok, false, cn);
        if (!past.ok) assert.equal(past.kind, "unavailable", cn);
        assert.ok(Date.now() - t1 < 200, cn);
      });
      await Promise.all(runs);
      assert.equal(turnsStarted, 0, "no turn started");
    });

    test("a started turn that never answers is unavailable at deadline + grace", async () => {
      const grace = 300;
      const runs = h.clients.map(async ({ name: cn, client }) => {
        const deadlineIn = R + 200;
        // NATS hands its callee an earlier start-by, and waits from there.
        const expected = (cn === "NatsActorClient" ? deadlineIn - R : deadlineIn) + grace;
        const t0 = Date.now();
        const res = await client.request(
          mkReq("turn", { ms: deadlineIn + grace + 1500 }, deadlineIn, { replyGraceMs: grace }),
        );
        const took = Date.now() - t0;
        assert.equal(res.ok, false, cn);
        if (!res.ok) assert.equal(res.kind, "unavailable", cn);
        assert.ok(
          took >= expected - 5 && took < expected + 400,
          `${cn}: took ${took} ms, expected ${expected}`,
        );
      });
      await Promise.all(runs);
      // Let the handlers finish so servers close cleanly.
      await sleep(1500);
    });

    test('"moved" is retried until the deadline only, not through the grace', async () => {
      const shard = shardOf(ref, SHARDS);
      const always: RequestHandler = async () => ({
        ok: false,
        kind: "moved",
        code: "MOVED",
        msg: "shard moved",
        status: 503,
      });
      for (let i = 0; ; i++) {
        const m = await h.moved(always, always, shard);
        try {
          if (i >= m.clients.length) break;
          const { name: cn, client } = m.clients[i];
          const deadlineIn = R + 300;
          const t0 = Date.now();
          const res = await client.request(mkReq("echo", {}, deadlineIn));
          const took = Date.now() - t0;
          assert.equal(res.ok, false, cn);
          if (!res.ok) assert.equal(res.kind, "unavailable", cn);
          assert.ok(took >= 250 && took < deadlineIn + 400, `${cn}: took ${took} ms`);
        } finally {
          await m.close();
        }
      }
    });

    test("nested hop: the inner call resolves while the outer caller still waits", async (t) => {
      const outer = h.clients.find((c) => c.name === "ClusterClient/gRPC")?.client;
      if (h.nested === undefined || outer === undefined) {
        t.skip("no node-to-node path in this transport");
        return;
      }
      const nested = h.nested;
      // Node A's turn starts at once, calls an actor of node B over NATS as
      // ctx.call does (its own start-by as the call's deadline), then
      // "appends" and answers with what it learned.
      let innerStartBy = 0;
      const nestedHandler: RequestHandler = async (req) => {
        if (req.method === "outer") {
          await sleep(Number(req.args.callAfterMs));
          const call: ActorRequest = { ...req, method: "turn", args: { ms: Number(req.args.innerMs) } };
          if (req.args.grace !== undefined) call.replyGraceMs = Number(req.args.grace);
          const inner = await nested.request(call);
          await sleep(200); // the calling turn's own append
          return { ok: true, value: { inner: inner.ok ? inner.value : inner.kind } };
        }
        if (req.method === "turn") innerStartBy = req.deadline;
        return handler(req);
      };
      h.serve(nestedHandler);
      try {
        const deadlineIn = R + 800;
        // One grace for both hops (as the gateway and ctx.call both use).
        // B starts in time and hangs: A's wait for B ends at D - R + grace,
        // R before the gateway's (D + grace), so A's own answer, not a 503,
        // reaches the gateway.
        const grace = 800;
        let t0 = Date.now();
        const req = mkReq("outer", { callAfterMs: 300, innerMs: 3000, grace }, deadlineIn, {
          replyGraceMs: grace,
        });
        let res = await outer.request(req);
        let took = Date.now() - t0;
        assert.deepEqual(res, { ok: true, value: { inner: "unavailable" } });
        assert.equal(innerStartBy, req.deadline - R, "the callee's start-by is R earlier");
        assert.ok(took >= deadlineIn - R + grace, `answered after ${took} ms`);
        // Default grace: B starts in time and ends past the outer deadline;
        // its outcome travels up through A to the gateway.
        t0 = Date.now();
        res = await outer.request(mkReq("outer", { callAfterMs: 300, innerMs: 2000 }, deadlineIn));
        took = Date.now() - t0;
        assert.deepEqual(res, { ok: true, value: { inner: "committed" } });
        assert.ok(took > deadlineIn, `answered after ${took} ms, past the deadline`);
      } finally {
        h.serve(handler);
        await sleep(200); // the hung inner turn (3 s) has ended: the servers close cleanly
      }
    });

    test('"moved" makes the client retry and succeed when placement changes', async () => {
      const shard = shardOf(ref, SHARDS);
      let firstHits = 0;
      const first: RequestHandler = async () => {
        firstHits++;
        return { ok: false, kind: "moved", code: "MOVED", msg: "shard moved", status: 503 };
      };
      const second: RequestHandler = async (req) => ({ ok: true, value: { from: "second", m: req.method } });
      // A fresh pair of servers for each client: switchOver is one-way.
      for (let i = 0; ; i++) {
        const m = await h.moved(first, second, shard);
        try {
          if (i >= m.clients.length) break;
          const { name: cn, client } = m.clients[i];
          firstHits = 0;
          const pending = client.request(mkReq("echo", {}, 5000));
          await sleep(250);
          assert.ok(firstHits >= 1, `${cn}: first server was asked`);
          await m.switchOver();
          const res = await pending;
          assert.deepEqual(res, { ok: true, value: { from: "second", m: "echo" } }, cn);
        } finally {
          await m.close();
        }
      }
    });

    test("bus publish/subscribe with wildcards", async () => {
      const a = await h.bus();
      const b = await h.bus();
      const got: Record<string, string[]> = { star: [], tail: [], exact: [], mid: [] };
      const subs = [
        a.bus.subscribe("ev.*.x", (_d, s) => got.star.push(s)),
        a.bus.subscribe("ev.>", (_d, s) => got.tail.push(s)),
        a.bus.subscribe("ev.a.x", (d, s) => got.exact.push(`${s}=${new TextDecoder().decode(d)}`)),
        a.bus.subscribe("*.a.*", (_d, s) => got.mid.push(s)),
      ];
      await a.flush();
      b.bus.publish("ev.a.x", new TextEncoder().encode("p:ev.a.x"));
      // Never delivered synchronously inside publish.
      assert.equal(got.exact.length + got.star.length + got.tail.length + got.mid.length, 0);
      for (const s of ["ev.b.y", "ev.a.b.c", "ev", "other.a.x", "ev.b.x"])
        b.bus.publish(s, new Uint8Array([1]));
      await b.flush();
      await timeUntil(() => got.tail.length >= 4 && got.star.length >= 2 && got.mid.length >= 2, 2000);
      await sleep(50);
      assert.deepEqual(got.exact, ["ev.a.x=p:ev.a.x"]);
      assert.deepEqual(got.star.sort(), ["ev.a.x", "ev.b.x"]);
      assert.deepEqual(got.tail.sort(), ["ev.a.b.c", "ev.a.x", "ev.b.x", "ev.b.y"]);
      assert.deepEqual(got.mid.sort(), ["ev.a.x", "other.a.x"]);
      // After unsubscribe nothing arrives.
      for (const s of subs) s.unsubscribe();
      await a.flush();
      b.bus.publish("ev.a.x", new Uint8Array([2]));
      await b.flush();
      await sleep(50);
      assert.equal(got.exact.length, 1);
    });

    test("membership: join within 1 s, dead within 3 s, leave at once, draining", async () => {
      const obs = await h.bus();
      const nodeBus = await h.bus();
      const observer = h.membership(obs.bus);
      observer.start();
      await obs.flush();
      const changes: string[][] = [];
      const off = observer.onChange((nodes) => changes.push(nodes.map((n) => n.id)));

      const node = h.membership(nodeBus.bus, { self: { id: "m1", grpc: "127.0.0.1:1" } });
      node.start();
      const joined = await timeUntil(() => observer.owners().includes("m1"), 1000);
      assert.ok(joined <= 1000);
      const info = observer.liveNodes().find((n) => n.id === "m1");
      assert.equal(info?.grpc, "127.0.0.1:1");
      assert.equal(info?.draining, false);
      assert.ok(node.owners().includes("m1"), "a node counts itself");

      node.setDraining(true);
      await timeUntil(() => !observer.owners().includes("m1"), 1000);
      assert.equal(observer.liveNodes().find((n) => n.id === "m1")?.draining, true, "draining but live");
      node.setDraining(false);
      await timeUntil(() => observer.owners().includes("m1"), 1000);

      // Heartbeats stop (a crash, no farewell): dead within 3 s.
      node.stop();
      const died = await timeUntil(() => !observer.liveNodes().some((n) => n.id === "m1"), 3000);
      assert.ok(died <= 3000 && died >= 1500, `declared dead after ${died} ms`);

      // A graceful leave is seen at once.
      const node2 = h.membership(nodeBus.bus, { self: { id: "m2", grpc: "127.0.0.1:2" } });
      node2.start();
      await timeUntil(() => observer.owners().includes("m2"), 1000);
      node2.leave();
      const left = await timeUntil(() => !observer.liveNodes().some((n) => n.id === "m2"), 3000);
      assert.ok(left < 300, `leave seen after ${left} ms`);

      // A process that starts later learns the live set through cluster.hello,
      // well before the next heartbeat (here 3 s apart).
      const slow = h.membership(nodeBus.bus, {
        self: { id: "m3", grpc: "127.0.0.1:3" },
        heartbeatMs: 3000,
        deadAfterMs: 9000,
      });
      slow.start();
      await nodeBus.flush();
      const late = h.membership(obs.bus);
      late.start();
      const learned = await timeUntil(() => late.owners().includes("m3"), 1000);
      assert.ok(learned < 500, `learned after ${learned} ms`);

      assert.ok(changes.some((c) => c.includes("m1")) && changes.some((c) => !c.includes("m1")));
      off();
      for (const m of [observer, slow, late]) m.stop();
    });

    test("after close, nothing is left open", async () => {
      closed = true;
      const open = await h.close();
      for (const [what, n] of Object.entries(open)) assert.equal(n, 0, `${what} still open`);
    });
  });
}

// ---- (a) in-process -----------------------------------------------------------------

conformance("transport conformance: in-process", async () => {
  const t = createInProcessTransport();
  const bus = t.bus as MemoryBus;
  return {
    clients: [{ name: "in-process", client: t.client }],
    serve: (hd) => t.serve(hd),
    bus: async () => ({ bus, flush: async () => {} }),
    membership: (b, opts) => new Membership(b, opts),
    async moved(first, second) {
      const m = createInProcessTransport();
      m.serve(first);
      return {
        clients: [{ name: "in-process", client: m.client }],
        switchOver: async () => m.serve(second),
        close: async () => {},
      };
    },
    async close() {
      return { "bus subscriptions": bus.size() };
    },
  };
});

// ---- (b) cluster: NATS + gRPC ---------------------------------------------------------

async function startNode(
  natsUrl: string,
  id: string,
  h: RequestHandler,
  shards: number[],
): Promise<{
  bus: NatsBus;
  server: GrpcServerHandle;
  membership: Membership;
  subjects: ShardSubjects;
  close(): Promise<void>;
}> {
  const bus = await NatsBus.connect(natsUrl, `node:${id}`);
  const server = await startGrpcServer(h, 0, "127.0.0.1");
  const subjects = serveShardSubjects(bus.nc, h);
  for (const s of shards) subjects.add(s);
  const membership = new Membership(bus, { self: { id, grpc: `127.0.0.1:${server.port}` } });
  membership.start();
  await bus.flush();
  return {
    bus,
    server,
    membership,
    subjects,
    async close() {
      membership.leave();
      await subjects.close();
      await server.close();
      await bus.close();
    },
  };
}

const natsMissing = requireBinaries("nats-server");

conformance(
  "transport conformance: cluster (NATS + gRPC)",
  async () => {
    const nats = await startNats();
    const services: Service[] = [nats];
    let current: RequestHandler = handler;
    const dispatch: RequestHandler = (req) => current(req);
    const all = Array.from({ length: SHARDS }, (_, i) => i);
    const node = await startNode(nats.url, "n1", dispatch, all);
    const servers: GrpcServerHandle[] = [node.server];
    const buses: NatsBus[] = [];
    const newBus = async (name: string) => {
      const b = await NatsBus.connect(nats.url, name);
      buses.push(b);
      return b;
    };
    const gwBus = await newBus("gateway");
    const gwMembership = new Membership(gwBus);
    gwMembership.start();
    const cluster = new ClusterClient(gwMembership, SHARDS);
    await timeUntil(() => gwMembership.owners().includes("n1"), 2000);
    const peerBus = await newBus("peer-node");
    const natsClient = new NatsActorClient(peerBus.nc);
    const clusterClients: ClusterClient[] = [cluster];
    const natsClients: NatsActorClient[] = [natsClient];

    return {
      clients: [
        { name: "ClusterClient/gRPC", client: cluster },
        { name: "NatsActorClient", client: natsClient },
      ],
      nested: natsClient,
      serve: (hd) => {
        current = hd;
      },
      async bus() {
        const b = await newBus("peer");
        return { bus: b, flush: () => b.flush() };
      },
      membership: (b, opts) => new Membership(b, opts),
      async moved(first, second, shard) {
        // A cluster of its own, so node n1 does not take part in placement.
        const nats2 = await startNats();
        services.push(nats2);
        const a = await startNode(nats2.url, "a", first, [shard]);
        servers.push(a.server);
        let bId = "b0";
        for (let i = 0; ownerOf(shard, ["a", bId]) !== bId; i++) bId = `b${i}`;
        const gw = await NatsBus.connect(nats2.url, "gateway-2");
        buses.push(gw);
        const mem = new Membership(gw);
        mem.start();
        const cc = new ClusterClient(mem, SHARDS);
        clusterClients.push(cc);
        await timeUntil(() => mem.owners().join() === "a", 2000);
        const nac = new NatsActorClient(gw.nc);
        natsClients.push(nac);
        let b: Awaited<ReturnType<typeof startNode>> | null = null;
        return {
          clients: [
            { name: "ClusterClient/gRPC", client: cc },
            { name: "NatsActorClient", client: nac },
          ],
          async switchOver() {
            if (b === null) {
              b = await startNode(nats2.url, bId, second, [shard]);
              servers.push(b.server);
            }
            // NATS path: the new owner subscribed; the old one lets go.
            a.subjects.remove(shard);
            await a.bus.flush();
            await timeUntil(() => mem.owners().includes(bId), 1000);
          },
          async close() {
            cc.close();
            nac.close();
            mem.stop();
            await b?.close();
            await a.close();
          },
        };
      },
      async close() {
        gwMembership.stop();
        for (const c of clusterClients) c.close();
        for (const c of natsClients) c.close();
        await node.close();
        for (const b of buses) await b.close();
        let streams = 0;
        try {
          await timeUntil(() => servers.every((s) => s.openStreams() === 0), 3000);
        } catch {
          // reported below
        }
        for (const s of servers) streams += s.openStreams();
        const open = {
          "gRPC server streams": streams,
          "gRPC client streams": clusterClients.reduce((n, c) => n + c.openStreams(), 0),
          "NATS connections": openNatsConnections(),
          "NATS pending requests": natsClients.reduce((n, c) => n + c.pendingCount(), 0),
        };
        for (const s of services) await s.stop();
        return open;
      },
    };
  },
  natsMissing,
);
