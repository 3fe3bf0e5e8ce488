// PATCH /messages/{id} (feature level 285): an edit that drops links to
// uploads releases them from the message, and the editor's files that no
// message links any more come back as `detached_uploads` (Zulip asks the
// user whether to delete them). Internal: the conversation's edit turn.

import { errors } from "../errors.ts";
import type { HandlerOf, SomeHandlersOf } from "../protocol.ts";
import type { Obj, OutEvent } from "../types.ts";
import type { UploadsProtocol } from "./protocol.ts";
import { event, fact, format, type UploadsState } from "./state.ts";

const releaseLinks: HandlerOf<UploadsState, UploadsProtocol, "releaseLinks"> = (
  state,
  args,
  _ctx,
  caller,
) => {
  if (caller) throw errors.accessDenied();
  const { messageId, editorId } = args;
  const keep = new Set(args.kept);
  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  const detached: Obj[] = [];
  const seen = new Set<string>();
  for (const p of args.dropped) {
    if (keep.has(p) || seen.has(p)) continue;
    seen.add(p);
    const a = state.byPath.get(p);
    if (!a || !a.messages.some((m) => m.id === messageId)) continue;
    facts.push(fact({ type: "attachmentUnclaimed", pathId: p, messageIds: [messageId] }));
    const after = { ...a, messages: a.messages.filter((m) => m.id !== messageId) };
    events.push(event("update", after, state.spaceUsed));
    if (after.messages.length === 0 && a.ownerId === editorId) detached.push(format(after));
  }
  return { facts, events, reply: { detached } };
};

export const detachedHandlers: SomeHandlersOf<UploadsState, UploadsProtocol, "releaseLinks"> = {
  releaseLinks,
};
