// A channel's send context (the directory's `sendContext`) as the
// conversation actors of this process ask for it, with the channel's
// subscriber lists kept here between asks.
//
// Every send asks the directory for the channel's settings and subscribers.
// In cluster mode the directory often lives on another node, so a
// 10,000-subscriber channel's lists were serialized, sent and parsed on
// every send (the cluster's send rate fell by a third from 1 to 10,000
// subscribers while the embedded server's did not fall). The directory
// names its lists with a stamp that changes whenever they do
// (channel-directory/state.ts, SubscriberLists); a caller that names the
// stamp it holds gets the settings without the lists, and takes them from
// here.
//
// Shared by every actor of the process: the lists are frozen, as the
// directory's own are, so no reader can change another's.

import { LRUCache } from "lru-cache";
import { channelDirectoryRef } from "../addresses.ts";
import type { ChannelInfo, ChannelLists } from "../channel-directory/index.ts";
import type { ActorContext } from "../types.ts";

type Lists = Pick<ChannelInfo, ChannelLists> & { stamp: string };

/**
 * Subscriber ids held over all channels of the process (about 8 bytes each
 * in the lists, so some 16 MB): the least recently sent-to channels go
 * first, and are asked for whole again.
 */
const MAX_IDS = 2_000_000;

const held = new LRUCache<string, Lists>({
  maxSize: MAX_IDS,
  sizeCalculation: (l) => 1 + l.subscribers.length + l.muted_by.length + l.push_on.length,
});

/**
 * The channel's settings and current subscribers (the directory's
 * `sendContext`). `forSend`: a send (see the directory); `userId`: the user
 * whose content access through the channel's groups is asked.
 */
export async function sendContext(
  ctx: ActorContext,
  realmId: number,
  streamId: number,
  opts: { forSend?: boolean; userId?: number } = {},
): Promise<ChannelInfo> {
  const key = `${realmId}:${streamId}`;
  // Captured before the call: the reply leaves the lists out only when
  // they are these, whatever other turns keep here meanwhile.
  const have = held.get(key);
  const r = await ctx.call(channelDirectoryRef(realmId), "sendContext", {
    stream_id: streamId,
    ...(opts.forSend ? { forSend: true } : {}),
    ...(opts.userId === undefined ? {} : { userId: opts.userId }),
    ...(have?.stamp ? { lists: have.stamp } : {}),
  });
  const { lists: stamp, subscribers, muted_by, push_on, volatile: _volatile, ...settings } = r;
  let lists = have;
  if (subscribers !== undefined || !lists) {
    lists = {
      stamp,
      subscribers: Object.freeze(subscribers ?? []) as number[],
      muted_by: Object.freeze(muted_by ?? []) as number[],
      push_on: Object.freeze(push_on ?? []) as number[],
    };
    held.set(key, lists);
  }
  return { ...settings, subscribers: lists.subscribers, muted_by: lists.muted_by, push_on: lists.push_on };
}
