// Capture what the process logs (cluster/log.ts) while a test runs a piece
// of code: the root logger is swapped for one writing into memory, and the
// lines come back parsed.
import { Writable } from "node:stream";
import { createLogger, rootLogger, setRootLogger } from "../../cluster/log.ts";

export type LogLine = Record<string, unknown> & { level: number; msg?: string };

/** Runs `f` (sync or async) with logs captured; returns its result and the lines at `minLevel` or above. */
export async function captureLogs<T>(
  f: () => T | Promise<T>,
  minLevel = 50,
): Promise<{ result: T; lines: LogLine[] }> {
  let text = "";
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  const saved = rootLogger();
  setRootLogger(createLogger({}, sink));
  try {
    const result = await f();
    const lines = text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as LogLine)
      .filter((l) => l.level >= minLevel);
    return { result, lines };
  } finally {
    setRootLogger(saved);
  }
}
