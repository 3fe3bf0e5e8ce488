// Message reminders (Zulip's zerver/views/reminders.py and
// zerver/lib/reminders.py, feature levels 381, 399, 415): the gateway reads
// the message as the caller (Zulip's access_message) and writes Zulip's
// reminder text; the caller's user actor keeps, announces and delivers the
// reminder (actors/user/reminders.ts).
//
// Unlike Zulip, the text is not written again at delivery: Zulip re-reads
// the message then (an edit in between shows, and it falls back to the
// stored text when the message became unreadable); here the stored text is
// sent, as the delivery worker has no gateway to read messages with.

import { userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";
import { pathInt } from "./messages.ts";
import { silentMention } from "./notification-bot.ts";
import {
  MAX_MESSAGE_LENGTH,
  mentionList,
  messageLinkSyntax,
  messageUrl,
  readableMessage,
  truncateContent,
  unusedFence,
  type RawMessage,
} from "./reports.ts";

/** settings.MAX_REMINDER_NOTE_LENGTH (register `max_reminder_note_length`). */
export const MAX_REMINDER_NOTE_LENGTH = 1000;

/** Zulip's normalize_note_text. */
function normalizeNote(note: string): string {
  const body = note.trimEnd().replace(/^\n+/, "");
  if ([...body].length > MAX_REMINDER_NOTE_LENGTH) throw errors.reminderNoteTooLong(MAX_REMINDER_NOTE_LENGTH);
  return body;
}

/** Zulip's get_reminder_formatted_content (its English wording). */
export async function reminderContent(
  req: RouteRequest,
  m: RawMessage,
  rawNote: string | null,
): Promise<string> {
  const note = rawNote ? normalizeNote(rawNote) : "";
  const mention = silentMention(m.sender_full_name, m.sender_id);
  const url = await messageUrl(req, m);
  const what = m.type === "stream" ? "message" : "direct message";
  let content = note
    ? `You requested a reminder for the following ${what}. Note:\n > ${note}`
    : `You requested a reminder for the following ${what}.`;
  content += "\n\n";
  let where: string;
  if (m.type === "stream") where = `in ${messageLinkSyntax(m)}`;
  else {
    const people = m.display_recipient as { id: number; full_name: string }[];
    let others = people.filter((u) => u.id !== m.sender_id);
    if (!others.length) others = [{ id: m.sender_id, full_name: m.sender_full_name }];
    where = `to ${mentionList(others)}`;
  }
  const widget = m.content.startsWith("/poll") ? "poll" : m.content.startsWith("/todo") ? "todo list" : null;
  if (widget) return content + `${mention} [sent](${url}) a ${widget} ${where}.`;
  content += `${mention} [said](${url}) ${where}:\n`;
  // As Zulip: the fence is chosen against the text so far.
  const fence = unusedFence(content);
  const room = MAX_MESSAGE_LENGTH - (content.length + `${fence}quote\n\n${fence}`.length);
  const quoted = truncateContent(m.content, room, "\n[message truncated]");
  return content + `${fence}quote\n${quoted}\n${fence}`;
}

function own(req: RouteRequest) {
  return userRef(req.caller!.realmId, req.caller!.userId);
}

const listReminders = defineRoute({
  method: "GET",
  path: "/reminders",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(own(req), "reminders", {});
  },
});

const createReminder = defineRoute({
  method: "POST",
  path: "/reminders",
  auth: "required",
  params: {
    message_id: param(p.int(), { required: true }),
    scheduled_delivery_timestamp: param(p.int(), { required: true }),
    note: param(p.string()),
  },
  async handler(req) {
    const at = req.params.scheduled_delivery_timestamp;
    // Zulip's order: the time, then the message, then the note.
    if (at * 1000 <= Date.now()) throw errors.deliveryTimeNotInFuture();
    const id = req.params.message_id;
    const m = await readableMessage(req, id);
    const content = await reminderContent(req, m, req.params.note ?? null);
    return await req.call(own(req), "createReminder", { message_id: id, deliver_at: at, content });
  },
});

const deleteReminder = defineRoute({
  method: "DELETE",
  path: "/reminders/:reminder_id",
  auth: "required",
  params: {},
  async handler(req) {
    const id = pathInt(req, "reminder_id");
    return await req.call(own(req), "deleteReminder", { id });
  },
});

export const reminderRoutes: RouteDef[] = [listReminders, createReminder, deleteReminder];
