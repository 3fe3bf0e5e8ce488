// The import graph of actors/ (issue 19): it has no cycle, and a kind's
// folder is entered only through its door. Run:
//
//   npm run import-graph             # the findings, for a reader
//   npm run import-graph -- --json   # the same, machine-readable
//   npm run import-graph -- --quiet  # only cycles and door violations (npm run check)
//
// Exit code 1 when there is a cycle or a door violation in actors/. What
// it checks:
//
// - Cycles: the strongly connected components (Tarjan) of the graph of
//   every .ts file under actors/. Type-only imports (`import type`, imports
//   whose every name is a type, `import("x").T`) count: a reader follows
//   them round the loop too. A component that stays a cycle without them is
//   a runtime cycle; one that needs them is reported as type-only.
// - Doors: a file in actors/<kind>/ imports another folder of actors/ only
//   through its index.ts. The leaf modules at actors/*.ts (types.ts,
//   protocol.ts, addresses.ts, errors.ts...) anybody may import, but they
//   import only leaves, except addresses.ts, which may import the kinds'
//   protocol.ts files. actors/index.ts is the door of code outside actors/.
// - Code outside actors/ (gateway/, cluster/, webhook/, the CLIs; not the
//   tests, which unit-test kinds' internals) imports actors/ only through
//   actors/index.ts, a kind's index.ts or the leaf modules: reported as a
//   warning for now, the exit code ignores it.
//
// Imports are read with the TypeScript parser (no type checking): relative
// specifiers only, resolved to files as written ("./x.ts"), or with ".ts"
// or "/index.ts" added.

import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export interface ImportEdge {
  /** Paths relative to the root, with "/" separators. */
  from: string;
  to: string;
  typeOnly: boolean;
}

export interface ImportCycle {
  /** The component's files, sorted. */
  files: string[];
  /** The component is a cycle only through type-only imports. */
  typeOnly: boolean;
  /** The runtime cycles inside it (components of its value imports), each sorted; empty when typeOnly. */
  runtimeCycles: string[][];
  /** One shortest loop through the component's first file: its files in order, back to the first. */
  example: ImportEdge[];
}

export interface ImportGraphReport {
  /** Files under actors/ and the imports between them. */
  files: number;
  imports: number;
  typeOnlyImports: number;
  cycles: ImportCycle[];
  /** Imports inside actors/ that break the door rule, with why. */
  doorViolations: (ImportEdge & { rule: string })[];
  /** Imports of actors/ internals by code outside actors/ (a warning for now). */
  outsideViolations: ImportEdge[];
}

/** Top-level directories outside actors/ that are not checked (the tests reach into kinds on purpose). */
const OUTSIDE_SKIP = new Set(["actors", "node_modules", "dist", "data", "coverage", "test"]);

function posix(p: string): string {
  return p.split(sep).join("/");
}

/** Every .ts file under `dir` (not .d.ts), absolute, sorted. */
function tsFiles(dir: string, skip: (name: string, path: string) => boolean = () => false): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (skip(name, p)) continue;
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

/** The module specifiers a file imports or re-exports, and whether only types come through. */
export function importsOf(fileName: string, text: string): { spec: string; typeOnly: boolean }[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: { spec: string; typeOnly: boolean }[] = [];
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st) && ts.isStringLiteral(st.moduleSpecifier)) {
      const c = st.importClause;
      const named = c?.namedBindings && ts.isNamedImports(c.namedBindings) ? c.namedBindings.elements : null;
      const typeOnly =
        c !== undefined &&
        (c.isTypeOnly ||
          (c.name === undefined && named !== null && named.length > 0 && named.every((e) => e.isTypeOnly)));
      out.push({ spec: st.moduleSpecifier.text, typeOnly });
    } else if (ts.isExportDeclaration(st) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier)) {
      const named = st.exportClause && ts.isNamedExports(st.exportClause) ? st.exportClause.elements : null;
      const typeOnly =
        st.isTypeOnly || (named !== null && named.length > 0 && named.every((e) => e.isTypeOnly));
      out.push({ spec: st.moduleSpecifier.text, typeOnly });
    }
  }
  // import("x") calls (runtime) and import("x").T types, anywhere in the file.
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      out.push({ spec: node.arguments[0].text, typeOnly: false });
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      out.push({ spec: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** The file a relative specifier names, or null (a package, or nothing there). */
function resolveSpec(fromFile: string, spec: string): string | null {
  if (!spec.startsWith("./") && !spec.startsWith("../")) return null;
  const base = resolve(dirname(fromFile), spec);
  const candidates = [base, base.replace(/\.js$/, ".ts"), `${base}.ts`, join(base, "index.ts")];
  for (const c of candidates) if (existsSync(c) && statSync(c).isFile()) return c;
  return null;
}

/** The resolved imports of files, as edges between root-relative paths; repeats merged (value wins). */
function edgesOf(root: string, files: string[]): ImportEdge[] {
  const edges = new Map<string, ImportEdge>();
  for (const file of files) {
    const from = posix(relative(root, file));
    for (const { spec, typeOnly } of importsOf(file, readFileSync(file, "utf8"))) {
      const target = resolveSpec(file, spec);
      if (target === null) continue;
      const to = posix(relative(root, target));
      const key = `${from}\n${to}`;
      const known = edges.get(key);
      if (known === undefined) edges.set(key, { from, to, typeOnly });
      else known.typeOnly &&= typeOnly;
    }
  }
  return [...edges.values()];
}

/** Tarjan's strongly connected components of the graph, iteratively; only those that are cycles. */
export function cyclesOf(nodes: string[], next: (n: string) => string[]): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let counter = 0;
  for (const start of nodes) {
    if (index.has(start)) continue;
    // Each frame: a node and the position in its successor list.
    const frames: { n: string; succ: string[]; i: number }[] = [];
    const open = (n: string): void => {
      index.set(n, counter);
      low.set(n, counter);
      counter++;
      stack.push(n);
      onStack.add(n);
      frames.push({ n, succ: next(n), i: 0 });
    };
    open(start);
    while (frames.length) {
      const f = frames[frames.length - 1]!;
      if (f.i < f.succ.length) {
        const m = f.succ[f.i++]!;
        if (!index.has(m)) open(m);
        else if (onStack.has(m)) low.set(f.n, Math.min(low.get(f.n)!, index.get(m)!));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) low.set(parent.n, Math.min(low.get(parent.n)!, low.get(f.n)!));
      if (low.get(f.n) !== index.get(f.n)) continue;
      const comp: string[] = [];
      for (;;) {
        const m = stack.pop()!;
        onStack.delete(m);
        comp.push(m);
        if (m === f.n) break;
      }
      if (comp.length > 1 || f.succ.includes(f.n)) out.push(comp.sort());
    }
  }
  return out;
}

/** A shortest loop from `start` back to itself, inside `members` (breadth first). */
function shortestLoop(start: string, members: Set<string>, out: Map<string, ImportEdge[]>): ImportEdge[] {
  const via = new Map<string, ImportEdge>();
  const queue = [start];
  for (let q = 0; q < queue.length; q++) {
    const n = queue[q]!;
    for (const e of out.get(n) ?? []) {
      if (!members.has(e.to)) continue;
      if (e.to === start) {
        const path = [e];
        for (let at = n; at !== start; at = via.get(at)!.from) path.unshift(via.get(at)!);
        return path;
      }
      if (via.has(e.to)) continue;
      via.set(e.to, e);
      queue.push(e.to);
    }
  }
  return [];
}

/** Why an import inside actors/ breaks the door rule, or null when it keeps it. */
function doorRule(from: string, to: string): string | null {
  const folderOf = (p: string): string | null => {
    const parts = p.split("/");
    return parts.length > 2 ? parts[1]! : null;
  };
  const fromKind = folderOf(from);
  const toKind = folderOf(to);
  if (to === "actors/index.ts") return "actors/index.ts is the door of code outside actors/";
  if (toKind === null) return null;
  if (fromKind === toKind) return null;
  const door = `actors/${toKind}/index.ts`;
  if (fromKind !== null) return to === door ? null : `another folder is entered only through ${door}`;
  if (from === "actors/index.ts" && to === door) return null;
  if (from === "actors/addresses.ts" && to === `actors/${toKind}/protocol.ts`) return null;
  return from === "actors/addresses.ts"
    ? "addresses.ts imports only leaves and the kinds' protocol.ts"
    : "a leaf module of actors/ imports only leaves";
}

/** Whether code outside actors/ may import this file of actors/. */
function outsideMayImport(to: string): boolean {
  const parts = to.split("/");
  return parts.length === 2 || (parts.length === 3 && parts[2] === "index.ts");
}

/** The import graph of `root`/actors/ and what breaks its rules (the header says which). */
export function checkImportGraph(root: string): ImportGraphReport {
  const actorFiles = tsFiles(join(root, "actors"));
  const edges = edgesOf(root, actorFiles).filter((e) => e.to.startsWith("actors/"));
  const nodes = actorFiles.map((f) => posix(relative(root, f)));
  const out = new Map<string, ImportEdge[]>();
  for (const e of edges) (out.get(e.from) ?? out.set(e.from, []).get(e.from)!).push(e);
  const next = (typeOnlyToo: boolean) => (n: string) =>
    (out.get(n) ?? []).filter((e) => typeOnlyToo || !e.typeOnly).map((e) => e.to);

  const cycles = cyclesOf(nodes, next(true)).map((files): ImportCycle => {
    const members = new Set(files);
    const runtimeCycles = cyclesOf(files, (n) => next(false)(n).filter((m) => members.has(m)));
    return {
      files,
      typeOnly: runtimeCycles.length === 0,
      runtimeCycles,
      example: shortestLoop(files[0]!, members, out),
    };
  });
  cycles.sort((a, b) => b.files.length - a.files.length || a.files[0]!.localeCompare(b.files[0]!));

  const doorViolations = edges.flatMap((e) => {
    const rule = doorRule(e.from, e.to);
    return rule === null ? [] : [{ ...e, rule }];
  });

  const outsideFiles = tsFiles(root, (name, p) => {
    const top = posix(relative(root, p)).split("/");
    return (
      (top.length === 1 && OUTSIDE_SKIP.has(name)) || name.startsWith(".") || posix(p).endsWith("proto/gen")
    );
  });
  const outsideViolations = edgesOf(root, outsideFiles).filter(
    (e) => e.to.startsWith("actors/") && !outsideMayImport(e.to),
  );

  return {
    files: nodes.length,
    imports: edges.length,
    typeOnlyImports: edges.filter((e) => e.typeOnly).length,
    cycles,
    doorViolations,
    outsideViolations,
  };
}

/**
 * The report for a reader. `quiet`: only the cycles and door violations
 * (what fails the check), and nothing at all when there are none.
 */
export function renderReport(r: ImportGraphReport, quiet = false): string {
  const lines: string[] = [];
  const typeMark = (e: ImportEdge) => (e.typeOnly ? " (type-only)" : "");
  if (quiet && r.cycles.length === 0 && r.doorViolations.length === 0) return "";
  if (!quiet) {
    lines.push(
      `actors/ import graph: ${r.files} files, ${r.imports} imports (${r.typeOnlyImports} type-only)`,
      "",
    );
  }
  const typeOnly = r.cycles.filter((c) => c.typeOnly).length;
  lines.push(`Cycles: ${r.cycles.length} (${r.cycles.length - typeOnly} runtime, ${typeOnly} type-only)`);
  r.cycles.forEach((c, i) => {
    lines.push(`  cycle ${i + 1}: ${c.files.length} files, ${c.typeOnly ? "type-only" : "runtime"}`);
    if (!c.typeOnly && (c.runtimeCycles.length > 1 || c.runtimeCycles[0]!.length < c.files.length)) {
      const sizes = c.runtimeCycles.map((rc) => rc.length).join(", ");
      lines.push(
        `    without its type-only imports: ${c.runtimeCycles.length} runtime cycle(s) of ${sizes} files`,
      );
    }
    lines.push(
      `    for example: ${c.example.map((e) => `${e.from} ->${typeMark(e)}`).join(" ")} ${c.files[0]}`,
    );
    for (const f of c.files) lines.push(`    ${f}`);
  });
  lines.push("", `Door violations: ${r.doorViolations.length}`);
  for (const v of r.doorViolations) lines.push(`  ${v.from} imports ${v.to}${typeMark(v)}: ${v.rule}`);
  if (quiet) return lines.join("\n");
  lines.push(
    "",
    `Outside actors/, imports past the doors (warning only): ${r.outsideViolations.length}`,
    "  (code outside actors/ imports actors/index.ts, a kind's index.ts or a leaf at actors/*.ts)",
  );
  for (const v of r.outsideViolations) lines.push(`  ${v.from} imports ${v.to}${typeMark(v)}`);
  return lines.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const report = checkImportGraph(root);
  const failed = report.cycles.length > 0 || report.doorViolations.length > 0;
  const text = process.argv.includes("--json")
    ? JSON.stringify({ ok: !failed, ...report }, null, 2)
    : renderReport(report, process.argv.includes("--quiet"));
  if (text !== "") console.log(text);
  process.exitCode = failed ? 1 : 0;
}
