// Stack traces of the compiled build name the TypeScript sources. Node's
// --enable-source-maps does this by reading every map, and indexing the
// text of every file that names one, while the file loads: for a bundle,
// 1.7 MB of code and its map before the first line runs, a tenth of a start
// (docs/operations.md "Build"). Each entry point imports this module first
// instead: a map is read the first time a trace passes through its file.
// Under --enable-source-maps, or under tsx (which maps on its own), it does
// nothing.
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

interface Loaded {
  map: SourceMap;
  dir: string;
}

const maps = new Map<string, Loaded | null>();

/** The map beside a compiled file (`<file>.map`), read once; null without one. */
function mapOf(fileName: string): Loaded | null {
  let loaded = maps.get(fileName);
  if (loaded !== undefined) return loaded;
  loaded = null;
  try {
    const file = fileName.startsWith("file:") ? fileURLToPath(fileName) : fileName;
    if (file.endsWith(".js") && existsSync(`${file}.map`)) {
      const payload = JSON.parse(readFileSync(`${file}.map`, "utf8")) as ConstructorParameters<
        typeof SourceMap
      >[0];
      loaded = { map: new SourceMap(payload), dir: dirname(file) };
    }
  } catch {
    loaded = null;
  }
  maps.set(fileName, loaded);
  return loaded;
}

/** One frame as V8 prints it, its position moved to the original source when a map knows it. */
function frameText(site: NodeJS.CallSite): string {
  const text = site.toString();
  const fileName = site.getFileName();
  const line = site.getLineNumber();
  const column = site.getColumnNumber();
  if (!fileName || line === null || column === null) return text;
  const m = mapOf(fileName);
  if (!m) return text;
  const entry = m.map.findEntry(line - 1, column - 1) as {
    originalSource?: string;
    originalLine?: number;
    originalColumn?: number;
  };
  if (entry.originalSource === undefined || entry.originalLine === undefined) return text;
  const original = `${resolve(m.dir, entry.originalSource)}:${entry.originalLine + 1}:${(entry.originalColumn ?? 0) + 1}`;
  const at = `${fileName}:${line}:${column}`;
  return text.includes(at) ? text.replace(at, original) : text;
}

function header(err: unknown): string {
  try {
    return err instanceof Error ? Error.prototype.toString.call(err) : String(err);
  } catch {
    return "Error";
  }
}

/** V8's stack text, each frame of a mapped file at its original position. */
export function mappedStackTrace(err: unknown, sites: NodeJS.CallSite[]): string {
  return [header(err), ...sites.map((site) => `    at ${frameText(site)}`)].join("\n");
}

// True under --enable-source-maps (flag or NODE_OPTIONS) and under tsx.
if (!process.sourceMapsEnabled) Error.prepareStackTrace = mappedStackTrace;
