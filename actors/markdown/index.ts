// The Markdown renderer's door (Zulip-flavoured Markdown, markdown.ts):
// shared by the channel kinds (messages, channel and folder descriptions)
// and the realm (custom profile fields). Kinds import only from here.

export {
  emptyEnv,
  needsChannels,
  needsUsers,
  renderMarkdown,
  splitMessageId,
  topicKey,
  topicLinks,
} from "./markdown.ts";
export type { MentionGroup, MentionTarget, Mentions, RenderEnv, UploadImage } from "./markdown.ts";
