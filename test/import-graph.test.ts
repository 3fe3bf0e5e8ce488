// scripts/import-graph.ts on small trees written to a temporary directory:
// the cycles it finds (runtime and type-only), the door rule inside
// actors/, and the warning for code outside actors/.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { checkImportGraph, importsOf, renderReport } from "../scripts/import-graph.ts";

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "import-graph-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

/** A tree that keeps every rule: leaves, doors, addresses.ts importing a protocol file. */
const CLEAN: Record<string, string> = {
  "actors/types.ts": "export type Id = number;\n",
  "actors/protocol.ts": 'import type { Id } from "./types.ts";\nexport type P = { id: Id };\n',
  "actors/addresses.ts": 'import type { AProtocol } from "./a/protocol.ts";\nexport type R = AProtocol;\n',
  "actors/index.ts": 'export { a } from "./a/index.ts";\nexport { b } from "./b/index.ts";\n',
  "actors/a/protocol.ts": 'import type { P } from "../protocol.ts";\nexport type AProtocol = P;\n',
  "actors/a/index.ts": 'export { a } from "./a.ts";\n',
  "actors/a/a.ts":
    'import { b } from "../b/index.ts";\nimport type { Id } from "../types.ts";\nexport const a: Id = b;\n',
  "actors/b/index.ts": 'export { b } from "./b.ts";\n',
  "actors/b/b.ts": "export const b = 2;\n",
  "gateway/route.ts":
    'import { a } from "../actors/index.ts";\nimport { b } from "../actors/b/index.ts";\nimport type { Id } from "../actors/types.ts";\nexport const r: Id = a + b;\n',
  // Tests may reach into a kind.
  "test/a.test.ts": 'import { a } from "../actors/a/a.ts";\nexport const t = a;\n',
};

test("import graph - a clean tree has no finding", () => {
  const root = tree(CLEAN);
  try {
    const r = checkImportGraph(root);
    assert.deepEqual(
      { cycles: r.cycles, door: r.doorViolations, outside: r.outsideViolations },
      { cycles: [], door: [], outside: [] },
    );
    assert.equal(r.files, 9);
    assert.equal(r.imports, 9);
    assert.equal(r.typeOnlyImports, 4);
    assert.match(renderReport(r), /Cycles: 0 .*\n[\s\S]*Door violations: 0/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("import graph - cycles, type-only cycles, door violations and outside imports", () => {
  const root = tree({
    ...CLEAN,
    // A runtime cycle through two doors: a.ts -> b's door -> b.ts -> a's door -> a.ts.
    "actors/b/b.ts": 'import { a } from "../a/index.ts";\nexport const b = 2;\nexport const c = a;\n',
    // A cycle only through types (an inline `type` on every name counts as type-only).
    "actors/c/x.ts": 'import { type Y } from "./y.ts";\nexport type X = Y[];\n',
    "actors/c/y.ts": 'import type { X } from "./x.ts";\nexport type Y = X | 1;\n',
    // A runtime cycle p <-> q, which r joins through a type: one component of three files.
    "actors/d/p.ts":
      'import { q } from "./q.ts";\nimport { r } from "./r.ts";\nexport const p = () => q + r;\n',
    "actors/d/q.ts": 'import { p } from "./p.ts";\nexport const q = 1;\nexport const f = p;\n',
    "actors/d/r.ts": 'export const r = 1;\nexport type T = import("./p.ts").Nothing;\n',
    // Door violations: past b's door, the actors door from inside, a leaf importing a kind.
    "actors/e/e.ts":
      'import { b } from "../b/b.ts";\nimport type { Id } from "../index.ts";\nexport const e: Id = b;\n',
    "actors/errors.ts": 'import { a } from "./a/index.ts";\nexport const err = a;\n',
    // Code outside actors/ past a door (a warning).
    "cluster/worker.ts": 'import { b } from "../actors/b/b.ts";\nexport const w = b;\n',
  });
  try {
    const r = checkImportGraph(root);
    const summary = r.cycles.map((c) => ({ files: c.files, typeOnly: c.typeOnly, runtime: c.runtimeCycles }));
    assert.deepEqual(summary, [
      {
        files: ["actors/a/a.ts", "actors/a/index.ts", "actors/b/b.ts", "actors/b/index.ts"],
        typeOnly: false,
        runtime: [["actors/a/a.ts", "actors/a/index.ts", "actors/b/b.ts", "actors/b/index.ts"]],
      },
      {
        files: ["actors/d/p.ts", "actors/d/q.ts", "actors/d/r.ts"],
        typeOnly: false,
        runtime: [["actors/d/p.ts", "actors/d/q.ts"]],
      },
      { files: ["actors/c/x.ts", "actors/c/y.ts"], typeOnly: true, runtime: [] },
    ]);
    // The example loop starts and ends at the first file.
    const loop = r.cycles[0]!.example;
    assert.equal(loop[0]!.from, "actors/a/a.ts");
    assert.equal(loop.at(-1)!.to, "actors/a/a.ts");
    assert.deepEqual(
      r.cycles[2]!.example.map((e) => [e.from, e.to, e.typeOnly]),
      [
        ["actors/c/x.ts", "actors/c/y.ts", true],
        ["actors/c/y.ts", "actors/c/x.ts", true],
      ],
    );

    assert.deepEqual(
      r.doorViolations.map((v) => [v.from, v.to, v.typeOnly]),
      [
        ["actors/e/e.ts", "actors/b/b.ts", false],
        ["actors/e/e.ts", "actors/index.ts", true],
        ["actors/errors.ts", "actors/a/index.ts", false],
      ],
    );
    assert.deepEqual(
      r.outsideViolations.map((v) => [v.from, v.to]),
      [["cluster/worker.ts", "actors/b/b.ts"]],
    );
    const text = renderReport(r);
    assert.match(text, /Cycles: 3 \(2 runtime, 1 type-only\)/);
    assert.match(
      text,
      /cycle 2: 3 files, runtime\n {4}without its type-only imports: 1 runtime cycle\(s\) of 2 files/,
    );
    assert.match(text, /Door violations: 3/);
    assert.match(text, /warning only\): 1/);
    // --quiet (npm run check): the failing findings only, without the header and the warnings.
    const quiet = renderReport(r, true);
    assert.match(quiet, /^Cycles: 3 \(2 runtime, 1 type-only\)/);
    assert.match(quiet, /Door violations: 3\n/);
    assert.doesNotMatch(quiet, /import graph:|warning only/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("import graph - the repository's actors/ has no cycle and no door violation", () => {
  const r = checkImportGraph(fileURLToPath(new URL("..", import.meta.url)));
  assert.ok(r.files > 0);
  assert.deepEqual(
    { cycles: r.cycles.map((c) => c.files), door: r.doorViolations },
    { cycles: [], door: [] },
  );
  assert.equal(renderReport(r, true), "");
});

test("import graph - which imports are type-only", () => {
  const src = [
    'import type { A } from "./a.ts";',
    'import { type B, type C } from "./b.ts";',
    'import { type D, e } from "./d.ts";',
    'import "./side.ts";',
    'export type { F } from "./f.ts";',
    'export { g } from "./g.ts";',
    'export * from "./h.ts";',
    'type I = import("./i.ts").I;',
    'const j = await import("./j.ts");',
  ].join("\n");
  assert.deepEqual(
    importsOf("x.ts", src).map((i) => [i.spec, i.typeOnly]),
    [
      ["./a.ts", true],
      ["./b.ts", true],
      ["./d.ts", false],
      ["./side.ts", false],
      ["./f.ts", true],
      ["./g.ts", false],
      ["./h.ts", false],
      ["./i.ts", true],
      ["./j.ts", false],
    ],
  );
});
