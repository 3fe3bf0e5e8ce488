// cluster/source-maps.ts in a compiled build: a stack frame of a bundled
// file reads as a position in its TypeScript source, the map read at the
// first trace. Built with esbuild as scripts/build.ts builds, and run by
// plain Node (tsx maps on its own, so the module stands aside under it).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { build } from "esbuild";

const dir = mkdtempSync(join(tmpdir(), "source-maps-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function compiled(lines: string[]): Promise<string> {
  const src = join(dir, "entry.ts");
  writeFileSync(src, lines.join("\n"));
  await build({
    entryPoints: [src],
    outfile: join(dir, "entry.js"),
    bundle: true,
    format: "esm",
    platform: "node",
    sourcemap: true,
    sourcesContent: false,
    minifyWhitespace: true,
    logLevel: "silent",
  });
  return join(dir, "entry.js");
}

test("a thrown error's frames name the TypeScript source, line and column", async () => {
  const file = await compiled([
    `import ${JSON.stringify(join(process.cwd(), "cluster/source-maps.ts"))};`,
    "function thrower(n: number): never {",
    "  throw new Error(`no ${n}`);",
    "}",
    "try {",
    "  thrower(7);",
    "} catch (err) {",
    "  console.log((err as Error).stack);",
    "}",
  ]);
  const out = execFileSync(process.execPath, [file], { encoding: "utf8" }).split("\n");
  assert.equal(out[0], "Error: no 7");
  assert.match(out[1]!, /^ {4}at thrower \(.*\/entry\.ts:3:9\)$/);
  assert.match(out[2]!, /^ {4}at .*\/entry\.ts:6:3$/);
});

test("under --enable-source-maps Node maps, and the module stands aside", async () => {
  const file = await compiled([
    `import ${JSON.stringify(join(process.cwd(), "cluster/source-maps.ts"))};`,
    'console.log(Error.prepareStackTrace?.name ?? "none");',
  ]);
  const plain = execFileSync(process.execPath, [file], { encoding: "utf8" }).trim();
  const node = execFileSync(process.execPath, ["--enable-source-maps", file], { encoding: "utf8" }).trim();
  assert.equal(plain, "mappedStackTrace");
  assert.notEqual(node, "mappedStackTrace");
});
