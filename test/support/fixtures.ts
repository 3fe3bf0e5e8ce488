// Fixtures for unit tests that build actor state straight from facts: stored
// messages for a conversation's `msgAdded` (actors/channel/conversation-state.ts),
// queue registrations for a queue actor's `registered` (actors/queue/state.ts).
import type { Msg } from "../../actors/channel/conversation-state.ts";
import type { Registration } from "../../actors/queue/index.ts";

/** A stored message with plain defaults; `fields` overrides any of them. */
export function storedMessage(id: number, fields: Partial<Msg> = {}): Msg {
  const senderId = fields.senderId ?? 5;
  const content = fields.content ?? "c";
  return {
    id,
    senderId,
    senderEmail: `u${senderId}@example.com`,
    senderName: `U${senderId}`,
    senderAvatarVersion: 1,
    client: "test",
    content,
    rendered: `<p>${content}</p>`,
    topic: "",
    timestamp: 0,
    reactions: [],
    lastEditTimestamp: null,
    lastMovedTimestamp: null,
    editHistory: [],
    mentioned: [],
    isMe: false,
    ...fields,
  };
}

/** A queue registration as POST /register makes it with no parameters; `over` overrides any field. */
export function registration(over: Partial<Registration> = {}): Registration {
  return {
    eventTypes: null,
    narrow: [],
    capabilities: {},
    applyMarkdown: false,
    clientGravatar: false,
    allPublicStreams: false,
    timeoutSecs: 600,
    ...over,
  };
}
