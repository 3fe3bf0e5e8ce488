// Files the code reads at run time, named by their path from the project
// root ("proto/gen/descriptor.json"). The same code runs from the sources
// (under tsx), from a bundle in dist/ (scripts/build.ts copies the files
// there) and from anywhere below either, so the file is looked up in this
// module's folder and then in each folder above it.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function assetPath(fromRoot: string): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, fromRoot);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir)
      throw new Error(`${fromRoot} is missing: neither the sources nor dist/ have it`);
  }
}
