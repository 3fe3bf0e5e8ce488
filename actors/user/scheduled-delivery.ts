// The node side of scheduled messages (actors/user/scheduled-messages.ts,
// docs/scheduled-messages.md), attached to every NodeRuntime:
//
//   user actor's timer ──hand-off scheduled.send──▶ here ──send (as the user, keyed)──▶ conversation
//   here ──scheduledResult (sent, or Zulip's refusal)──▶ user actor
//   shard acquired ──▶ here ──scheduledUsers──▶ realm; ──deliverScheduled──▶ those users
//
// The hand-off is journaled with the user's `schedSending` fact and given
// again at the user's next activation until acknowledged; the send key makes
// the conversation answer the message it already sent, so an attempt
// repeated after a crash sends once.

import { errors, ZulipError } from "../errors.ts";
import { channelConvRef, dmConvRef, realmDirectoryRef, realmRef, userRef } from "../addresses.ts";
import { NOTIFICATION_BOT_ID } from "../system-bots.ts";
import type { ArgsOf, TypedCall, TypedCallAs } from "../protocol.ts";
import type { ActorRef, Caller, Obj, Value } from "../types.ts";
import type { UserProtocol } from "./protocol.ts";
import { SCHEDULED_SEND } from "./scheduled-messages.ts";

/** A delivery attempt's outcome, as the user actor's scheduledResult takes it. */
type Outcome = Omit<ArgsOf<UserProtocol, "scheduledResult">, "id" | "attempt">;

export interface ScheduledHost {
  call: TypedCall;
  callAs: TypedCallAs;
  onHandoff(subject: string, handler: (data: Obj[]) => Promise<boolean>): void;
  onShardAcquired(l: (shard: number) => void): void;
  shardOf(ref: ActorRef): number;
}

/** Transient failures (a shard moving, a node dying) are retried this often, this far apart. */
const TRIES = 15;
const RETRY_MS = 1000;
/** Gather the shards of one start-up or failover into one sweep. */
const SWEEP_DELAY_MS = 200;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());

/** Run `f` until it answers or refuses for good; undefined when it never did. */
async function retrying<T>(f: () => Promise<T>): Promise<{ ok: T } | { refused: ZulipError } | undefined> {
  for (let i = 0; i < TRIES; i++) {
    try {
      return { ok: await f() };
    } catch (err) {
      if (err instanceof ZulipError) return { refused: err };
      if (i < TRIES - 1) await sleep(RETRY_MS);
    }
  }
  return undefined;
}

/** One attempt: true once the user actor has its outcome. */
async function deliver(host: ScheduledHost, d: Obj): Promise<boolean> {
  const realmId = Number(d.realmId);
  const userId = Number(d.userId);
  const user = userRef(realmId, userId);
  const report = async (outcome: Outcome): Promise<boolean> =>
    (await retrying(() =>
      host.call(user, "scheduledResult", { id: Number(d.id), attempt: Number(d.attempt), ...outcome }),
    )) !== undefined;

  // The sender as of now (Zulip re-checks the account and every permission at delivery).
  const self: Caller = { realmId, userId, role: 400, isBot: false };
  const member = await retrying(() => host.callAs(realmRef(realmId), "getMember", { userId }, self));
  if (!member) return false;
  if ("refused" in member) return report({ error: member.refused.message, notify: false });
  const u = member.ok.user;
  // Zulip's UserDeactivatedError; the user is not notified.
  if (u.is_active !== true) return report({ error: errors.userDeactivatedLogin().message, notify: false });
  const caller: Caller = { realmId, userId, role: Number(u.role), isBot: u.is_bot === true };

  if (d.remind === true) return deliverReminder(host, d, caller, report);
  const to = (d.to as number[]).map(Number);
  const conv = d.type === "stream" ? channelConvRef(realmId, to[0]!) : dmConvRef(realmId, [...to, userId]);
  const str = (v: Value | undefined) => (typeof v === "string" ? v : undefined);
  const args = {
    content: String(d.content ?? ""),
    client: str(d.client),
    send_key: str(d.key),
    topic: d.type === "stream" ? str(d.topic) : undefined,
    read_by_sender: typeof d.read_by_sender === "boolean" ? d.read_by_sender : undefined,
  };
  const sent = await retrying(() => host.callAs(conv, "send", args, caller));
  if (!sent) return false;
  if ("ok" in sent) return report({ messageId: Number((sent.ok as Obj).id) });
  if (!(await report({ error: sent.refused.message }))) return false;
  // Zulip's send_failed_scheduled_message_notification, keyed like the attempt.
  const notice = await retrying(() =>
    host.callAs(
      dmConvRef(realmId, [userId, NOTIFICATION_BOT_ID]),
      "send",
      {
        content: failureNotice(Number(d.deliverAt), sent.refused.message),
        client: "Internal",
        notification_bot: true,
        read_by_sender: false,
        send_key: `${String(d.key)}:failed`,
      },
      caller,
    ),
  );
  return notice !== undefined;
}

/**
 * A message reminder (actors/user/reminders.ts): Notification Bot writes the
 * user the text stored when it was set, left unread, under the attempt's
 * key. Zulip records a refused one as failed and tells nobody.
 */
async function deliverReminder(
  host: ScheduledHost,
  d: Obj,
  caller: Caller,
  report: (outcome: Outcome) => Promise<boolean>,
): Promise<boolean> {
  const sent = await retrying(() =>
    host.callAs(
      dmConvRef(caller.realmId, [caller.userId, NOTIFICATION_BOT_ID]),
      "send",
      {
        content: String(d.content ?? ""),
        client: "Internal",
        notification_bot: true,
        read_by_sender: false,
        send_key: typeof d.key === "string" ? d.key : undefined,
      },
      caller,
    ),
  );
  if (!sent) return false;
  if ("ok" in sent) return report({ messageId: Number((sent.ok as Obj).id) });
  return report({ error: sent.refused.message, notify: false });
}

/** Zulip's datetime_to_global_time: `<time:...>` with an ISO 8601 UTC time. */
function globalTime(unixSeconds: number): string {
  return `<time:${new Date(unixSeconds * 1000).toISOString().slice(0, 19)}+00:00>`;
}

/** The text of Zulip's failure notice (its English wording). */
export function failureNotice(deliverAt: number, error: string): string {
  return [
    `The message you scheduled for ${globalTime(deliverAt)} was not sent because of the following error:`,
    "",
    `> ${error}`,
    "",
    "[View scheduled messages](#scheduled)",
  ].join("\n");
}

/**
 * Poke every user of the acquired shards that a realm's index lists: the
 * timers of their actors died with the previous owner (or never existed,
 * at start-up).
 */
async function sweep(host: ScheduledHost, shards: Set<number>): Promise<void> {
  const realms = await retrying(() => host.call(realmDirectoryRef(), "listRealms", {}));
  if (!realms || !("ok" in realms)) return;
  await Promise.all(
    realms.ok.map(async ({ realmId }) => {
      const idx = await retrying(() => host.call(realmRef(realmId), "scheduledUsers", {}));
      if (!idx || !("ok" in idx)) return;
      for (const userId of idx.ok.userIds) {
        const ref = userRef(realmId, userId);
        if (!shards.has(host.shardOf(ref))) continue;
        // A failure means the shard moved on again: its next owner sweeps it.
        await host.call(ref, "deliverScheduled", {}).catch(() => undefined);
      }
    }),
  );
}

export function attachScheduledDelivery(host: ScheduledHost): void {
  host.onHandoff(SCHEDULED_SEND, async (data) =>
    (await Promise.all(data.map((d) => deliver(host, d)))).every(Boolean),
  );
  let pendingShards = new Set<number>();
  let timer: NodeJS.Timeout | null = null;
  host.onShardAcquired((shard) => {
    pendingShards.add(shard);
    timer ??= setTimeout(() => {
      timer = null;
      const shards = pendingShards;
      pendingShards = new Set();
      void sweep(host, shards).catch(() => undefined);
    }, SWEEP_DELAY_MS);
    timer.unref();
  });
}
