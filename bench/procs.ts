// Child processes for benchmarks and cluster tests: spawn a TypeScript entry
// point under tsx with an environment, wait until it is ready, stop it by pid.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

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
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", join(ROOT, entry)], {
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
