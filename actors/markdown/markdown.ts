// Zulip-flavoured Markdown on markdown-it: user mentions (@**Name**,
// @**Name|id**, silent @_**Name**, wildcards), channel and topic links
// (#**channel**, #**channel>topic**), :emoji:, Zulip's code-block markup.
// Rendering also reports who was mentioned, so the sender can set flags.

import { createRequire } from "node:module";
import type MarkdownIt from "markdown-it";
import type { StateInline } from "markdown-it";
import { own } from "../dict.ts";
import { unicodeCodeForName } from "../emoji/index.ts";
import { sanitizeHref } from "../href.ts";
import { applyLinkifiers } from "../linkify.ts";
import { globalTimeRule, renderSpoiler } from "./markdown-extras.ts";

export interface MentionTarget {
  userId: number;
  fullName: string;
}

/** The realm's active users, for mentions: by name (any case), or by id and exact name. */
export interface Mentions {
  find(name: string, id?: number): MentionTarget | undefined;
}

const NO_MENTIONS: Mentions = { find: () => undefined };

export interface RenderEnv {
  /** Active users of the realm, for mentions. */
  users: Mentions;
  /** lowercased channel name -> [id, name], for #**channel** links. */
  channels: Record<string, [number, string]>;
  /** The realm's linkifiers, in order. */
  linkifiers: { pattern: string; url_template: string }[];
  /**
   * The latest message id the sender may read of each linked topic, by
   * `topicKey`: topic links point `/with/` it (feature level 400).
   */
  topicLatest?: Map<string, number>;
  /** Uploaded images the content links, by path_id (actors/uploads/): their thumbnail previews. */
  images?: Map<string, UploadImage>;
  /** Groups the content may mention, by lowercased name. */
  groups?: Map<string, MentionGroup>;
  /** Filled by rendering. */
  mentionedUserIds: Set<number>;
  /** Groups mentioned non-silently (filled by rendering, when `groups` is set). */
  mentionedGroups?: Set<MentionGroup>;
  wildcard: "channel" | "topic" | null;
}

/** A group the content may mention (actors/group/mentions.ts). */
export interface MentionGroup {
  id: number;
  name: string;
  /** What the mention shows: a system group's display name, else the name. */
  display: string;
  deactivated: boolean;
  /** Whether the writer may mention it (Zulip's can_mention_group). */
  canMention: boolean;
  /** Active members, subgroups included: present when a send flags them. */
  members?: number[];
}

export interface UploadImage {
  width: number;
  height: number;
  animated: boolean;
  contentType: string;
}

/** The path_id of a link to an upload, relative or absolute-path ("/user_uploads/..."). */
function uploadPathOf(href: string): string | null {
  const m = /^\/?user_uploads\/(\d.*)$/.exec(href);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return null;
  }
}

function escapeAttr(s: string): string {
  return escapeHtml(s).replace(/'/g, "&#39;");
}

/**
 * Zulip's preview of an uploaded image: its 840x560 thumbnail, linking the
 * image, with the original's dimensions and type for the client's layout.
 */
function imagePreview(pathId: string, title: string, img: UploadImage): string {
  const href = `/user_uploads/${pathId}`;
  const animated = img.animated ? ' data-animated="true"' : "";
  return (
    `<div class="message_inline_image"><a href="${escapeAttr(href)}" title="${escapeAttr(title)}">` +
    `<img${animated} data-original-content-type="${escapeAttr(img.contentType)}" ` +
    `data-original-dimensions="${img.width}x${img.height}" ` +
    `src="${escapeAttr(`/user_uploads/thumbnail/${pathId}/840x560.webp`)}"></a></div>\n`
  );
}

// Uploads Zulip plays inline, by extension as its guess_type reads it:
// AUDIO_INLINE_MIME_TYPES (feature level 405), and the video types it
// previews, .mov (video/quicktime) among them since feature level 495.
const AUDIO_EXTENSIONS = new Set(["aac", "flac", "m4a", "mp3", "wav", "weba"]);
const VIDEO_EXTENSIONS = new Set(["mp4", "webm", "mov"]);

function mediaKind(pathId: string): "audio" | "video" | null {
  const dot = pathId.lastIndexOf(".");
  if (dot < 0 || pathId.indexOf("/", dot) >= 0) return null;
  const ext = pathId.slice(dot + 1).toLowerCase();
  return AUDIO_EXTENSIONS.has(ext) ? "audio" : VIDEO_EXTENSIONS.has(ext) ? "video" : null;
}

/** Zulip's inline video of an uploaded video: titled only when the link text is not the URL. */
function videoPreview(href: string, text: string): string {
  const src = escapeAttr(href);
  const title = text && text !== href ? ` title="${escapeAttr(text)}"` : "";
  return (
    `<div class="message_inline_image message_inline_video"><a href="${src}"${title}>` +
    `<video preload="metadata" src="${src}"></video></a></div>\n`
  );
}

export function emptyEnv(): RenderEnv {
  return { users: NO_MENTIONS, channels: {}, linkifiers: [], mentionedUserIds: new Set(), wildcard: null };
}

const CHANNEL_WILDCARDS = new Set(["all", "everyone", "stream", "channel"]);

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
}

/** Zulip's narrow URL slug: id-name with unsafe characters %-encoded as .XX. */
function slug(s: string, spaces = "-"): string {
  return encodeURIComponent(spaces === "-" ? s.replace(/ /g, "-") : s)
    .replace(/%/g, ".")
    .replace(/\(/g, ".28")
    .replace(/\)/g, ".29");
}

function mentionRule(state: StateInline, silent: boolean): boolean {
  const src = state.src;
  const start = state.pos;
  if (src.charCodeAt(start) !== 0x40 /* @ */) return false;
  const m = /^@(_?)\*\*([^*\n]+?)\*\*/.exec(src.slice(start));
  if (!m) return false;
  const env = state.env as unknown as RenderEnv;
  const isSilent = m[1] === "_";
  let name = m[2]!;
  let idPart: number | undefined;
  const bar = name.lastIndexOf("|");
  if (bar >= 0 && /^\d+$/.test(name.slice(bar + 1))) {
    idPart = Number(name.slice(bar + 1));
    name = name.slice(0, bar);
  }
  let html: string;
  if (!isSilent && idPart === undefined && (CHANNEL_WILDCARDS.has(name) || name === "topic")) {
    const kind = name === "topic" ? "topic" : "channel";
    if (!silent) env.wildcard = env.wildcard === "channel" ? "channel" : kind;
    html = `<span class="user-mention ${kind}-wildcard-mention" data-user-id="*">@${escapeHtml(name)}</span>`;
  } else {
    const target = env.users.find(name, idPart);
    if (!target) return false;
    if (!isSilent && !silent) env.mentionedUserIds.add(target.userId);
    const cls = isSilent ? "user-mention silent" : "user-mention";
    html = `<span class="${cls}" data-user-id="${target.userId}">${isSilent ? "" : "@"}${escapeHtml(target.fullName)}</span>`;
  }
  if (!silent) {
    const token = state.push("html_inline", "", 0);
    token.content = html;
  }
  state.pos += m[0].length;
  return true;
}

/** Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME, shown for the empty topic in links. */
const EMPTY_TOPIC_NAME = "general chat";

/** A trailing "@<digits>" of a topic link: Zulip's message link syntax (feature level 319). */
export function splitMessageId(topic: string): [string, string | null] {
  const at = topic.lastIndexOf("@");
  if (at < 0 || at === topic.length - 1) return [topic, null];
  for (let i = at + 1; i < topic.length; i++) {
    const c = topic.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return [topic, null];
  }
  return [topic.slice(0, at), topic.slice(at + 1)];
}

/**
 * `@*group*` and silent `@_*group*` (Zulip's UserGroupMentionPattern): a
 * deactivated group's mention is silent; a non-silent one flags the
 * group's members as mentioned.
 */
function groupMentionRule(state: StateInline, silent: boolean): boolean {
  const src = state.src;
  const start = state.pos;
  if (src.charCodeAt(start) !== 0x40 /* @ */) return false;
  const env = state.env as unknown as RenderEnv;
  if (!env.groups?.size) return false;
  const quiet = src.charCodeAt(start + 1) === 0x5f; /* _ */
  const star = start + (quiet ? 2 : 1);
  if (src.charCodeAt(star) !== 0x2a /* * */ || src.charCodeAt(star + 1) === 0x2a) return false;
  const end = src.indexOf("*", star + 1);
  if (end < 0) return false;
  const name = src.slice(star + 1, end);
  if (name.includes("\n")) return false;
  const g = env.groups.get(name.toLowerCase());
  if (!g) return false;
  const isSilent = quiet || g.deactivated;
  if (!silent) {
    if (!isSilent) {
      (env.mentionedGroups ??= new Set()).add(g);
      for (const id of g.members ?? []) env.mentionedUserIds.add(id);
    }
    const token = state.push("html_inline", "", 0);
    token.content =
      `<span class="user-group-mention${isSilent ? " silent" : ""}" data-user-group-id="${g.id}">` +
      `${isSilent ? "" : "@"}${escapeHtml(g.display)}</span>`;
  }
  state.pos = end + 1;
  return true;
}

function channelLinkRule(state: StateInline, silent: boolean): boolean {
  const start = state.pos;
  if (state.src.charCodeAt(start) !== 0x23 /* # */) return false;
  const m = /^#\*\*([^*\n]+?)\*\*/.exec(state.src.slice(start));
  if (!m) return false;
  const env = state.env as unknown as RenderEnv;
  const body = m[1]!;
  const gt = body.indexOf(">");
  const channelName = gt >= 0 ? body.slice(0, gt) : body;
  const found = own(env.channels, channelName.toLowerCase());
  if (!found) return false;
  const [id, name] = found;
  if (!silent) {
    const token = state.push("html_inline", "", 0);
    const base = `/#narrow/channel/${id}-${slug(name)}`;
    if (gt >= 0) {
      // The empty topic (feature level 346) is shown as Zulip's fallback name, in <em>.
      const [topic, messageId] = splitMessageId(body.slice(gt + 1));
      const shown = topic === "" ? `<em>${EMPTY_TOPIC_NAME}</em>` : escapeHtml(topic);
      const topicUrl = `${base}/topic/${slug(topic, ".20")}`;
      if (messageId !== null) {
        const href = escapeHtml(sanitizeHref(`${topicUrl}/near/${messageId}`) ?? "");
        token.content = `<a class="message-link" href="${href}">#${escapeHtml(name)} &gt; ${shown} @ 💬</a>`;
      } else {
        // Topic links carry `/with/` the topic's latest message (feature levels 347, 400), when known.
        const latest = env.topicLatest?.get(topicKey(id, topic));
        const href = escapeHtml(sanitizeHref(latest ? `${topicUrl}/with/${latest}` : topicUrl) ?? "");
        token.content = `<a class="stream-topic" data-stream-id="${id}" href="${href}">#${escapeHtml(name)} &gt; ${shown}</a>`;
      }
    } else {
      token.content = `<a class="stream" data-stream-id="${id}" href="${escapeHtml(sanitizeHref(base) ?? "")}">#${escapeHtml(name)}</a>`;
    }
  }
  state.pos += m[0].length;
  return true;
}

/** The key of `RenderEnv.topicLatest`: channel id and lowercased topic. */
export function topicKey(channelId: number, topic: string): string {
  return `${channelId}\u0000${topic.toLowerCase()}`;
}

function emojiRule(state: StateInline, silent: boolean): boolean {
  const start = state.pos;
  if (state.src.charCodeAt(start) !== 0x3a /* : */) return false;
  const m = /^:([a-z0-9_+-]+):/.exec(state.src.slice(start));
  if (!m) return false;
  const code = unicodeCodeForName(m[1]!);
  if (!code) return false;
  if (!silent) {
    const token = state.push("html_inline", "", 0);
    const name = escapeHtml(m[1]!);
    token.content = `<span aria-label="${name.replace(/_/g, " ")}" class="emoji emoji-${code}" role="img" title="${name.replace(/_/g, " ")}">:${name}:</span>`;
  }
  state.pos += m[0].length;
  return true;
}

function build(): InstanceType<typeof MarkdownIt> {
  // Loaded at the first render, not at start: markdown-it and its parts are
  // a tenth of what a process would otherwise parse before its first answer.
  const MarkdownItClass = createRequire(import.meta.url)("markdown-it") as typeof MarkdownIt;
  const md = new MarkdownItClass({ html: false, linkify: true, breaks: true });
  md.inline.ruler.before("emphasis", "zulip_mention", mentionRule);
  md.inline.ruler.before("emphasis", "zulip_group_mention", groupMentionRule);
  md.inline.ruler.before("emphasis", "zulip_channel_link", channelLinkRule);
  md.inline.ruler.before("emphasis", "zulip_emoji", emojiRule);
  // Before autolink, which would take `<time:...>` for a URL with scheme "time".
  md.inline.ruler.before("autolink", "zulip_global_time", globalTimeRule);
  // Markdown image syntax (feature levels 437, 467) shows only uploaded
  // images, through the upload previews below: every `![alt](url)` becomes
  // a link to url whose text is the alt (the URL when it has none), so an
  // uploaded image gets its thumbnail preview and anything else stays a
  // link. No <img> of an arbitrary URL, which every reader would fetch.
  md.core.ruler.after("inline", "zulip_images", (state) => {
    for (const block of state.tokens) {
      if (block.type !== "inline" || !block.children?.some((t) => t.type === "image")) continue;
      const out: typeof block.children = [];
      for (const t of block.children) {
        if (t.type !== "image") {
          out.push(t);
          continue;
        }
        const href = String(t.attrGet("src") ?? "");
        const open = new state.Token("link_open", "a", 1);
        open.attrs = [["href", href]];
        // The alt's own links keep their text only: links do not nest.
        const alt = (t.children ?? []).filter((k) => k.type !== "link_open" && k.type !== "link_close");
        if (alt.length) {
          out.push(open, ...alt);
        } else {
          const text = new state.Token("text", "", 0);
          text.content = href;
          out.push(open, text);
        }
        out.push(new state.Token("link_close", "a", -1));
      }
      block.children = out;
    }
  });
  // Linkifiers: plain text outside links and code becomes links.
  md.core.ruler.push("zulip_linkifiers", (state) => {
    const env = state.env as unknown as RenderEnv;
    if (!env.linkifiers?.length) return;
    for (const block of state.tokens) {
      if (block.type !== "inline" || !block.children) continue;
      const out: typeof block.children = [];
      let inLink = 0;
      for (const t of block.children) {
        if (t.type === "link_open") inLink++;
        if (t.type === "link_close") inLink--;
        if (t.type !== "text" || inLink > 0) {
          out.push(t);
          continue;
        }
        for (const seg of applyLinkifiers(t.content, env.linkifiers)) {
          if (!("url" in seg)) {
            const x = new state.Token("text", "", 0);
            x.content = seg.text;
            out.push(x);
            continue;
          }
          const open = new state.Token("link_open", "a", 1);
          open.attrs = [["href", seg.url]];
          const text = new state.Token("text", "", 0);
          text.content = seg.text;
          out.push(open, text, new state.Token("link_close", "a", -1));
        }
      }
      block.children = out;
    }
  });
  // Every link, whatever made it (markdown, autolink, linkify, linkifier),
  // passes sanitizeHref; a refused one keeps its text and loses the <a>,
  // as Zulip leaves a link whose URL its sanitize_url refuses unlinked.
  // markdown-it's validateLink is a blocklist (javascript:, vbscript:,
  // file:, most data:) that linkifier tokens never pass through.
  md.core.ruler.push("zulip_safe_links", (state) => {
    for (const block of state.tokens) {
      if (block.type !== "inline" || !block.children) continue;
      const dropped: boolean[] = [];
      for (const t of block.children) {
        if (t.type === "link_open") {
          const drop = sanitizeHref(String(t.attrGet("href") ?? "")) === null;
          dropped.push(drop);
          if (drop) t.type = "zulip_unlinked";
        } else if (t.type === "link_close" && dropped.pop()) {
          t.type = "zulip_unlinked";
        }
      }
    }
  });
  md.renderer.rules.zulip_unlinked = () => "";
  // Links to uploaded images and videos get Zulip's previews after their block;
  // a link to uploaded audio becomes an audio player where it stands.
  md.core.ruler.push("zulip_upload_previews", (state) => {
    const env = state.env as unknown as RenderEnv;
    const images = env.images ?? new Map<string, UploadImage>();
    const out: typeof state.tokens = [];
    let pending: string[] = [];
    let dropClose = false;
    const shown = new Set<string>();
    for (const block of state.tokens) {
      if (dropClose && block.type === "paragraph_close") {
        dropClose = false;
      } else {
        out.push(block);
      }
      if (block.type === "inline" && block.children) {
        const kids = block.children;
        const before = pending.length;
        for (let i = 0; i < kids.length; i++) {
          const t = kids[i]!;
          if (t.type !== "link_open") continue;
          const href = String(t.attrGet("href") ?? "");
          const pathId = uploadPathOf(href);
          if (pathId === null) continue;
          const img = images.get(pathId);
          const media = img ? null : mediaKind(pathId);
          if (!img && !media) continue;
          let title = "";
          let end = i + 1;
          for (; end < kids.length && kids[end]!.type !== "link_close"; end++) title += kids[end]!.content;
          if (media === "audio") {
            // Zulip's audio player replaces the link where it stands (feature level 405).
            t.type = "html_inline";
            t.content =
              `<audio controls preload="metadata" src="${escapeAttr(href)}" title="${escapeAttr(title)}">` +
              "</audio>";
            for (let j = i + 1; j <= end && j < kids.length; j++) kids[j]!.type = "zulip_unlinked";
            continue;
          }
          if (shown.has(pathId)) continue;
          shown.add(pathId);
          pending.push(img ? imagePreview(pathId, title, img) : videoPreview(href, title));
        }
        // A top-level paragraph that is nothing but the image's link: the preview replaces it.
        const prev = out[out.length - 2];
        if (
          pending.length === before + 1 &&
          kids.length === 3 &&
          kids[0]!.type === "link_open" &&
          kids[2]!.type === "link_close" &&
          prev?.type === "paragraph_open" &&
          prev.level === 0
        ) {
          out.splice(out.length - 2, 2);
          dropClose = true;
        }
      }
      // After the top-level block holding the links closes (nesting back to 0).
      if (pending.length && !dropClose && block.level === 0 && block.nesting !== 1) {
        const html = new state.Token("html_block", "", 0);
        html.content = pending.join("");
        out.push(html);
        pending = [];
      }
    }
    state.tokens = out;
  });
  // Zulip's code blocks: <div class="codehilite" data-code-language="..."><pre><span></span><code>.
  md.renderer.rules.fence = (tokens, idx, _options, env) => {
    const t = tokens[idx]!;
    const lang = t.info.trim().split(/\s+/)[0] ?? "";
    if (lang.toLowerCase() === "spoiler")
      return renderSpoiler(t.info.trim().slice(lang.length), t.content, (src) => md.render(src, env));
    const attr = lang ? ` data-code-language="${escapeHtml(lang)}"` : "";
    return `<div class="codehilite"${attr}><pre><span></span><code>${escapeHtml(t.content)}</code></pre></div>\n`;
  };
  md.renderer.rules.code_block = (tokens, idx) =>
    `<div class="codehilite"><pre><span></span><code>${escapeHtml(tokens[idx]!.content)}</code></pre></div>\n`;
  // Links open in a new tab, as Zulip renders them.
  md.renderer.rules.link_open = (tokens, idx, options, _env, self) => {
    const t = tokens[idx]!;
    const href = String(t.attrGet("href") ?? "");
    t.attrSet("href", href);
    if (!href.startsWith("/#")) {
      t.attrSet("target", "_blank");
      t.attrSet("rel", "noopener noreferrer");
    }
    t.attrSet("title", href);
    return self.renderToken(tokens, idx, options);
  };
  return md;
}

let md: InstanceType<typeof MarkdownIt> | null = null;

/** Render message content or a description; `env` collects mentions. */
export function renderMarkdown(source: string, env: RenderEnv = emptyEnv()): string {
  md ??= build();
  return md.render(source, env as unknown as Record<string, unknown>).replace(/\n$/, "");
}

/** Zulip's topic_links: the linkifier matches in a topic. */
export function topicLinks(
  topic: string,
  linkifiers: RenderEnv["linkifiers"],
): { text: string; url: string }[] {
  if (!linkifiers.length || topic === "") return [];
  return applyLinkifiers(topic, linkifiers).filter(
    (s): s is { text: string; url: string } => "url" in s && sanitizeHref(s.url) !== null,
  );
}

/** Whether rendering needs the user list or channel list (skip the lookups otherwise). */
export function needsUsers(source: string): boolean {
  return source.includes("@");
}
export function needsChannels(source: string): boolean {
  return source.includes("#**");
}
