// Received rows, the directory's part: each subscription's spans (the
// message-id ranges while subscribed, `Sub.spans`), read by the
// conversations to tell which of their messages a user received
// (actors/channel/received.ts). Leaves: no calls. `readContext` gives a
// history read the caller's spans with the channel's access settings in
// one reader call (behavior.ts `readers`).

import { errors } from "../errors.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";
import type { Span } from "../spans.ts";
import { spansOf } from "./state.ts";
import { accessOf } from "./handlers.ts";

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

/**
 * A history read's view of the channel and of `userId`: access settings,
 * subscription and spans. Unlike `sendContext`, no subscriber lists (a
 * read needs only whether the caller is one) and no facts, so it runs as a
 * reader, never queued behind the directory's writes.
 */
const readContext: DirHandler<"readContext"> = async (state, args, ctx) => {
  const ch = state.channels[String(args.stream_id)];
  if (!ch) throw errors.invalidChannelId();
  const sub = state.subs[String(ch.id)]?.[String(args.userId)];
  return {
    reply: {
      ...(await accessOf(ctx, state, ch, args.userId)),
      subscribed: sub?.active === true,
      spans: sub ? spansOf(ch, sub) : [],
    },
  };
};

export const receivedDirectoryHandlers: DirHandlers<"userSpans" | "channelSpans" | "readContext"> = {
  userSpans,
  channelSpans,
  readContext,
};
