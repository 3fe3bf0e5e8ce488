// Whether a new message's push notification is due for this user (Zulip's
// UserMessageNotificationsData in zerver/lib/notification_data.py), asked by
// the push worker (cluster/push-worker.ts) for each candidate the send named
// (actors/channel/push-candidates.ts). Internal: the worker calls with no
// caller. Replies the user's legacy tokens and active E2EE devices, or
// `due: false`. The worker then checks whether the user is on a client
// right now (queues and presence) unless `online_push` says it needs not.

import { SETTINGS } from "./settings.ts";
import { keyOf, topicsOf } from "./topics.ts";
import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { Value } from "../types.ts";
import { pushDeviceOut } from "./devices.ts";
import type { PushDeviceOut, UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "pushTarget">;

const MUTED_TOPIC = 1;

function setting(state: UserState, name: string): Value {
  return name in state.settings ? state.settings[name]! : (SETTINGS[name]?.default ?? null);
}

const pushTarget: Handlers["pushTarget"] = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const none = { reply: { due: false as const } };
  if (!state.created || !state.isActive || state.isBot) return none;
  const { trigger, senderId } = args;
  // A muted sender's messages never notify (the send already leaves them out; muting may be newer).
  if (state.mutedUsers.some((m) => m.id === senderId)) return none;
  const topicMuted = () =>
    topicsOf(state)[keyOf(Number(args.streamId), args.topic ?? "")]?.visibility_policy === MUTED_TOPIC;
  if (trigger === "stream_push_notify") {
    // The channel's own push setting (the send named only subscribers who turned it on).
    if (topicMuted()) return none;
  } else if (setting(state, "enable_offline_push_notifications") !== true) {
    // Zulip's pm_mention_push_disabled_user_ids: this one setting governs DMs and all mentions.
    return none;
  } else if (trigger === "stream_wildcard_mentioned" || trigger === "topic_wildcard_mentioned") {
    if (setting(state, "wildcard_mentions_notify") !== true || topicMuted()) return none;
  } else if (trigger !== "direct_message" && trigger !== "mentioned") {
    return none;
  }
  const devices: PushDeviceOut[] = [];
  for (const d of state.devices) {
    const out = pushDeviceOut(d);
    if (out) devices.push(out);
  }
  if (!state.pushTokens.length && !devices.length) return none;
  const reply = {
    due: true as const,
    online_push: setting(state, "enable_online_push_notifications") === true,
    tokens: state.pushTokens.map((t) => ({ kind: t.kind, token: t.token, app_id: t.appId })),
    devices,
  };
  return { reply };
};

export const pushNotifyHandlers: Handlers = { pushTarget };
