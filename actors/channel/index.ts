// The channel kind's door (conversations): siblings import only from here.

export { channelBehavior } from "./behavior.ts";
export { channelConvRef, conversationRef, dmConvRef } from "./refs.ts";
export type { ChannelProtocol, Filters, SendReply } from "./protocol.ts";
export {
  EMPTY_TOPIC_NAME,
  MAX_MESSAGE_LENGTH,
  MAX_TOPIC_LENGTH,
  shapeForClient,
} from "./conversation-handlers.ts";
export { LARGER_THAN_MAX_MESSAGE_ID, MAX_MESSAGES_PER_FETCH, matchesSearch, windowIds } from "./window.ts";
export {
  hashEncode,
  MOVE_BREADCRUMBS,
  runBotPosts,
  runBreadcrumbs,
  silentMention,
  type LinkOrigin,
} from "./breadcrumbs.ts";
export { MESSAGE_MOVE, runMoves } from "./move.ts";
export { REACTION_PARTICIPATION, runParticipations } from "./participation.ts";
