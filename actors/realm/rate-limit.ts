// Zulip's `authenticate_by_username` rule: at most 5 password attempts per
// username in a sliding 30-minute window. Every attempt counts when it is
// let through (Zulip's rate_limit_request records before authenticating); a
// successful login clears the username's record.

export const AUTH_ATTEMPTS_MAX = 5;
export const AUTH_WINDOW_MS = 30 * 60 * 1000;
/** Bound on remembered usernames, so guessing random names cannot grow memory without limit. */
const MAX_KEYS = 50_000;
/** How long an attempt the realm let through may wait for its password check. */
export const ADMISSION_MS = 60_000;

export type AttemptResult = { allowed: true } | { allowed: false; retryAfter: number };

export class AuthRateLimiter {
  private readonly byKey = new Map<string, number[]>();
  /**
   * Attempts that passed the realm's checks, awaiting the user actor's
   * password check (expiry times by username): the password is checked only
   * for an attempt this limiter counted, so a request straight to the user
   * actor cannot guess passwords past the limit.
   */
  private readonly admitted = new Map<string, number[]>();

  /** Check the limit for `username` and, if allowed, record this attempt. */
  attempt(username: string, now: number): AttemptResult {
    const key = username.toLowerCase();
    const times = (this.byKey.get(key) ?? []).filter((t) => t > now - AUTH_WINDOW_MS);
    if (times.length >= AUTH_ATTEMPTS_MAX) {
      this.byKey.set(key, times);
      // Seconds until the oldest attempt leaves the window (a float, like Zulip's).
      return { allowed: false, retryAfter: (times[0]! + AUTH_WINDOW_MS - now) / 1000 };
    }
    times.push(now);
    this.byKey.delete(key); // re-insert so Map order is least recently used first
    this.byKey.set(key, times);
    if (this.byKey.size > MAX_KEYS) this.byKey.delete(this.byKey.keys().next().value!);
    return { allowed: true };
  }

  clear(username: string): void {
    this.byKey.delete(username.toLowerCase());
  }

  /** The counted attempt of `username` passed every check but the password. */
  admit(username: string, now: number): void {
    const key = username.toLowerCase();
    const until = (this.admitted.get(key) ?? []).filter((t) => t > now);
    until.push(now + ADMISSION_MS);
    this.admitted.delete(key);
    this.admitted.set(key, until);
    if (this.admitted.size > MAX_KEYS) this.admitted.delete(this.admitted.keys().next().value!);
  }

  /** Use up one admitted attempt of `username`; false when there is none. */
  consume(username: string, now: number): boolean {
    const key = username.toLowerCase();
    const until = (this.admitted.get(key) ?? []).filter((t) => t > now);
    const ok = until.shift() !== undefined;
    if (until.length) this.admitted.set(key, until);
    else this.admitted.delete(key);
    return ok;
  }

  get size(): number {
    return this.byKey.size;
  }
}
