// The node-side push notification worker (Zulip's
// missedmessage_mobile_notifications queue and handle_push_notification).
//
//   send turn ──hand-off push.notify──▶ worker   (candidates with a reason; journaled with the message)
//   worker ──pushTarget──▶ each candidate's user actor   (settings, mutes, tokens, E2EE devices)
//   worker ──list──▶ queue actor, ──presenceIdle──▶ realm   (is the user on a client right now?)
//   worker ──POST──▶ push relay   remotes/push/notify (legacy tokens), remotes/push/e2ee/notify
//
// The hand-off commits with the message, so a node that dies before the
// worker took it gives it again at the conversation's next activation. The
// worker acknowledges it as soon as it holds it in memory: the send's reply
// waits for its hand-offs, and must not wait for a relay on the Internet.
// Relay failures that may pass (network, 5xx) are retried with backoff, at
// most MAX_ATTEMPTS times; a notification still in memory when its node
// dies is lost (docs/push-notifications.md). With no relay configured
// (PUSH_BOUNCER_URL unset) hand-offs are acknowledged and nothing is kept.

import { realmRef } from "../actors/realm/index.ts";
import { queueRef } from "../actors/queue/index.ts";
import { userRef } from "../actors/user/index.ts";
import { PUSH_NOTIFY } from "../actors/channel/push-candidates.ts";
import type { TypedCall } from "../actors/protocol.ts";
import type { HandoffHandler } from "./node.ts";
import { componentLogger, type Logger } from "./log.ts";
import {
  encryptForDevice,
  pushRelayUrl,
  realmUuid,
  relayNotify,
  relayNotifyLegacy,
  userUuid,
  type RelayOutcome,
} from "../gateway/routes/push-relay.ts";
import {
  e2eePayload,
  legacyPayloads,
  type PushContext,
  type PushMessage,
  type PushRealm,
} from "./push-payload.ts";

/** Relay attempts of one notification before it is given up. */
export const MAX_ATTEMPTS = 6;
/** Notifications held at once; beyond this new ones are dropped (and logged), never piled up. */
const MAX_PENDING = 10_000;
/** Messages worked on at once. */
const CONCURRENCY = 8;

export interface PushWorkerHost {
  call: TypedCall;
  onHandoff(subject: string, handler: HandoffHandler): void;
}

export interface PushWorkerOptions {
  /** First retry delay; doubled per attempt. */
  retryBaseMs: number;
  log: Logger;
}

export interface PushWorker {
  /** Notifications waiting or in flight (tests, metrics). */
  readonly pending: number;
  stop(): void;
}

interface Notice {
  realmId: number;
  message: PushMessage;
  /** [user id, trigger] or, for a group mention, [user id, trigger, group id, group name]. */
  targets: ([number, string] | [number, string, number, string])[];
}

interface Target {
  due: boolean;
  online_push?: boolean;
  tokens?: { kind: string; token: string; app_id: string | null }[];
  devices?: {
    device_id: number;
    push_key: string;
    push_key_id: number;
    push_token_id: string;
    push_token_kind: string;
  }[];
}

/** A failure worth another attempt. */
function transient(o: RelayOutcome): boolean {
  return o.kind === "network" || o.kind === "server";
}

export function startPushWorker(host: PushWorkerHost, o: Partial<PushWorkerOptions> = {}): PushWorker {
  const log = o.log ?? componentLogger("push");
  const retryBaseMs = o.retryBaseMs ?? 2000;
  const waiting: Notice[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let running = 0;
  let inFlight = 0;
  let stopped = false;

  async function realmOf(realmId: number): Promise<PushRealm> {
    const [info, settings] = await Promise.all([
      host.call(realmRef(realmId), "publicInfo", {}),
      host.call(realmRef(realmId), "pushSettings", {}),
    ]);
    const hostName = info.host || process.env.EXTERNAL_HOST || "localhost";
    // The gateway's scheme is the request's; a node has none, so it takes the operator's.
    const scheme = process.env.WEBHOOK_REALM_SCHEME || "http";
    return { name: info.name ?? "", url: `${scheme}://${hostName}`, requireE2ee: settings.requireE2ee };
  }

  /** Zulip's idle rule: no event queue, or a queue but no active presence lately. */
  async function activeUsers(realmId: number, ids: number[]): Promise<Set<number>> {
    if (!ids.length) return new Set();
    const lists = await Promise.all(
      ids.map((id) =>
        host.call(queueRef(realmId, id), "list", {}).then(
          (r) => (Array.isArray(r) && r.length > 0 ? id : null),
          () => null,
        ),
      ),
    );
    const withQueue = lists.filter((id): id is number => id !== null);
    if (!withQueue.length) return new Set();
    const r = await host.call(realmRef(realmId), "presenceIdle", { user_ids: withQueue });
    const idle = new Set(r.idle);
    return new Set(withQueue.filter((id) => !idle.has(id)));
  }

  /** One user's notification: legacy tokens and E2EE devices, each retried on its own. */
  function deliver(n: Notice, uid: number, t: Target, c: PushContext, attempt: number): void {
    if (stopped) return;
    inFlight++;
    void send(n, uid, t, c)
      .then((retry) => {
        if (!retry) return;
        if (attempt + 1 >= MAX_ATTEMPTS) {
          log.warn(
            { realmId: n.realmId, userId: uid, messageId: n.message.id },
            "push notification given up",
          );
          return;
        }
        inFlight++;
        const timer = setTimeout(
          () => {
            timers.delete(timer);
            inFlight--;
            deliver(n, uid, retry, c, attempt + 1);
          },
          retryBaseMs * 2 ** attempt,
        );
        timer.unref();
        timers.add(timer);
      })
      .finally(() => inFlight--);
  }

  /** Posts to the relay; answers what is left to retry, or null. */
  async function send(n: Notice, uid: number, t: Target, c: PushContext): Promise<Target | null> {
    const realmUrl = c.realm.url;
    const left: Target = { due: true, tokens: [], devices: [] };
    const tokens = t.tokens ?? [];
    if (tokens.length) {
      const { gcm, apns } = legacyPayloads(n.message, c);
      const outcome = await relayNotifyLegacy({
        user_uuid: userUuid(realmUrl, uid),
        user_id: uid,
        realm_uuid: realmUuid(realmUrl),
        gcm_payload: gcm,
        apns_payload: apns,
        gcm_options: { priority: "high" },
        android_devices: tokens.filter((x) => x.kind === "fcm").map((x) => x.token),
        apple_devices: tokens.filter((x) => x.kind === "apns").map((x) => x.token),
      });
      if (transient(outcome)) left.tokens = tokens;
      else if (outcome.kind !== "ok") log.warn({ userId: uid, outcome }, "push relay refused a notification");
    }
    const devices = t.devices ?? [];
    if (devices.length) {
      const data = JSON.stringify(e2eePayload(n.message, c));
      const outcome = await relayNotify({
        realm_uuid: realmUuid(realmUrl),
        push_requests: devices.map((d) => {
          const encrypted = encryptForDevice(d.push_key, data);
          if (d.push_token_kind === "apns") {
            return {
              token_id: d.push_token_id,
              http_headers: { apns_priority: 10, apns_push_type: "alert" },
              payload: {
                push_key_id: d.push_key_id,
                encrypted_data: encrypted,
                aps: { "mutable-content": 1, alert: { title: "New notification" }, sound: "default" },
              },
            };
          }
          return {
            token_id: d.push_token_id,
            fcm_priority: "high",
            payload: { push_key_id: d.push_key_id, encrypted_data: encrypted },
          };
        }),
      });
      if (transient(outcome)) left.devices = devices;
      else if (outcome.kind !== "ok") log.warn({ userId: uid, outcome }, "push relay refused a notification");
    }
    return left.tokens!.length || left.devices!.length ? left : null;
  }

  async function work(n: Notice): Promise<void> {
    const m = n.message;
    const answers = await Promise.all(
      n.targets.map(([uid, trigger]) =>
        host
          .call(userRef(n.realmId, uid), "pushTarget", {
            trigger,
            senderId: m.sender_id,
            ...(m.stream_id === null ? {} : { streamId: m.stream_id, topic: m.subject }),
          })
          .then(
            (r): Target => r,
            () => null,
          ),
      ),
    );
    const due: [number, string, Target, PushContext["group"]][] = [];
    n.targets.forEach(([uid, trigger, groupId, groupName], i) => {
      const a = answers[i];
      const group = groupId === undefined ? undefined : { id: groupId, name: String(groupName) };
      if (a?.due) due.push([uid, trigger, a, group]);
    });
    if (!due.length) return;
    const active = await activeUsers(
      n.realmId,
      due.filter(([, , t]) => !t.online_push).map(([uid]) => uid),
    );
    const realm = await realmOf(n.realmId);
    for (const [uid, trigger, t, group] of due) {
      if (active.has(uid)) continue;
      deliver(n, uid, t, { realm, userId: uid, trigger, ...(group ? { group } : {}) }, 0);
    }
  }

  function pump(): void {
    while (!stopped && running < CONCURRENCY && waiting.length) {
      const n = waiting.shift()!;
      running++;
      work(n)
        .catch((err: unknown) =>
          log.warn({ err, realmId: n.realmId, messageId: n.message.id }, "push notification not decided"),
        )
        .finally(() => {
          running--;
          pump();
        });
    }
  }

  host.onHandoff(PUSH_NOTIFY, async (data) => {
    // No relay: nothing to send, and nothing is kept for later.
    if (stopped || !pushRelayUrl()) return true;
    for (const d of data) {
      if (waiting.length + running + inFlight >= MAX_PENDING) {
        log.warn({ realmId: d.realmId }, "push notifications backlog full; one dropped");
        continue;
      }
      waiting.push(d as unknown as Notice);
    }
    pump();
    return true;
  });

  return {
    get pending() {
      return waiting.length + running + inFlight;
    },
    stop() {
      stopped = true;
      waiting.length = 0;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
