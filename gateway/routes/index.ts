// Every route the gateway serves, by API area.

import type { RouteDef } from "../index.ts";
import { botRoutes } from "./bots.ts";
import { channelRoutes } from "./channels.ts";
import { emojiRoutes } from "./emoji.ts";
import { eventRoutes } from "./events.ts";
import { memberRoutes } from "./members.ts";
import { messageRoutes } from "./messages.ts";
import { profileFieldRoutes } from "./profile-fields.ts";
import { pushRoutes } from "./push.ts";
import { savedSnippetRoutes } from "./saved-snippets.ts";
import { serverRoutes } from "./server.ts";
import { settingsRoutes } from "./settings.ts";
import { linkifierRoutes } from "./linkifiers.ts";
import { userGroupRoutes } from "./user-groups.ts";
import { userRoutes } from "./users.ts";
import { userPrefRoutes } from "./user-prefs.ts";

export const routes: RouteDef[] = [
  ...serverRoutes,
  ...eventRoutes,
  ...userRoutes,
  ...settingsRoutes,
  ...memberRoutes,
  ...channelRoutes,
  ...messageRoutes,
  ...userGroupRoutes,
  ...linkifierRoutes,
  ...botRoutes,
  ...profileFieldRoutes,
  ...savedSnippetRoutes,
  ...pushRoutes,
  ...emojiRoutes,
  ...userPrefRoutes,
];
