// Checks shared by both stores for record writes and index ranges. They run
// before anything is written, so a bad write fails the whole append (nothing
// applied) in both implementations alike, never halfway through a Lua script
// or a transaction.
import type { IndexRange, RecordWrite } from "./contract.ts";

/** Longest record key or index name, in UTF-8 bytes (LMDB keys are limited to 1978 bytes). */
export const MAX_NAME_BYTES = 512;

function checkName(what: string, s: unknown): void {
  if (typeof s !== "string") throw new TypeError(`${what} must be a string`);
  if (Buffer.byteLength(s) > MAX_NAME_BYTES)
    throw new RangeError(`${what} is longer than ${MAX_NAME_BYTES} bytes`);
}

function checkId(id: unknown): void {
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0) {
    throw new RangeError(`index id must be an integer 0 <= id < 2^53: ${String(id)}`);
  }
}

export function checkWrites(writes: readonly RecordWrite[]): void {
  for (const w of writes) {
    switch (w.op) {
      case "put":
        checkName("record key", w.key);
        if (!(w.value instanceof Uint8Array)) throw new TypeError("record value must be a Uint8Array");
        break;
      case "delete":
        checkName("record key", w.key);
        break;
      case "index":
        checkName("index name", w.index);
        w.add.forEach(checkId);
        break;
      case "unindex":
        checkName("index name", w.index);
        w.remove.forEach(checkId);
        break;
      default:
        throw new TypeError(`unknown record write op: ${String((w as { op: unknown }).op)}`);
    }
  }
}

export function checkRange(index: string, r: IndexRange): void {
  checkName("index name", index);
  if (!Number.isSafeInteger(r.limit) || r.limit < 0)
    throw new RangeError(`limit must be an integer >= 0: ${r.limit}`);
  if (r.before !== undefined) checkId(r.before);
  if (r.after !== undefined) checkId(r.after);
}

export function checkIndexName(index: string): void {
  checkName("index name", index);
}

export function checkKeys(keys: readonly string[]): void {
  for (const k of keys) checkName("record key", k);
}
