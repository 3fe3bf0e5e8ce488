// Checks of channel parameters with Zulip's texts (zerver/lib/streams.py,
// zerver/views/streams.py).

import { errors } from "../errors.ts";
import type { Value } from "../types.ts";
import { TOPICS_POLICIES } from "./state.ts";

export const MAX_NAME_LENGTH = 60;
export const MAX_DESCRIPTION_LENGTH = 1024;

function codePoints(s: string): number {
  return [...s].length;
}

/** Zulip's check_stream_name: strip, then empty, length and character checks. */
export function checkChannelName(raw: string): string {
  const name = raw.trim();
  if (name === "") throw errors.channelNameEmpty();
  if (codePoints(name) > MAX_NAME_LENGTH) throw errors.channelNameTooLong(MAX_NAME_LENGTH);
  let pos = 0;
  for (const ch of name) {
    const cp = ch.codePointAt(0)!;
    // Control characters and unassigned/private-use code points are refused.
    if (
      cp < 0x20 ||
      (cp >= 0x7f && cp < 0xa0) ||
      (cp >= 0xe000 && cp <= 0xf8ff) ||
      cp === 0xfffe ||
      cp === 0xffff
    ) {
      throw errors.channelNameBadChar(pos);
    }
    pos++;
  }
  return name;
}

/** Descriptions are one line: Zulip replaces newlines by spaces. */
export function checkDescription(raw: string, name = "description"): string {
  if (codePoints(raw) > MAX_DESCRIPTION_LENGTH) throw errors.tooLong(name, MAX_DESCRIPTION_LENGTH);
  return raw.replace(/\r?\n/g, " ");
}

/** message_retention_days: "realm_default" -> null, "unlimited" -> -1, or a positive integer. */
export function checkRetention(v: Value): number | null {
  if (v === "realm_default") return null;
  if (v === "unlimited" || v === "forever") return -1;
  const n = typeof v === "number" ? v : typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n <= 0) throw errors.badValue("message_retention_days", String(v));
  return n;
}

export function checkTopicsPolicy(v: Value): string {
  if (typeof v !== "string" || !TOPICS_POLICIES.includes(v)) throw errors.invalid("topics_policy");
  return v;
}

/** A colour as Zulip's check_color: #rgb or #rrggbb. */
export function checkColor(v: Value, name = "value"): string {
  if (typeof v !== "string" || !/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(v)) throw errors.invalidColor(name);
  return v;
}
