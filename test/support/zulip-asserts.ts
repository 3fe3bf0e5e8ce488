// Zulip's reply envelopes as assertions, users of every role, and event
// queues read over HTTP (register, poll until the events match). Tests
// import these through test/support/index.ts.

import assert from "node:assert/strict";
import type { ApiResult, Creds, EmbeddedHandle } from "./embedded.ts";

/** What these helpers need of a server: its API (an embedded server, a chat server, a cluster's gateway). */
export type ApiHolder = Pick<EmbeddedHandle, "api">;

/** An API reply or event as tests read it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Ev = any;

/** Zulip's success envelope (200, result "success", msg ""); returns the body. */
export function assertSuccess(res: ApiResult): Ev {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.result, "success");
  assert.equal(res.body.msg, "");
  return res.body;
}

/** Zulip's error envelope with this message, code and status. */
export function assertError(res: ApiResult, msg: string, code = "BAD_REQUEST", status = 400): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.result, "error");
  assert.equal(res.body.msg, msg);
  assert.equal(res.body.code, code);
}

/** Short names of the two assertions, for tests that chain them: `ok(await api(...)).id`. */
export const ok = assertSuccess;
export const err = assertError;

// ---- users -----------------------------------------------------------------------

/** Zulip's role values (UserProfile.ROLE_*). */
export const ROLE = { owner: 100, admin: 200, moderator: 300, member: 400, guest: 600 } as const;
export type RoleName = keyof typeof ROLE;

export interface Member extends Creds {
  userId: number;
}

let seq = 0;

/** A fresh user with the given role (the owner creates them and promotes them over HTTP). */
export async function newUser(srv: ApiHolder, role: number | RoleName = 400, name?: string): Promise<Member> {
  const n = ++seq;
  const email = `u${n}-${process.pid}@example.com`;
  const password = `pw-${n}-secret`;
  const created = await srv.api("POST", "/users", { email, password, full_name: name ?? `User ${n}` });
  assertSuccess(created);
  const key = await srv.api("POST", "/fetch_api_key", { username: email, password }, null);
  assertSuccess(key);
  const userId = created.body.user_id as number;
  const value = typeof role === "number" ? role : ROLE[role];
  if (value !== ROLE.member) assertSuccess(await srv.api("PATCH", `/users/${userId}`, { role: value }));
  return { email, apiKey: key.body.api_key, userId };
}

/** A generic bot owned by `auth` (the owner by default), with its credentials. */
export async function newBot(srv: ApiHolder, auth?: Creds, name?: string): Promise<Member> {
  const n = ++seq;
  const bot = await srv.api(
    "POST",
    "/bots",
    { full_name: name ?? `Bot ${n}`, short_name: `bot${n}x${process.pid}` },
    auth,
  );
  assertSuccess(bot);
  const userId = bot.body.user_id as number;
  const email = (await srv.api("GET", `/users/${userId}`)).body.user.email as string;
  return { email, apiKey: bot.body.api_key, userId };
}

/** One user of each role, plus a generic bot owned by the owner. */
export async function roleMatrix(
  srv: Pick<EmbeddedHandle, "api" | "owner">,
): Promise<Record<string, Member>> {
  return {
    owner: srv.owner,
    admin: await newUser(srv, "admin"),
    moderator: await newUser(srv, "moderator"),
    member: await newUser(srv, "member"),
    guest: await newUser(srv, "guest"),
    bot: await newBot(srv, undefined, `Matrix ${++seq}`),
  };
}

// ---- event queues ----------------------------------------------------------------

export interface Queue {
  id: string;
  last: number;
  auth: Creds;
}

/**
 * POST /register as `auth`: for these event types (all when omitted), or
 * with these register parameters.
 */
export async function openQueue(
  srv: ApiHolder,
  auth: Creds,
  what?: string[] | Record<string, unknown>,
): Promise<Queue> {
  const params = Array.isArray(what) ? { event_types: what } : (what ?? {});
  const r = await srv.api("POST", "/register", params, auth);
  assertSuccess(r);
  return { id: r.body.queue_id, last: r.body.last_event_id, auth };
}

/** Events queued since the last read (non-blocking), heartbeats left out. */
export async function drain(srv: ApiHolder, q: Queue): Promise<Ev[]> {
  const r = await srv.api(
    "GET",
    "/events",
    { queue_id: q.id, last_event_id: q.last, dont_block: true },
    q.auth,
  );
  assertSuccess(r);
  const events = (r.body.events as Ev[]).filter((e) => e.type !== "heartbeat");
  for (const e of r.body.events) q.last = Math.max(q.last, e.id);
  return events;
}

/**
 * Events until `pred` holds for the collected list, or about a second has
 * passed (events are delivered after the reply); the list either way.
 */
export async function eventsUntil(srv: ApiHolder, q: Queue, pred: (evs: Ev[]) => boolean): Promise<Ev[]> {
  const all: Ev[] = [];
  for (let i = 0; i < 40; i++) {
    all.push(...(await drain(srv, q)));
    if (pred(all)) return all;
    await new Promise((r) => setTimeout(r, 25));
  }
  return all;
}

/** The first event that matches; fails the test when none came within `timeoutMs` (default 5 s). */
export async function nextEvent(
  srv: ApiHolder,
  q: Queue,
  match: (e: Ev) => boolean,
  opts: { timeoutMs?: number } = {},
): Promise<Ev> {
  const end = Date.now() + (opts.timeoutMs ?? 5000);
  const seen: Ev[] = [];
  for (;;) {
    for (const e of await drain(srv, q)) {
      if (match(e)) return e;
      seen.push(e);
    }
    if (Date.now() >= end) assert.fail(`no matching event; got ${JSON.stringify(seen).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
