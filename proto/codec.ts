// Encode/decode pairs at the protobuf boundary: the rest of the code works
// with plain TypeScript values (actors/types.ts) and never sees protobuf
// message objects.
import type protobuf from "protobufjs";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { ActorRef, Caller, Kind, Obj, Value } from "../actors/types.ts";
import type { ActorRequest, ActorResponse } from "../cluster/transport/contract.ts";
import { assetPath } from "../cluster/assets.ts";
import { jsonResponse, parseJsonBytes } from "../cluster/responses.ts";

const TYPES = [
  "Value",
  "MapValue",
  "ActorRequest",
  "ActorResponse",
  "RequestBatch",
  "ResponseBatch",
  "Heartbeat",
  "Fact",
] as const;
type Types = Record<(typeof TYPES)[number], protobuf.Type>;

// protobufjs and the descriptor load at the first use of a type: an
// embedded server uses none on its way to its first answer (journal facts
// have their own encoding, below), and loading them took a tenth of its
// start.
let loaded: Types | null = null;
export function pb(): Types {
  if (loaded) return loaded;
  const pbjs = createRequire(import.meta.url)("protobufjs") as typeof protobuf;
  const descriptor = JSON.parse(
    readFileSync(assetPath("proto/gen/descriptor.json"), "utf8"),
  ) as protobuf.INamespace;
  const root = pbjs.Root.fromJSON(descriptor);
  const out: Partial<Types> = {};
  for (const name of TYPES) out[name] = root.lookupType(`zulipactors.${name}`);
  return (loaded = out as Types);
}

// ---- Value <-> protobuf Value -------------------------------------------

type PbValue = {
  nullValue?: boolean;
  boolValue?: boolean;
  numberValue?: number;
  intValue?: number;
  stringValue?: string;
  listValue?: { items: PbValue[] };
  mapValue?: PbMap;
};
type PbMap = { fields: Record<string, PbValue> };

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

export function toPbValue(v: Value): PbValue {
  if (v === null || v === undefined) return { nullValue: true };
  switch (typeof v) {
    case "boolean":
      return { boolValue: v };
    case "number":
      return Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX ? { intValue: v } : { numberValue: v };
    case "string":
      return { stringValue: v };
    default:
      if (Array.isArray(v)) return { listValue: { items: v.map(toPbValue) } };
      return { mapValue: toPbMap(v as Obj) };
  }
}

export function toPbMap(o: Obj): PbMap {
  const fields: Record<string, PbValue> = {};
  for (const k of Object.keys(o)) {
    const v = o[k];
    // undefined properties are dropped, as JSON would drop them.
    if (v !== undefined) fields[k] = toPbValue(v);
  }
  return { fields };
}

export function fromPbValue(p: PbValue | null | undefined): Value {
  if (!p) return null;
  // Decoded messages name the set member of the oneof in `kind`; unset
  // members read as prototype defaults, so never test them directly.
  switch ((p as { kind?: string }).kind) {
    case "stringValue":
      return p.stringValue as string;
    case "intValue":
      return p.intValue as number;
    case "boolValue":
      return p.boolValue as boolean;
    case "numberValue":
      return p.numberValue as number;
    case "mapValue":
      return fromPbMap(p.mapValue);
    case "listValue":
      return (p.listValue?.items ?? []).map(fromPbValue);
    default:
      return null;
  }
}

export function fromPbMap(m: PbMap | null | undefined): Obj {
  const out: Obj = {};
  if (!m || !m.fields) return out;
  for (const k of Object.keys(m.fields)) out[k] = fromPbValue(m.fields[k]);
  return out;
}

// ---- Journal facts --------------------------------------------------------

// A fact is JSON text in Fact.json (proto/actor.proto says why). Facts are
// JSON values by contract (snapshots are JSON too), so nothing is lost.
// Written without protobufjs: a Fact with only `json` set is the tag of
// field 2 (length-delimited), the length as a varint, and the bytes, which
// is what protobufjs writes too. Anything else (a fact from before `json`,
// in field 1) is read by protobufjs.
const FACT_JSON_TAG = (2 << 3) | 2;

function varint(n: number): number[] {
  const out: number[] = [];
  for (; n >= 128; n = Math.floor(n / 128)) out.push((n % 128) | 128);
  out.push(n);
  return out;
}

/** A length-delimited field: its tag, the length as a varint, the bytes. */
function delimited(tag: number, bytes: Uint8Array): Buffer {
  const head = [tag, ...varint(bytes.length)];
  const out = Buffer.allocUnsafe(head.length + bytes.length);
  out.set(head, 0);
  out.set(bytes, head.length);
  return out;
}

export function encodeFact(fact: Obj): Uint8Array {
  return delimited(FACT_JSON_TAG, Buffer.from(JSON.stringify(fact)));
}

/**
 * MapValue bytes of a map whose values are strings, int32 integers,
 * booleans or null (a node's notices), written as protobufjs writes them
 * without loading it; any other map goes through protobufjs.
 */
export function encodeFlatMap(o: Obj): Uint8Array {
  const entries: Buffer[] = [];
  for (const k of Object.keys(o)) {
    const v = o[k];
    if (v === undefined) continue;
    let value: Buffer;
    if (v === null) value = Buffer.from([(1 << 3) | 0, 1]);
    else if (typeof v === "boolean") value = Buffer.from([(2 << 3) | 0, v ? 1 : 0]);
    else if (typeof v === "string") value = delimited((5 << 3) | 2, Buffer.from(v));
    else if (typeof v === "number" && Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX)
      // sint32: zigzag, then a varint.
      value = Buffer.from([(4 << 3) | 0, ...varint(v >= 0 ? v * 2 : -v * 2 - 1)]);
    else return pb().MapValue.encode(toPbMap(o)).finish();
    const entry = Buffer.concat([delimited((1 << 3) | 2, Buffer.from(k)), delimited((2 << 3) | 2, value)]);
    entries.push(delimited((1 << 3) | 2, entry));
  }
  return Buffer.concat(entries);
}

/** Where Fact.json's bytes start and end when `bytes` holds that field alone, else null. */
function jsonOnly(bytes: Uint8Array): [number, number] | null {
  if (bytes[0] !== FACT_JSON_TAG) return null;
  let len = 0;
  let i = 1;
  for (let scale = 1; i < bytes.length && i < 6; scale *= 128) {
    const b = bytes[i++]!;
    len += (b & 127) * scale;
    if (b < 128) return i + len === bytes.length ? [i, bytes.length] : null;
  }
  return null;
}

export function decodeFact(bytes: Uint8Array): Obj {
  const span = jsonOnly(bytes);
  if (span)
    return JSON.parse(
      Buffer.from(bytes.buffer, bytes.byteOffset + span[0], span[1] - span[0]).toString("utf8"),
    ) as Obj;
  const m = pb().Fact.decode(bytes) as unknown as { fact?: PbMap; json?: Uint8Array };
  if (m.json !== undefined && m.json.length > 0) {
    return JSON.parse(Buffer.from(m.json.buffer, m.json.byteOffset, m.json.length).toString("utf8")) as Obj;
  }
  return fromPbMap(m.fact);
}

// ---- Requests and responses ---------------------------------------------

type PbRequest = {
  corr: number;
  ref: { kind: string; realm: number; key: string; shardKey: string };
  shard: number;
  method: string;
  args?: PbMap | null;
  caller?: { realmId: number; userId: number; role: number; isBot: boolean } | null;
  deadline: number;
  traceparent: string;
  argsJson?: Uint8Array | null;
};

/** A JSON value as UTF-8 bytes (the *_json fields; undefined travels as null). */
function jsonBytes(v: Value | undefined): Uint8Array {
  return Buffer.from(JSON.stringify(v ?? null));
}

export function toPbRequest(corr: number, r: ActorRequest): PbRequest {
  return {
    corr,
    ref: { kind: r.ref.kind, realm: r.ref.realm, key: r.ref.key, shardKey: r.ref.shardKey ?? "" },
    shard: r.shard,
    method: r.method,
    argsJson: jsonBytes(r.args),
    caller: r.caller,
    deadline: r.deadline,
    traceparent: r.traceparent ?? "",
  };
}

export function fromPbRequest(p: PbRequest): { corr: number; req: ActorRequest } {
  const ref: ActorRef = { kind: p.ref.kind as Kind, realm: p.ref.realm, key: p.ref.key };
  if (p.ref.shardKey) ref.shardKey = p.ref.shardKey;
  const caller: Caller | null = p.caller
    ? { realmId: p.caller.realmId, userId: p.caller.userId, role: p.caller.role, isBot: !!p.caller.isBot }
    : null;
  const req: ActorRequest = {
    ref,
    shard: p.shard,
    method: p.method,
    args: p.argsJson && p.argsJson.length > 0 ? (parseJsonBytes(p.argsJson) as Obj) : fromPbMap(p.args),
    caller,
    deadline: p.deadline,
  };
  if (p.traceparent) req.traceparent = p.traceparent;
  return { corr: p.corr, req };
}

type PbResponse = {
  corr: number;
  value?: PbValue | null;
  valueJson?: Uint8Array | null;
  error?: {
    kind: string;
    code: string;
    msg: string;
    status: number;
    extra?: PbMap | null;
    headers?: Record<string, string>;
  } | null;
};

export function toPbResponse(corr: number, r: ActorResponse): PbResponse {
  if (r.ok) return { corr, valueJson: r.json ?? jsonBytes(r.value) };
  return {
    corr,
    error: {
      kind: r.kind,
      code: r.code,
      msg: r.msg,
      status: r.status,
      extra: r.extra ? toPbMap(r.extra) : null,
      headers: r.headers ?? {},
    },
  };
}

export function fromPbResponse(p: PbResponse): { corr: number; res: ActorResponse } {
  if (p.error) {
    const e = p.error;
    const res: ActorResponse = {
      ok: false,
      kind: e.kind as "zulip" | "moved" | "unavailable",
      code: e.code,
      msg: e.msg,
      status: e.status,
    };
    if (e.extra) res.extra = fromPbMap(e.extra);
    if (e.headers && Object.keys(e.headers).length) res.headers = e.headers;
    return { corr: p.corr, res };
  }
  if (p.valueJson && p.valueJson.length > 0) return { corr: p.corr, res: jsonResponse(p.valueJson) };
  return { corr: p.corr, res: { ok: true, value: fromPbValue(p.value) } };
}

export function encodeRequestBatch(items: PbRequest[]): Uint8Array {
  return pb().RequestBatch.encode({ requests: items }).finish();
}
export function decodeRequestBatch(bytes: Uint8Array): PbRequest[] {
  return (pb().RequestBatch.decode(bytes) as unknown as { requests: PbRequest[] }).requests ?? [];
}
export function encodeResponseBatch(items: PbResponse[]): Uint8Array {
  return pb().ResponseBatch.encode({ responses: items }).finish();
}
export function decodeResponseBatch(bytes: Uint8Array): PbResponse[] {
  return (pb().ResponseBatch.decode(bytes) as unknown as { responses: PbResponse[] }).responses ?? [];
}
