// What Welcome Bot (system-bot.ts) writes to a new user (Zulip's
// zerver/lib/onboarding.py send_initial_direct_message, in our own words):
// a greeting that explains channels, topics and direct messages and points
// to the help center, then, when the organization (or the invitation) has
// one, its custom welcome text as a second message (FL 416).

import type { Obj } from "../types.ts";
import { realmSetting } from "./defaults.ts";
import type { RealmState } from "./state.ts";

/** The greeting every new human user gets. */
export function welcomeMessage(realmName: string): string {
  return [
    `Hello, and welcome to **${realmName}** on Zulip! :wave:`,
    "",
    "A few things worth knowing as you start:",
    "* Conversations happen in **channels**, and every message in a channel has a **topic**, " +
      "so you can follow one discussion at a time and catch up on what matters to you.",
    "* You can write to anyone directly with a **direct message**, like this one.",
    "* Browse and join channels from the left sidebar, and set your notifications in your settings.",
    "",
    "The [getting started guide](https://zulip.com/help/getting-started-with-zulip) " +
      "covers the rest. Enjoy!",
  ].join("\n");
}

/** The organization's custom welcome text, introduced as coming from its administrators. */
export function customWelcomeMessage(realmName: string, text: string): string {
  return `A message from the administrators of **${realmName}**:\n\n${text}`;
}

/** The hand-off subject of a new user's greeting (cluster/invite-worker.ts sends it). */
export const WELCOME_BOT_DM = "user.welcome";

/**
 * The greeting of a new user as a hand-off: the messages in order, the
 * custom one from the invitation's text (`welcomeText`) or else the
 * realm's setting, left out when empty.
 */
export function welcomeHandoff(
  state: RealmState,
  userId: number,
  role: number,
  welcomeText?: string,
): { subject: string; data: Obj } {
  const custom = welcomeText ?? String(realmSetting(state, "welcome_message_custom_text") ?? "");
  const messages = [welcomeMessage(state.name)];
  if (custom !== "") messages.push(customWelcomeMessage(state.name, custom));
  return { subject: WELCOME_BOT_DM, data: { realmId: state.realmId, userId, role, messages } };
}
