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
//
// Resuming after a crash (timers are not durable): the realm's index actor
// (the webhookIndex kind) lists the bots that may have pending work. A bot
// marks itself there (a call, awaited BEFORE the turn's append) when a
// delivery arrives while it had none, and asks to be cleared with the notice
// "webhook.idle" {realmId, botId, gen} (after the append) when it has none
// left. Marks and clears carry the bot's generation (deliveries ever
// queued), so a late clear never removes a newer mark. The worker reads the
// index when its node takes over shards and pokes those bots. The only
// call goes bot -> index; the index calls nobody.

import { webhookIndexRef } from "../addresses.ts";
import { errors } from "../errors.ts";
import { handlersOf, type HandlerOf } from "../protocol.ts";
import type { ActorContext, Caller, Decision, Obj } from "../types.ts";
import type { ClaimedDelivery, WebhookProtocol } from "./protocol.ts";
import type { Delivery, WebhookFact, WebhookState } from "./state.ts";

type BotHandler<M extends keyof WebhookProtocol> = HandlerOf<WebhookState, WebhookProtocol, M>;

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
/** "This bot has no pending delivery at generation gen": the worker clears it from the index. */
export const IDLE_NOTICE = "webhook.idle";

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
    // An attempt claimed by an earlier activation (its node may have died):
    // sweep it at its deadline.
    if (d.status === "attempting") {
      ctx.schedule(`sweep:${d.messageId}:${d.attempt}`, d.until - now, "poke", {});
    }
    live.push(d);
  }
  return { facts, live };
}

/**
 * What the worker hears after the turn: "ready" when a delivery is due and
 * a slot is free; "idle" when nothing is left pending (`announceIdle`: also
 * when nothing changed, as a poke re-announces a bot the index still lists).
 */
function readyNotices(
  state: WebhookState,
  live: Delivery[],
  now: number,
  announceIdle = false,
): Decision["notices"] {
  const { realmId, botId } = state;
  if (live.length === 0) {
    const emptied = Object.keys(state.pending).length > 0;
    return emptied || announceIdle
      ? [{ subject: IDLE_NOTICE, data: { realmId, botId, gen: state.gen } }]
      : [];
  }
  const inFlight = live.filter((d) => d.status === "attempting").length;
  if (inFlight >= PER_BOT_CONCURRENCY || !live.some((d) => isDue(d, now))) return [];
  return [{ subject: READY_NOTICE, data: { realmId, botId } }];
}

/**
 * A message triggered this bot: journal the delivery unless this message
 * already did. A bot that had nothing pending first marks itself in the
 * realm's index (awaited: a delivery never exists without its mark).
 */
const enqueue: BotHandler<"enqueue"> = async (state, args, ctx, caller) => {
  internal(caller);
  const { messageId, trigger } = args;
  // The worker forwards a hand-off's untyped data: check it still.
  if (!Number.isSafeInteger(messageId) || messageId <= 0) throw errors.internal();
  if (trigger !== "mention" && trigger !== "direct_message") throw errors.internal();
  const { facts, live } = upkeep(state, ctx);
  const known = state.pending[String(messageId)] !== undefined || state.recent.includes(messageId);
  if (!known) {
    if (live.length === 0) {
      await ctx.call(webhookIndexRef(state.realmId), "mark", { botId: state.botId, gen: state.gen + 1 });
    }
    const delivery: Delivery = {
      messageId,
      trigger,
      message: args.message ?? {},
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
const claim: BotHandler<"claim"> = (state, args, ctx, caller) => {
  internal(caller);
  const now = ctx.now();
  const max = Math.max(0, Math.floor(args.max ?? 1));
  const timeoutMs = Math.max(0, args.timeoutMs ?? 10_000);
  const { facts, live } = upkeep(state, ctx);
  const inFlight = live.filter((d) => d.status === "attempting").length;
  const take = live
    .filter((d) => isDue(d, now))
    .sort((a, b) => a.messageId - b.messageId)
    .slice(0, Math.max(0, Math.min(max, PER_BOT_CONCURRENCY - inFlight)));
  const deliveries: ClaimedDelivery[] = [];
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
  // Claiming only sweeps what it finds stale; when that empties the outbox, say so.
  return { facts, notices: live.length === 0 ? readyNotices(state, live, now) : [], reply: { deliveries } };
};

/**
 * The worker's outcome of an attempt. "retry" (timeout, connection error,
 * 5xx) counts a failure and backs off, or, past Zulip's retry count, ends
 * the delivery with `exhausted: true` so the worker sends the failure
 * notices. "done" and "dropped" end it. A report for an attempt this actor
 * no longer waits for (swept as lost, or a duplicate) is refused.
 */
const report: BotHandler<"report"> = (state, args, ctx, caller) => {
  internal(caller);
  const now = ctx.now();
  const { messageId, outcome } = args;
  const d = state.pending[String(messageId)];
  const { facts, live } = upkeep(state, ctx);
  if (!d || d.status !== "attempting" || d.attempt !== args.attempt || d.until <= now) {
    return { facts, reply: { accepted: false } };
  }
  const rest = live.filter((x) => x.messageId !== messageId);
  let exhausted = false;
  if (outcome === "retry") {
    const failures = d.failures + 1;
    if (failures > MAX_REQUEST_RETRIES) {
      exhausted = true;
      facts.push(fact({ type: "finished", messageId, outcome: "exhausted" }));
    } else {
      const delay = Math.max(0, args.retryAfterMs ?? 0);
      facts.push(fact({ type: "backoff", messageId, failures, until: now + delay }));
      if (delay > 0) ctx.schedule(`retry:${messageId}`, delay, "poke", {});
      rest.push({ ...d, status: "backoff", failures, until: now + delay });
    }
  } else {
    facts.push(fact({ type: "finished", messageId, outcome }));
  }
  return { facts, notices: readyNotices(state, rest, now), reply: { accepted: true, exhausted } };
};

/** Timer target and resume point: sweep, re-arm, and tell the worker about due work (or that there is none). */
const poke: BotHandler<"poke"> = (state, _args, ctx, caller) => {
  internal(caller);
  const { facts, live } = upkeep(state, ctx);
  return { facts, notices: readyNotices(state, live, ctx.now(), true), reply: { pending: live.length } };
};

/** For tests and inspection: the pending deliveries without their messages. */
const outbox: BotHandler<"outbox"> = (state, _args, _ctx, caller) => {
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

export const webhookHandlers = handlersOf<WebhookState, WebhookProtocol>()({
  enqueue,
  claim,
  report,
  poke,
  outbox,
});
