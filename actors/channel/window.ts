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

// Keyword search runs per message over a query of any length, so it must
// not cost (query words x text): an Aho-Corasick automaton over the query
// words, built once per query, finds every word in one pass over the text.
// Case folding is per UTF-16 unit, so positions in the folded text are the
// positions in the original.

function foldUnit(c: number): number {
  if (c < 0x80) return c >= 0x41 && c <= 0x5a ? c + 32 : c;
  const l = String.fromCharCode(c).toLowerCase();
  return l.length === 1 ? l.charCodeAt(0) : c;
}

interface Keywords {
  count: number;
  next: Map<number, number>[];
  fail: Int32Array;
  /** Index of the word ending at this node, or -1. */
  word: Int32Array;
  /** Length of the longest word ending at this node (itself or by its suffix links), 0 if none. */
  longest: Int32Array;
  /** Nearest node on the fail chain (itself excluded) that ends a word, or 0. */
  dict: Int32Array;
}

function buildKeywords(words: string[]): Keywords {
  const next: Map<number, number>[] = [new Map()];
  const wordAt: number[] = [-1];
  const depth: number[] = [0];
  words.forEach((w, wi) => {
    let node = 0;
    for (let i = 0; i < w.length; i++) {
      const c = foldUnit(w.charCodeAt(i));
      let to = next[node]!.get(c);
      if (to === undefined) {
        to = next.length;
        next.push(new Map());
        wordAt.push(-1);
        depth.push(depth[node]! + 1);
        next[node]!.set(c, to);
      }
      node = to;
    }
    if (wordAt[node] === -1) wordAt[node] = wi;
  });
  const n = next.length;
  const fail = new Int32Array(n);
  const dict = new Int32Array(n);
  const longest = new Int32Array(n);
  const word = Int32Array.from(wordAt);
  const queue: number[] = [];
  for (const to of next[0]!.values()) queue.push(to);
  for (let qi = 0; qi < queue.length; qi++) {
    const u = queue[qi]!;
    const f = fail[u]!;
    dict[u] = word[f]! >= 0 ? f : dict[f]!;
    longest[u] = word[u]! >= 0 ? depth[u]! : longest[f]!;
    for (const [c, v] of next[u]!) {
      let g = f;
      while (g !== 0 && !next[g]!.has(c)) g = fail[g]!;
      const to = next[g]!.get(c);
      fail[v] = to !== undefined && to !== v ? to : 0;
      queue.push(v);
    }
  }
  return { count: words.length, next, fail, word, longest, dict };
}

function step(k: Keywords, node: number, c: number): number {
  for (;;) {
    const to = k.next[node]!.get(c);
    if (to !== undefined) return to;
    if (node === 0) return 0;
    node = k.fail[node]!;
  }
}

const keywordCache = new Map<string, Keywords | null>();

/** The automaton of the query's words, case folded; null for a query without words. */
function keywordsOf(query: string): Keywords | null {
  let k = keywordCache.get(query);
  if (k === undefined) {
    if (keywordCache.size >= 16) keywordCache.clear();
    const words = [...new Set(query.toLowerCase().split(/\s+/).filter(Boolean))];
    k = words.length ? buildKeywords(words) : null;
    keywordCache.set(query, k);
  }
  return k;
}

/** Case-insensitive keyword search: every word in the content or topic. */
export function matchesSearch(query: string, content: string, topic: string): boolean {
  const k = keywordsOf(query);
  if (!k) return true;
  const found = new Uint8Array(k.count);
  // A node whose words were all reported: its dict chain was reported too.
  const seen = new Uint8Array(k.next.length);
  let missing = k.count;
  for (const text of [content, topic]) {
    let node = 0;
    for (let i = 0; i < text.length; i++) {
      node = step(k, node, foldUnit(text.charCodeAt(i)));
      for (let d = k.word[node]! >= 0 ? node : k.dict[node]!; d !== 0 && !seen[d]; d = k.dict[d]!) {
        seen[d] = 1;
        const w = k.word[d]!;
        if (!found[w]) {
          found[w] = 1;
          if (--missing === 0) return true;
        }
      }
    }
  }
  return missing === 0;
}

/** The text with every run covered by a keyword occurrence wrapped in a highlight span. */
function highlightText(text: string, k: Keywords): string {
  let covered: Uint8Array | null = null;
  let node = 0;
  for (let i = 0; i < text.length; i++) {
    node = step(k, node, foldUnit(text.charCodeAt(i)));
    const len = k.longest[node]!;
    // Every word ending here is a suffix of the longest one.
    if (len > 0) (covered ??= new Uint8Array(text.length)).fill(1, i + 1 - len, i + 1);
  }
  if (!covered) return text;
  let out = "";
  let i = 0;
  while (i < text.length) {
    let j = i;
    const on = covered[i]!;
    while (j < text.length && covered[j] === on) j++;
    out += on ? `<span class="highlight">${text.slice(i, j)}</span>` : text.slice(i, j);
    i = j;
  }
  return out;
}

/** Zulip's match_content / match_subject: the keywords wrapped in <span class="highlight">, outside tags. */
export function highlight(html: string, query: string): string {
  const k = keywordsOf(query);
  if (!k) return html;
  let out = "";
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf("<", i);
    const textEnd = lt < 0 ? html.length : lt;
    if (textEnd > i) out += highlightText(html.slice(i, textEnd), k);
    if (lt < 0) break;
    const gt = html.indexOf(">", lt);
    if (gt < 0) {
      out += highlightText(html.slice(lt), k);
      break;
    }
    out += html.slice(lt, gt + 1);
    i = gt + 1;
  }
  return out;
}

export interface WalkResult<T> {
  /** Ascending. */
  items: T[];
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
}

/** An id range read over the ids a narrow draws from (Store.rangeIndex semantics: ascending). */
export type IdPager = (range: {
  before?: number;
  after?: number;
  limit: number;
  reverse?: boolean;
}) => Promise<number[]>;

/**
 * `windowIds` without filtering every id first: a walk outward from the
 * anchor over the ids a narrow may draw from (`page`: range reads, from the
 * store or memory), in batches that double, only until num_before /
 * num_after candidates are found. `load(batch)` decides a batch: for each
 * id its candidate (the message passes the narrow) or null. The result
 * equals `windowIds` over the ids whose candidate is not null.
 */
export async function walkWindowBy<T>(
  w: WindowArgs,
  page: IdPager,
  load: (batch: number[]) => Promise<(T | null)[]>,
): Promise<WalkResult<T>> {
  const anchoredLeft = w.anchor <= 0;
  const anchoredRight = w.anchor >= LARGER_THAN_MAX_MESSAGE_ID;
  // Above every possible id (ids are below 2^53): no cursor needed, or nothing newer.
  const beyond = w.anchor > Number.MAX_SAFE_INTEGER;

  // Older: ids < anchor, newest first. Newer: ids > anchor, oldest first.
  async function walk(older: boolean, need: number): Promise<T[]> {
    const out: T[] = [];
    if ((older && anchoredLeft) || (!older && beyond)) return out;
    // Exclusive cursor; undefined: the open end.
    let cursor: number | undefined = older
      ? beyond
        ? undefined
        : Math.ceil(w.anchor)
      : anchoredLeft
        ? undefined
        : Math.floor(w.anchor);
    let size = need;
    for (;;) {
      const r: { before?: number; after?: number; limit: number; reverse?: boolean } = { limit: size };
      if (older) {
        r.reverse = true;
        if (cursor !== undefined) r.before = cursor;
      } else if (cursor !== undefined) r.after = cursor;
      const ids = await page(r);
      const batch = older ? ids.reverse() : ids;
      if (batch.length) {
        for (const c of await load(batch)) {
          if (c !== null) out.push(c);
          if (out.length === need) return out;
        }
        cursor = batch[batch.length - 1]!;
      }
      if (ids.length < size) return out;
      size *= 2;
    }
  }

  const before = w.numBefore > 0 ? (await walk(true, w.numBefore)).reverse() : [];
  let at: T[] = [];
  if (w.includeAnchor && !anchoredRight && !anchoredLeft && Number.isSafeInteger(w.anchor)) {
    const [found] = await page({ after: w.anchor - 1, limit: 1 });
    if (found === w.anchor) at = (await load([w.anchor])).filter((c): c is T => c !== null);
  }
  const after = w.numAfter > 0 && !anchoredRight ? await walk(false, w.numAfter) : [];
  return {
    items: [...before, ...at, ...after],
    found_anchor: at.length === 1,
    found_oldest: w.anchor === 0 || before.length < w.numBefore,
    found_newest: anchoredRight || after.length < (anchoredRight ? 0 : w.numAfter),
  };
}

/** `walkWindowBy` over ids in memory (ascending). */
export function walkWindow<T>(
  ids: readonly number[],
  w: WindowArgs,
  load: (batch: number[]) => Promise<(T | null)[]>,
): Promise<WalkResult<T>> {
  return walkWindowBy(
    w,
    async (r) => {
      const inRange = ids.filter(
        (id) => (r.after === undefined || id > r.after) && (r.before === undefined || id < r.before),
      );
      return r.reverse ? inRange.slice(Math.max(0, inRange.length - r.limit)) : inRange.slice(0, r.limit);
    },
    load,
  );
}
