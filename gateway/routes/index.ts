// Every route the gateway serves, by API area.

import type { RouteDef } from "../index.ts";
import { botRoutes } from "./bots.ts";
import { channelRoutes } from "./channels.ts";
import { draftRoutes } from "./drafts.ts";
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
import { markReadRoutes } from "./mark-read.ts";
import { userGroupRoutes } from "./user-groups.ts";
import { typingRoutes } from "./typing.ts";
import { userRoutes } from "./users.ts";
import { messageExtraRoutes } from "./message-extras.ts";
import { userPrefRoutes } from "./user-prefs.ts";
import { realmExtraRoutes } from "./realm-extras.ts";
import { channelExtraRoutes } from "./channel-extras.ts";
import { inviteRoutes } from "./invites.ts";
import { signupRoutes } from "../signup-page.ts";
import { scheduledMessageRoutes } from "./scheduled-messages.ts";
import { uploadRoutes } from "./uploads.ts";
import { tusRoutes } from "./tus.ts";
import { exportRoutes } from "./export.ts";
import { pushTestRoutes } from "./push-test.ts";
import { botApiKeyRoutes } from "./bot-api-key.ts";
import { reportRoutes } from "./reports.ts";
import { reminderRoutes } from "./reminders.ts";
import { navigationViewRoutes } from "./navigation-views.ts";
import { channelFolderRoutes } from "./channel-folders.ts";
import { userStatusRoutes } from "./user-status.ts";
import { userChannelRoutes } from "./user-channels.ts";
import { thumbnailStatusRoutes } from "./thumbnail-status.ts";
import { avatarRoutes } from "./avatars.ts";
import { welcomeBotRoutes } from "./welcome-bot.ts";

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
  ...markReadRoutes,
  ...messageExtraRoutes,
  ...typingRoutes,
  ...draftRoutes,
  ...userPrefRoutes,
  ...realmExtraRoutes,
  ...channelExtraRoutes,
  ...inviteRoutes,
  ...signupRoutes,
  ...scheduledMessageRoutes,
  ...uploadRoutes,
  ...exportRoutes,
  ...pushTestRoutes,
  ...botApiKeyRoutes,
  ...reportRoutes,
  ...reminderRoutes,
  ...navigationViewRoutes,
  ...channelFolderRoutes,
  ...userStatusRoutes,
  ...userChannelRoutes,
  ...tusRoutes,
  ...thumbnailStatusRoutes,
  ...avatarRoutes,
  ...welcomeBotRoutes,
];
