// Which users' alert words a new message contains (Zulip's
// AlertWordNotificationProcessor over the realm's alert word automaton):
// the lowercased Markdown source, matched by one Aho-Corasick automaton of
// every word in the realm, so the work is linear in the content however
// many words there are. A match counts when the character before it is
// one of a few separators (or there is none) and likewise after it.
//
// The automaton is built once per version of the realm's alert words
// (the stamp of actors/realm/send-prefs.ts) and kept per process.

const BEFORE = new Set([" ", "\n", "(", '"', ".", ",", "'", ";", "[", "*", "`", ">"]);
// Zulip's list has '",' (two characters), which no single character
// equals: a double quote may precede a word but not follow it.
const AFTER = new Set([" ", "\n", ")", "?", ":", ".", ",", "'", ";", "]", "!", "*", "`"]);

interface Node {
  next: Map<number, Node>;
  fail: Node | null;
  /** Words ending here: [length, user ids]. */
  out: [number, number[]][];
  /** The nearest node on the fail chain with words (dictionary link). */
  dict: Node | null;
}

function node(): Node {
  return { next: new Map(), fail: null, out: [], dict: null };
}

export interface AlertMatcher {
  root: Node;
}

export function buildMatcher(words: Record<string, string[]>): AlertMatcher {
  const root = node();
  const byWord = new Map<string, number[]>();
  for (const [uid, list] of Object.entries(words)) {
    for (const w of list) {
      const key = w.toLowerCase();
      if (key === "") continue;
      const users = byWord.get(key);
      if (users) users.push(Number(uid));
      else byWord.set(key, [Number(uid)]);
    }
  }
  for (const [w, users] of byWord) {
    let n = root;
    for (let i = 0; i < w.length; i++) {
      const c = w.charCodeAt(i);
      let child = n.next.get(c);
      if (!child) n.next.set(c, (child = node()));
      n = child;
    }
    n.out.push([w.length, users]);
  }
  // Breadth-first fail and dictionary links.
  const queue: Node[] = [];
  for (const child of root.next.values()) {
    child.fail = root;
    queue.push(child);
  }
  for (let qi = 0; qi < queue.length; qi++) {
    const n = queue[qi]!;
    for (const [c, child] of n.next) {
      let f = n.fail;
      while (f && !f.next.has(c)) f = f.fail;
      child.fail = f ? f.next.get(c)! : root;
      child.dict = child.fail.out.length ? child.fail : child.fail.dict;
      queue.push(child);
    }
  }
  return { root };
}

/** Ids of the users with an alert word in `content`. */
export function alertedUsers(m: AlertMatcher, content: string): Set<number> {
  const text = content.toLowerCase();
  const found = new Set<number>();
  let n = m.root;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    while (n !== m.root && !n.next.has(c)) n = n.fail!;
    n = n.next.get(c) ?? m.root;
    for (let d: Node | null = n.out.length ? n : n.dict; d; d = d.dict) {
      for (const [len, users] of d.out) {
        // Zulip checks the index before the match with `<= 0`, so a word
        // starting at the second character counts whatever the first is.
        const before = i - len;
        const after = i + 1;
        if ((before <= 0 || BEFORE.has(text[before]!)) && (after >= text.length || AFTER.has(text[after]!))) {
          for (const u of users) found.add(u);
        }
      }
    }
  }
  return found;
}

const cache = new Map<number, { stamp: string; matcher: AlertMatcher }>();

/** The stamp of this process's matcher for a realm, to send along with the roster request. */
export function cachedStamp(realmId: number): string | undefined {
  return cache.get(realmId)?.stamp;
}

/**
 * The realm's matcher for the roster's `alertStamp`: rebuilt from
 * `alertWords` when the roster sent them (our copy was stale), else the
 * cached one; null when the realm has no alert words, undefined when the
 * cache moved on meanwhile (another send got newer words) and the words
 * must be asked for again.
 */
export function realmMatcher(
  realmId: number,
  stamp: string | undefined,
  words: Record<string, string[]> | undefined,
): AlertMatcher | null | undefined {
  if (stamp === undefined) {
    cache.delete(realmId);
    return null;
  }
  if (words === undefined) {
    const hit = cache.get(realmId);
    return hit && hit.stamp === stamp ? hit.matcher : undefined;
  }
  const matcher = buildMatcher(words);
  cache.set(realmId, { stamp, matcher });
  return matcher;
}
