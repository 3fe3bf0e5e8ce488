// Stored-message fixtures for unit tests that build a conversation's state
// straight from `msgAdded` facts (actors/channel/conversation-state.ts).
import type { Msg } from "../../actors/channel/conversation-state.ts";

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
