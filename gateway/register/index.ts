// Every area that contributes to POST /register's initial state. Add one
// line per area module.
import { botsArea } from "./bots.ts";
import { channelsArea } from "./channels.ts";
import { emojiArea } from "./emoji.ts";
import { devicesArea } from "./devices.ts";
import { draftsArea } from "./drafts.ts";
import { profileFieldsArea } from "./profile-fields.ts";
import { realmArea } from "./realm.ts";
import { savedSnippetsArea } from "./saved-snippets.ts";
import type { RegisterArea } from "./types.ts";
import { linkifiersArea } from "./linkifiers.ts";
import { messagesArea } from "./messages.ts";
import { userGroupsArea } from "./user-groups.ts";
import { userSettingsArea } from "./user-settings.ts";
import { userStatusArea } from "./user-status.ts";
import { usersArea } from "./users.ts";
import { presenceArea } from "./presence.ts";
import { userMessageAreas } from "./user-messages.ts";
import { legacySettingsAreas } from "./legacy-settings.ts";
import { serverStateAreas } from "./server-state.ts";
import { alertWordsArea, mutedUsersArea } from "./user-prefs.ts";
import { playgroundsArea, userSettingsDefaultsArea } from "./realm-extras.ts";
import { scheduledMessagesArea } from "./scheduled-messages.ts";
import { remindersArea } from "./reminders.ts";
import { navigationViewsArea } from "./navigation-views.ts";
import { channelFoldersArea } from "./channel-folders.ts";

export const registerAreas: RegisterArea[] = [
  channelsArea,
  messagesArea,
  userGroupsArea,
  linkifiersArea,
  realmArea,
  userSettingsArea,
  usersArea,
  userStatusArea,
  botsArea,
  profileFieldsArea,
  savedSnippetsArea,
  emojiArea,
  devicesArea,
  presenceArea,
  ...userMessageAreas,
  ...legacySettingsAreas,
  ...serverStateAreas,
  draftsArea,
  alertWordsArea,
  mutedUsersArea,
  userSettingsDefaultsArea,
  playgroundsArea,
  scheduledMessagesArea,
  remindersArea,
  navigationViewsArea,
  channelFoldersArea,
];
