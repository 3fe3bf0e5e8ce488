// Zulip's `authenticate_by_username` rule: at most 5 password attempts per
// username in a sliding 30-minute window. Every attempt counts when it is
// let through (Zulip's rate_limit_request records before authenticating); a
// successful login clears the username's record.

export const AUTH_ATTEMPTS_MAX = 5;
export const AUTH_WINDOW_MS = 30 * 60 * 1000;
/** Bound on remembered usernames, so guessing random names cannot grow memory without limit. */
const MAX_KEYS = 50_000;

export type AttemptResult = { allowed: true } | { allowed: false; retryAfter: number };

export class AuthRateLimiter {
  private readonly byKey = new Map<string, number[]>();

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

  get size(): number {
    return this.byKey.size;
  }
}
