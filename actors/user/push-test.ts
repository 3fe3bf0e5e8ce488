// The legacy push tokens a test notification goes to (Zulip's
// send_test_push_notification_api): the one named by `token`, or every
// token of the user. The relay call itself is the gateway's
// (gateway/routes/push-test.ts): actors never touch the network.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "testPushTokens">;

const testPushTokens: Handlers["testPushTokens"] = (state, args, _ctx, caller) => {
  if (!state.created) throw errors.noSuchUser();
  if (!caller || caller.userId !== state.userId || caller.realmId !== state.realmId)
    throw errors.accessDenied();
  if (state.isBot) throw errors.botsNotAllowed();
  const token = args.token ?? null;
  const tokens = token === null ? state.pushTokens : state.pushTokens.filter((t) => t.token === token);
  if (token !== null && tokens.length === 0) throw errors.invalidPushDeviceToken();
  return { reply: { tokens: tokens.map((t) => ({ kind: t.kind, token: t.token, app_id: t.appId })) } };
};

export const pushTestHandlers: Handlers = { testPushTokens };
