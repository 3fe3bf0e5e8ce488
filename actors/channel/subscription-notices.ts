// Notification Bot's direct message to a user someone else subscribed to
// channels (Zulip's send_messages_for_new_subscribers, FL 397 for the
// request's opt-out). The gateway asks for it after POST
// /users/me/subscriptions succeeded, one call per recipient, on the DM
// conversation {recipient, Notification Bot}: the channel directory never
// calls conversations during its turn.
//
// The gateway's calls are external, and the bot writes to users only for
// internal callers (conversation-handlers.ts `send`), so this method builds
// the text itself from what it checks: the caller is someone else than the
// recipient, the recipient is an active human, and the recipient is
// subscribed to every channel named. A caller can thus only tell a user
// about channels that user is really in, under the caller's own name.

import { errors } from "../errors.ts";
import { NOTIFICATION_BOT_ID } from "../realm/index.ts";
import type { ActorContext } from "../types.ts";
import { send } from "./conversation-handlers.ts";
import { channelDirectoryRef, isDmKey } from "../addresses.ts";
import { roster } from "../channel-directory/index.ts";
import type { ConvHandler, ConvHandlers } from "./protocol.ts";

/** Zulip's silent_mention_syntax_for_user. */
function silentMention(fullName: string, userId: number): string {
  return `@_**${fullName}|${userId}**`;
}

/** The notice's text: one channel inline, several as a list (sorted by name, as Zulip does). */
export function subscribedNoticeText(actor: string, names: string[]): string {
  const sorted = [...names].sort();
  if (sorted.length === 1) return `${actor} subscribed you to the channel #**${sorted[0]}**.`;
  return `${actor} subscribed you to these channels:\n\n${sorted.map((n) => `* #**${n}**\n`).join("")}`;
}

/** At most this many channels per notice: a request names no more than the realm has. */
const MAX_CHANNELS = 10_000;

const subscriptionNotice: ConvHandler<"subscriptionNotice"> = async (state, args, ctx, caller) => {
  if (!caller || !isDmKey(state.key)) throw errors.accessDenied();
  const ids = state.key.slice(3).split(",").map(Number);
  const recipient = ids.find((id) => id !== NOTIFICATION_BOT_ID);
  if (ids.length !== 2 || !ids.includes(NOTIFICATION_BOT_ID) || recipient === undefined) {
    throw errors.accessDenied();
  }
  if (recipient === caller.userId) throw errors.accessDenied();
  const raw = args.stream_ids;
  if (raw.length === 0 || raw.length > MAX_CHANNELS) throw errors.accessDenied();
  const streamIds = [...new Set(raw)];
  const users = await roster(ctx, state.realmId);
  const who = users.get(recipient);
  const actor = users.get(caller.userId);
  if (!who || !who.isActive || who.isBot || !actor) throw errors.accessDenied();
  const names: string[] = [];
  for (const id of streamIds) {
    const ch = await ctx
      .call(channelDirectoryRef(state.realmId), "sendContext", { stream_id: id })
      .catch(() => null);
    if (!ch || ch.is_archived || !ch.subscribers.includes(recipient)) throw errors.accessDenied();
    names.push(ch.name);
  }
  // The bot's own send (internal: this method did the checks a caller's send cannot).
  const internal = Object.create(ctx, { origin: { value: "internal" } }) as ActorContext;
  const notice = {
    content: subscribedNoticeText(silentMention(actor.fullName, actor.userId), names),
    client: "Internal",
    notification_bot: true,
    read_by_sender: false,
  };
  return send(state, notice, internal, caller);
};

export const subscriptionNoticeConversationHandlers: ConvHandlers<"subscriptionNotice"> = {
  subscriptionNotice,
};
