// The realm's system bots as tests see them, from the server's own
// constants (actors/realm/system-bot.ts): Welcome Bot greets every new user
// with a direct message, which tests about a user's messages leave out.
import { NOTIFICATION_BOT_ENTRY, WELCOME_BOT_ENTRY } from "../../actors/realm/index.ts";

export const WELCOME_BOT = {
  id: WELCOME_BOT_ENTRY.userId,
  email: WELCOME_BOT_ENTRY.email,
  name: WELCOME_BOT_ENTRY.fullName,
} as const;

export const NOTIFICATION_BOT = {
  id: NOTIFICATION_BOT_ENTRY.userId,
  email: NOTIFICATION_BOT_ENTRY.email,
  name: NOTIFICATION_BOT_ENTRY.fullName,
} as const;

/** Is this message (or unread entry) Welcome Bot's greeting, by its sender's id or email? */
export function isGreeting(m: { sender_id?: unknown; sender_email?: unknown }): boolean {
  return m.sender_id === WELCOME_BOT.id || m.sender_email === WELCOME_BOT.email;
}

/** The messages (or unread entries) without Welcome Bot's greetings. */
export function withoutGreeting<T extends { sender_id?: unknown; sender_email?: unknown }>(
  messages: T[],
): T[] {
  return messages.filter((m) => !isGreeting(m));
}
