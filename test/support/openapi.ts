// Zulip's published OpenAPI schema (version 10.2, kept in the repository as
// test/facts/zulip-openapi.json without its prose; `npm run api-facts`
// regenerates it, see test/facts/README.md) as a response validator for the
// conformance suite.
//
// Zulip's own test (zerver/openapi/openapi.py, validate_test_response) runs
// openapi-core over every documented response: the schema is OpenAPI 3.0, so
// `nullable` widens a type to null, `example`/`description`/`x-*` are
// annotations, and every object declares additionalProperties (false almost
// everywhere), which is what makes an undocumented key an error. Here the
// schemas are converted once to plain JSON Schema and compiled with Ajv.
// A response-level oneOf counts as anyOf: Zulip's get_schema notes that its
// alternatives differ only in their examples.

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";

export const OPENAPI_FILE = fileURLToPath(new URL("../facts/zulip-openapi.json", import.meta.url));

type Schema = Record<string, unknown>;
type Json = unknown;

const COMPONENTS_ID = "zulip-components";

/** An OpenAPI 3.0 schema object -> JSON Schema (draft-07 as Ajv reads it). */
export function toJsonSchema(s: unknown): unknown {
  if (typeof s === "boolean") return s;
  if (s === null || typeof s !== "object" || Array.isArray(s)) return s;
  const src = s as Schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(src)) {
    switch (k) {
      case "$ref": {
        const ref = v as string;
        const m = /^#\/components\/schemas\/(.+)$/.exec(ref);
        if (!m) throw new Error(`unsupported $ref ${ref}`);
        out.$ref = `${COMPONENTS_ID}#/$defs/${m[1]}`;
        break;
      }
      case "properties": {
        const props: Schema = {};
        for (const [name, ps] of Object.entries(v as Schema)) props[name] = toJsonSchema(ps);
        out.properties = props;
        break;
      }
      case "items":
      case "additionalProperties":
      case "not":
        out[k] = toJsonSchema(v);
        break;
      case "allOf":
      case "oneOf":
      case "anyOf":
        out[k] = (v as unknown[]).map(toJsonSchema);
        break;
      case "type":
      case "enum":
      case "required":
      case "minimum":
      case "maximum":
      case "minItems":
      case "maxItems":
      case "minLength":
      case "maxLength":
      case "pattern":
      case "const":
        out[k] = v;
        break;
      default:
        // nullable handled below; example, description, deprecated, default,
        // format, title, x-* are annotations.
        break;
    }
  }
  if (src.nullable === true) {
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    if (typeof out.type === "string") {
      out.type = [out.type, "null"];
      return out;
    }
    return { anyOf: [{ type: "null" }, out] };
  }
  return out;
}

function decodePointerToken(t: string): string {
  return t.replace(/~1/g, "/").replace(/~0/g, "~");
}

export interface SchemaIssue {
  /** JSON pointer into the response body. */
  pointer: string;
  message: string;
}

export interface Deviation {
  method: string;
  /** An OpenAPI path template, e.g. "/streams/{stream_id}". */
  path: string;
  /**
   * JSON pointer of the field in the response body; "*" matches any array
   * index or object key. The field is removed before validation.
   */
  pointer: string;
  why: string;
  /**
   * For a field a later feature level renamed, retyped or removed where
   * 10.2 requires it: the value in 10.2's form put at `pointer` (on every
   * object the wildcards reach, present or not) instead of removing it.
   */
  standIn?: Json;
}

/** Applies one deviation to a response body or event. */
export function applyDeviation(root: Json, d: Deviation): void {
  if (d.standIn === undefined) removeAt(root, d.pointer);
  else putAt(root, d.pointer, d.standIn);
}

export class OpenApiSpec {
  readonly doc: Schema;
  private readonly ajv: Ajv;
  private readonly cache = new Map<string, ValidateFunction>();
  private readonly templates: { template: string; regex: RegExp }[] = [];

  constructor(file = OPENAPI_FILE) {
    this.doc = JSON.parse(readFileSync(file, "utf8")) as Schema;
    this.ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
    const comps = ((this.doc.components as Schema).schemas ?? {}) as Schema;
    const defs: Schema = {};
    for (const [name, s] of Object.entries(comps)) defs[name] = toJsonSchema(s);
    this.ajv.addSchema({ $id: COMPONENTS_ID, $defs: defs });
    for (const template of Object.keys(this.paths())) {
      // Like Zulip's endpoints_dict: "...id}" parameters are numeric, "...email}" emails.
      const re = template
        .split("/")
        .map((seg) => {
          if (!seg.startsWith("{")) return seg.replace(/[.*+?^$()|[\]\\]/g, "\\$&");
          if (/id}$/.test(seg)) return "[0-9]+";
          if (/email}$/.test(seg)) return "[^/]+@[^/]+";
          return "[^/]+";
        })
        .join("/");
      this.templates.push({ template, regex: new RegExp(`^${re}$`) });
    }
    // Literal paths win over templated ones (users/me/... before users/{user_id}/...).
    this.templates.sort((a, b) => Number(a.template.includes("{")) - Number(b.template.includes("{")));
  }

  private eventSchemas: EventSchemas | undefined;

  /** Validator of one GET /events event. */
  events(): EventSchemas {
    return (this.eventSchemas ??= new EventSchemas(this, (s) => this.ajv.compile(s)));
  }

  paths(): Record<string, Record<string, Schema>> {
    return this.doc.paths as Record<string, Record<string, Schema>>;
  }

  /** The documented path template a concrete API path (without /api/v1) falls under. */
  templateOf(path: string): string | undefined {
    const p = path.split("?", 1)[0]!;
    return this.templates.find((t) => t.regex.test(p))?.template;
  }

  operation(template: string, method: string): Schema | undefined {
    return this.paths()[template]?.[method.toLowerCase()];
  }

  /** Statuses documented for an operation. */
  statuses(template: string, method: string): string[] {
    return Object.keys((this.operation(template, method)?.responses as Schema | undefined) ?? {});
  }

  private responseSchema(template: string, method: string, status: string): unknown {
    const op = this.operation(template, method);
    let resp = (op?.responses as Schema | undefined)?.[status] as Schema | undefined;
    if (resp === undefined) return undefined;
    if (typeof resp.$ref === "string") {
      const name = /^#\/components\/responses\/(.+)$/.exec(resp.$ref)![1]!;
      resp = ((this.doc.components as Schema).responses as Schema)[name] as Schema;
    }
    const schema = ((resp.content as Schema)["application/json"] as Schema).schema as Schema;
    const js = toJsonSchema(schema) as Schema;
    if (Array.isArray(js.oneOf)) {
      const { oneOf, ...rest } = js;
      return { ...rest, anyOf: oneOf };
    }
    return js;
  }

  private componentValidator(name: string): ValidateFunction {
    const key = `component ${name}`;
    let v = this.cache.get(key);
    if (v === undefined) {
      v = this.ajv.compile({ $ref: `${COMPONENTS_ID}#/$defs/${name}` });
      this.cache.set(key, v);
    }
    return v;
  }

  /**
   * Validator for a documented response; an undocumented error status gets
   * the component schema Zulip uses for that error code (CodedError by default).
   */
  validator(template: string, method: string, status: number, body: Json): ValidateFunction | undefined {
    const key = `${method} ${template} ${status}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const schema = this.responseSchema(template, method, String(status));
    if (schema !== undefined) {
      const v = this.ajv.compile(schema as Schema);
      this.cache.set(key, v);
      return v;
    }
    if (status >= 400) return this.componentValidator(errorComponent(body));
    return undefined;
  }

  /** Issues of `body` against the schema (deviations for this route removed first). */
  validate(
    method: string,
    path: string,
    status: number,
    body: Json,
    deviations: Deviation[] = [],
  ): { template: string | undefined; documented: boolean; issues: SchemaIssue[] } {
    const template = this.templateOf(path);
    if (template === undefined || this.operation(template, method) === undefined) {
      // Undocumented route: errors still have Zulip's envelope.
      if (status >= 400) {
        const v = this.componentValidator(errorComponent(body));
        return { template, documented: false, issues: v(body) ? [] : issuesOf(v.errors) };
      }
      return { template, documented: false, issues: [] };
    }
    const pruned = structuredClone(body);
    for (const d of deviations) {
      if (d.method === method && d.path === template) applyDeviation(pruned, d);
    }
    // Events are checked one by one (EventSchemas): a 100-branch oneOf error says nothing.
    const env = pruned as { events?: unknown } | null;
    if (template === "/events" && method === "GET" && Array.isArray(env?.events)) env.events = [];
    const v = this.validator(template, method, status, pruned);
    if (v === undefined) {
      return {
        template,
        documented: true,
        issues: [{ pointer: "", message: `status ${status} is not documented for ${method} ${template}` }],
      };
    }
    if (v(pruned)) return { template, documented: true, issues: [] };
    const issues = issuesOf(v.errors);
    // A documented error list names the route's own errors; generic ones
    // (missing argument, bad type, unauthorized) keep their component shape.
    if (status >= 400 && this.componentValidator(errorComponent(pruned))(pruned)) {
      return { template, documented: true, issues: [] };
    }
    return { template, documented: true, issues };
  }
}

export interface EventCheck {
  type: string;
  op: string | undefined;
  issues: SchemaIssue[];
}

interface EventBranch {
  types: string[];
  ops: string[] | undefined;
  check: ValidateFunction;
}

/** One event of GET /events (the response's events[] oneOf, branch by branch for readable errors). */
export class EventSchemas {
  private readonly branches: EventBranch[] = [];

  constructor(spec: OpenApiSpec, ajv: (s: Schema) => ValidateFunction) {
    const op = spec.operation("/events", "get")!;
    const schema = (
      (((op.responses as Schema)["200"] as Schema).content as Schema)["application/json"] as Schema
    ).schema as Schema;
    const body = (schema.allOf as Schema[])[1]!;
    const items = ((body.properties as Schema).events as Schema).items as Schema;
    for (const raw of items.oneOf as Schema[]) {
      const props = (raw.properties ?? {}) as Record<string, Schema>;
      const typeEnum = ((props.type?.allOf as Schema[] | undefined) ?? []).find((x) => Array.isArray(x.enum))
        ?.enum as string[] | undefined;
      const opEnum = props.op?.enum as string[] | undefined;
      this.branches.push({ types: typeEnum ?? [], ops: opEnum, check: ajv(toJsonSchema(raw) as Schema) });
    }
  }

  /** Every event type the schema documents. */
  types(): Set<string> {
    return new Set(this.branches.flatMap((b) => b.types));
  }

  check(event: Record<string, Json>, deviations: Deviation[] = []): EventCheck {
    const type = String(event.type);
    const op = typeof event.op === "string" ? event.op : undefined;
    // An event type newer than the schema: {method: "EVENT", path: type, pointer: ""}.
    if (deviations.some((d) => d.method === "EVENT" && d.pointer === "" && d.path === type))
      return { type, op, issues: [] };
    const pruned = structuredClone(event);
    for (const d of deviations) {
      if (d.method === "EVENT" && (d.path === `${type}/${op}` || d.path === type || d.standIn === undefined))
        applyDeviation(pruned, d);
    }
    const candidates = this.branches.filter(
      (b) => b.types.includes(type) && (op === undefined || b.ops === undefined || b.ops.includes(op)),
    );
    const matching = this.branches.filter((b) => b.check(pruned));
    if (matching.length === 1) return { type, op, issues: [] };
    if (matching.length > 1) {
      return { type, op, issues: [{ pointer: "", message: `matches ${matching.length} event schemas` }] };
    }
    if (candidates.length === 0) {
      return {
        type,
        op,
        issues: [{ pointer: "/type", message: `no event schema for type ${type} op ${op}` }],
      };
    }
    // The closest documented shape: fewest errors.
    let best: SchemaIssue[] | undefined;
    for (const b of candidates) {
      b.check(pruned);
      const issues = issuesOf(b.check.errors);
      if (best === undefined || issues.length < best.length) best = issues;
    }
    return { type, op, issues: best! };
  }
}

/** Zulip's error component for a code (extra keys such as var_name, queue_id). */
function errorComponent(body: Json): string {
  const code = (body as { code?: unknown } | null)?.code;
  switch (code) {
    case "BAD_EVENT_QUEUE_ID":
      return "BadEventQueueIdError";
    case "REQUEST_VARIABLE_MISSING":
      return "MissingArgumentError";
    case "RATE_LIMIT_HIT":
      return "RateLimitedError";
    default: {
      const b = body as Record<string, unknown> | null;
      if (code === "STREAM_DOES_NOT_EXIST" && b !== null && "stream_id" in b)
        return "NonExistingChannelIdError";
      if (code === "STREAM_DOES_NOT_EXIST") return "NonExistingChannelNameError";
      if (b !== null && "parameters" in b) return "IncompatibleParametersError";
      return "CodedError";
    }
  }
}

/** Ajv's errors, collapsed to (pointer, message); an unknown key's pointer names the key. */
function issuesOf(errs: ErrorObject[] | null | undefined): SchemaIssue[] {
  const out: SchemaIssue[] = [];
  const seen = new Set<string>();
  for (const e of errs ?? []) {
    let pointer = e.instancePath;
    let message = `${e.message ?? "invalid"} (${e.schemaPath})`;
    if (e.keyword === "additionalProperties") {
      pointer += `/${(e.params as { additionalProperty: string }).additionalProperty}`;
      message = `undocumented key (${e.schemaPath})`;
    }
    // Inside oneOf/anyOf every failing branch reports; keep the summary and one line per pointer.
    const k = `${pointer} ${e.keyword}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ pointer, message });
  }
  return out;
}

/** Deletes every value at `pointer` ("*" = any key or index). */
/** Sets the last token of `pointer` to a copy of `value` on every parent the wildcards reach. */
export function putAt(root: Json, pointer: string, value: Json): void {
  const tokens = pointer.split("/").slice(1).map(decodePointerToken);
  const walk = (node: Json, i: number): void => {
    if (node === null || typeof node !== "object") return;
    const t = tokens[i]!;
    if (i === tokens.length - 1) {
      if (!Array.isArray(node)) (node as Record<string, Json>)[t] = structuredClone(value);
      return;
    }
    for (const k of t === "*" ? Object.keys(node) : [t]) {
      if (Object.hasOwn(node, k)) walk((node as Record<string, Json>)[k], i + 1);
    }
  };
  walk(root, 0);
}

export function removeAt(root: Json, pointer: string): void {
  const tokens = pointer.split("/").slice(1).map(decodePointerToken);
  const walk = (node: Json, i: number): void => {
    if (node === null || typeof node !== "object") return;
    const t = tokens[i]!;
    const keys = t === "*" ? Object.keys(node) : [t];
    for (const k of keys) {
      if (!Object.hasOwn(node, k)) continue;
      if (i === tokens.length - 1) {
        if (!Array.isArray(node)) delete (node as Record<string, Json>)[k];
      } else {
        walk((node as Record<string, Json>)[k], i + 1);
      }
    }
  };
  walk(root, 0);
}
