// verify_action coverage (issue 19): every event type the server emits has a
// verify_action case, or is listed below as stateless with the test that
// checks its arrival and shape. Read from the sources, no server:
//   - the event types the API knows: Zulip's GET /events schema
//     (test/facts/zulip-openapi.json), the whole-event deviations of
//     test/openapi-deviations.ts and NEWER_THAN_FACTS;
//   - the ones the server emits: those written as `type: "<name>"` in
//     actors/, gateway/, cluster/ and server.ts;
//   - the covered ones: the `types` of every verifyAction call of
//     test/verify-action.test.ts, and the apply rules (`case "<name>":`) of
//     the verify_action helpers of test/events.test.ts and
//     test/events-flags.test.ts.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { deviations } from "./openapi-deviations.ts";
import { OpenApiSpec } from "./support/openapi.ts";

const ROOT = resolve(import.meta.dirname, "..");

/** Event types Zulip added after the schema's version (10.2) that no deviation names as a whole event. */
const NEWER_THAN_FACTS = [
  "reminders", // message reminders, feature levels 381, 399, 415
  "device", // client devices, Zulip 12's device model
];

/**
 * Stateless event types with no verify_action case: the test that checks
 * their arrival and shape. (Stateless types a verify_action case causes,
 * e.g. typing, reaction, realm_export_consent, are covered by that case.)
 */
const STATELESS_CHECKED: Record<string, string> = {
  // A parked GET /events answers it after EVENT_QUEUE_HEARTBEAT_MS; it is never queued.
  heartbeat: "test/events.test.ts",
};

/** The files whose verifyAction calls name the types they cause. */
const VERIFY_ACTION_FILES = ["test/verify-action.test.ts"];
/** The files with their own verify_action helper: its apply rules are the types covered. */
const APPLY_RULE_FILES = ["test/events.test.ts", "test/events-flags.test.ts"];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith(".ts") ? [path] : [];
  });
}

const read = (file: string): string => readFileSync(join(ROOT, file), "utf8");
const names = (text: string, re: RegExp): string[] => [...text.matchAll(re)].map((m) => m[1]!);

function knownTypes(): Set<string> {
  const wholeEvents = deviations.filter((d) => d.method === "EVENT" && d.pointer === "").map((d) => d.path);
  return new Set([...new OpenApiSpec().events().types(), ...wholeEvents, ...NEWER_THAN_FACTS]);
}

function emittedTypes(): string[] {
  const written = new Set<string>();
  const files = [
    ...["actors", "gateway", "cluster"].flatMap((d) => sources(join(ROOT, d))),
    join(ROOT, "server.ts"),
  ];
  for (const f of files)
    for (const n of names(readFileSync(f, "utf8"), /\btype: "([a-z_]+)"/g)) written.add(n);
  return [...knownTypes()].filter((t) => written.has(t)).sort();
}

function coveredTypes(): Set<string> {
  const covered = new Set<string>();
  for (const f of VERIFY_ACTION_FILES)
    for (const list of names(read(f), /\btypes: \[([^\]]*)\]/g))
      for (const t of names(list, /"([a-z_]+)"/g)) covered.add(t);
  for (const f of APPLY_RULE_FILES) for (const t of names(read(f), /case "([a-z_]+)":/g)) covered.add(t);
  return covered;
}

test("the scan finds the server's event types (a broken pattern would pass everything)", () => {
  const emitted = emittedTypes();
  for (const t of ["message", "realm_user", "subscription", "user_settings", "heartbeat"])
    assert.ok(emitted.includes(t), `${t} not found among ${emitted.join(", ")}`);
  assert.ok(coveredTypes().size > 20);
});

test("every event type the server emits has a verify_action case or is a checked stateless type", () => {
  const covered = coveredTypes();
  const missing = emittedTypes().filter((t) => !covered.has(t) && !(t in STATELESS_CHECKED));
  assert.deepEqual(missing, [], `event types without a verify_action case: ${missing.join(", ")}`);
});

test("the stateless list names emitted types without a case, each checked in the file it names", () => {
  const emitted = new Set(emittedTypes());
  const covered = coveredTypes();
  for (const [type, file] of Object.entries(STATELESS_CHECKED)) {
    assert.ok(emitted.has(type), `${type} is not emitted: drop it from the list`);
    assert.ok(!covered.has(type), `${type} has a verify_action case: drop it from the list`);
    assert.ok(read(file).includes(`"${type}"`), `${file} does not check ${type}`);
  }
});
