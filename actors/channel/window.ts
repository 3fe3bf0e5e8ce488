// GET /messages windowing around an anchor, as Zulip's limit_query_to_range
// and post_process_limited_query do it, over a candidate id list.

/** Zulip's LARGER_THAN_MAX_MESSAGE_ID: the anchor "newest" (and first_unread with nothing unread). */
export const LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000;
export const MAX_MESSAGES_PER_FETCH = 5000;

export interface WindowArgs {
  anchor: number;
  numBefore: number;
  numAfter: number;
  includeAnchor: boolean;
}

export interface WindowResult {
  ids: number[];
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
}

/** `ids` ascending. */
export function windowIds(ids: number[], w: WindowArgs): WindowResult {
  const anchoredLeft = w.anchor === 0;
  const anchoredRight = w.anchor >= LARGER_THAN_MAX_MESSAGE_ID;
  let before: number[];
  let at: number[] = [];
  let after: number[] = [];
  if (anchoredRight) {
    before = w.includeAnchor ? ids : ids.filter((id) => id < w.anchor);
  } else {
    before = ids.filter((id) => id < w.anchor);
    if (w.includeAnchor) at = ids.filter((id) => id === w.anchor);
    after = ids.filter((id) => id > w.anchor);
  }
  before = w.numBefore > 0 ? before.slice(-w.numBefore) : [];
  after = w.numAfter > 0 && !anchoredRight ? after.slice(0, w.numAfter) : [];
  return {
    ids: [...before, ...at, ...after],
    found_anchor: at.length === 1,
    found_oldest: anchoredLeft || before.length < w.numBefore,
    found_newest: anchoredRight || after.length < (anchoredRight ? 0 : w.numAfter),
  };
}

/** Resolve "first_unread" over candidates [id, unread]: the first unread, else newest. */
export function firstUnreadAnchor(items: { id: number; unread: boolean }[]): number {
  const first = items.find((i) => i.unread);
  return first ? first.id : LARGER_THAN_MAX_MESSAGE_ID;
}

/** Case-insensitive keyword search: every word in the content or topic. */
export function matchesSearch(query: string, content: string, topic: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const hay = `${content}\n${topic}`.toLowerCase();
  return words.every((w) => hay.includes(w));
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Zulip's match_content / match_subject: the keywords wrapped in <span class="highlight">, outside tags. */
export function highlight(html: string, query: string): string {
  const words = query.split(/\s+/).filter(Boolean);
  if (!words.length) return html;
  const re = new RegExp(`(${words.map(escapeRe).join("|")})`, "gi");
  return html
    .split(/(<[^>]*>)/)
    .map((part) => (part.startsWith("<") ? part : part.replace(re, '<span class="highlight">$1</span>')))
    .join("");
}
