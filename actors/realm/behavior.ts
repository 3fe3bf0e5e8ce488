// The realm kind: one behaviour serving two roles chosen by ref.key, the
// global directory ("directory", realm 0) and each organization ("realm").

import { errors } from "../errors.ts";
import type { Behavior, Exposure, Handler } from "../types.ts";
import { directoryHandlers } from "./directory-handlers.ts";
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
  applyRealmKindFact,
  initialRealmKind,
  realmKindFromSnapshot,
  realmKindToSnapshot,
  type DirectoryState,
  type RealmKindState,
  type RealmState,
} from "./state.ts";

function forRole<S extends RealmKindState>(role: S["role"], handler: Handler<S>): Handler<RealmKindState> {
  return (state, args, ctx, caller) => {
    // A method of the other role is a caller bug (wrong ref.key).
    if (state.role !== role) throw errors.internal();
    return handler(state as S, args, ctx, caller);
  };
}

const handlers: Record<string, Handler<RealmKindState>> = {};
for (const [name, h] of Object.entries(directoryHandlers))
  handlers[name] = forRole<DirectoryState>("directory", h);
for (const [name, h] of Object.entries(realmHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(rosterHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(realmRegisterHandlers))
  handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(realmSettingsHandlers))
  handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(linkifierHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(webhookRealmHandlers))
  handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(deactivationPlanHandlers))
  handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(typingRealmHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(sendPrefsHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(playgroundHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(exportHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(userDefaultsHandlers))
  handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(inviteHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(botApiKeyHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(scheduledIndexHandlers))
  handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(exportConsentAudienceHandlers))
  handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(messageLimitHandlers))
  handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(adminStatusRealmHandlers))
  handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(deletedUserHandlers)) handlers[name] = forRole<RealmState>("realm", h);
for (const [name, h] of Object.entries(pushPresenceHandlers))
  handlers[name] = forRole<RealmState>("realm", h);

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
      state.role === "realm" &&
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
  resolveHost: "anonymous",
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

export const realmBehavior: Behavior<RealmKindState> = {
  kind: "realm",
  initial: initialRealmKind,
  apply: applyRealmKindFact,
  toSnapshot: realmKindToSnapshot,
  fromSnapshot: realmKindFromSnapshot,
  handlers,
  external,
};
