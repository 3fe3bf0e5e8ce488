// Received rows, the directory's part: each subscription's spans (the
// message-id ranges while subscribed, `Sub.spans`), read by the
// conversations to tell which of their messages a user received
// (actors/channel/received.ts). Leaves: no calls.

import type { Handler, Obj, Value } from "../types.ts";
import { spansOf, type DirState, type Span } from "./state.ts";

/** Leaf: one user's spans in a channel. {spans} */
const userSpansHandler: Handler<DirState> = (state, args) => {
  const ch = state.channels[String(args.stream_id)];
  const sub = ch ? state.subs[String(ch.id)]?.[String(args.userId)] : undefined;
  return { reply: { spans: (ch && sub ? spansOf(ch, sub) : []) as unknown as Value } };
};

/** Leaf: every user's spans in a channel (those with any). {spans: {user id: spans}} */
const channelSpansHandler: Handler<DirState> = (state, args) => {
  const ch = state.channels[String(args.stream_id)];
  const out: Record<string, Span[]> = {};
  if (ch)
    for (const [uid, sub] of Object.entries(state.subs[String(ch.id)] ?? {})) {
      const s = spansOf(ch, sub);
      if (s.length) out[uid] = s;
    }
  return { reply: { spans: out as unknown as Obj } };
};

export const receivedDirectoryHandlers: Record<string, Handler<DirState>> = {
  userSpans: userSpansHandler,
  channelSpans: channelSpansHandler,
};
