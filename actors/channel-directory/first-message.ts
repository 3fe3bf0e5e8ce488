// A channel's first_message_id (FL 256): the id of its oldest message,
// kept by the directory (Channel.firstMessageId) and told to it by the
// channel's conversation, which alone knows its messages.
//
// Cost: a send asks the directory only when the conversation had no
// message (Zulip sets the field at the first send, without an event); a
// removal or a move asks it only when the conversation's oldest message
// goes or a moved-in message is older than the oldest. Then the directory
// journals the new value and sends Zulip's `stream` `update` event
// (property "first_message_id") to those who may see the channel, as
// Zulip's check_update_first_message_id does after a deletion. The
// conversation's side is actors/channel/first-message.ts.

import { errors } from "../errors.ts";
import type { Obj } from "../types.ts";
import { Turn, metadataAudience } from "./access.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";

function internalOnly(origin: string | undefined): void {
  if (origin === "external") throw errors.accessDenied();
}

/**
 * Directory, internal: {stream_id, message_id, event}. `event` false (a
 * send): sets the field only while it is null, silently. `event` true (a
 * deletion or move): sets it to `message_id` (null: no message left) and
 * tells the channel's audience when it changed.
 */
const setFirstMessageId: DirHandler<"setFirstMessageId"> = async (state, args, ctx) => {
  internalOnly(ctx.origin);
  const ch = state.channels[String(args.stream_id)];
  if (!ch) return { reply: {} };
  const value = args.message_id;
  if (!args.event) {
    if (ch.firstMessageId !== null || value === null) return { reply: {} };
    return {
      facts: [{ type: "channelChanged", channelId: ch.id, changes: { firstMessageId: value } }],
      reply: {},
    };
  }
  if (ch.firstMessageId === value) return { reply: {} };
  const t = await Turn.load(ctx, state.realmId, state);
  const event: Obj = {
    type: "stream",
    op: "update",
    stream_id: ch.id,
    name: ch.name,
    property: "first_message_id",
    value,
  };
  return {
    facts: [{ type: "channelChanged", channelId: ch.id, changes: { firstMessageId: value } }],
    events: [{ event, userIds: metadataAudience(t, state, ch) }],
    reply: {},
  };
};

export const firstMessageDirectoryHandlers: DirHandlers<"setFirstMessageId"> = { setFirstMessageId };
