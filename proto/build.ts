// Regenerates proto/gen/ from proto/*.proto: a JSON descriptor that
// protobufjs turns into fast generated encoders at load time.
import protobuf from "protobufjs";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const files = readdirSync(here)
  .filter((f) => f.endsWith(".proto"))
  .map((f) => join(here, f));
const root = await protobuf.load(files);
mkdirSync(join(here, "gen"), { recursive: true });
writeFileSync(join(here, "gen", "descriptor.json"), JSON.stringify(root.toJSON(), null, 1) + "\n");
console.log(`proto: wrote proto/gen/descriptor.json from ${files.length} file(s)`);
