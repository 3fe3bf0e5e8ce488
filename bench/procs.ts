// Child processes for benchmarks and cluster tests: spawn an entry point with
// an environment, wait until it is ready, stop it by pid. The entry runs as
// the bundle `npm run build` made when that build is newer than every source
// it read, else as TypeScript under tsx (docs/testing.md).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

const DIST = join(ROOT, "dist");
/** Written last by scripts/build.ts: the source files the bundles were built from. */
const BUILD_INPUTS = join(DIST, "build-inputs.json");

let distFresh: boolean | undefined;

/**
 * Whether the last successful `npm run build` happened after every change to
 * what it read (a file it read and that is gone since also makes it stale).
 */
function isDistFresh(): boolean {
  if (distFresh !== undefined) return distFresh;
  if (!existsSync(BUILD_INPUTS)) return (distFresh = false);
  const built = statSync(BUILD_INPUTS).mtimeMs;
  const inputs = JSON.parse(readFileSync(BUILD_INPUTS, "utf8")) as string[];
  distFresh = inputs.every((f) => {
    const path = join(ROOT, f);
    return existsSync(path) && statSync(path).mtimeMs <= built;
  });
  return distFresh;
}

/**
 * V8 flags of the processes that host actors, as `npm start` and `npm run
 * start:node` pass them (package.json; test/embedded-process.test.ts
 * checks that the two agree). A 32 MiB semi-space (V8's default is 16 MiB)
 * cut the garbage collector's time in a burst such as one message
 * answering 1,000 parked polls by two fifths (docs/benchmarks.md). Not for
 * the gateway, whose RSS per parked poll is a target.
 */
export const ACTOR_HOST_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=32"];
const ACTOR_HOSTS = new Set(["server.ts", "cluster/node-main.ts"]);

/**
 * Node's arguments to run `entry` (relative to the project root): its
 * compiled JavaScript when the build is fresh (no TypeScript compile at every
 * start, about a CPU second per process), else the TypeScript under tsx
 * (bench/ entries are never built). For processes that are not started with
 * startProc, e.g. the CLIs a test runs to completion.
 */
export function entryArgs(entry: string): string[] {
  const flags = ACTOR_HOSTS.has(entry) ? ACTOR_HOST_NODE_FLAGS : [];
  const compiled = join(DIST, entry.replace(/\.ts$/, ".js"));
  // bench/ is not bundled (dist/bench holds what bench/coldstart.ts compiles for itself).
  if (!entry.startsWith("bench/") && existsSync(compiled) && isDistFresh()) return [...flags, compiled];
  return [...flags, "--import", "tsx", join(ROOT, entry)];
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
  timeoutMs = 60_000,
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
