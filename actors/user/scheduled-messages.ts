// Scheduled messages (Zulip's zerver/actions/scheduled_messages.py): each
// user's own list, on their user actor; events go to the user's own queues.
// Design and failure handling: docs/scheduled-messages.md.
//
// Scheduling runs every check of a send now (the target conversation's
// `send` with `check_only`: permissions, recipients, content, topic, and the
// rendering), as Zulip's check_message does. At the time, the actor's timer
// (`deliverScheduled`) hands the due messages to the node's delivery worker
// (actors/user/scheduled-delivery.ts) as durable hand-offs, journaled with
// the `schedSending` fact; the worker sends each one as the user (the send
// checks everything again) under a key that makes a repeated attempt answer
// the message already sent, then reports back (`scheduledResult`). The user
// actor never awaits a send: the send's reply waits for the recipients'
// flags, this actor's among them.
//
// Timers are not durable: the realm keeps the users who have messages
// waiting (actors/realm/scheduled-index.ts), marked before the first one is
// journaled; a node that takes over a shard pokes those of its users.
//
// SNAPSHOT NOTE: the state lives in `UserState.scheduled`; `initialUser`
// supplies [] to snapshots written before it.

import { channelConvRef, dmConvRef, realmRef } from "../addresses.ts";
import { errors } from "../errors.ts";
import type { DecisionOf, SomeHandlersOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj, OutEvent } from "../types.ts";
import { dmRecipients } from "./dm-recipients.ts";
import type { UserProtocol } from "./protocol.ts";
import type { ScheduledMessage, UserState } from "./state.ts";

type Handlers = SomeHandlersOf<
  UserState,
  UserProtocol,
  | "scheduledMessages"
  | "createScheduledMessage"
  | "editScheduledMessage"
  | "deleteScheduledMessage"
  | "deliverScheduled"
  | "scheduledResult"
>;

/** The hand-off subject of one delivery attempt. */
export const SCHEDULED_SEND = "scheduled.send";
/** Zulip's SCHEDULED_MESSAGE_LATE_CUTOFF_MINUTES. */
const LATE_CUTOFF_S = 10 * 60;
/** Zulip keeps any number; an actor's state must stay bounded. */
export const SCHEDULED_MAX = 1000;
/** Sent messages kept so that editing one answers "already sent" (Zulip keeps the row). */
const DELIVERED_KEPT = 100;
/** 9999-12-31T23:59:59Z: Python's datetime ends there. */
const TIMESTAMP_MAX = 253402300799;
const TIMER = "sched";

type SchedFact =
  | { type: "schedSaved"; msg: ScheduledMessage }
  | { type: "schedRemoved"; id: number }
  | { type: "schedSending"; ids: number[] }
  | { type: "schedDelivered"; id: number }
  | { type: "schedFailed"; id: number; message: string };

export function applyScheduledFact(state: UserState, raw: Obj): UserState {
  const fact = raw as unknown as SchedFact;
  const find = (id: number) => state.scheduled.find((x) => x.id === id);
  switch (fact.type) {
    case "schedSaved": {
      const m = { ...fact.msg, to: [...fact.msg.to] };
      const i = state.scheduled.findIndex((x) => x.id === m.id);
      if (i >= 0) state.scheduled[i] = m;
      else state.scheduled.push(m);
      break;
    }
    case "schedRemoved":
      state.scheduled = state.scheduled.filter((x) => x.id !== fact.id);
      break;
    case "schedSending":
      for (const id of fact.ids) {
        const m = find(id);
        if (m) {
          m.sending = true;
          m.attempts++;
        }
      }
      break;
    case "schedDelivered": {
      const m = find(fact.id);
      if (m) {
        m.delivered = true;
        m.sending = false;
      }
      const delivered = state.scheduled.filter((x) => x.delivered);
      if (delivered.length > DELIVERED_KEPT) {
        const drop = new Set(delivered.slice(0, delivered.length - DELIVERED_KEPT).map((x) => x.id));
        state.scheduled = state.scheduled.filter((x) => !drop.has(x.id));
      }
      break;
    }
    case "schedFailed": {
      const m = find(fact.id);
      if (m) {
        m.failed = true;
        m.sending = false;
        m.failureMessage = fact.message;
      }
      break;
    }
    default:
      break;
  }
  return state;
}

/** Waiting for its time (or for the outcome of its attempt). */
function pending(m: ScheduledMessage): boolean {
  return !m.delivered && !m.failed;
}

/** Zulip's ScheduledMessage.to_dict. */
export function formatScheduled(m: ScheduledMessage): Obj {
  const out: Obj = {
    scheduled_message_id: m.id,
    to: m.type === "stream" ? m.to[0]! : [...m.to],
    type: m.type,
    content: m.content,
    rendered_content: m.rendered,
    scheduled_delivery_timestamp: m.deliverAt,
    failed: m.failed,
  };
  if (m.type === "stream") out.topic = m.topic;
  return out;
}

export function requireSelf(state: UserState, caller: Caller | null): Caller {
  if (!state.created || !caller || caller.userId !== state.userId || caller.realmId !== state.realmId) {
    throw errors.accessDenied();
  }
  return caller;
}

/** Zulip's access_scheduled_message: only the sender's own, delivered ones included. */
function find(state: UserState, id: number): ScheduledMessage {
  const m = state.scheduled.find((x) => x.id === id && !isReminder(x));
  if (!m) throw errors.scheduledMessageNotFound();
  return m;
}

/** A message reminder (actors/user/reminders.ts) rides the same machinery, under its own API. */
export function isReminder(m: ScheduledMessage): boolean {
  return m.reminderTargetMessageId !== undefined;
}

function list(state: UserState): Obj[] {
  return state.scheduled
    .filter((m) => !m.delivered && !isReminder(m))
    .sort((a, b) => a.deliverAt - b.deliverAt || a.id - b.id)
    .map(formatScheduled);
}

function event(userId: number, e: Obj): OutEvent {
  return { event: { type: "scheduled_messages", ...e }, userIds: [userId] };
}

/** Arm the timer for the earliest waiting message (an early or repeated call is harmless). */
export function arm(ctx: ActorContext, msgs: ScheduledMessage[]): void {
  let next = Infinity;
  for (const m of msgs) if (pending(m) && !m.sending && m.deliverAt < next) next = m.deliverAt;
  if (next !== Infinity) ctx.schedule(TIMER, Math.max(0, next * 1000 - ctx.now()), "deliverScheduled", {});
}

/**
 * Before a turn that leaves messages waiting where none were, the realm's
 * index must list the user: awaited before the append, so a journaled
 * waiting message always has its mark (a mark whose turn failed is only
 * stale, and costs one poke).
 */
export async function markIfFirst(
  state: UserState,
  ctx: ActorContext,
  after: ScheduledMessage[],
): Promise<void> {
  if (state.scheduled.some(pending) || !after.some(pending)) return;
  await ctx.call(realmRef(state.realmId), "markScheduled", { userId: state.userId });
}

/** After a turn that leaves nothing waiting: unmark in a later turn (this one's facts are not durable yet). */
export function unmarkLater(ctx: ActorContext, after: ScheduledMessage[]): void {
  if (!after.some(pending)) ctx.schedule(TIMER, 0, "deliverScheduled", {});
}

export function withSaved(state: UserState, m: ScheduledMessage): ScheduledMessage[] {
  const i = state.scheduled.findIndex((x) => x.id === m.id);
  if (i < 0) return [...state.scheduled, m];
  const out = [...state.scheduled];
  out[i] = m;
  return out;
}

/** A recipient as the actor received it from the gateway, `to` read. */
interface Target {
  type: "stream" | "private";
  to: number[];
  topic: string | null;
}

/** Python's int() of a channel id: optional sign and digits, blanks around. */
const INT_TEXT = /^\s*[+-]?\d+\s*$/;

/**
 * Zulip's extract_stream_id and extract_direct_message_recipient_ids, of the
 * raw `to` text (or the recipients already stored, on an edit that keeps them).
 */
function readTo(type: "stream" | "private", to: string | number[]): number[] {
  if (Array.isArray(to)) return to;
  if (type === "stream") {
    if (to.length > 100 || !INT_TEXT.test(to)) throw errors.channelIdDataType();
    const id = Number(to.trim());
    // A channel id beyond the safe integers names no channel.
    return [Number.isSafeInteger(id) ? id : -1];
  }
  let v: unknown;
  try {
    v = JSON.parse(to);
  } catch {
    v = to;
  }
  if (!Array.isArray(v)) throw errors.recipientsDataType();
  for (const x of v) if (typeof x !== "number" || !Number.isInteger(x)) throw errors.recipientsOnlyUserIds();
  return [...new Set((v as number[]).map((x) => (Number.isSafeInteger(x) ? x : -1)))];
}

function readTarget(type: "stream" | "private", to: string | number[], topic: string | null): Target {
  return { type, to: readTo(type, to), topic };
}

/** A delivery time (UNIX seconds, an integer): in the future, within Python's datetime. */
export function readDeliverAt(v: number, now: number): number {
  if (v * 1000 <= now) throw errors.deliveryTimeNotInFuture();
  if (v > TIMESTAMP_MAX) throw errors.invalid("scheduled_delivery_timestamp");
  return v;
}

/** The conversation a scheduled message goes to. */
function convOf(state: UserState, t: { type: string; to: number[] }) {
  return t.type === "stream"
    ? channelConvRef(state.realmId, t.to[0]!)
    : dmConvRef(state.realmId, [...t.to, state.userId]);
}

/**
 * Zulip's check_message at scheduling time: the recipients, then every
 * check of a send, done by the conversation itself without sending.
 */
export async function check(
  state: UserState,
  ctx: ActorContext,
  caller: Caller,
  t: Target,
  content: string,
  client: string,
): Promise<Pick<ScheduledMessage, "type" | "to" | "topic" | "content" | "rendered">> {
  let to: number[];
  if (t.type === "stream") {
    if (t.to.length !== 1) throw errors.exactlyOneChannel();
    if (t.topic === null) throw errors.missingTopic();
    to = [t.to[0]!];
  } else {
    if (t.to.length === 0) throw errors.messageNeedsRecipients();
    to = await dmRecipients(ctx, state, t.to);
  }
  const args = { content, client, check_only: true, ...(t.type === "stream" ? { topic: t.topic! } : {}) };
  const r = (await ctx.call(convOf(state, { type: t.type, to }), "send", args, caller)) as Obj;
  return {
    type: t.type,
    to,
    topic: t.type === "stream" ? String(r.topic) : "",
    content: String(r.content),
    rendered: String(r.rendered),
  };
}

/** GET /scheduled_messages and /register's `scheduled_messages`: undelivered, by delivery time. */
const scheduledMessages: Handlers["scheduledMessages"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: { scheduled_messages: list(state) } };
};

const createScheduledMessage: Handlers["createScheduledMessage"] = async (state, args, ctx, caller) => {
  const c = requireSelf(state, caller);
  // Zulip's order: the time, then the recipients.
  const deliverAt = readDeliverAt(args.deliver_at, ctx.now());
  const t = readTarget(args.type, args.to, args.topic ?? null);
  if (state.scheduled.filter((m) => !m.delivered).length >= SCHEDULED_MAX) {
    throw errors.tooManyScheduledMessages(SCHEDULED_MAX);
  }
  const client = args.client ?? "API";
  const checked = await check(state, ctx, c, t, args.content, client);
  const msg: ScheduledMessage = {
    id: await ctx.nextId(`scheduledMessage.${state.realmId}`),
    ...checked,
    deliverAt,
    readBySender: args.read_by_sender ?? null,
    client,
    failed: false,
    failureMessage: null,
    delivered: false,
    attempts: 0,
    sending: false,
  };
  const after = withSaved(state, msg);
  await markIfFirst(state, ctx, after);
  arm(ctx, after);
  return {
    facts: [{ type: "schedSaved", msg: msg as unknown as Obj }],
    events: [event(state.userId, { op: "add", scheduled_messages: [formatScheduled(msg)] })],
    reply: { scheduled_message_id: msg.id },
  };
};

/** Zulip's edit_scheduled_message; the gateway already checked "Nothing to change" and the type rules. */
const editScheduledMessage: Handlers["editScheduledMessage"] = async (state, args, ctx, caller) => {
  const c = requireSelf(state, caller);
  // Zulip's view checks the time before it looks the message up.
  const deliverAt = args.deliver_at === undefined ? null : readDeliverAt(args.deliver_at, ctx.now());
  const old = find(state, args.id);
  if (old.delivered) throw errors.scheduledAlreadySent();
  if (old.sending) throw errors.scheduledAlreadySent();
  if (old.failed && deliverAt === null) throw errors.deliveryTimeNotInFuture();
  const client = args.client ?? "API";
  const next: ScheduledMessage = { ...old, to: [...old.to], client };
  const retarget = args.type !== undefined || args.to !== undefined;
  if (retarget || args.content !== undefined) {
    const t = readTarget(
      args.type ?? old.type,
      args.to ?? old.to,
      args.topic ?? (old.type === "stream" ? old.topic : null),
    );
    const checked = await check(state, ctx, c, t, args.content ?? old.content, client);
    if (retarget) {
      next.type = checked.type;
      next.to = checked.to;
      next.topic = checked.topic;
    }
    if (args.content !== undefined) {
      next.content = checked.content;
      next.rendered = checked.rendered;
    }
  }
  if (!retarget && args.topic !== undefined && old.type === "stream") {
    // Only the topic changed: the conversation checks and normalizes it.
    const r = (await ctx.call(
      convOf(state, old),
      "send",
      { content: old.content, topic: args.topic, client, check_only: true },
      c,
    )) as Obj;
    next.topic = String(r.topic);
  }
  if (deliverAt !== null) next.deliverAt = deliverAt;
  next.failed = false;
  next.failureMessage = null;
  const after = withSaved(state, next);
  await markIfFirst(state, ctx, after);
  arm(ctx, after);
  return {
    facts: [{ type: "schedSaved", msg: next as unknown as Obj }],
    events: [event(state.userId, { op: "update", scheduled_message: formatScheduled(next) })],
    reply: {},
  };
};

const deleteScheduledMessage: Handlers["deleteScheduledMessage"] = (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const old = find(state, args.id);
  const after = state.scheduled.filter((x) => x.id !== old.id);
  unmarkLater(ctx, after);
  return {
    facts: [{ type: "schedRemoved", id: old.id }],
    events: [event(state.userId, { op: "remove", scheduled_message_id: old.id })],
    reply: {},
  };
};

/** The send key of an attempt: unique per message and attempt, so a repeated hand-off sends once. */
function sendKey(state: UserState, m: ScheduledMessage, attempt: number): string {
  return `scheduled:${state.userId}:${m.id}:${attempt}`;
}

/**
 * The timer, and the poke of a node that took over the user's shard: hand
 * the due messages to the delivery worker, fail those too late (Zulip's
 * cutoff), re-arm for the next, and leave the realm's index when nothing
 * waits any more.
 */
const deliverScheduled: Handlers["deliverScheduled"] = async (state, _args, ctx, caller) => {
  if (caller !== null) throw errors.accessDenied();
  const nowS = ctx.now() / 1000;
  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  const handoffs: { subject: string; data: Obj }[] = [];
  const sending: number[] = [];
  const late = new Set<number>();
  for (const m of state.scheduled) {
    if (!pending(m) || m.sending || m.deliverAt > nowS) continue;
    // Reminders go to the user alone, so Zulip sends them however late.
    if (!isReminder(m) && nowS > m.deliverAt + LATE_CUTOFF_S) {
      const message = errors.scheduledTooLate().message;
      late.add(m.id);
      facts.push({ type: "schedFailed", id: m.id, message });
      events.push(
        event(state.userId, { op: "update", scheduled_message: formatScheduled({ ...m, failed: true }) }),
      );
      continue;
    }
    sending.push(m.id);
    const data: Obj = {
      realmId: state.realmId,
      userId: state.userId,
      id: m.id,
      attempt: m.attempts + 1,
      key: sendKey(state, m, m.attempts + 1),
      type: m.type,
      to: [...m.to],
      topic: m.topic,
      content: m.content,
      client: m.client,
      deliverAt: m.deliverAt,
    };
    if (isReminder(m)) data.remind = true;
    // Zulip's default: read by the sender, unless the message is to oneself only.
    const toSelf = m.type === "private" && m.to.length === 1 && m.to[0] === state.userId;
    if (m.readBySender !== null) data.read_by_sender = m.readBySender;
    else if (toSelf) data.read_by_sender = false;
    handoffs.push({ subject: SCHEDULED_SEND, data });
  }
  if (sending.length) facts.unshift({ type: "schedSending", ids: sending });
  const waiting = state.scheduled.some((m) => pending(m) && !late.has(m.id));
  if (!waiting && !facts.length) {
    // Nothing waits, durably (this turn journals nothing): leave the index.
    await ctx.call(realmRef(state.realmId), "clearScheduled", { userId: state.userId });
  }
  const sent = new Set(sending);
  const after = state.scheduled.map((m) =>
    sent.has(m.id) ? { ...m, sending: true } : late.has(m.id) ? { ...m, failed: true } : m,
  );
  arm(ctx, after);
  // The failures journaled here left nothing waiting: the next turn leaves the index.
  if (!waiting && facts.length) unmarkLater(ctx, after);
  const out: DecisionOf<Record<string, never>> = { facts, events, reply: {} };
  if (handoffs.length) out.handoffs = handoffs;
  return out;
};

/** The delivery worker's report of one attempt: sent, or refused for good (Zulip's `failed`). */
const scheduledResult: Handlers["scheduledResult"] = (state, args, ctx, caller) => {
  if (caller !== null) throw errors.accessDenied();
  const m = state.scheduled.find((x) => x.id === args.id);
  // A repeated report, or the message was deleted meanwhile.
  if (!m || !m.sending || m.attempts !== args.attempt) return { reply: {} };
  const after = state.scheduled.filter((x) => x.id !== m.id);
  unmarkLater(ctx, after);
  if (args.error === undefined) {
    return {
      facts: [{ type: "schedDelivered", id: m.id }],
      events: [
        isReminder(m)
          ? { event: { type: "reminders", op: "remove", reminder_id: m.id }, userIds: [state.userId] }
          : event(state.userId, { op: "remove", scheduled_message_id: m.id }),
      ],
      reply: {},
    };
  }
  const failed = { ...m, failed: true, sending: false, failureMessage: args.error };
  const events: OutEvent[] = [];
  // Zulip tells the user, unless their account is what failed; a failed
  // reminder is only recorded (Zulip drops it silently).
  if (args.notify !== false && !isReminder(m)) {
    events.push(event(state.userId, { op: "update", scheduled_message: formatScheduled(failed) }));
  }
  return { facts: [{ type: "schedFailed", id: m.id, message: args.error }], events, reply: {} };
};

export const scheduledMessageHandlers: Handlers = {
  scheduledMessages,
  createScheduledMessage,
  editScheduledMessage,
  deleteScheduledMessage,
  deliverScheduled,
  scheduledResult,
};
