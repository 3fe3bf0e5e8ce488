// The realm kind: one actor per organization (key "realm"). The
// deployment's host -> realm id map is the realm directory's own kind
// (actors/realm-directory/).

import { errors } from "../errors.ts";
import { defineBehavior, handlersOf, type MethodOf } from "../protocol.ts";
import type { ActorContext, Caller } from "../types.ts";
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
import { realmProtocol, type RealmProtocol } from "./protocol.ts";
import { applyRealmFact, realmFromSnapshot, realmToSnapshot } from "./fold.ts";
import { initialRealm, type RealmState } from "./state.ts";

const table = handlersOf<RealmState, RealmProtocol>()({
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
});

/**
 * A read of a spectator's /register. The gateway asks it without a caller
 * only once publicInfo said the realm allows spectators; a request from
 * outside that skips that step is refused as the gateway would refuse it.
 */
function spectatorRead<A, R>(h: (state: RealmState, args: A, ctx: ActorContext, caller: Caller | null) => R) {
  return (state: RealmState, args: A, ctx: ActorContext, caller: Caller | null): R => {
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
 * What a gateway may call is marked in the protocol (`external`). Without a
 * caller: resolving credentials (authVerify compares a presented key, login
 * starts POST /fetch_api_key), the sign-up page, and the reads of
 * /server_settings and spectators' /register and /users. Never: creating
 * realms or users without a caller, API keys by email, rate-limit
 * bookkeeping, the leaf reads of other actors.
 */
export const realmBehavior = defineBehavior<RealmState, RealmProtocol>({
  kind: "realm",
  // The realm directory keeps this kind's `realm.0.directory` (its storedAs): each owns its key.
  ownsKey: (key) => key === "realm",
  protocol: realmProtocol,
  initial: initialRealm,
  apply: applyRealmFact,
  toSnapshot: realmToSnapshot,
  fromSnapshot: realmFromSnapshot,
  handlers: {
    ...table,
    registerRealmState: spectatorRead(table.registerRealmState),
    crossRealmBots: spectatorRead(table.crossRealmBots),
    profileFieldsState: spectatorRead(table.profileFieldsState),
    listLinkifiers: spectatorRead(table.listLinkifiers),
    listPlaygrounds: spectatorRead(table.listPlaygrounds),
  },
  // A history read shows its senders' current emails, names and avatars:
  // answered from the last durable state (a rename acknowledged before the
  // read began is in it), beside the realm's turns (every send's roster,
  // sign-ins, presence), never waiting for them. Members' entries are
  // copied by applyRealmFact (entryDefaults), never shared with a fact.
  readers: ["apiEmails"] satisfies MethodOf<RealmProtocol>[],
  // Every send's roster (the changes since the caller's copy, the sender's
  // mutes and alert words) is a function of the realm's journaled state: a
  // node that does not serve the realm reuses its last answer while the
  // realm's journal has not moved, instead of a round trip and a turn per send.
  durableReads: ["roster"] satisfies MethodOf<RealmProtocol>[],
  // Taken by the first read rather than at every activation (the
  // management CLI's, a start's), since a realm's state is large.
  servesReaders: () => false,
});
