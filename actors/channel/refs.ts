// Addresses of the channel kind's actors: the conversations.

export { channelConvRef, conversationRef, dmConvRef } from "../addresses.ts";
