// Prometheus metrics of this process (prom-client), in one registry.
//
// The runtime (catalog.ts, node.ts, overload.ts) calls the small functions of
// `metrics` below; it knows nothing of HTTP. The HTTP side (gateway/admin/)
// serves `registry` as /metrics on the gateway, the embedded server and each
// node's admin port.
//
// Counters and histograms are per process. Gauges that describe a node's
// actors (live actors, mailbox depths, queues, parked polls, journal lag) are
// computed when Prometheus scrapes, from every NodeRuntime attached to the
// process, and carry a `node` label (tests run several runtimes in one
// process). Every name starts with `zulip_actors_`.

import client from "prom-client";

export const PREFIX = "zulip_actors_";

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry, prefix: PREFIX });

// ---- What a node runtime exposes to the scrape-time gauges --------------------------

/** The part of an activation the gauges read (cluster/catalog.ts Activation). */
export interface ActivationView {
  ref: { kind: string; realm: number; key: string };
  shard: number;
  state: unknown;
  seq: number;
  snapshotSeq: number;
  mailbox: { length: number };
  parked: { size: number } | null;
}

/** The part of a NodeRuntime the gauges read. */
export interface RuntimeView {
  readonly nodeId: string;
  readonly catalog: { activations(): Iterable<ActivationView> };
  servingShards(): number[];
}

/** Per-node memory guard state (cluster/overload.ts). */
export interface GuardView {
  readonly nodeId: string;
  readonly budgetBytes: number;
  overloaded(): boolean;
}

export interface MailboxEntry {
  kind: string;
  realm: number;
  key: string;
  shard: number;
  depth: number;
}

/** What a runtime's activations add up to (metrics and the admin API). */
export interface ActorSummary {
  actors: number;
  byKind: Record<string, number>;
  /** Turns waiting in mailboxes, summed, and the deepest one. */
  mailboxQueued: number;
  mailboxMax: number;
  /** Event queues (registrations) held by the node's queue actors. */
  eventQueues: number;
  /** Long polls (GET /events) parked in queue actors. */
  parkedPolls: number;
  /** Facts appended since each actor's last snapshot: summed and largest. */
  journalLag: number;
  journalLagMax: number;
}

/** Walk a runtime's activations once. `top` > 0 also returns the deepest mailboxes. */
export function summarize(
  acts: Iterable<ActivationView>,
  top = 0,
  realm: number | null = null,
): ActorSummary & { deepest: MailboxEntry[] } {
  const s: ActorSummary = {
    actors: 0,
    byKind: {},
    mailboxQueued: 0,
    mailboxMax: 0,
    eventQueues: 0,
    parkedPolls: 0,
    journalLag: 0,
    journalLagMax: 0,
  };
  const deep: MailboxEntry[] = [];
  for (const a of acts) {
    const kind = a.ref.kind;
    s.actors++;
    s.byKind[kind] = (s.byKind[kind] ?? 0) + 1;
    const depth = a.mailbox.length;
    s.mailboxQueued += depth;
    if (depth > s.mailboxMax) s.mailboxMax = depth;
    const lag = a.seq - a.snapshotSeq;
    s.journalLag += lag;
    if (lag > s.journalLagMax) s.journalLagMax = lag;
    if (kind === "queue") {
      s.parkedPolls += a.parked?.size ?? 0;
      const queues = (a.state as { queues?: Record<string, unknown> } | undefined)?.queues;
      if (queues) s.eventQueues += Object.keys(queues).length;
    }
    if (top > 0 && depth > 0 && (realm === null || a.ref.realm === realm)) {
      deep.push({ kind, realm: a.ref.realm, key: a.ref.key, shard: a.shard, depth });
    }
  }
  deep.sort((x, y) => y.depth - x.depth);
  return { ...s, deepest: deep.slice(0, top) };
}

const runtimes = new Set<RuntimeView>();
const guards = new Set<GuardView>();

// ---- A lean histogram for the hot paths ------------------------------------------------

interface Series {
  labels: Record<string, string>;
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram registered in `registry` like prom-client's own, but
 * whose observe is a bucket scan and three increments (prom-client's
 * re-validates and re-hashes its labels on every observation: 2-4 µs measured
 * here, too much for every turn and every request).
 */
class FastHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly buckets: readonly number[],
  ) {
    registry.registerMetric(this as unknown as client.Metric);
  }

  /** The series of these label values (create it on first use); keep it to observe. */
  child(...values: string[]): Series {
    const key = values.join("\u0000");
    let s = this.series.get(key);
    if (s === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i] ?? ""));
      s = { labels, counts: new Float64Array(this.buckets.length), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    return s;
  }

  observe(s: Series, v: number): void {
    const b = this.buckets;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        s.counts[i]!++;
        break;
      }
    }
    s.sum += v;
    s.count++;
  }

  reset(): void {
    this.series.clear();
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: object[] } {
    const values: object[] = [];
    for (const s of this.series.values()) {
      let cum = 0;
      this.buckets.forEach((le, i) => {
        cum += s.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le }, value: cum });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: "+Inf" }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

// ---- Metrics -------------------------------------------------------------------------

const httpDuration = new FastHistogram(
  `${PREFIX}http_request_duration_seconds`,
  "HTTP requests served by the gateway, by method, route template and status (use _count for the rate)",
  ["method", "route", "status"],
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
);

const activations = new client.Counter({
  name: `${PREFIX}actor_activations_total`,
  help: "Actor activations (snapshot + journal replay), by kind",
  labelNames: ["kind"] as const,
  registers: [registry],
});

const passivations = new client.Counter({
  name: `${PREFIX}actor_passivations_total`,
  help: "Actors passivated after their idle period, by kind",
  labelNames: ["kind"] as const,
  registers: [registry],
});

const turnDuration = new FastHistogram(
  `${PREFIX}turn_duration_seconds`,
  "Time an actor turn's handler took to decide (including awaited calls), by kind",
  ["kind"],
  [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
);

const appendDuration = new FastHistogram(
  `${PREFIX}journal_append_duration_seconds`,
  "Latency of one group-commit journal append (awaited before replies)",
  [],
  [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
);
const appendSeries = appendDuration.child();

let factsAppendedCount = 0;
new client.Counter({
  name: `${PREFIX}journal_facts_appended_total`,
  help: "Journal entries appended (facts, outbox and sent markers)",
  registers: [registry],
  collect() {
    this.reset();
    this.inc(factsAppendedCount);
  },
});

const overloadRejections = new client.Counter({
  name: `${PREFIX}overload_rejections_total`,
  help: "Requests refused with 503 + Retry-After: a full actor mailbox, or the node past its memory budget",
  labelNames: ["reason"] as const,
  registers: [registry],
});

const durableReads = new client.Counter({
  name: `${PREFIX}durable_reads_total`,
  help: "Leaf reads of another node's actor (Behavior.durableReads): answered from the last reply while the actor's journal had not moved (hit), or asked (miss)",
  labelNames: ["kind", "method", "outcome"] as const,
  registers: [registry],
});

const leaseRenewals = new client.Counter({
  name: `${PREFIX}lease_renewals_total`,
  help: "Shard lease renewals: ok, failed (store unreachable) or lost (a newer epoch exists)",
  labelNames: ["result"] as const,
  registers: [registry],
});

const shardMoves = new client.Counter({
  name: `${PREFIX}shard_moves_total`,
  help: "Shards this process started (acquired) or stopped serving (released gracefully, lost)",
  labelNames: ["direction"] as const,
  registers: [registry],
});

// Scrape-time gauges: one walk over the activations per runtime per scrape.
let scrapeCache: { at: number; rows: { node: string; s: ActorSummary; shards: number }[] } | null = null;

function scrape(): { node: string; s: ActorSummary; shards: number }[] {
  // The gauges below collect one after the other within one scrape: walk once.
  // exposition() clears the cache first, so every scrape walks afresh.
  const now = Date.now();
  if (scrapeCache && now - scrapeCache.at < 1000) return scrapeCache.rows;
  const rows = [...runtimes].map((r) => ({
    node: r.nodeId,
    s: summarize(r.catalog.activations()),
    shards: r.servingShards().length,
  }));
  scrapeCache = { at: now, rows };
  return rows;
}

function nodeGauge(name: string, help: string, pick: (s: ActorSummary, shards: number) => number): void {
  new client.Gauge({
    name: `${PREFIX}${name}`,
    help,
    labelNames: ["node"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const r of scrape()) this.set({ node: r.node }, pick(r.s, r.shards));
    },
  });
}

new client.Gauge({
  name: `${PREFIX}live_actors`,
  help: "Activations in memory, by node and kind",
  labelNames: ["node", "kind"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const r of scrape()) {
      for (const [kind, n] of Object.entries(r.s.byKind)) this.set({ node: r.node, kind }, n);
    }
  },
});
nodeGauge("mailbox_depth", "Turns waiting in all mailboxes of the node", (s) => s.mailboxQueued);
nodeGauge("mailbox_depth_max", "Turns waiting in the node's deepest mailbox", (s) => s.mailboxMax);
nodeGauge("event_queues", "Event queues (POST /register) held by the node", (s) => s.eventQueues);
nodeGauge("parked_polls", "GET /events long polls parked on the node", (s) => s.parkedPolls);
nodeGauge("shards_served", "Shards whose lease the node holds", (_s, shards) => shards);
nodeGauge(
  "journal_lag_facts",
  "Journal entries appended since the last snapshot, summed over the node's actors",
  (s) => s.journalLag,
);
nodeGauge(
  "journal_lag_facts_max",
  "Journal entries appended since the last snapshot, largest single actor",
  (s) => s.journalLagMax,
);

new client.Gauge({
  name: `${PREFIX}memory_budget_bytes`,
  help: "The node's memory budget (V8 heap used); 0 = none",
  labelNames: ["node"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const g of guards) this.set({ node: g.nodeId }, g.budgetBytes);
  },
});

new client.Gauge({
  name: `${PREFIX}overloaded`,
  help: "1 while the node refuses new requests for being past its memory budget",
  labelNames: ["node"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const g of guards) this.set({ node: g.nodeId }, g.overloaded() ? 1 : 0);
  },
});

// Series cached per label values: the hot path does one Map lookup.
const turnByKind = new Map<string, Series>();
/** route -> method -> status -> series (no string building per request). */
const httpSeries = new Map<string, Map<string, Map<number, Series>>>();

/** The calls the runtime makes. Cheap: a Map lookup and an increment each. */
export const metrics = {
  attach(r: RuntimeView): void {
    runtimes.add(r);
  },
  detach(r: RuntimeView): void {
    runtimes.delete(r);
  },
  attachGuard(g: GuardView): void {
    guards.add(g);
  },
  detachGuard(g: GuardView): void {
    guards.delete(g);
  },
  activated(kind: string): void {
    activations.labels(kind).inc();
  },
  passivated(kind: string): void {
    passivations.labels(kind).inc();
  },
  /** One turn's decision took `ms` milliseconds. */
  turn(kind: string, ms: number): void {
    let s = turnByKind.get(kind);
    if (s === undefined) turnByKind.set(kind, (s = turnDuration.child(kind)));
    turnDuration.observe(s, ms / 1000);
  },
  /** One journal append of `entries` entries took `ms` milliseconds. */
  appended(entries: number, ms: number): void {
    appendDuration.observe(appendSeries, ms / 1000);
    factsAppendedCount += entries;
  },
  /** A Behavior.durableReads call to another node's actor: its last reply reused (hit) or asked (miss). */
  durableRead(kind: string, method: string, hit: boolean): void {
    durableReads.labels(kind, method, hit ? "hit" : "miss").inc();
  },
  rejected(reason: "mailbox" | "memory"): void {
    overloadRejections.labels(reason).inc();
  },
  leaseRenewal(result: "ok" | "failed" | "lost"): void {
    leaseRenewals.labels(result).inc();
  },
  shardMove(direction: "acquired" | "released" | "lost"): void {
    shardMoves.labels(direction).inc();
  },
  http(method: string, route: string, status: number, ms: number): void {
    let byMethod = httpSeries.get(route);
    if (byMethod === undefined) httpSeries.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let s = byStatus.get(status);
    if (s === undefined) byStatus.set(status, (s = httpDuration.child(method, route, String(status))));
    httpDuration.observe(s, ms / 1000);
  },
};

/** The Prometheus text exposition of this process. */
export async function exposition(): Promise<{ contentType: string; body: string }> {
  scrapeCache = null;
  return { contentType: registry.contentType, body: await registry.metrics() };
}
