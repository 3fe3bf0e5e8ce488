// Child processes for benchmarks and cluster tests: spawn an entry point with
// an environment, wait until it is ready, stop it by pid. The entry runs as
// the JavaScript `npm run build` compiled when that build is newer than every
// source it compiles, else as TypeScript under tsx (docs/testing.md).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

const DIST = join(ROOT, "dist");
/**
 * What the build script copies into dist after tsc succeeded: their copies'
 * time is the end of the last successful build (tsc itself rewrites only the
 * outputs whose content changes, so no output of its own dates the build).
 */
const BUILD_ASSETS = ["proto/gen/descriptor.json", "gateway/admin/placement.html"];

/**
 * Every file the build reads: the tsconfigs and all files under the folders
 * of tsconfig.build.json's `include` globs (`*.ts` at the root, `dir/**` for
 * the others), the copied assets among them.
 */
function buildInputs(): string[] {
  const config = JSON.parse(readFileSync(join(ROOT, "tsconfig.build.json"), "utf8")) as { include: string[] };
  const out = [join(ROOT, "tsconfig.json"), join(ROOT, "tsconfig.build.json")];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else out.push(join(dir, e.name));
    }
  };
  for (const glob of config.include) {
    const deep = /^([^*]+)\/\*\*\/\*\.ts$/.exec(glob);
    if (deep) walk(join(ROOT, deep[1]!));
    else if (glob === "*.ts") {
      for (const name of readdirSync(ROOT)) if (name.endsWith(".ts")) out.push(join(ROOT, name));
    } else throw new Error(`bench/procs.ts does not understand tsconfig.build.json's include ${glob}`);
  }
  return out;
}

let distFresh: boolean | undefined;

/** Whether the last successful `npm run build` happened after every change to what it reads. */
function isDistFresh(): boolean {
  if (distFresh !== undefined) return distFresh;
  const copies = BUILD_ASSETS.map((a) => join(DIST, a));
  if (!copies.every((c) => existsSync(c))) return (distFresh = false);
  const built = Math.min(...copies.map((c) => statSync(c).mtimeMs));
  distFresh = buildInputs().every((f) => statSync(f).mtimeMs <= built);
  return distFresh;
}

/**
 * Node's arguments to run `entry` (relative to the project root): its
 * compiled JavaScript when the build is fresh (no TypeScript compile at every
 * start, about a CPU second per process), else the TypeScript under tsx
 * (bench/ entries are never built). For processes that are not started with
 * startProc, e.g. the CLIs a test runs to completion.
 */
export function entryArgs(entry: string): string[] {
  const compiled = join(DIST, entry.replace(/\.ts$/, ".js"));
  // bench/ is not built: a dist/bench file is a leftover of an older build.
  if (!entry.startsWith("bench/") && existsSync(compiled) && isDistFresh())
    return ["--enable-source-maps", compiled];
  return ["--import", "tsx", join(ROOT, entry)];
}

export interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Start `entry` (relative to the project root) and wait for a line matching
 * `ready` on stdout or stderr.
 */
export async function startProc(
  name: string,
  entry: string,
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 30_000,
  /** Extra node flags, e.g. ["--cpu-prof"] or ["--expose-gc"]. */
  nodeArgs: string[] = [],
): Promise<Proc & { match: RegExpMatchArray }> {
  const child = spawn(process.execPath, [...nodeArgs, ...entryArgs(entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const proc: Proc = {
    name,
    child,
    output: () => out,
    stop: (signal: NodeJS.Signals = "SIGTERM") =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
        child.once("exit", () => {
          clearTimeout(t);
          resolve();
        });
        child.kill(signal);
      }),
  };
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} not ready in ${timeoutMs} ms:\n${out}`)),
      timeoutMs,
    );
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.length > 200_000) out = out.slice(-100_000);
      const m = out.match(ready);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? sig}) before ready:\n${out}`));
    });
  });
  return { ...proc, match };
}
