// Indexes keyed by user input (channel names, emails, topics, emoji
// names...) are null-prototype objects: on a plain object, `__proto__`
// reads and writes the prototype and `constructor`, `toString`... read as
// inherited members, so such names could never be created and their
// lookups threw. A null-prototype object keeps the plain-object JSON shape
// of snapshots and journal facts.

/** A null-prototype copy of `src` (own enumerable entries, `__proto__` included). */
export function dict<T>(src?: Readonly<Record<string, T>> | null): Record<string, T> {
  const out = Object.create(null) as Record<string, T>;
  if (src) for (const k of Object.keys(src)) out[k] = src[k]!;
  return out;
}

/** `obj[key]` if `key` is an own property, else undefined. */
export function own<T>(obj: Readonly<Record<string, T>> | null | undefined, key: string): T | undefined {
  return obj != null && Object.hasOwn(obj, key) ? obj[key] : undefined;
}
