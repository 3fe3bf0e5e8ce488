// Organization exports and restores (docs/export.md): the file format, the
// node-side worker that writes an export requested through POST
// /export/realm, and the restore the management CLI runs.
//
// The data is event-sourced, so an export is the organization's actors as
// the store holds them (snapshot and journal after it, byte for byte;
// filtered per export type by export-filter.ts) and
// its id counters: a restore writes them back and the actors replay as
// they always do. Gzipped JSON lines:
//
//   {"manifest": {format, version, realmId, host, exportId, exportType, shards, createdAt}}
//   {"actor": "<kind>.<realm>.<key>", "shard": n, "snapshot": {seq, data} | null, "journal": [[seq, base64], ...]}
//   {"counter": "<scope>", "value": n}
//   {"record": "<key>", "shard": n, "value": base64}        (version 2: message bodies)
//   {"index": "<name>", "shard": n, "ids": [id, ...]}       (version 2: conversation and topic ids)
//   {"trailer": {actors, journalEntries, counters, records, indexes}}
//
// The trailer's counts let a restore refuse a truncated file.

import { createReadStream, createWriteStream, mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { pipeline } from "node:stream/promises";
import { Readable } from "node:stream";
import { createGunzip, createGzip } from "node:zlib";
import { realmRef } from "../actors/index.ts";
import { recordNamespace } from "../actors/channel/conversation-state.ts";
import { EXPORT_HANDOFF, EXPORT_PUBLIC, exportFileName } from "../actors/realm/export.ts";
import type { Obj } from "../actors/types.ts";
import { ExportScope, fillCredentials, parseActorId } from "./export-filter.ts";
import { shardOf } from "./addressing.ts";
import { componentLogger } from "./log.ts";
import type { NodeRuntime } from "./node.ts";
import type { RecordWrite, Store } from "./storage/contract.ts";

export const EXPORT_FORMAT = "zulip-actors-export";
export const EXPORT_VERSION = 2;
/** Version 1 files (before messages lived in store records) are read too. */
const READABLE_VERSIONS = new Set([1, 2]);

/** Event queues are sessions, not data: they are neither exported nor restored. */
const SKIPPED_KINDS = new Set(["queue"]);

export interface Manifest {
  format: string;
  version: number;
  realmId: number;
  host: string;
  exportId: number | null;
  exportType: number | null;
  shards: number;
  createdAt: number;
}

export interface Trailer {
  actors: number;
  journalEntries: number;
  counters: number;
  /** Absent in version 1 files. */
  records?: number;
  indexes?: number;
}

/** Does the actor id `<kind>.<realm>.<key>` belong to the realm (and is it data)? */
function belongs(actor: string, realmId: number): boolean {
  const a = actor.indexOf(".");
  const b = actor.indexOf(".", a + 1);
  if (a < 0 || b < 0) return false;
  return actor.slice(a + 1, b) === String(realmId) && !SKIPPED_KINDS.has(actor.slice(0, a));
}

/** Does the counter scope `<name>.<realm>` belong to the realm? */
function counterBelongs(scope: string, realmId: number): boolean {
  return scope.endsWith(`.${realmId}`) && scope.indexOf(".") === scope.length - String(realmId).length - 1;
}

/**
 * One actor as stored: its snapshot and the journal after it. A snapshot
 * saved between the two reads trims the journal under us; read again then.
 */
async function readActor(
  store: Store,
  shard: number,
  actor: string,
): Promise<{ snapshot: { seq: number; data: string } | null; journal: [number, string][] }> {
  for (let attempt = 0; ; attempt++) {
    const snapshot = await store.loadSnapshot(shard, actor);
    const after = snapshot?.seq ?? 0;
    const entries = await store.readJournal(shard, actor, after);
    const contiguous = entries.every((e, i) => e.seq === after + 1 + i);
    if (contiguous || attempt >= 5) {
      if (!contiguous) throw new Error(`export: the journal of ${actor} keeps moving`);
      return { snapshot, journal: entries.map((e) => [e.seq, Buffer.from(e.data).toString("base64")]) };
    }
  }
}

async function* exportLines(store: Store, manifest: Manifest): AsyncGenerator<string> {
  yield JSON.stringify({ manifest }) + "\n";
  const actors = (await store.listActors(manifest.shards))
    .filter((a) => belongs(a.actor, manifest.realmId))
    .sort((x, y) => (x.actor < y.actor ? -1 : x.actor > y.actor ? 1 : 0));
  const scope = new ExportScope(manifest.realmId, manifest.exportType ?? EXPORT_PUBLIC);
  for (const { shard, actor } of actors) {
    const ref = parseActorId(actor);
    if (ref && (ref.kind === "user" || ref.kind === "channelDirectory"))
      scope.learn(ref, await readActor(store, shard, actor));
  }
  scope.settle();
  let exported = 0;
  let journalEntries = 0;
  for (const { shard, actor } of actors) {
    const ref = parseActorId(actor);
    const read = await readActor(store, shard, actor);
    const kept = ref ? scope.filter(ref, read) : read;
    if (kept === null) continue;
    exported++;
    journalEntries += kept.journal.length;
    yield JSON.stringify({ actor, shard, snapshot: kept.snapshot, journal: kept.journal }) + "\n";
  }
  const counters = (await store.listCounters()).filter((c) => counterBelongs(c.scope, manifest.realmId));
  for (const c of counters) yield JSON.stringify({ counter: c.scope, value: c.value }) + "\n";
  // The realm's records and id indexes (messages: actors/channel/conversation-state.ts) are keyed "<realm>:...".
  const own = `${manifest.realmId}:`;
  const records = (await store.listRecords(manifest.shards, own)).filter((r) => scope.keepsKey(r.key));
  for (const r of records)
    yield (
      JSON.stringify({ record: r.key, shard: r.shard, value: Buffer.from(r.value).toString("base64") }) + "\n"
    );
  const indexes = (await store.listIndexes(manifest.shards, own)).filter((x) => scope.keepsKey(x.index));
  for (const x of indexes) yield JSON.stringify({ index: x.index, shard: x.shard, ids: x.ids }) + "\n";
  const trailer: Trailer = {
    actors: exported,
    journalEntries,
    counters: counters.length,
    records: records.length,
    indexes: indexes.length,
  };
  yield JSON.stringify({ trailer }) + "\n";
}

/** Write the realm's export to `file` (through a temporary name: a reader never sees half a file). */
export async function writeExport(store: Store, manifest: Manifest, file: string): Promise<void> {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.partial`;
  try {
    await pipeline(Readable.from(exportLines(store, manifest)), createGzip(), createWriteStream(tmp));
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

export interface ExportContents {
  manifest: Manifest;
  actors: {
    actor: string;
    shard: number;
    snapshot: { seq: number; data: string } | null;
    journal: [number, string][];
  }[];
  counters: { scope: string; value: number }[];
  records: { key: string; shard: number; value: string }[];
  indexes: { index: string; shard: number; ids: number[] }[];
}

/** Read and check a whole export file (format, version, realm, trailer counts). */
export async function readExport(file: string): Promise<ExportContents> {
  const lines = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Infinity });
  let manifest: Manifest | null = null;
  let trailer: Trailer | null = null;
  const actors: ExportContents["actors"] = [];
  const counters: ExportContents["counters"] = [];
  const records: ExportContents["records"] = [];
  const indexes: ExportContents["indexes"] = [];
  for await (const line of lines) {
    if (line === "") continue;
    if (trailer) throw new Error("export file: data after the trailer");
    const o = JSON.parse(line) as Obj;
    if (manifest === null) {
      const m = o.manifest as unknown as Manifest | undefined;
      if (!m || m.format !== EXPORT_FORMAT) throw new Error("not an export file (no manifest)");
      if (!READABLE_VERSIONS.has(m.version))
        throw new Error(`export format version ${m.version} is not supported`);
      if (!Number.isInteger(m.realmId) || m.realmId <= 0) throw new Error("export file: bad realm id");
      manifest = m;
    } else if (typeof o.actor === "string") {
      if (!belongs(o.actor, manifest.realmId)) throw new Error(`export file: ${o.actor} is not of the realm`);
      actors.push(o as unknown as ExportContents["actors"][number]);
    } else if (typeof o.counter === "string") {
      if (!counterBelongs(o.counter, manifest.realmId)) throw new Error(`export file: counter ${o.counter}`);
      counters.push({ scope: o.counter, value: Number(o.value) });
    } else if (typeof o.record === "string") {
      if (!o.record.startsWith(`${manifest.realmId}:`)) throw new Error(`export file: record ${o.record}`);
      records.push({ key: o.record, shard: Number(o.shard), value: String(o.value) });
    } else if (typeof o.index === "string") {
      if (!o.index.startsWith(`${manifest.realmId}:`)) throw new Error(`export file: index ${o.index}`);
      if (!Array.isArray(o.ids) || !o.ids.every((id) => Number.isSafeInteger(id)))
        throw new Error(`export file: ids of ${o.index}`);
      indexes.push({ index: o.index, shard: Number(o.shard), ids: o.ids as number[] });
    } else if (o.trailer) {
      trailer = o.trailer as unknown as Trailer;
    } else {
      throw new Error("export file: unknown line");
    }
  }
  if (!manifest) throw new Error("not an export file (empty)");
  const entries = actors.reduce((n, a) => n + a.journal.length, 0);
  if (
    !trailer ||
    trailer.actors !== actors.length ||
    trailer.counters !== counters.length ||
    trailer.journalEntries !== entries ||
    (trailer.records ?? 0) !== records.length ||
    (trailer.indexes ?? 0) !== indexes.length
  )
    throw new Error("export file is truncated (trailer missing or counts differ)");
  return { manifest, actors, counters, records, indexes };
}

/**
 * Write an export's actors and counters into `store`, which must hold the
 * lease of every shard the actors are on (the CLI's own node does). Refuses
 * when any actor of the realm exists already: a restore goes into a store
 * that never had this organization.
 */
export async function restoreInto(store: Store, shards: number, contents: ExportContents): Promise<Trailer> {
  const { manifest } = contents;
  const existing = (await store.listActors(shards)).filter((a) => belongs(a.actor, manifest.realmId));
  if (existing.length > 0)
    throw new Error(
      `organization ${manifest.realmId} already has data in this store: restore needs an empty one`,
    );
  fillCredentials(contents.actors);
  let journalEntries = 0;
  for (const a of contents.actors) {
    // LMDB keys actors by id alone (shard 0 in the file); Redis by shard.
    const shard = a.shard < shards ? a.shard : 0;
    const holder = await store.leaseHolder(shard);
    if (!holder) throw new Error(`restore: shard ${shard} is not held`);
    if (a.snapshot) await store.saveSnapshot(shard, holder.epoch, a.actor, a.snapshot);
    if (a.journal.length) {
      const first = a.journal[0]![0];
      const bytes = a.journal.map(([, b64]) => new Uint8Array(Buffer.from(b64, "base64")));
      await store.append(shard, holder.epoch, a.actor, first, bytes);
      journalEntries += bytes.length;
    }
  }
  // Records and indexes: writes-only appends (no journal entry), a batch at
  // a time, each on its conversation's shard here, which differs from the
  // file's when the exporting store had another shard count.
  const placed = new Map<string, number>();
  for (const a of contents.actors) {
    const ref = parseActorId(a.actor);
    if (ref?.kind === "channel") placed.set(recordNamespace(ref.realm, ref.key), shardOf(ref, shards));
  }
  const shardOfKey = (key: string, fileShard: number): number => {
    // The namespace ("<realm>:c:<key>", a DM key "dm:<ids>") ends at the
    // key's third or fourth ":", never later: a topic's own ":"s are not tried.
    let i = key.indexOf(":");
    for (let n = 1; i >= 0 && n <= 4; n++, i = key.indexOf(":", i + 1)) {
      const shard = placed.get(key.slice(0, i));
      if (shard !== undefined) return shard;
    }
    return fileShard < shards ? fileShard : 0;
  };
  const writes = new Map<number, RecordWrite[]>();
  const flush = async (shard: number) => {
    const list = writes.get(shard);
    if (!list?.length) return;
    const holder = await store.leaseHolder(shard);
    if (!holder) throw new Error(`restore: shard ${shard} is not held`);
    await store.appendMany(shard, holder.epoch, [
      { actor: "~restore", firstSeq: 1, entries: [], writes: list },
    ]);
    writes.set(shard, []);
  };
  const add = async (s: number, w: RecordWrite) => {
    const list = writes.get(s) ?? writes.set(s, []).get(s)!;
    list.push(w);
    if (list.length >= 500) await flush(s);
  };
  for (const r of contents.records)
    await add(shardOfKey(r.key, r.shard), {
      op: "put",
      key: r.key,
      value: new Uint8Array(Buffer.from(r.value, "base64")),
    });
  for (const x of contents.indexes)
    for (let i = 0; i < x.ids.length; i += 5000)
      await add(shardOfKey(x.index, x.shard), { op: "index", index: x.index, add: x.ids.slice(i, i + 5000) });
  for (const shard of writes.keys()) await flush(shard);
  for (const c of contents.counters) await store.raiseCounter(c.scope, c.value);
  // New organizations must not be given the restored one's id.
  await store.raiseCounter("realm", manifest.realmId);
  return { actors: contents.actors.length, journalEntries, counters: contents.counters.length };
}

export interface ExportWorker {
  stop(): Promise<void>;
}

/**
 * The node-side export worker: takes the hand-offs of POST /export/realm
 * turns run on this node, writes the file under `<dataDir>/exports/` in the
 * background, and reports to the realm actor. The hand-off is acknowledged
 * at once (the request must not wait for the file), so an export cut short
 * by a crash of the node stays pending (docs/export.md).
 */
export function startExportWorker(
  node: NodeRuntime,
  store: Store,
  shards: number,
  dataDir: string,
): ExportWorker {
  const log = componentLogger("export");
  const running = new Map<string, Promise<void>>();
  async function run(realmId: number, exportId: number): Promise<void> {
    const ref = realmRef(realmId);
    const job = await node.call(ref, "exportJob", { exportId });
    if (!job || !job.pending) return;
    const file = join(dataDir, "exports", String(realmId), job.secret, exportFileName(realmId, exportId));
    try {
      await writeExport(
        store,
        {
          format: EXPORT_FORMAT,
          version: EXPORT_VERSION,
          realmId,
          host: job.host,
          exportId,
          exportType: job.exportType,
          shards,
          createdAt: Date.now() / 1000,
        },
        file,
      );
      await node.call(ref, "completeExport", { exportId, file });
    } catch (err) {
      log.error({ err, realmId, exportId }, "export failed");
      await node.call(ref, "failExport", { exportId }).catch(() => undefined);
    }
  }
  node.onHandoff(EXPORT_HANDOFF, async (data) => {
    for (const d of data) {
      const realmId = Number(d.realmId);
      const exportId = Number(d.exportId);
      const key = `${realmId}:${exportId}`;
      if (running.has(key)) continue;
      const p = run(realmId, exportId)
        .catch((err: unknown) => log.error({ err, realmId, exportId }, "export job failed"))
        .finally(() => running.delete(key));
      running.set(key, p);
    }
    return true;
  });
  return {
    async stop() {
      await Promise.all([...running.values()]);
    },
  };
}
