// A channel's is_recently_active (FL 323), as Zulip derives it: false once
// no message was sent to it in the last 180 days (Zulip's daily
// check_update_all_streams_active_status), true again at the next send.
//
// Design: the directory keeps the UNIX day of each channel's newest send
// (Channel.lastMessageDay). Every send already reads the channel from the
// directory (sendContext, which returns that day and the flag), so a send
// pays only an in-memory comparison; it asks the directory to record the
// day when it differs, i.e. one durable write per channel per day of
// traffic, and that write also turns an inactive channel active again
// (with the event). The sweep (`sweepRecentlyActive`) rides on the
// retention worker's schedule and reads only the directory: O(channels).
// Deleting a channel's newest messages does not move the day back (Zulip
// looks at the messages left; this keeps the sweep free of conversation reads).
//
// This is the conversation's side; the directory's is
// channel-directory/recently-active.ts.

import type { ActorContext } from "../types.ts";
import { channelDirectoryRef } from "../addresses.ts";

const DAY_SECONDS = 86400;

/** A channel send at `nowSeconds`: record its day unless the directory already has it. */
export async function channelSendDay(
  ctx: ActorContext,
  realmId: number,
  ch: { stream_id: number; recently_active?: boolean; last_message_day?: number | null },
  nowSeconds: number,
): Promise<void> {
  const day = Math.floor(nowSeconds / DAY_SECONDS);
  if (ch.recently_active !== false && typeof ch.last_message_day === "number" && ch.last_message_day >= day)
    return;
  await ctx.call(channelDirectoryRef(realmId), "recordMessageDay", { stream_id: ch.stream_id, day });
}
