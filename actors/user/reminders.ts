// Message reminders (Zulip's zerver/actions/reminders.py, feature levels
// 381, 399, 415): a reminder is a scheduled message of the user's own
// (Zulip's ScheduledMessage with delivery_type REMIND), kept with the
// scheduled messages in `UserState.scheduled` and marked by
// `reminderTargetMessageId`, so it is durable, indexed by the realm and
// delivered by the same timer, hand-off and worker
// (actors/user/scheduled-messages.ts, scheduled-delivery.ts,
// docs/scheduled-messages.md). What differs: its own API and `reminders`
// events; delivery as a direct message from Notification Bot to the user
// however late; a refused one is only recorded.
//
// The gateway reads the target message as the caller (Zulip's access_message)
// and writes Zulip's reminder text (gateway/routes/reminders.ts); the text
// is rendered here as a message to oneself, as Zulip's check_message does.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { Obj } from "../types.ts";
import type { UserProtocol } from "./protocol.ts";
import {
  SCHEDULED_MAX,
  arm,
  check,
  isReminder,
  markIfFirst,
  readDeliverAt,
  requireSelf,
  unmarkLater,
  withSaved,
} from "./scheduled-messages.ts";
import type { ScheduledMessage, UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "reminders" | "createReminder" | "deleteReminder">;

/** Zulip's ScheduledMessage.to_reminder_dict. */
export function formatReminder(m: ScheduledMessage): Obj {
  return {
    reminder_id: m.id,
    to: [...m.to],
    type: "private",
    content: m.content,
    rendered_content: m.rendered,
    scheduled_delivery_timestamp: m.deliverAt,
    failed: m.failed,
    reminder_target_message_id: m.reminderTargetMessageId!,
  };
}

/** GET /reminders and /register's `reminders`: undelivered, by delivery time (Zulip's get_undelivered_reminders). */
const reminders: Handlers["reminders"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  const list = state.scheduled
    .filter((m) => isReminder(m) && !m.delivered)
    .sort((a, b) => a.deliverAt - b.deliverAt || a.id - b.id)
    .map(formatReminder);
  return { reply: { reminders: list } };
};

/** {message_id, deliver_at, content}: the gateway already checked the message and wrote the text. */
const createReminder: Handlers["createReminder"] = async (state, args, ctx, caller) => {
  const c = requireSelf(state, caller);
  const deliverAt = readDeliverAt(args.deliver_at, ctx.now());
  const target = args.message_id;
  if (state.scheduled.filter((m) => !m.delivered).length >= SCHEDULED_MAX) {
    throw errors.tooManyScheduledMessages(SCHEDULED_MAX);
  }
  const checked = await check(
    state,
    ctx,
    c,
    { type: "private", to: [state.userId], topic: null },
    args.content,
    "Internal",
  );
  const msg: ScheduledMessage = {
    id: await ctx.nextId(`scheduledMessage.${state.realmId}`),
    ...checked,
    deliverAt,
    readBySender: false,
    client: "Internal",
    failed: false,
    failureMessage: null,
    delivered: false,
    attempts: 0,
    sending: false,
    reminderTargetMessageId: target,
  };
  const after = withSaved(state, msg);
  await markIfFirst(state, ctx, after);
  arm(ctx, after);
  return {
    facts: [{ type: "schedSaved", msg: msg as unknown as Obj }],
    events: [
      { event: { type: "reminders", op: "add", reminders: [formatReminder(msg)] }, userIds: [state.userId] },
    ],
    reply: { reminder_id: msg.id },
  };
};

/** Zulip's access_reminder and do_delete_reminder. */
const deleteReminder: Handlers["deleteReminder"] = (state, args, ctx, caller) => {
  requireSelf(state, caller);
  const old = state.scheduled.find((x) => x.id === args.id && isReminder(x));
  if (!old) throw errors.reminderNotFound();
  unmarkLater(
    ctx,
    state.scheduled.filter((x) => x.id !== old.id),
  );
  return {
    facts: [{ type: "schedRemoved", id: old.id }],
    events: [{ event: { type: "reminders", op: "remove", reminder_id: old.id }, userIds: [state.userId] }],
    reply: {},
  };
};

export const reminderHandlers: Handlers = {
  reminders,
  createReminder,
  deleteReminder,
};
