// Message retention, the directory's part (the design is in
// actors/channel/retention.ts): the sweep's plan, and the list of the
// realm's direct-message conversations it sweeps.

import { isDmKey } from "../addresses.ts";
import { errors } from "../errors.ts";
import type { Caller, Handler, Obj } from "../types.ts";
import type { DirState } from "./state.ts";

function requireInternal(caller: Caller | null, origin: string | undefined): void {
  if (caller || origin === "external") throw errors.accessDenied();
}

/**
 * Directory, internal: {realmDays} -> {channels: [{streamId, days}], dms},
 * the channels whose messages expire (effective retention > 0) and, when
 * the realm's retention is not unlimited, its DM conversations' keys.
 */
const retentionPlan: Handler<DirState> = (state, args, ctx, caller) => {
  requireInternal(caller, ctx.origin);
  const realmDays = typeof args.realmDays === "number" ? args.realmDays : -1;
  const channels: Obj[] = [];
  for (const ch of Object.values(state.channels)) {
    const days = ch.retentionDays ?? realmDays;
    if (days > 0) channels.push({ streamId: ch.id, days });
  }
  const dms = realmDays > 0 ? Object.keys(state.dmConvs) : [];
  return { reply: { channels, dms } };
};

/** Directory, internal: {key} -> {}: remember a DM conversation (once; a known one writes nothing). */
const listDmConversation: Handler<DirState> = (state, args, ctx, caller) => {
  requireInternal(caller, ctx.origin);
  const key = typeof args.key === "string" ? args.key : "";
  if (!isDmKey(key)) throw errors.internal();
  if (Object.hasOwn(state.dmConvs, key)) return { reply: {} };
  return { facts: [{ type: "dmConvListed", key }], reply: {} };
};

export const retentionDirectoryHandlers: Record<string, Handler<DirState>> = {
  retentionPlan,
  listDmConversation,
};
