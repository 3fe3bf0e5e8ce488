// Zulip Markdown features beyond CommonMark that markdown.ts plugs into its
// markdown-it instance: global times (`<time:...>`, feature level 8) and
// spoiler blocks (```` ```spoiler Header ````, feature level 15).

import type { StateInline } from "markdown-it";

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

// ISO 8601 date with optional time, seconds, fraction and zone; anchored, no nested repetition.
const ISO_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;
const UNIX_TIME = /^-?\d{1,12}(?:\.\d{1,6})?$/;

/**
 * The UTC instant a global time names, as Zulip writes it in `datetime`
 * (ISO 8601, "Z" for UTC, fraction only when there is one), or null when
 * the text is no time. A time without a zone is UTC, as in Zulip.
 */
export function globalTimeDatetime(text: string): string | null {
  const t = text.trim();
  let ms: number;
  if (UNIX_TIME.test(t)) {
    ms = Math.round(Number(t) * 1000);
  } else {
    const m = ISO_TIME.exec(t);
    if (!m) return null;
    const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone] = m;
    let offsetMin = 0;
    if (zone && zone.toUpperCase() !== "Z") {
      const z = zone.replace(":", "");
      offsetMin = (z[0] === "-" ? -1 : 1) * (Number(z.slice(1, 3)) * 60 + Number(z.slice(3, 5)));
    }
    const month = Number(mo) - 1;
    ms = Date.UTC(Number(y), month, Number(d), Number(h), Number(mi), Number(s));
    const check = new Date(ms);
    if (
      check.getUTCMonth() !== month ||
      check.getUTCDate() !== Number(d) ||
      Number(h) > 23 ||
      Number(mi) > 59 ||
      Number(s) > 59
    )
      return null;
    ms += Math.round(Number(`0.${frac || "0"}`) * 1000) - offsetMin * 60_000;
  }
  const date = new Date(ms);
  if (!Number.isFinite(date.getTime())) return null;
  const iso = date.toISOString();
  return iso.endsWith(".000Z") ? `${iso.slice(0, -5)}Z` : iso;
}

/** Inline rule for `<time:...>`: a `<time datetime>` element, or Zulip's error span. */
export function globalTimeRule(state: StateInline, silent: boolean): boolean {
  const start = state.pos;
  if (!state.src.startsWith("<time:", start)) return false;
  const end = state.src.indexOf(">", start + 6);
  if (end < 0) return false;
  const text = state.src.slice(start + 6, end);
  if (text.includes("<") || text.includes("\n")) return false;
  if (!silent) {
    const datetime = globalTimeDatetime(text);
    const token = state.push("html_inline", "", 0);
    token.content =
      datetime === null
        ? `<span class="timestamp-error">Invalid time format: ${escapeHtml(text)}</span>`
        : `<time datetime="${datetime}">${escapeHtml(text)}</time>`;
  }
  state.pos = end + 1;
  return true;
}

/**
 * A ```` ```spoiler Header ```` fence as Zulip renders it: the header and
 * the hidden content, each rendered as Markdown by `render`.
 */
export function renderSpoiler(header: string, content: string, render: (src: string) => string): string {
  const head = header.trim() ? `\n${render(header.trim())}` : "";
  return (
    `<div class="spoiler-block"><div class="spoiler-header">\n${head}</div>` +
    `<div class="spoiler-content" aria-hidden="true">\n\n${render(content)}</div></div>\n`
  );
}
