// POST /messages/render (Zulip's message_send.py render_message_backend):
// the preview renderer runs on the channel directory, which knows the
// channel names links need. Calls go to the realm (`roster`), the group
// directory (group mentions) and, for topic links, the linked channels'
// conversations (`topicLatest`, a reader: markdown-links.ts).

import { dict } from "../dict.ts";
import { errors } from "../errors.ts";
import { emptyEnv, needsChannels, renderMarkdown } from "../markdown/index.ts";
import { mentionGroupsFor } from "./group-mentions.ts";
import { roster } from "./roster-view.ts";
import type { Caller } from "../types.ts";
import { topicLatestFor } from "./markdown-links.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";

function me(caller: Caller | null): Caller {
  if (!caller) throw errors.accessDenied();
  return caller;
}

/**
 * The content as a message of the caller would render now: the realm's
 * active users for mentions, its linkifiers, this directory's live
 * channels for #**channel** links.
 */
const renderPreview: DirHandler<"renderPreview"> = async (state, args, ctx, caller) => {
  me(caller);
  const content = args.content;
  const users = await roster(ctx, state.realmId);
  const env = emptyEnv();
  env.linkifiers = users.linkifiers ?? [];
  env.users = users.mentions;
  if (needsChannels(content)) {
    const channels = dict<[number, string]>();
    for (const ch of Object.values(state.channels))
      if (!ch.isArchived) channels[ch.name.toLowerCase()] = [ch.id, ch.name];
    env.channels = channels;
    env.topicLatest = await topicLatestFor(ctx, state.realmId, content, me(caller), { dir: state });
  }
  env.groups = await mentionGroupsFor(ctx, state.realmId, content, me(caller).userId, false);
  return { reply: { rendered: renderMarkdown(content, env) } };
};

export const messageExtrasDirectoryHandlers: DirHandlers<"renderPreview"> = { renderPreview };
