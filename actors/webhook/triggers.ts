// Which outgoing-webhook bots a new message triggers (Zulip's
// get_service_bot_events in zerver/actions/message_send.py), computed in the
// sending conversation's turn and handed on as the durable hand-off
// "webhook.trigger" (Decision.handoffs): journaled in the same append as the
// message, given to the worker of the node that ran the turn once durable,
// and given again at the conversation's next activation until the worker has
// queued it in every bot's webhook actor (webhook/worker.ts).

import type { Obj } from "../types.ts";

/** Zulip's UserProfile.OUTGOING_WEBHOOK_BOT. */
export const OUTGOING_WEBHOOK_BOT = 3;
export const TRIGGER_NOTICE = "webhook.trigger";

/** What the trigger rule needs to know about a user (a roster entry). */
export interface TriggerUser {
  isBot: boolean;
  isActive: boolean;
  botType?: number | null;
}

/**
 * The message as outgoing webhooks receive it: Zulip's
 * MessageDict.finalize_payload with apply_markdown=False,
 * client_gravatar=False, keep_rendered_content=True and
 * allow_empty_topic_name=True: Markdown `content`, the HTML kept as
 * `rendered_content`, the avatar URL filled in, "" kept as the empty topic.
 */
export function webhookMessage(formatted: Obj): Obj {
  const out: Obj = { ...formatted };
  delete out.sender_avatar_source;
  delete out.flags;
  out.content_type = "text/x-markdown";
  return out;
}

/**
 * The hand-offs a sent message yields: one "webhook.trigger" listing the
 * triggered bots, or none. A channel message triggers the outgoing-webhook
 * bots it mentions (silent and wildcard mentions do not count); a direct
 * message triggers those among its recipients ("direct_message"). Messages
 * sent by bots never trigger (Zulip's guard against bot loops).
 *
 * `message` is the formatted message of the message event; `mentioned`
 * the ids rendering found in non-silent user mentions.
 */
export function outgoingWebhookHandoffs(
  realmId: number,
  message: Obj,
  users: { get(userId: number): TriggerUser | undefined },
  mentioned: Iterable<number>,
): { subject: string; data: Obj }[] {
  const sender = users.get(Number(message.sender_id));
  if (!sender || sender.isBot) return [];
  const dm = message.type === "private";
  const candidates = dm
    ? ((message.display_recipient ?? []) as Obj[]).map((r) => Number(r.id))
    : [...mentioned];
  const bots: Obj[] = [];
  for (const id of new Set(candidates)) {
    const u = users.get(id);
    if (!u || !u.isActive || !u.isBot || u.botType !== OUTGOING_WEBHOOK_BOT) continue;
    bots.push({ botId: id, trigger: dm ? "direct_message" : "mention" });
  }
  if (!bots.length) return [];
  return [{ subject: TRIGGER_NOTICE, data: { realmId, bots, message: webhookMessage(message) } }];
}
