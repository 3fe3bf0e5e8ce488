// Directory reads for POST /register: realm_default_streams (fetch type
// "default_streams") and the channel names of the legacy muted_topics.
// Leaf reads over the directory's own maps: no roster, no calls.

import type { DirHandler, DirHandlers } from "./protocol.ts";

/** Ids of the realm's default channels (archived ones are no longer default), ascending. */
const defaultChannelIds: DirHandler<"defaultChannelIds"> = (state) => {
  const ids = Object.values(state.channels)
    .filter((c) => c.isDefault && !c.isArchived)
    .map((c) => c.id)
    .sort((a, b) => a - b);
  return { reply: { ids } };
};

/** Names of the given channel ids (unknown ids are left out): {id: name}. */
const channelNamesByIds: DirHandler<"channelNamesByIds"> = (state, args) => {
  const out: Record<string, string> = {};
  for (const id of args.ids) {
    const ch = state.channels[String(id)];
    if (ch) out[String(id)] = ch.name;
  }
  return { reply: out };
};

export const registerStateDirectoryHandlers: DirHandlers<"defaultChannelIds" | "channelNamesByIds"> = {
  defaultChannelIds,
  channelNamesByIds,
};
