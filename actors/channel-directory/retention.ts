// Message retention, the directory's part (the design is in
// actors/channel/retention.ts): the sweep's plan, and the list of the
// realm's direct-message conversations it sweeps.

import { isDmKey } from "../addresses.ts";
import { errors } from "../errors.ts";
import type { Caller } from "../types.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";

function requireInternal(caller: Caller | null, origin: string | undefined): void {
  if (caller || origin === "external") throw errors.accessDenied();
}

/**
 * Directory, internal: {realmDays} -> {channels: [{streamId, days}], dms},
 * the channels whose messages expire (effective retention > 0) and, when
 * the realm's retention is not unlimited, its DM conversations' keys.
 */
const retentionPlan: DirHandler<"retentionPlan"> = (state, args, ctx, caller) => {
  requireInternal(caller, ctx.origin);
  const { realmDays } = args;
  const channels: { streamId: number; days: number }[] = [];
  for (const ch of Object.values(state.channels)) {
    const days = ch.retentionDays ?? realmDays;
    if (days > 0) channels.push({ streamId: ch.id, days });
  }
  const dms = realmDays > 0 ? Object.keys(state.dmConvs) : [];
  return { reply: { channels, dms } };
};

/** Directory, internal: {key} -> {}: remember a DM conversation (once; a known one writes nothing). */
const listDmConversation: DirHandler<"listDmConversation"> = (state, args, ctx, caller) => {
  requireInternal(caller, ctx.origin);
  const { key } = args;
  if (!isDmKey(key)) throw errors.internal();
  if (Object.hasOwn(state.dmConvs, key)) return { reply: {} };
  return { facts: [{ type: "dmConvListed", key }], reply: {} };
};

export const retentionDirectoryHandlers: DirHandlers<"retentionPlan" | "listDmConversation"> = {
  retentionPlan,
  listDmConversation,
};
