// GET /bots/{bot_id}/api_key (Zulip 12, feature level 463): the bot's
// current API key, for those who may administer the bot (its owner and
// organization administrators), without regenerating it.

import type { Handler } from "../types.ts";
import { accessBot, memberOrAdmin } from "./bot-handlers.ts";
import { requireCreated } from "./member-handlers.ts";
import type { RealmState } from "./state.ts";

const getBotKey: Handler<RealmState> = (state, args, _ctx, caller) => {
  requireCreated(state);
  const me = memberOrAdmin(state, caller);
  const botId = typeof args.botId === "number" ? args.botId : 0;
  const bot = accessBot(state, me, botId);
  return { reply: { api_key: bot.apiKey } };
};

export const botApiKeyHandlers: Record<string, Handler<RealmState>> = { getBotKey };
