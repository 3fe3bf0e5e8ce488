// Regenerates the API facts the tests read (test/facts/), so that the
// repository needs nothing beside it:
//
//   npm run api-facts -- --schema zulip-openapi.yaml --contract contract.txt
//
// --schema: Zulip's published OpenAPI document (api-docs/openapi/zulip.yaml in
//   Zulip's server repository, the version named in test/facts/README.md).
//   Written to test/facts/zulip-openapi.json with the prose removed
//   (descriptions, summaries, examples, x-* annotations): what remains is
//   every path, method, parameter, response and component schema, which is
//   all the conformance suite validates against.
// --contract: the API contract this server was first built to. Written to
//   test/facts/contract-routes.json: the "METHOD /path" operations it names,
//   from its "### METHOD /path" headings and the few it names in running text.
//
// Either flag may be given alone; each file is rewritten only from its source.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { parse } from "yaml";

const OUT_DIR = new URL("../test/facts/", import.meta.url);

/** Schema-object keys that are prose or examples, not constraints. */
const ANNOTATIONS = new Set(["description", "summary", "example", "examples", "title"]);

/**
 * Copies `node` without annotations. Keys of a `properties` map are field
 * names (a channel has a field called "description"), so they are kept.
 */
export function stripAnnotations(node: unknown, parentKey = ""): unknown {
  if (Array.isArray(node)) return node.map((v) => stripAnnotations(v));
  if (node === null || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  const names = parentKey === "properties";
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    if (!names && (ANNOTATIONS.has(k) || k.startsWith("x-"))) continue;
    out[k] = stripAnnotations(v, names ? "" : k);
  }
  return out;
}

/** Operations the contract names in running text rather than under a heading of their own. */
const NAMED_IN_TEXT = [
  "POST /user_groups/{user_group_id}/deactivate",
  "PATCH /settings/display",
  "PATCH /settings/notifications",
  "GET /events",
  "POST /register_client_device",
  "POST /users/me/subscriptions/properties",
  "GET /users/{email}",
  "PATCH /users/me/subscriptions/muted_topics",
];

export function contractRoutes(text: string): string[] {
  const listed = new Set<string>();
  for (const m of text.matchAll(/^### (GET|POST|PATCH|DELETE|PUT) (\/\S+)/gm)) listed.add(`${m[1]} ${m[2]}`);
  for (const entry of NAMED_IN_TEXT) listed.add(entry);
  return [...listed].sort();
}

function main(): void {
  const { values } = parseArgs({ options: { schema: { type: "string" }, contract: { type: "string" } } });
  if (!values.schema && !values.contract) {
    console.error("usage: npm run api-facts -- [--schema zulip-openapi.yaml] [--contract contract.txt]");
    process.exit(2);
  }
  if (values.schema) {
    const doc = stripAnnotations(parse(readFileSync(values.schema, "utf8")));
    const out = new URL("zulip-openapi.json", OUT_DIR);
    writeFileSync(out, JSON.stringify(doc, null, 1) + "\n");
    console.log(`wrote ${fileURLToPath(out)}`);
  }
  if (values.contract) {
    const routes = contractRoutes(readFileSync(values.contract, "utf8"));
    const out = new URL("contract-routes.json", OUT_DIR);
    writeFileSync(out, JSON.stringify(routes, null, 2) + "\n");
    console.log(`wrote ${fileURLToPath(out)} (${routes.length} operations)`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
