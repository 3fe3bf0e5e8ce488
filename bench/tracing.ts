// The tracing figure: throughput of an authenticated write (PATCH /settings,
// a journaled user-actor turn) with tracing off (OTEL_SDK_DISABLED), at 1%
// sampling (the default) and at 100%, in embedded and cluster mode. Sampled
// spans are exported over OTLP/HTTP to a receiver in this process that
// discards them, so the 100% figure includes the export. The cost is
// 1 - (traced req/s) / (off req/s); target at 1%: ≤ 10%. The three servers
// run side by side and take turns in short windows (see ROUNDS); each cost
// is the median over rounds of the cost within a round.
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

/**
 * The machine is shared and its load drifts: the three settings run side by
 * side and take turns in ROUNDS short windows each, so drift hits them alike.
 */
const ROUNDS = 6;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export async function run(ctx: BenchContext): Promise<BenchRow[]> {
  const receiver = await startOtlpReceiver({ discard: true });
  const traced = (ratio: string) => ({
    OTEL_SDK_DISABLED: undefined,
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: ratio,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  });
  const settings: Setting[] = [
    { label: "tracing off", env: { OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: undefined } },
    { label: "1% sampled", env: traced("0.01") },
    { label: "100% sampled", env: traced("1") },
  ];
  const rows: BenchRow[] = [];
  try {
    const modes = (process.env.BENCH_TRACING_MODES ?? "embedded,cluster").split(",") as (
      "embedded" | "cluster"
    )[];
    for (const mode of modes) {
      const base = await ctx.baseline("post");
      const started: Started[] = [];
      const cpuPerRequest: number[] = [];
      const perRound: { rps: number[]; cpu: number[] }[] = [];
      const figures: LoadFigure[] = [];
      try {
        for (const s of settings) started.push(await startWith(mode, s.env));
        const sums = settings.map(() => ({ total: 0, failed: 0, p99: 0, cpuTicks: 0 }));
        const slice = Math.max(1, Math.round(ctx.duration / ROUNDS));
        for (let i = 0; i < settings.length; i++) await window(ctx, started[i]!, 2, 0); // warm-up
        for (let round = 0; round < ROUNDS; round++) {
          const rps: number[] = [];
          const cpu: number[] = [];
          // Rotate the order so no setting always runs first or last in a round.
          for (let k = 0; k < settings.length; k++) {
            const i = (k + round) % settings.length;
            ctx.log(`tracing: ${mode}, ${settings[i]!.label}, round ${round + 1}/${ROUNDS}`);
            const pid = started[i]!.srv.http.child.pid!;
            const cpu0 = cpuTicks(pid);
            const f = await window(ctx, started[i]!, slice, 0);
            const ticks = cpuTicks(pid) - cpu0;
            sums[i]!.cpuTicks += ticks;
            sums[i]!.total += f.total;
            sums[i]!.failed += f.failed;
            sums[i]!.p99 = Math.max(sums[i]!.p99, f.p99);
            rps[i] = f.total / slice;
            cpu[i] = ticks / Math.max(1, f.total);
          }
          perRound.push({ rps, cpu });
        }
        for (const sum of sums) {
          const rps = sum.total / (slice * ROUNDS);
          figures.push({ rps, p50: NaN, p99: sum.p99, total: sum.total, failed: sum.failed });
          cpuPerRequest.push((sum.cpuTicks * 1e6) / CLK_TCK / Math.max(1, sum.total));
        }
      } finally {
        for (const s of started) await s.srv.stop();
      }
      for (let i = 0; i < settings.length; i++) {
        const f = figures[i]!;
        rows.push({
          section: "tracing",
          name: `PATCH /settings, ${mode}, ${settings[i]!.label}: req/s`,
          value: f.rps,
          unit: "req/s",
          ratio: f.rps / base.rps,
          note: f.failed ? `${f.failed} of ${f.total} requests failed` : undefined,
        });
      }
      const http = mode === "embedded" ? "the server process" : "the gateway process";
      for (const [i, max] of [
        [1, 10],
        [2, null],
      ] as const) {
        // The median over rounds of the cost within a round (settings measured moments apart).
        const cost = median(perRound.map((r) => 100 * (1 - r.rps[i]! / r.rps[0]!)));
        rows.push({
          section: "tracing",
          name: `${mode}: throughput cost of tracing, ${settings[i]!.label}`,
          value: cost,
          unit: "%",
          ratio: null,
          ...(max === null ? {} : atMost(cost, max, (n) => `${n}%`)),
        });
        // CPU per request drifts far less than throughput on a shared machine;
        // at saturation throughput is its inverse.
        const cpuCost = median(perRound.map((r) => 100 * (1 - r.cpu[0]! / r.cpu[i]!)));
        rows.push({
          section: "tracing",
          name: `${mode}: capacity cost from CPU per request of ${http}, ${settings[i]!.label}`,
          value: cpuCost,
          unit: "%",
          ratio: null,
          ...(max === null ? {} : atMost(cpuCost, max, (n) => `${n}%`)),
          note:
            i === 1
              ? `CPU µs per request of ${http}: off ${cpuPerRequest[0]!.toFixed(0)}, ` +
                `1% ${cpuPerRequest[1]!.toFixed(0)}, 100% ${cpuPerRequest[2]!.toFixed(0)}`
              : undefined,
        });
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
