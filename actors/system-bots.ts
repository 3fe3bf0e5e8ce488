// The user ids of the realm's system bots (actors/realm/system-bot.ts has
// the rest of them). A leaf: the user kind sends as Notification Bot
// (scheduled reminders) without entering the realm's door, which itself
// imports the user kind's.

/** The Notification Bot's user id in every realm (below 2^31 for clients with 32-bit ids). */
export const NOTIFICATION_BOT_ID = 2_147_000_001;

/** Welcome Bot's user id in every realm. */
export const WELCOME_BOT_ID = 2_147_000_002;
