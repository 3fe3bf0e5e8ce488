// HTTP helpers for seeding benchmark data: form-encoded Zulip API calls
// with HTTP Basic auth, and a bounded-concurrency map.
import { OWNER } from "./servers.ts";

export type Auth = string; // "Basic ..."

export function basic(email: string, apiKey: string): Auth {
  return "Basic " + Buffer.from(`${email}:${apiKey}`).toString("base64");
}

function form(params: Record<string, unknown>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    u.set(k, typeof v === "string" ? v : JSON.stringify(v));
  }
  return u.toString();
}

/** One API call; throws with the body on a non-2xx answer. */
export async function api(
  url: string,
  auth: Auth | null,
  method: string,
  path: string,
  params: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = auth;
  let target = `${url}/api/v1${path}`;
  let body: string | undefined;
  if (method === "GET" || method === "DELETE") {
    const q = form(params);
    if (q) target += `?${q}`;
  } else {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = form(params);
  }
  const res = await fetch(target, { method, headers, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Map with at most `limit` calls in flight. */
export async function pool<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The bootstrap owner's credentials (retries while the server settles). */
export async function ownerAuth(url: string): Promise<{ auth: Auth; userId: number }> {
  for (let i = 0; ; i++) {
    try {
      const r = await api(url, null, "POST", "/fetch_api_key", {
        username: OWNER.email,
        password: OWNER.password,
      });
      return { auth: basic(OWNER.email, r.api_key as string), userId: r.user_id as number };
    } catch (err) {
      if (i >= 50) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

export interface BenchUser {
  userId: number;
  email: string;
  auth: Auth;
}

/**
 * `n` users that can authenticate, made as generic bots: a bot's API key
 * comes back from POST /bots, while a human user costs a ~50 ms scrypt
 * hash to create and another to fetch its key, and the realm actor creates
 * users one at a time (1,000 humans: over a minute of seeding).
 */
export async function createBots(url: string, owner: Auth, n: number, tag: string): Promise<BenchUser[]> {
  const made = await pool(
    Array.from({ length: n }, (_, i) => i),
    16,
    async (i) =>
      (await api(url, owner, "POST", "/bots", {
        full_name: `Bench ${tag} ${i}`,
        short_name: `bench-${tag}-${i}`,
      })) as { user_id: number; api_key: string },
  );
  // POST /bots does not echo the email; GET /bots lists it.
  const listed = (await api(url, owner, "GET", "/bots")).bots as { user_id: number; username: string }[];
  const emailOf = new Map(listed.map((b) => [b.user_id, b.username]));
  return made.map((m) => {
    const email = emailOf.get(m.user_id);
    if (!email) throw new Error(`bot ${m.user_id} missing from GET /bots`);
    return { userId: m.user_id, email, auth: basic(email, m.api_key) };
  });
}

/**
 * A public channel with these subscribers: created with the first, the
 * rest subscribed in batches (one request with 1,000 principals can pass
 * the server's 10 s actor-call deadline on a loaded machine).
 */
export async function channelWith(
  url: string,
  owner: Auth,
  name: string,
  userIds: number[],
): Promise<number> {
  const [first, ...rest] = userIds;
  const { id } = (await api(url, owner, "POST", "/channels/create", { name, subscribers: [first] })) as {
    id: number;
  };
  for (let i = 0; i < rest.length; i += 100) {
    await api(url, owner, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: rest.slice(i, i + 100),
    });
  }
  return id;
}
