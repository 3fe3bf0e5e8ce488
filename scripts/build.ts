// `npm run build`: bundle each entry point (the embedded server, a cluster
// node, a gateway, the two CLIs) into one JavaScript file under dist/, at the
// entry's own path (dist/server.js, dist/cluster/node-main.js, ...).
//
// Why a bundle: a process start loads every module it imports, and Node's
// module loader pays per file. Our code is ~330 modules, typebox ~650 and the
// pure JavaScript libraries below ~300 more, so a start spent most of its time
// resolving and reading files. Bundled, they are one file per entry; the
// other packages stay in node_modules (native addons, Fastify and its
// plugins, packages that locate their own files or spawn workers), imported
// as usual. See docs/operations.md, "Build".
//
// The files the code reads at run time (the gRPC descriptor, the placement
// page) are copied beside the bundles, where cluster/assets.ts finds them.
// dist/build-inputs.json lists every source file the bundles were built from;
// bench/procs.ts compares their times with it to tell a stale build.
import { build, type Metafile } from "esbuild";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DIST = join(ROOT, "dist");

const ENTRIES = ["server.ts", "cluster/node-main.ts", "gateway/gateway-main.ts", "manage.ts", "admin.ts"];
const ASSETS = ["proto/gen/descriptor.json", "gateway/admin/placement.html"];
/**
 * Packages bundled into the entries: plain JavaScript in many small files,
 * that read no files of their own. Every other dependency stays external.
 */
const BUNDLED = new Set([
  "typebox",
  "lru-cache",
  "prom-client",
  "@opentelemetry/api",
  "@opentelemetry/core",
  "@opentelemetry/resources",
  "@opentelemetry/sdk-trace-base",
]);

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
};
const external = Object.keys(pkg.dependencies)
  .filter((name) => !BUNDLED.has(name))
  .flatMap((name) => [name, `${name}/*`]);

// A build from before the bundles (one file per module) would leave stale
// modules beside them.
rmSync(DIST, { recursive: true, force: true });
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: ENTRIES,
  outdir: DIST,
  outbase: ".",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // A package's ES module build before its CommonJS one: esbuild drops what
  // an ES module exports and nobody imports (the OpenTelemetry packages'
  // CommonJS builds came in whole: a quarter of the bundle).
  mainFields: ["module", "main"],
  // Parsing is part of every start: whitespace and syntax are minified, the
  // names kept (a stack trace read without the map still names functions).
  // The map holds positions only (the sources are in the repository); it is
  // read at the first stack trace (cluster/source-maps.ts).
  sourcemap: true,
  minifyWhitespace: true,
  minifySyntax: true,
  // Node prints the source line of an uncaught exception above its stack:
  // keep that a line, not the whole minified bundle.
  lineLimit: 160,
  sourcesContent: false,
  external,
  metafile: true,
  logLevel: "warning",
  // The CommonJS packages inside the bundle call require() (for Node's own
  // modules); an ES module has none of its own.
  banner: {
    js: 'import { createRequire as bundleRequire } from "node:module"; const require = bundleRequire(import.meta.url);',
  },
});
for (const asset of ASSETS) {
  mkdirSync(dirname(join(DIST, asset)), { recursive: true });
  cpSync(join(ROOT, asset), join(DIST, asset));
}
const inputs = Object.keys((result.metafile as Metafile).inputs).filter(
  (f) => !f.startsWith("node_modules/"),
);
inputs.push(...ASSETS, "package.json", "scripts/build.ts");
// Written last: its time is the end of a successful build.
writeFileSync(join(DIST, "build-inputs.json"), JSON.stringify(inputs.sort(), null, 1) + "\n");
