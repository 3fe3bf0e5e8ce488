// The one table `npm run bench` prints. Every section (bench/<name>.ts)
// exports `run(ctx): Promise<BenchRow[]>`; bench/run.ts runs the selected
// sections and prints their rows together.
//
// Figures are noisy on a shared machine, so a throughput or latency figure
// carries its ratio to the bare Fastify baseline measured in the same run
// (ctx.baseline). Absolute figures (bytes per queue, p99 delivery) carry
// their target instead.

export interface LoadFigure {
  /** Mean requests per second over the measured window. */
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p99: number;
  total: number;
  /** Socket errors, timeouts and non-2xx answers. */
  failed: number;
}

export interface BenchRow {
  /** Section that produced the row ("write", "messages", ...). */
  section: string;
  name: string;
  value: number;
  unit: string;
  /** value / the matching baseline figure of the same run; null where meaningless. */
  ratio?: number | null;
  /** Human-readable target, e.g. "≥ 0.35×" or "≤ 50 ms". */
  target?: string;
  /** null or undefined: no target. */
  pass?: boolean | null;
  /** Short caveat printed under the table (e.g. "N = 300k, not 1M: time box"). */
  note?: string;
}

export interface BenchContext {
  /** Seconds of measured load per autocannon scenario. */
  duration: number;
  /** autocannon connections. */
  connections: number;
  /**
   * Bare Fastify on the same machine in the same run, measured once per
   * kind on first use: "post" a form-POST handler, "get" a GET handler
   * answering a small JSON object.
   */
  baseline(kind: "post" | "get"): Promise<LoadFigure>;
  log(msg: string): void;
}

export type Section = (ctx: BenchContext) => Promise<BenchRow[]>;

/** "≥ x" style helpers so targets and pass/fail agree. */
export function atLeast(value: number, min: number, fmt = (n: number) => String(n)) {
  return { target: `≥ ${fmt(min)}`, pass: value >= min };
}
export function atMost(value: number, max: number, fmt = (n: number) => String(n)) {
  return { target: `≤ ${fmt(max)}`, pass: value <= max };
}

function num(v: number, unit: string): string {
  if (!Number.isFinite(v)) return String(v);
  if (unit === "ms" && v < 10) return v.toFixed(1);
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString("en-US");
  if (Number.isInteger(v)) return String(v);
  return v.toFixed(Math.abs(v) < 10 ? 2 : 0);
}

export function formatTable(rows: BenchRow[]): string {
  const lines = [
    "| section | figure | value | unit | ratio to baseline | target | result |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    const ratio = r.ratio === undefined || r.ratio === null ? "" : `${r.ratio.toFixed(3)}×`;
    const result = r.pass === undefined || r.pass === null ? "" : r.pass ? "pass" : "FAIL";
    lines.push(
      `| ${r.section} | ${r.name} | ${num(r.value, r.unit)} | ${r.unit} | ${ratio} | ${r.target ?? ""} | ${result} |`,
    );
  }
  const notes = rows.filter((r) => r.note).map((r) => `- ${r.name}: ${r.note}`);
  if (notes.length) lines.push("", ...notes);
  return lines.join("\n");
}

/** The p-th percentile (0-100) of unsorted samples. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return NaN;
  const s = [...samples].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i]!;
}
