// Received rows, the directory's part: each subscription's spans (the
// message-id ranges while subscribed, `Sub.spans`), read by the
// conversations to tell which of their messages a user received
// (actors/channel/received.ts). Leaves: no calls.

import type { DirHandler, DirHandlers } from "./protocol.ts";
import type { Span } from "../spans.ts";
import { spansOf } from "./state.ts";

/** Leaf: one user's spans in a channel. {spans} */
const userSpans: DirHandler<"userSpans"> = (state, args) => {
  const ch = state.channels[String(args.stream_id)];
  const sub = ch ? state.subs[String(ch.id)]?.[String(args.userId)] : undefined;
  return { reply: { spans: ch && sub ? spansOf(ch, sub) : [] } };
};

/** Leaf: every user's spans in a channel (those with any). {spans: {user id: spans}} */
const channelSpans: DirHandler<"channelSpans"> = (state, args) => {
  const ch = state.channels[String(args.stream_id)];
  const out: Record<string, Span[]> = {};
  if (ch)
    for (const [uid, sub] of Object.entries(state.subs[String(ch.id)] ?? {})) {
      const s = spansOf(ch, sub);
      if (s.length) out[uid] = s;
    }
  return { reply: { spans: out } };
};

export const receivedDirectoryHandlers: DirHandlers<"userSpans" | "channelSpans"> = {
  userSpans,
  channelSpans,
};
