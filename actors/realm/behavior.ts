// The realm kind: one actor per organization (key "realm"). The
// deployment's host -> realm id map is the realm directory's own kind
// (actors/realm-directory/).

import { errors } from "../errors.ts";
import type { Behavior, Exposure, Handler } from "../types.ts";
import { realmHandlers } from "./realm-handlers.ts";
import { realmSetting } from "./defaults.ts";
import { realmRegisterHandlers } from "./register-handlers.ts";
import { rosterHandlers } from "./roster-handlers.ts";
import { realmSettingsHandlers } from "./settings-handlers.ts";
import { linkifierHandlers } from "./linkifier-handlers.ts";
import { webhookRealmHandlers } from "./webhook-handlers.ts";
import { deactivationPlanHandlers } from "./deactivation-plan.ts";
import { typingRealmHandlers } from "./typing.ts";
import { sendPrefsHandlers } from "./send-prefs.ts";
import { playgroundHandlers } from "./playgrounds.ts";
import { exportHandlers } from "./export.ts";
import { userDefaultsHandlers } from "./user-defaults.ts";
import { inviteHandlers } from "./invites.ts";
import { scheduledIndexHandlers } from "./scheduled-index.ts";
import { botApiKeyHandlers } from "./bot-api-key.ts";
import { exportConsentAudienceHandlers } from "./export-consent-audience.ts";
import { messageLimitHandlers } from "./message-limits.ts";
import { adminStatusRealmHandlers } from "./admin-status.ts";
import { deletedUserHandlers } from "./deleted-users.ts";
import { pushPresenceHandlers } from "./push-presence.ts";
import {
  applyRealmFact,
  initialRealm,
  realmFromSnapshot,
  realmToSnapshot,
  type RealmState,
} from "./state.ts";

const handlers: Record<string, Handler<RealmState>> = {
  ...realmHandlers,
  ...rosterHandlers,
  ...realmRegisterHandlers,
  ...realmSettingsHandlers,
  ...linkifierHandlers,
  ...webhookRealmHandlers,
  ...deactivationPlanHandlers,
  ...typingRealmHandlers,
  ...sendPrefsHandlers,
  ...playgroundHandlers,
  ...exportHandlers,
  ...userDefaultsHandlers,
  ...inviteHandlers,
  ...botApiKeyHandlers,
  ...scheduledIndexHandlers,
  ...exportConsentAudienceHandlers,
  ...messageLimitHandlers,
  ...adminStatusRealmHandlers,
  ...deletedUserHandlers,
  ...pushPresenceHandlers,
};

/**
 * Reads of a spectator's /register. The gateway asks them without a caller
 * only once publicInfo said the realm allows spectators; a request from
 * outside that skips that step is refused as the gateway would refuse it.
 */
const SPECTATOR_READS = [
  "registerRealmState",
  "crossRealmBots",
  "profileFieldsState",
  "listLinkifiers",
  "listPlaygrounds",
];
for (const name of SPECTATOR_READS) {
  const h = handlers[name]!;
  handlers[name] = (state, args, ctx, caller) => {
    if (
      caller === null &&
      ctx.origin === "external" &&
      realmSetting(state, "enable_spectator_access") !== true
    )
      throw errors.notLoggedIn();
    return h(state, args, ctx, caller);
  };
}

/**
 * What a gateway may call. Without a caller: resolving a Host, the
 * credential checks (authVerify compares a presented key, login starts
 * POST /fetch_api_key) and the reads of /server_settings and spectators'
 * /register and /users. Never: creating realms or users without a caller,
 * API keys by email, rate-limit bookkeeping, the leaf reads of user actors.
 */
const external: Record<string, Exposure> = {
  authVerify: "anonymous",
  login: "anonymous",
  publicInfo: "anonymous",
  getMembers: "anonymous",
  getMember: "anonymous",
  registerRealmState: "anonymous",
  crossRealmBots: "anonymous",
  profileFieldsState: "anonymous",
  listLinkifiers: "anonymous",
  createUser: "caller",
  updateMember: "caller",
  deactivateMember: "caller",
  deactivateSelf: "caller",
  reactivateMember: "caller",
  createBot: "caller",
  getBots: "caller",
  administeredBots: "caller",
  updateBot: "caller",
  regenerateBotKey: "caller",
  getBotKey: "caller",
  regenerateOwnKey: "caller",
  deactivateBot: "caller",
  getProfileFields: "caller",
  createProfileField: "caller",
  updateProfileField: "caller",
  deleteProfileField: "caller",
  reorderProfileFields: "caller",
  updateOwnProfileData: "caller",
  removeOwnProfileData: "caller",
  updatePresence: "caller",
  realmPresence: "caller",
  presenceState: "caller",
  userPresence: "caller",
  resolveEmails: "caller",
  updateRealmGroupSettings: "caller",
  updateRealmProperties: "caller",
  updateAnnouncementStreams: "caller",
  notificationContext: "caller",
  addLinkifier: "caller",
  updateLinkifier: "caller",
  removeLinkifier: "caller",
  reorderLinkifiers: "caller",
  planDeactivation: "caller",
  statusTarget: "caller",
  addPlayground: "caller",
  removePlayground: "caller",
  listPlaygrounds: "anonymous",
  updateUserSettingsDefaults: "caller",
  userSettingsDefaults: "caller",
  checkInvite: "caller",
  createInvites: "caller",
  createMultiuseInvite: "caller",
  listInvites: "caller",
  revokeInvite: "caller",
  revokeMultiuseInvite: "caller",
  resendInvite: "caller",
  // The sign-up page: a visitor holding the link's key.
  inviteInfo: "anonymous",
  acceptInvite: "anonymous",
  listExports: "caller",
  requestExport: "caller",
  exportDownload: "caller",
  exportConsentUsers: "caller",
  updateMessageLimits: "caller",
  adminStatusTarget: "caller",
  markProfileDeleted: "caller",
};

export const realmBehavior: Behavior<RealmState> = {
  kind: "realm",
  // The realm directory keeps this kind's `realm.0.directory` (its storedAs): each owns its key.
  ownsKey: (key) => key === "realm",
  initial: initialRealm,
  apply: applyRealmFact,
  toSnapshot: realmToSnapshot,
  fromSnapshot: realmFromSnapshot,
  handlers,
  external,
};
