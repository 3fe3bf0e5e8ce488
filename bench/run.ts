// `npm run bench [-- section ...]`: runs the selected sections (all when
// none is named) and prints one table. Every throughput and latency figure
// is a ratio to a bare Fastify server measured in the same run (this
// machine is shared and noisy, so absolute numbers drift; ratios hold).
//
// A section is a module bench/<name>.ts exporting
// `run(ctx: BenchContext): Promise<BenchRow[]>` (see table.ts); add it to
// SECTIONS below.
import { cpus, loadavg, totalmem } from "node:os";
import { load } from "./load.ts";
import { startProc } from "./procs.ts";
import { formatTable, type BenchContext, type BenchRow, type LoadFigure, type Section } from "./table.ts";

const SECTIONS: Record<string, () => Promise<{ run: Section }>> = {
  write: () => import("./write.ts"),
  messages: () => import("./messages.ts"),
  events: () => import("./events.ts"),
  tracing: () => import("./tracing.ts"),
  failover: () => import("./failover.ts"),
  coldstart: () => import("./coldstart.ts"),
  load: () => import("./load-profile.ts"),
  org: () => import("./org.ts"),
};

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

const wanted = process.argv.slice(2);
for (const w of wanted) {
  if (!SECTIONS[w]) {
    console.error(`unknown section ${w}; sections: ${Object.keys(SECTIONS).join(", ")}`);
    process.exit(2);
  }
}
const selected = wanted.length ? wanted : Object.keys(SECTIONS);

const baselines = new Map<"post" | "get", Promise<LoadFigure>>();
const baseRows: BenchRow[] = [];

/** Bare Fastify, measured once per kind on first use (alone on the machine: no other server of ours runs then). */
async function measureBaseline(kind: "post" | "get"): Promise<LoadFigure> {
  const p = await startProc("baseline", "bench/baseline.ts", { PORT: "0" }, /LISTENING (\d+)/);
  try {
    const url = `http://127.0.0.1:${p.match[1]}`;
    const f = await load(
      kind === "post"
        ? {
            url: `${url}/api/v1/settings`,
            method: "POST",
            connections: CONNECTIONS,
            duration: DURATION,
            body: "enter_sends=true&web_font_size_px=15",
          }
        : { url: `${url}/api/v1/ping`, method: "GET", connections: CONNECTIONS, duration: DURATION },
    );
    const what = kind === "post" ? "bare Fastify form-POST" : "bare Fastify GET";
    baseRows.push(
      { section: "baseline", name: `${what}: req/s`, value: f.rps, unit: "req/s", ratio: 1 },
      { section: "baseline", name: `${what}: p99`, value: f.p99, unit: "ms", ratio: 1 },
    );
    return f;
  } finally {
    await p.stop();
  }
}

const ctx: BenchContext = {
  duration: DURATION,
  connections: CONNECTIONS,
  baseline(kind) {
    let f = baselines.get(kind);
    if (!f) {
      f = measureBaseline(kind);
      baselines.set(kind, f);
    }
    return f;
  },
  log: (msg) => console.error(`[bench] ${msg}`),
};

const rows: BenchRow[] = [];
let crashed = false;
for (const name of selected) {
  const started = Date.now();
  ctx.log(`section ${name}...`);
  try {
    const mod = await SECTIONS[name]!();
    rows.push(...(await mod.run(ctx)));
  } catch (err) {
    crashed = true;
    console.error(`section ${name} failed:`, err);
    rows.push({ section: name, name: "section failed (see stderr)", value: NaN, unit: "", pass: false });
  }
  ctx.log(`section ${name} took ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

console.log(
  `\nMachine: ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ` +
    `Node ${process.version}, load average ${loadavg()[0]!.toFixed(1)}`,
);
console.log(
  `autocannon: ${CONNECTIONS} connections, ${DURATION} s per load figure after a 2 s warm-up; ` +
    `command: npm run bench${wanted.length ? " -- " + wanted.join(" ") : ""}\n`,
);
console.log(formatTable([...baseRows, ...rows]));
const failed = crashed || rows.some((r) => r.pass === false);
process.exitCode = failed ? 1 : 0;
