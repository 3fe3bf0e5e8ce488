// Shared helpers for the users-area black-box tests (bots, profile fields,
// saved snippets, push, rate limit): Zulip-style assertions, users of a
// given role, and an event queue reader.

import assert from "node:assert/strict";
import type { ApiResult, Creds, EmbeddedHandle } from "./embedded.ts";

/** What these helpers need of a server: its API (an EmbeddedHandle, or a cluster's gateway). */
export type ApiHolder = Pick<EmbeddedHandle, "api">;

export function assertSuccess(res: ApiResult): void {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.result, "success");
  assert.equal(res.body.msg, "");
}

export function assertError(res: ApiResult, msg: string, code = "BAD_REQUEST", status = 400): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.result, "error");
  assert.equal(res.body.msg, msg);
  assert.equal(res.body.code, code);
}

export interface Member extends Creds {
  userId: number;
}

let seq = 0;

/** A fresh user with the given role (the owner promotes them over HTTP). */
export async function newUser(srv: ApiHolder, role = 400, name?: string): Promise<Member> {
  const n = ++seq;
  const email = `u${n}-${process.pid}@example.com`;
  const password = `pw-${n}-secret`;
  const created = await srv.api("POST", "/users", { email, password, full_name: name ?? `User ${n}` });
  assertSuccess(created);
  const key = await srv.api("POST", "/fetch_api_key", { username: email, password }, null);
  assertSuccess(key);
  const userId = created.body.user_id as number;
  if (role !== 400) assertSuccess(await srv.api("PATCH", `/users/${userId}`, { role }));
  return { email, apiKey: key.body.api_key, userId };
}

/** One user of each role, plus a generic bot owned by the owner. */
export async function roleMatrix(srv: EmbeddedHandle): Promise<Record<string, Creds>> {
  const bot = await srv.api("POST", "/bots", { full_name: `Matrix ${++seq}`, short_name: `matrix${seq}` });
  assertSuccess(bot);
  const botEmail = (await srv.api("GET", `/users/${bot.body.user_id}`)).body.user.email as string;
  return {
    owner: srv.owner,
    admin: await newUser(srv, 200),
    moderator: await newUser(srv, 300),
    member: await newUser(srv, 400),
    guest: await newUser(srv, 600),
    bot: { email: botEmail, apiKey: bot.body.api_key },
  };
}

export interface Queue {
  id: string;
  last: number;
  auth: Creds;
}

export async function openQueue(srv: ApiHolder, auth: Creds, eventTypes?: string[]): Promise<Queue> {
  const params: Record<string, unknown> = {};
  if (eventTypes) params.event_types = eventTypes;
  const r = await srv.api("POST", "/register", params, auth);
  assertSuccess(r);
  return { id: r.body.queue_id, last: r.body.last_event_id, auth };
}

/** Events queued since the last read (non-blocking). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function drain(srv: ApiHolder, q: Queue): Promise<any[]> {
  const r = await srv.api(
    "GET",
    "/events",
    { queue_id: q.id, last_event_id: q.last, dont_block: true },
    q.auth,
  );
  assertSuccess(r);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const events = (r.body.events as any[]).filter((e) => e.type !== "heartbeat");
  for (const e of r.body.events) q.last = Math.max(q.last, e.id);
  return events;
}

/** An event as tests read it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Ev = any;

/** Events until `pred` holds for the collected list (events are delivered after the reply). */
export async function eventsUntil(srv: ApiHolder, q: Queue, pred: (evs: Ev[]) => boolean): Promise<Ev[]> {
  const all: Ev[] = [];
  for (let i = 0; i < 40; i++) {
    all.push(...(await drain(srv, q)));
    if (pred(all)) return all;
    await new Promise((r) => setTimeout(r, 25));
  }
  return all;
}
