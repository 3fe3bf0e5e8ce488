// Data exports of an organization (Zulip's RealmExport rows): GET and POST
// /export/realm, administrators only. The realm actor keeps the rows; the
// file itself is written by the node-side export worker (cluster/export.ts),
// which gets a durable hand-off per request and reports back with
// completeExport or failExport. Every change sends realm_export (all rows)
// to the organization's human administrators, as Zulip's notify_realm_export.
//
// SNAPSHOT NOTE: `RealmState.exports` is absent on realms that never
// exported; `exportsOf` supplies the empty default.

import { randomBytes } from "node:crypto";
import { errors } from "../errors.ts";
import type { DecisionOf } from "../protocol.ts";
import type { Caller, Decision, Obj } from "../types.ts";
import { isAdminRole } from "../user/index.ts";
import { requireAdmin } from "./admin.ts";
import type { RealmHandler } from "./handler.ts";
import type { RealmState } from "./state.ts";

/** Hand-off subject of a requested export (the worker's queue). */
export const EXPORT_HANDOFF = "realm.export";

/** Zulip's RealmExport.EXPORT_PUBLIC and EXPORT_FULL_WITH_CONSENT. */
export const EXPORT_PUBLIC = 1;
export const EXPORT_FULL_WITH_CONSENT = 2;
/**
 * The API's names of the export types (strings since feature level 449;
 * integers before, still accepted by POST /export/realm). Zulip's third,
 * full_without_consent, needs its owner_full_content_access flag, which no
 * organization here has, so it is refused like an unknown type.
 */
export const EXPORT_TYPE_NAMES: Readonly<Record<number, string>> = {
  [EXPORT_PUBLIC]: "public",
  [EXPORT_FULL_WITH_CONSENT]: "full_with_consent",
};

/** Zulip's view: at most 5 exports per organization in 7 days. */
const EXPORT_LIMIT = 5;
const LIMIT_PERIOD_MS = 7 * 24 * 3600 * 1000;

export interface ExportRow {
  id: number;
  acting_user_id: number;
  /** Seconds since the epoch, as Zulip's. */
  export_time: number;
  deleted_timestamp: number | null;
  failed_timestamp: number | null;
  pending: boolean;
  /** Path of the download under the realm's URL; null until done. */
  export_url: string | null;
  export_type: number;
  /** Unguessable part of the download path (never shown in lists). */
  secret: string;
  /** Where the worker wrote the file (never shown). */
  file: string | null;
}

export type ExportFact =
  | { type: "exportRequested"; row: ExportRow }
  | { type: "exportDone"; id: number; file: string; url: string }
  | { type: "exportFailed"; id: number; at: number };

export function isExportFact(fact: { type: string }): fact is ExportFact {
  return fact.type === "exportRequested" || fact.type === "exportDone" || fact.type === "exportFailed";
}

interface ExportHolder {
  exports?: ExportRow[];
}

export function exportsOf(state: RealmState): ExportRow[] {
  return (state as RealmState & ExportHolder).exports ?? [];
}

export function applyExportFact(state: RealmState, fact: ExportFact): void {
  const holder = state as RealmState & ExportHolder;
  const rows = (holder.exports ??= []);
  if (fact.type === "exportRequested") {
    rows.push({ ...fact.row });
    return;
  }
  const row = rows.find((r) => r.id === fact.id);
  if (!row || !row.pending) return;
  row.pending = false;
  if (fact.type === "exportDone") {
    row.file = fact.file;
    row.export_url = fact.url;
  } else {
    row.failed_timestamp = fact.at;
  }
}

/** The public shape of a row (Zulip's get_realm_exports_serialized). */
function serialize(row: ExportRow): Obj {
  return {
    id: row.id,
    acting_user_id: row.acting_user_id,
    export_time: row.export_time,
    deleted_timestamp: row.deleted_timestamp,
    failed_timestamp: row.failed_timestamp,
    pending: row.pending,
    export_url: row.export_url,
    export_type: EXPORT_TYPE_NAMES[row.export_type] ?? "public",
  };
}

/** The download's path under the realm's URL (Zulip's local-storage layout). */
export function exportPath(realmId: number, secret: string, id: number): string {
  return `/user_avatars/exports/${realmId}/${secret}/${exportFileName(realmId, id)}`;
}

export function exportFileName(realmId: number, id: number): string {
  return `zulip-export-${realmId}-${id}.jsonl.gz`;
}

function adminIds(state: RealmState): number[] {
  return Object.values(state.users)
    .filter((u) => u.isActive && !u.isBot && isAdminRole(u.role))
    .map((u) => u.userId);
}

/** The event with every row after `fact`. */
function change<R>(
  state: RealmState,
  fact: ExportFact,
  reply: R,
  extra: Pick<Decision, "handoffs"> = {},
): DecisionOf<R> {
  const after = exportsOf(state).map((r) => ({ ...r }));
  applyExportFact({ exports: after } as unknown as RealmState, fact);
  return {
    facts: [fact as unknown as Obj],
    events: [{ event: { type: "realm_export", exports: after.map(serialize) }, userIds: adminIds(state) }],
    reply,
    ...extra,
  };
}

function requireInternal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

/** GET /export/realm. */
const listExports: RealmHandler<"listExports"> = (state, _args, _ctx, caller) => {
  requireAdmin(state, caller);
  return { reply: { exports: exportsOf(state).map(serialize) } };
};

/** POST /export/realm {export_type} -> {id}. */
const requestExport: RealmHandler<"requestExport"> = async (state, args, ctx, caller) => {
  const me = requireAdmin(state, caller);
  const exportType = args.export_type ?? EXPORT_PUBLIC;
  if (exportType !== EXPORT_PUBLIC && exportType !== EXPORT_FULL_WITH_CONSENT)
    throw errors.badRequest("Invalid export type.");
  const now = ctx.now();
  const recent = exportsOf(state).filter((r) => r.export_time * 1000 >= now - LIMIT_PERIOD_MS).length;
  if (recent >= EXPORT_LIMIT) throw errors.badRequest("Exceeded rate limit.");
  const id = await ctx.nextId(`export.${state.realmId}`);
  const row: ExportRow = {
    id,
    acting_user_id: me.userId,
    export_time: now / 1000,
    deleted_timestamp: null,
    failed_timestamp: null,
    pending: true,
    export_url: null,
    export_type: exportType,
    secret: randomBytes(18).toString("base64url"),
    file: null,
  };
  return change(
    state,
    { type: "exportRequested", row },
    { id },
    { handoffs: [{ subject: EXPORT_HANDOFF, data: { realmId: state.realmId, exportId: id } }] },
  );
};

/** The worker: the file is written. A row no longer pending is left alone (a repeated hand-off). */
const completeExport: RealmHandler<"completeExport"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const id = args.exportId;
  const row = exportsOf(state).find((r) => r.id === id);
  if (!row || !row.pending) return { reply: { done: false } };
  const file = args.file;
  if (file === "") throw errors.internal();
  return change(
    state,
    { type: "exportDone", id, file, url: exportPath(state.realmId, row.secret, id) },
    { done: true },
  );
};

/** The worker (or a restore): the export cannot be produced. */
const failExport: RealmHandler<"failExport"> = (state, args, ctx, caller) => {
  requireInternal(caller);
  const id = args.exportId;
  const row = exportsOf(state).find((r) => r.id === id);
  if (!row || !row.pending) return { reply: { failed: false } };
  return change(state, { type: "exportFailed", id, at: ctx.now() / 1000 }, { failed: true });
};

/** The worker: what it needs to know of a requested export. */
const exportJob: RealmHandler<"exportJob"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const row = exportsOf(state).find((r) => r.id === args.exportId);
  if (!row) return { reply: null };
  return {
    reply: { pending: row.pending, secret: row.secret, exportType: row.export_type, host: state.host },
  };
};

/** The download route: the file of a finished export, for administrators only. */
const exportDownload: RealmHandler<"exportDownload"> = (state, args, _ctx, caller) => {
  requireAdmin(state, caller);
  const { secret, name } = args;
  const row = exportsOf(state).find((r) => r.secret === secret);
  if (!row || row.file === null || name !== exportFileName(state.realmId, row.id)) return { reply: null };
  return { reply: { file: row.file } };
};

/** GET /export/realm/consents: whose consent to ask (active human users). */
const exportConsentUsers: RealmHandler<"exportConsentUsers"> = (state, _args, _ctx, caller) => {
  requireAdmin(state, caller);
  const ids = Object.values(state.users)
    .filter((u) => u.isActive && !u.isBot)
    .map((u) => u.userId)
    .sort((a, b) => a - b);
  return { reply: { user_ids: ids } };
};

export const exportHandlers = {
  exportConsentUsers,
  listExports,
  requestExport,
  completeExport,
  failExport,
  exportJob,
  exportDownload,
};
