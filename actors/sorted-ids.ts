// Ascending id lists (a conversation's messages, a topic's, a user's
// received messages): binary search, and insertion and removal that keep
// the order. Ids come from realm-wide counters, so concurrent sends may
// commit slightly out of order, but almost always a new id is the largest.

/** First index of `ids` (ascending) whose id is >= `id`. */
export function lowerBound(ids: readonly number[], id: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Insert `id` keeping `ids` ascending; no-op when present. */
export function insertId(ids: number[], id: number): void {
  if (!ids.length || ids[ids.length - 1]! < id) ids.push(id);
  else {
    const i = lowerBound(ids, id);
    if (ids[i] !== id) ids.splice(i, 0, id);
  }
}

/** Remove `id` from ascending `ids`; no-op when absent. */
export function removeId(ids: number[], id: number): void {
  const i = lowerBound(ids, id);
  if (ids[i] === id) ids.splice(i, 1);
}
