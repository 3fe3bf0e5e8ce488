// POST /typing on the typing user's own actor (Zulip's zerver/views/typing.py
// send_notification_backend): the user's send_*_typing_notifications settings
// live here; the audience comes from leaf reads of the realm (activation and
// receives_typing_notifications of the named users) and, for a channel, of
// the channel directory (access, can_send_message_group, subscribers).
//
// A typing notification is never journaled: the decision carries events and
// no facts. Zulip's server keeps no typing state and sends no stop after
// silence; clients expire a start after
// server_typing_started_expiry_period_milliseconds (POST /register).

import { channelDirectoryRef, realmRef } from "../addresses.ts";
import { errors } from "../errors.ts";
import { isUserInGroupSetting } from "../permissions/index.ts";
import type { DecisionOf, SomeHandlersOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj } from "../types.ts";
import { settingValue } from "./format.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "typing" | "typingSettings">;

/** Zulip's role:everyone system group: no membership check needed. */
const EVERYONE_GROUP = 7;
/** Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME. */
const EMPTY_TOPIC_NAME = "general chat";

interface Audience {
  sender: Obj;
  notify: number[];
  recipients?: Obj[];
}

async function audience(
  ctx: ActorContext,
  state: UserState,
  userIds: number[],
  opts: { validate?: boolean; channel?: boolean },
): Promise<Audience> {
  return await ctx.call(realmRef(state.realmId), "typingAudience", {
    senderId: state.userId,
    userIds,
    validate: opts.validate === true,
    channel: opts.channel === true,
  });
}

function self(state: UserState, caller: Caller | null): Caller {
  if (!state.created || !caller || caller.userId !== state.userId || caller.realmId !== state.realmId)
    throw errors.accessDenied();
  return caller;
}

function decide(event: Obj, notify: number[]): DecisionOf<Record<string, never>> {
  return notify.length ? { events: [{ event, userIds: notify }], reply: {} } : { reply: {} };
}

/**
 * args (as the gateway parsed them, checks left to here in Zulip's order):
 * `op` "start"|"stop", `type` "direct"|"stream", `to` (ids or null),
 * `stream_id` (or null), `topic` (or null).
 */
const typing: Handlers["typing"] = async (state, args, ctx, caller) => {
  const me = self(state, caller);
  const op = args.op;
  if (args.type === "stream") {
    if (typeof args.stream_id !== "number") throw errors.typingMissingStreamId();
    if (typeof args.topic !== "string") throw errors.missingTopic();
    if (settingValue(state, "send_stream_typing_notifications") !== true)
      throw errors.typingDisabledChannel();
    const ch = await ctx.call(channelDirectoryRef(state.realmId), "typingChannel", {
      stream_id: args.stream_id,
      userId: me.userId,
      role: me.role,
    });
    if (!ch.ok) throw errors.invalidChannelId();
    if (ch.canSend !== EVERYONE_GROUP) {
      let allowed = await isUserInGroupSetting(ctx, state.realmId, ch.canSend!, me.userId);
      // A bot may post wherever its owner may.
      if (!allowed && state.isBot && state.botOwnerId !== null)
        allowed = await isUserInGroupSetting(ctx, state.realmId, ch.canSend!, state.botOwnerId);
      if (!allowed) throw errors.noPostPermission();
    }
    let topic = args.topic.trim();
    if (topic === EMPTY_TOPIC_NAME || topic === "(no topic)") topic = "";
    // null: past Zulip's size limit for channel typing notifications.
    const subscribers = ch.subscribers ?? [];
    if (!subscribers.length) return { reply: {} };
    const a = await audience(ctx, state, subscribers, { channel: true });
    const event: Obj = {
      type: "typing",
      message_type: "stream",
      op,
      sender: a.sender,
      stream_id: args.stream_id,
      topic,
    };
    return decide(event, a.notify);
  }
  if (!args.to) throw errors.typingMissingTo();
  if (args.to.length === 0) throw errors.typingEmptyTo();
  if (settingValue(state, "send_private_typing_notifications") !== true) throw errors.typingDisabledDirect();
  // The typing user is one of the conversation's users (Zulip appends them).
  const ids = [...new Set([...args.to, me.userId])];
  const a = await audience(ctx, state, ids, { validate: true });
  const event: Obj = {
    type: "typing",
    message_type: "direct",
    op,
    sender: a.sender,
    recipients: a.recipients ?? [],
  };
  return decide(event, a.notify);
};

/** Leaf read for POST /messages/{id}/typing (the message's conversation asks). */
const typingSettings: Handlers["typingSettings"] = (state, _args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  return {
    reply: {
      direct: settingValue(state, "send_private_typing_notifications") === true,
      stream: settingValue(state, "send_stream_typing_notifications") === true,
    },
  };
};

/**
 * The realm mirrors receives_typing_notifications (its typingAudience
 * filters on it): tell it when a settings decision changes it.
 */
export async function mirrorReceivesTyping(ctx: ActorContext, state: UserState, facts: Obj[]): Promise<void> {
  for (const f of facts) {
    const values = f.type === "settings" ? (f.values as Obj | undefined) : undefined;
    const v = values?.receives_typing_notifications;
    if (typeof v === "boolean")
      await ctx.call(realmRef(state.realmId), "syncMember", { userId: state.userId, receivesTyping: v });
  }
}

export const typingHandlers: Handlers = { typing, typingSettings };
