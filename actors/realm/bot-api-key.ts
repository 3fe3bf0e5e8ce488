// GET /bots/{bot_id}/api_key (Zulip 12, feature level 463): the bot's
// current API key, for those who may administer the bot (its owner and
// organization administrators), without regenerating it.

import { accessBot, memberOrAdmin } from "./bot-handlers.ts";
import { requireCreated } from "./member-helpers.ts";
import type { RealmHandler } from "./handler.ts";

const getBotKey: RealmHandler<"getBotKey"> = (state, args, _ctx, caller) => {
  requireCreated(state);
  const me = memberOrAdmin(state, caller);
  const bot = accessBot(state, me, args.botId);
  return { reply: { api_key: bot.apiKey } };
};

export const botApiKeyHandlers = { getBotKey };
