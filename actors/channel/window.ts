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

export interface WalkResult<T> {
  /** Ascending. */
  items: T[];
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
}

/**
 * `windowIds` without filtering every id first: the anchor by binary search
 * in `ids` (ascending, every message the narrow may draw from), then a walk
 * outward, in batches that double, only until num_before / num_after
 * candidates are found. `load(batch)` decides a batch: for each id its
 * candidate (the message passes the narrow) or null. The result equals
 * `windowIds` over the ids whose candidate is not null.
 */
export async function walkWindow<T>(
  ids: readonly number[],
  w: WindowArgs,
  load: (batch: number[]) => Promise<(T | null)[]>,
): Promise<WalkResult<T>> {
  const anchoredLeft = w.anchor === 0;
  const anchoredRight = w.anchor >= LARGER_THAN_MAX_MESSAGE_ID;
  // First position whose id is >= anchor.
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! < w.anchor) lo = mid + 1;
    else hi = mid;
  }
  const p = lo;
  const atAnchor = !anchoredRight && ids[p] === w.anchor;

  // Candidates walking from `start` by `step` (-1 older, +1 newer), at most `need`.
  async function walk(start: number, step: 1 | -1, need: number): Promise<T[]> {
    const out: T[] = [];
    let pos = start;
    let size = need;
    while (out.length < need && pos >= 0 && pos < ids.length) {
      const batch: number[] = [];
      for (let k = 0; k < size && pos >= 0 && pos < ids.length; k++, pos += step) batch.push(ids[pos]!);
      for (const c of await load(batch)) {
        if (c !== null) out.push(c);
        if (out.length === need) break;
      }
      size *= 2;
    }
    return out;
  }

  const before = w.numBefore > 0 ? (await walk(p - 1, -1, w.numBefore)).reverse() : [];
  let at: T[] = [];
  if (w.includeAnchor && atAnchor) at = (await load([w.anchor])).filter((c): c is T => c !== null);
  const after = w.numAfter > 0 && !anchoredRight ? await walk(atAnchor ? p + 1 : p, 1, w.numAfter) : [];
  return {
    items: [...before, ...at, ...after],
    found_anchor: at.length === 1,
    found_oldest: anchoredLeft || before.length < w.numBefore,
    found_newest: anchoredRight || after.length < (anchoredRight ? 0 : w.numAfter),
  };
}
