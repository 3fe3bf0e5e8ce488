// The tracing figure: the cost of an authenticated write (PATCH /settings,
// a journaled user-actor turn) with tracing off (OTEL_SDK_DISABLED), at 1%
// sampling (the default) and at 100%, in embedded and cluster mode. Sampled
// spans are exported over OTLP/HTTP to a receiver in this process that
// discards them, so the 100% figure includes the export. Target at 1%: ≤ 10%.
//
// The machine is shared (2 cores, other users' jobs) and its load swings by
// 2× within seconds, more than the cost being measured. "Off" is therefore
// two identical servers with tracing off: a traced setting is compared with
// their mean, and the two are compared with each other as the noise floor,
// reported in the same run. Every figure is a median over windows, with its
// interquartile range in the notes. Two measurements, same servers:
//
// 1. Throughput (each server alone): the servers take turns in short
//    windows, SEQ_ROUNDS rounds in a fresh random order each (no setting
//    always follows another: the 100% server's export tail would otherwise
//    land on the same neighbour), a pause after each window. Cost:
//    1 - (traced req/s) / (off req/s) within a round. Drift between windows
//    makes this the noisier figure (see its noise floor).
// 2. Capacity (all servers at once): all four are loaded together, each by
//    its own autocannon, in ROUNDS windows, so whatever else runs on the
//    machine hits them alike at every moment. Cost: 1 - (off CPU per
//    request) / (traced CPU per request) of the process serving HTTP, read
//    from /proc: at saturation throughput is CPU / (CPU per request). Their
//    throughputs here are not the figure: the one load-generator process
//    drives four servers and bounds them all, which hides differences.
import { readFileSync } from "node:fs";
import { ownerAuth } from "./client.ts";
import { load } from "./load.ts";
import { startServers, type Servers } from "./servers.ts";
import { atMost, type BenchContext, type BenchRow, type LoadFigure } from "./table.ts";
import { startOtlpReceiver } from "../test/support/otlp-receiver.ts";

type Setting = { label: string; env: Record<string, string | undefined> };

type Started = { srv: Servers; auth: string };

/** Start servers with `env` added to the environment they inherit (bench/procs.ts), the gateway included. */
async function startWith(
  mode: "embedded" | "cluster",
  env: Record<string, string | undefined>,
): Promise<Started> {
  const saved = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  let srv: Servers;
  try {
    srv = await startServers(mode);
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
  try {
    return { srv, auth: (await ownerAuth(srv.url)).auth };
  } catch (err) {
    await srv.stop();
    throw err;
  }
}

function window(ctx: BenchContext, s: Started, seconds: number, warmup: number): Promise<LoadFigure> {
  // Alternate two values so every request is a real change.
  let flip = false;
  return load({
    url: `${s.srv.url}/api/v1/settings`,
    method: "PATCH",
    connections: ctx.connections,
    duration: seconds,
    warmup,
    headers: { authorization: s.auth },
    body: () => {
      flip = !flip;
      return `enter_sends=${flip}&web_font_size_px=${flip ? 15 : 16}`;
    },
  });
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const CLK_TCK = 100;

/** User + system CPU of a process so far, in clock ticks. */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(f[11]) + Number(f[12]);
}

/** Windows of the all-at-once measurement (BENCH_TRACING_ROUNDS), BENCH_SECONDS / 5 seconds each, at least 2. */
const ROUNDS = Number(process.env.BENCH_TRACING_ROUNDS ?? 15);
/** Rounds of the one-at-a-time throughput measurement (BENCH_TRACING_SEQ_ROUNDS). */
const SEQ_ROUNDS = Number(process.env.BENCH_TRACING_SEQ_ROUNDS ?? 6);
/** Seconds of warm-up load, all servers at once (BENCH_TRACING_WARMUP). */
const WARMUP_S = Number(process.env.BENCH_TRACING_WARMUP ?? 15);
/** Quiet time after each one-at-a-time window: a traced server's in-flight exports finish. */
const PAUSE_MS = 500;

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}
const median = (xs: number[]) => quantile(xs, 0.5);
const spread = (xs: number[]) =>
  `median ${median(xs).toFixed(1)}%, IQR ${quantile(xs, 0.25).toFixed(1)}…${quantile(xs, 0.75).toFixed(1)}% over ${xs.length} windows`;

function shuffled(n: number): number[] {
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Sum = { total: number; failed: number; cpuTicks: number; seconds: number };

/** One window of `figs` (in settings order) measured from `cpu0`; adds to `sums`, returns per-setting rps and CPU ticks per request. */
function account(
  started: Started[],
  sums: Sum[],
  idx: number[],
  figs: LoadFigure[],
  cpu0: number[],
  seconds: number,
) {
  const rps: number[] = [];
  const cpu: number[] = [];
  idx.forEach((i, k) => {
    const f = figs[k]!;
    const ticks = cpuTicks(started[i]!.srv.http.child.pid!) - cpu0[k]!;
    const sum = sums[i]!;
    sum.cpuTicks += ticks;
    sum.total += f.total;
    sum.failed += f.failed;
    sum.seconds += seconds;
    rps[i] = f.total / seconds;
    cpu[i] = ticks / Math.max(1, f.total);
  });
  return { rps, cpu };
}

export async function run(ctx: BenchContext): Promise<BenchRow[]> {
  const receiver = await startOtlpReceiver({ discard: true });
  const traced = (ratio: string) => ({
    OTEL_SDK_DISABLED: undefined,
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: ratio,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  });
  const off = { OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: undefined };
  // OFF_A and OFF_B are identical: their difference is the noise floor.
  const OFF_A = 0;
  const OFF_B = 1;
  const settings: Setting[] = [
    { label: "tracing off", env: off },
    { label: "tracing off (2nd server)", env: off },
    { label: "1% sampled", env: traced("0.01") },
    { label: "100% sampled", env: traced("1") },
  ];
  const all = settings.map((_, i) => i);
  const rows: BenchRow[] = [];
  const row = (name: string, value: number, extra: Partial<BenchRow> = {}) =>
    rows.push({ section: "tracing", name, value, unit: "%", ratio: null, ...extra });
  try {
    const modes = (process.env.BENCH_TRACING_MODES ?? "embedded,cluster").split(",") as (
      "embedded" | "cluster"
    )[];
    for (const mode of modes) {
      const base = await ctx.baseline("post");
      const started: Started[] = [];
      const seq: { rps: number[]; cpu: number[] }[] = [];
      const together: { rps: number[]; cpu: number[] }[] = [];
      const seqSums: Sum[] = settings.map(() => ({ total: 0, failed: 0, cpuTicks: 0, seconds: 0 }));
      const sums: Sum[] = settings.map(() => ({ total: 0, failed: 0, cpuTicks: 0, seconds: 0 }));
      const slice = Math.max(2, Math.round(ctx.duration / 5));
      try {
        for (const s of settings) started.push(await startWith(mode, s.env));
        // Warm-up, all at once: CPU per request keeps falling for tens of
        // seconds of load (JIT), and unevenly warmed servers look different.
        ctx.log(`tracing: ${mode}, warm-up`);
        await Promise.all(started.map((s) => window(ctx, s, WARMUP_S, 0)));
        for (let round = 0; round < SEQ_ROUNDS; round++) {
          const r = { rps: [] as number[], cpu: [] as number[] };
          for (const i of shuffled(settings.length)) {
            ctx.log(
              `tracing: ${mode}, one at a time, ${settings[i]!.label}, round ${round + 1}/${SEQ_ROUNDS}`,
            );
            const cpu0 = [cpuTicks(started[i]!.srv.http.child.pid!)];
            const f = await window(ctx, started[i]!, slice, 0);
            const one = account(started, seqSums, [i], [f], cpu0, slice);
            r.rps[i] = one.rps[i]!;
            r.cpu[i] = one.cpu[i]!;
            await sleep(PAUSE_MS);
          }
          seq.push(r);
        }
        for (let round = 0; round < ROUNDS; round++) {
          ctx.log(`tracing: ${mode}, all ${settings.length} at once, window ${round + 1}/${ROUNDS}`);
          const cpu0 = started.map((s) => cpuTicks(s.srv.http.child.pid!));
          const figs = await Promise.all(started.map((s) => window(ctx, s, slice, 0)));
          together.push(account(started, sums, all, figs, cpu0, slice));
        }
      } finally {
        for (const s of started) await s.srv.stop();
      }
      for (let i = 0; i < settings.length; i++) {
        const sum = seqSums[i]!;
        const rps = sum.total / Math.max(1, sum.seconds);
        const failed = sum.failed + sums[i]!.failed;
        rows.push({
          section: "tracing",
          name: `PATCH /settings, ${mode}, ${settings[i]!.label}: req/s`,
          value: rps,
          unit: "req/s",
          ratio: rps / base.rps,
          note: failed ? `${failed} of ${sum.total + sums[i]!.total} requests failed` : undefined,
        });
      }
      const cpuUs = (i: number) => (sums[i]!.cpuTicks * 1e6) / CLK_TCK / Math.max(1, sums[i]!.total);
      const http = mode === "embedded" ? "the server process" : "the gateway process";
      const offRps = (r: { rps: number[] }) => (r.rps[OFF_A]! + r.rps[OFF_B]!) / 2;
      const offCpu = (r: { cpu: number[] }) => (r.cpu[OFF_A]! + r.cpu[OFF_B]!) / 2;
      const noise = seq.map((r) => 100 * (1 - r.rps[OFF_B]! / r.rps[OFF_A]!));
      row(`${mode}: throughput noise floor: "cost" of a 2nd tracing-off server`, median(noise), {
        note: `${spread(noise)}; the traced rows compare with the mean of both off servers`,
      });
      for (const [i, max] of [
        [2, 10],
        [3, null],
      ] as const) {
        const costs = seq.map((r) => 100 * (1 - r.rps[i]! / offRps(r)));
        row(`${mode}: throughput cost of tracing, ${settings[i]!.label}`, median(costs), {
          ...(max === null ? {} : atMost(median(costs), max, (n) => `${n}%`)),
          note: spread(costs),
        });
      }
      const cpuNoise = together.map((r) => 100 * (1 - r.cpu[OFF_A]! / r.cpu[OFF_B]!));
      row(
        `${mode}: capacity noise floor: "cost" of a 2nd tracing-off server (all at once)`,
        median(cpuNoise),
        {
          note: spread(cpuNoise),
        },
      );
      for (const [i, max] of [
        [2, 10],
        [3, null],
      ] as const) {
        const cpuCosts = together.map((r) => 100 * (1 - offCpu(r) / r.cpu[i]!));
        row(
          `${mode}: capacity cost from CPU per request of ${http} (all at once), ${settings[i]!.label}`,
          median(cpuCosts),
          {
            ...(max === null ? {} : atMost(median(cpuCosts), max, (n) => `${n}%`)),
            note:
              spread(cpuCosts) +
              (i === 2
                ? `; CPU µs per request of ${http}: off ${cpuUs(OFF_A).toFixed(0)} and ${cpuUs(OFF_B).toFixed(0)}, ` +
                  `1% ${cpuUs(2).toFixed(0)}, 100% ${cpuUs(3).toFixed(0)}`
                : ""),
          },
        );
      }
    }
    rows.push({
      section: "tracing",
      name: "OTLP export requests received",
      value: receiver.requests(),
      unit: "requests",
      ratio: null,
    });
  } finally {
    await receiver.stop();
  }
  return rows;
}
