// Handlers of a bot's webhook actor: the durable outbox of its outgoing
// webhook deliveries. The actor never touches the network: the node-side
// worker (webhook/worker.ts) claims deliveries, POSTs, and reports back.
//
// Every method is internal (caller null): the worker and the trigger path
// call them, never a client. Calls go nowhere: this actor is a leaf.
//
// The actor tells the worker that work is ready with the node-local notice
// "webhook.ready" {realmId, botId}: it fires on the node that ran the turn,
// which is the node holding this actor, so claims are local calls.

import { errors } from "../errors.ts";
import type { ActorContext, Caller, Decision, Handler, Obj, Value } from "../types.ts";
import type { Delivery, Trigger, WebhookFact, WebhookState } from "./state.ts";

/** Zulip's MAX_REQUEST_RETRIES (zerver/lib/queue.py): a delivery gets at most 1 + 3 attempts. */
export const MAX_REQUEST_RETRIES = 3;
/** Attempts of one bot in flight at once, over all nodes. */
export const PER_BOT_CONCURRENCY = 4;
/**
 * A claimed attempt the worker has not reported this long after its own
 * timeout is taken as lost with its node; it is finished, never re-sent.
 */
export const ATTEMPT_GRACE_MS = 5_000;
export const READY_NOTICE = "webhook.ready";

function fact(f: WebhookFact): Obj {
  return f as unknown as Obj;
}

function internal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

function isDue(d: Delivery, now: number): boolean {
  return d.status === "ready" || (d.status === "backoff" && d.until <= now);
}

/**
 * What every turn does first, whether or not a timer survived: attempts
 * past their deadline are finished as "unknown" (their node died or lost
 * the shard mid-request; re-sending could deliver twice), backoff timers are
 * re-armed (timers are not durable), and the worker is told when a delivery
 * is due. Returns the facts to persist and the deliveries still pending.
 */
function upkeep(state: WebhookState, ctx: ActorContext): { facts: Obj[]; live: Delivery[] } {
  const now = ctx.now();
  const facts: Obj[] = [];
  const live: Delivery[] = [];
  for (const d of Object.values(state.pending)) {
    if (d.status === "attempting" && d.until <= now) {
      facts.push(fact({ type: "finished", messageId: d.messageId, outcome: "unknown" }));
      continue;
    }
    if (d.status === "backoff" && d.until > now) {
      ctx.schedule(`retry:${d.messageId}`, d.until - now, "poke", {});
    }
    live.push(d);
  }
  return { facts, live };
}

function readyNotices(state: WebhookState, live: Delivery[], now: number): Decision["notices"] {
  const inFlight = live.filter((d) => d.status === "attempting").length;
  if (inFlight >= PER_BOT_CONCURRENCY || !live.some((d) => isDue(d, now))) return [];
  return [{ subject: READY_NOTICE, data: { realmId: state.realmId, botId: state.botId } }];
}

/** A message triggered this bot: journal the delivery unless this message already did. */
const enqueue: Handler<WebhookState> = (state, args, ctx, caller) => {
  internal(caller);
  const messageId = Number(args.messageId);
  const trigger = args.trigger as Trigger;
  if (!Number.isSafeInteger(messageId) || messageId <= 0) throw errors.internal();
  if (trigger !== "mention" && trigger !== "direct_message") throw errors.internal();
  const { facts, live } = upkeep(state, ctx);
  const known = state.pending[String(messageId)] !== undefined || state.recent.includes(messageId);
  if (!known) {
    const delivery: Delivery = {
      messageId,
      trigger,
      message: (args.message ?? {}) as Obj,
      failures: 0,
      status: "ready",
      attempt: 0,
      until: 0,
    };
    facts.push(fact({ type: "queued", delivery }));
    live.push(delivery);
  }
  return { facts, notices: readyNotices(state, live, ctx.now()), reply: { queued: !known } };
};

/**
 * The worker takes up to `max` due deliveries (oldest message first) within
 * the per-bot bound. Each is journaled as attempting, with the deadline
 * `timeoutMs` + grace, before the reply releases it to the worker.
 */
const claim: Handler<WebhookState> = (state, args, ctx, caller) => {
  internal(caller);
  const now = ctx.now();
  const max = Math.max(0, Math.floor(Number(args.max ?? 1)));
  const timeoutMs = Math.max(0, Number(args.timeoutMs ?? 10_000));
  const { facts, live } = upkeep(state, ctx);
  const inFlight = live.filter((d) => d.status === "attempting").length;
  const take = live
    .filter((d) => isDue(d, now))
    .sort((a, b) => a.messageId - b.messageId)
    .slice(0, Math.max(0, Math.min(max, PER_BOT_CONCURRENCY - inFlight)));
  const deliveries: Value[] = [];
  for (const d of take) {
    const attempt = d.attempt + 1;
    const until = now + timeoutMs + ATTEMPT_GRACE_MS;
    facts.push(fact({ type: "claimed", messageId: d.messageId, attempt, until }));
    ctx.schedule(`sweep:${d.messageId}:${attempt}`, until - now, "poke", {});
    deliveries.push({
      messageId: d.messageId,
      attempt,
      trigger: d.trigger,
      failures: d.failures,
      message: d.message,
    });
  }
  return { facts, reply: { deliveries } };
};

/**
 * The worker's outcome of an attempt. "retry" (timeout, connection error,
 * 5xx) counts a failure and backs off, or, past Zulip's retry count, ends
 * the delivery with `exhausted: true` so the worker sends the failure
 * notices. "done" and "dropped" end it. A report for an attempt this actor
 * no longer waits for (swept as lost, or a duplicate) is refused.
 */
const report: Handler<WebhookState> = (state, args, ctx, caller): Decision => {
  internal(caller);
  const now = ctx.now();
  const messageId = Number(args.messageId);
  const d = state.pending[String(messageId)];
  const { facts, live } = upkeep(state, ctx);
  if (!d || d.status !== "attempting" || d.attempt !== Number(args.attempt) || d.until <= now) {
    return { facts, reply: { accepted: false } };
  }
  const rest = live.filter((x) => x.messageId !== messageId);
  let exhausted = false;
  if (args.outcome === "retry") {
    const failures = d.failures + 1;
    if (failures > MAX_REQUEST_RETRIES) {
      exhausted = true;
      facts.push(fact({ type: "finished", messageId, outcome: "exhausted" }));
    } else {
      const delay = Math.max(0, Number(args.retryAfterMs ?? 0));
      facts.push(fact({ type: "backoff", messageId, failures, until: now + delay }));
      if (delay > 0) ctx.schedule(`retry:${messageId}`, delay, "poke", {});
      rest.push({ ...d, status: "backoff", failures, until: now + delay });
    }
  } else {
    const outcome = typeof args.outcome === "string" ? args.outcome : "done";
    facts.push(fact({ type: "finished", messageId, outcome }));
  }
  return { facts, notices: readyNotices(state, rest, now), reply: { accepted: true, exhausted } };
};

/** Timer target and resume point: sweep, re-arm, and tell the worker about due work. */
const poke: Handler<WebhookState> = (state, _args, ctx, caller) => {
  internal(caller);
  const { facts, live } = upkeep(state, ctx);
  return { facts, notices: readyNotices(state, live, ctx.now()), reply: { pending: live.length } };
};

/** For tests and inspection: the pending deliveries without their messages. */
const outbox: Handler<WebhookState> = (state, _args, _ctx, caller) => {
  internal(caller);
  const pending = Object.values(state.pending).map((d) => ({
    messageId: d.messageId,
    trigger: d.trigger,
    status: d.status,
    attempt: d.attempt,
    failures: d.failures,
  }));
  return { reply: { pending, recent: state.recent.slice(-20) } };
};

export const webhookHandlers: Record<string, Handler<WebhookState>> = {
  enqueue,
  claim,
  report,
  poke,
  outbox,
};
