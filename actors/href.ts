// The one check every rendered href passes (markdown links, autolinks,
// linkifier output, channel links) and that linkifier URL templates pass
// at creation. An allowlist of schemes, decided on the URL as a browser
// (or a client that decodes HTML entities once more) would read it:
// character references decoded, tab/CR/LF removed anywhere, leading
// control characters and spaces dropped, scheme case folded. Anything
// with a colon before the first "/", "?" or "#" whose scheme is not on
// the list is refused, so "java\tscript:", "JaVaScRiPt:", "&#106;avascript:"
// and "java script:" all fail. Linear: one pass per step, no regex.

/** Schemes a message may link to. */
export const RENDER_SCHEMES: ReadonlySet<string> = new Set(["http", "https", "mailto"]);
/** Schemes a linkifier URL template may produce (relative URLs are allowed too). */
export const LINKIFIER_SCHEMES: ReadonlySet<string> = new Set(["http", "https"]);

const NAMED_REFS: Record<string, string> = {
  colon: ":",
  tab: "\t",
  newline: "\n",
  sol: "/",
  quest: "?",
  num: "#",
  amp: "&",
  nbsp: "\u00a0",
};

function isAlnum(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

/** Character references (&#58; &#x3a; &colon;, with or without ';') decoded once. */
function decodeCharRefs(s: string): string {
  if (!s.includes("&")) return s;
  let out = "";
  let i = 0;
  while (i < s.length) {
    const amp = s.indexOf("&", i);
    if (amp < 0) {
      out += s.slice(i);
      break;
    }
    out += s.slice(i, amp);
    let j = amp + 1;
    let decoded: string | null = null;
    if (s[j] === "#") {
      j++;
      const hex = s[j] === "x" || s[j] === "X";
      if (hex) j++;
      const digitsStart = j;
      let value = 0;
      while (j < s.length && j - digitsStart < 8) {
        const d = parseInt(s[j]!, hex ? 16 : 10);
        if (Number.isNaN(d)) break;
        value = value * (hex ? 16 : 10) + d;
        j++;
      }
      if (j > digitsStart) decoded = value > 0 && value <= 0x10ffff ? String.fromCodePoint(value) : "\ufffd";
    } else {
      while (j < s.length && j - amp <= 16 && isAlnum(s.charCodeAt(j))) j++;
      decoded = NAMED_REFS[s.slice(amp + 1, j).toLowerCase()] ?? null;
    }
    if (decoded === null) {
      out += "&";
      i = amp + 1;
      continue;
    }
    if (s[j] === ";") j++;
    out += decoded;
    i = j;
  }
  return out;
}

/** The URL as its scheme would be read: see the file comment. */
function normalizeForScheme(raw: string): string {
  const s = decodeCharRefs(raw);
  let out = "";
  let leading = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x09 || c === 0x0a || c === 0x0d) continue;
    if (leading && c <= 0x20) continue;
    leading = false;
    out += s[i];
  }
  return out;
}

/**
 * The scheme of `raw`, lowercased: "" for a relative reference, null when
 * a colon comes before any "/", "?" or "#" but what precedes it is not a
 * valid scheme (refused: a client could still read one there), and
 * undefined when the string holds none of ":/?#" (the scheme is not
 * decided yet: more text appended could still make one).
 */
export function urlScheme(raw: string): string | null | undefined {
  const s = normalizeForScheme(raw);
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === "/" || ch === "?" || ch === "#") return "";
    if (ch !== ":") continue;
    const scheme = s.slice(0, i).toLowerCase();
    if (scheme === "") return null;
    for (let k = 0; k < scheme.length; k++) {
      const c = scheme.charCodeAt(k);
      const ok =
        (c >= 0x61 && c <= 0x7a) ||
        (k > 0 && ((c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e));
      if (!ok) return null;
    }
    return scheme;
  }
  return undefined;
}

/**
 * `raw` when it may be an href (a relative reference, or a scheme in
 * `allowed`), else null: the caller then renders the text without a link.
 */
export function sanitizeHref(raw: string, allowed: ReadonlySet<string> = RENDER_SCHEMES): string | null {
  const scheme = urlScheme(raw);
  if (scheme === null) return null;
  if (scheme === undefined || scheme === "") return raw;
  return allowed.has(scheme) ? raw : null;
}
