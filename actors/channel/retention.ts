// Message retention (Zulip's archive_messages, FL 91 and 452): channel
// messages older than their channel's effective message_retention_days
// (the channel's own, else the realm's; -1 keeps them forever) are deleted,
// with the delete_message events of any deletion.
//
// Who runs it: a node-side worker (`attachRetention`), never an actor. A
// conversation calls the directory (sendContext) and the directory cannot
// call back into conversations, so the sweep is driven from outside: the
// node holding a realm actor's shard sweeps that realm when it acquires the
// shard (start-up, failover) and then every RETENTION_INTERVAL_MS while it
// still serves it. The sweep keeps no state of its own: what has expired
// is decided from the messages' times, so a sweep lost in a crash is simply
// done by the next one, and a repeated sweep finds nothing left to delete.
//
// The directory's part (`retentionPlan`, `listDmConversation`) is
// channel-directory/retention.ts.
//
// Cost: the directory lists the channels and DM conversations once
// (O(channels + DM conversations)); each conversation reads its messages
// in id order from the oldest and stops at the first one that has not
// expired (ids are allocated in time order), so its work is O(expired
// messages).
//
// Direct messages expire by the realm's setting alone (Zulip's
// move_expired_personal_and_huddle_messages_to_archive): the directory
// keeps the realm's DM conversations (`dmConvs`, a `dmConvListed` fact per
// conversation, never per message). A DM conversation lists itself once
// per activation (`withDmListing`), after the first turn that finds or
// leaves it with messages: a new conversation on its first stored message,
// and one that existed before the list did on its next activation (a
// delivery, a read, an edit...). The directory answers a known
// conversation without writing anything, so the cost is one call per
// activation and one durable fact per conversation. A conversation nobody
// has touched since the list existed is not listed yet, and so not swept.

import { errors } from "../errors.ts";
import type { Ref, TypedCall } from "../protocol.ts";
import type { ActorRef, Caller, Handler } from "../types.ts";
import { removeMany } from "./bulk-delete-handlers.ts";
import { channelDirectoryRef, conversationRef, isDmKey, realmDirectoryRef, realmRef } from "../addresses.ts";
import { getMsgs, idsRange, type ConvState, type Msg } from "./conversation-state.ts";
import type { ChannelProtocol, ConvHandler, ConvHandlers } from "./protocol.ts";
import { channelConvRef } from "./refs.ts";

const DAY_SECONDS = 86400;
/** Zulip runs archive_messages daily; hourly keeps the lag well under a day. */
const RETENTION_INTERVAL_MS = 3600_000;
/** Messages read (and deleted) per page, so one turn stays bounded. */
const PAGE = 500;
/** Gather the shards of one start-up or failover into one sweep. */
const SWEEP_DELAY_MS = 500;

function requireInternal(caller: Caller | null, origin: string | undefined): void {
  if (caller || origin === "external") throw errors.accessDenied();
}

/**
 * A conversation handler that, in a DM conversation, lists the
 * conversation with the directory after the activation's first turn that
 * finds or leaves messages in it. `dmListed` lives in the activation only.
 */
export function withDmListing(h: Handler<ConvState>): Handler<ConvState> {
  return async (state, args, ctx, caller) => {
    const d = await h(state, args, ctx, caller);
    if (!state.dmListed && isDmKey(state.key) && (state.count > 0 || d.facts?.length)) {
      // The turn's own work stands when the directory is unreachable (its shard
      // moving): a later turn of the activation lists the conversation.
      state.dmListed = await ctx
        .call(channelDirectoryRef(state.realmId), "listDmConversation", { key: state.key })
        .then(
          () => true,
          () => false,
        );
    }
    return d;
  };
}

/**
 * Conversation, internal: {before} (UNIX seconds) -> {deleted: ids, more}:
 * delete the oldest messages sent before `before`, at most PAGE of them per
 * turn (`more` says another turn is due), as `removeMany` deletes them.
 */
const expireMessages: ConvHandler<"expireMessages"> = async (state, args, ctx, caller) => {
  requireInternal(caller, ctx.origin);
  const { before } = args;
  const ids = await idsRange(ctx, state, null, { limit: PAGE });
  const msgs = (await getMsgs(ctx, state, ids)).filter((m): m is Msg => m !== null);
  const expired: number[] = [];
  for (const m of msgs) {
    if (m.timestamp >= before) break;
    expired.push(m.id);
  }
  if (!expired.length) return { reply: { deleted: [], more: false } };
  const d = await removeMany(state, { ids: expired }, ctx, null);
  return { ...d, reply: { deleted: expired, more: expired.length === PAGE } };
};

export const retentionConversationHandlers: ConvHandlers<"expireMessages"> = { expireMessages };

/** One realm's sweep at `nowMs`: every channel with a retention, page by page. */
export async function sweepRealmRetention(call: TypedCall, realmId: number, nowMs: number): Promise<void> {
  const limits = await call(realmRef(realmId), "messageLimits", {});
  const plan = await call(channelDirectoryRef(realmId), "retentionPlan", { realmDays: limits.retentionDays });
  const now = Math.floor(nowMs / 1000);
  const work: { ref: Ref<ChannelProtocol>; before: number }[] = plan.channels.map(({ streamId, days }) => ({
    ref: channelConvRef(realmId, streamId),
    before: now - days * DAY_SECONDS,
  }));
  for (const key of plan.dms ?? [])
    work.push({
      ref: conversationRef(realmId, key),
      before: now - limits.retentionDays * DAY_SECONDS,
    });
  // One conversation's failure (its shard moving) does not hold up the others; the next sweep retries it.
  let failed: unknown = null;
  for (const { ref, before } of work) {
    try {
      for (;;) {
        const r = await call(ref, "expireMessages", { before });
        if (!r.more) break;
      }
    } catch (err) {
      failed ??= err;
    }
  }
  if (failed) throw failed;
}

export interface RetentionHost {
  call: TypedCall;
  onShardAcquired(l: (shard: number) => void): void;
  shardOf(ref: ActorRef): number;
  servingShards(): number[];
  /** True once the node stopped: the periodic sweep ends then. */
  stopped(): boolean;
}

/** The realms whose realm actor is on one of `shards`, each swept once; failures wait for the next sweep. */
async function sweep(host: RetentionHost, shards: Set<number>): Promise<void> {
  for (const { realmId } of await host.call(realmDirectoryRef(), "listRealms", {})) {
    if (!shards.has(host.shardOf(realmRef(realmId)))) continue;
    await sweepRealmRetention(host.call, realmId, Date.now()).catch(() => undefined);
    // FL 323 (recently-active.ts): the same schedule turns idle channels inactive.
    await host
      .call(channelDirectoryRef(realmId), "sweepRecentlyActive", { now: Date.now() })
      .catch(() => undefined);
  }
}

export function attachRetention(host: RetentionHost): void {
  let pending = new Set<number>();
  let timer: NodeJS.Timeout | null = null;
  host.onShardAcquired((shard) => {
    pending.add(shard);
    timer ??= setTimeout(() => {
      timer = null;
      const shards = pending;
      pending = new Set();
      void sweep(host, shards).catch(() => undefined);
    }, SWEEP_DELAY_MS);
    timer.unref();
  });
  const every = setInterval(() => {
    if (host.stopped()) return clearInterval(every);
    const shards = new Set(host.servingShards());
    if (shards.size) void sweep(host, shards).catch(() => undefined);
  }, RETENTION_INTERVAL_MS).unref();
}
