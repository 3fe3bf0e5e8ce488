// GET /messages anchor=date (feature level 445): the anchor is the first
// message of the narrow sent at or after `anchor_date`, or "newest" when
// none was. Message ids grow with send time, so a binary search over ids,
// each probe a one-message window of the same narrow, finds it in a
// number of probes logarithmic in the newest id.

import { LARGER_THAN_MAX_MESSAGE_ID } from "../actors/index.ts";
import { errors } from "../actors/errors.ts";
import type { RouteRequest } from "./index.ts";
import { select, type Term } from "./narrow.ts";

/** ISO 8601 date or date-time (a zone designator is optional: UTC then). */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** `raw` as seconds since the epoch; Zulip's error when missing or not a date. */
export function parseAnchorDate(raw: string | undefined): number {
  if (raw === undefined) throw errors.missingArgument("anchor_date");
  const text = raw.trim();
  if (!ISO_DATE.test(text)) throw errors.invalid("anchor_date");
  const zoned = /(?:Z|[+-]\d{2}:?\d{2})$/.test(text) || text.length === 10 ? text : `${text}Z`;
  const ms = Date.parse(zoned.replace(" ", "T"));
  if (Number.isNaN(ms)) throw errors.invalid("anchor_date");
  return Math.floor(ms / 1000);
}

/** The message id to anchor at for `seconds`. */
export async function dateAnchor(req: RouteRequest, terms: Term[], seconds: number): Promise<number> {
  // Markdown off: the probes only read ids and timestamps.
  const opts = { apply_markdown: false, client_gravatar: true, allow_empty_topic_name: true };
  const firstFrom = async (id: number): Promise<{ id: number; timestamp: number } | undefined> => {
    const s = await select(req, terms, { anchor: id, numBefore: 0, numAfter: 1, includeAnchor: true }, opts);
    const m = s.messages[0];
    return m ? { id: m.id as number, timestamp: m.timestamp as number } : undefined;
  };
  const last = await select(
    req,
    terms,
    { anchor: LARGER_THAN_MAX_MESSAGE_ID, numBefore: 1, numAfter: 0, includeAnchor: true },
    opts,
  );
  const newest = last.messages[0];
  if (!newest || (newest.timestamp as number) < seconds) return LARGER_THAN_MAX_MESSAGE_ID;
  // Invariant: the first message from `hi` qualifies; none before `lo` needs looking at.
  let lo = 0;
  let hi = newest.id as number;
  let found = hi;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const m = await firstFrom(mid);
    if (m && m.timestamp >= seconds) {
      found = m.id;
      hi = Math.min(mid, m.id);
    } else {
      lo = m ? m.id + 1 : mid + 1;
    }
  }
  return found;
}
