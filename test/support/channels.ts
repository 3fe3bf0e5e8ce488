// Channels with members, made over HTTP by the owner (or another caller).
import type { Creds } from "./embedded.ts";
import { assertSuccess, type ApiHolder } from "./zulip-asserts.ts";

let seq = 0;

/** A name no other call in this process gives: `<prefix> <n>`. */
export function uniq(prefix = "chan"): string {
  return `${prefix} ${++seq}`;
}

/** Users as their ids: tests pass either. */
function ids(users: (number | { userId: number })[]): number[] {
  return users.map((u) => (typeof u === "number" ? u : u.userId));
}

/**
 * POST /channels/create with these subscribers; `params` adds to or
 * overrides the request (its `name` too: a fresh uniq("chan") otherwise).
 */
export async function createChannel(
  on: ApiHolder,
  subscribers: (number | { userId: number })[],
  params: Record<string, unknown> = {},
  auth?: Creds,
): Promise<{ id: number; name: string }> {
  const name = (params.name as string | undefined) ?? uniq();
  const r = assertSuccess(
    await on.api("POST", "/channels/create", { name, subscribers: ids(subscribers), ...params }, auth),
  );
  return { id: r.id as number, name };
}

/**
 * POST /users/me/subscriptions to `name` (the channel is created when it is
 * new; `params.principals` subscribes others), then the channel's id.
 */
export async function subscribeTo(
  on: ApiHolder,
  name: string,
  params: Record<string, unknown> = {},
  auth?: Creds,
): Promise<number> {
  assertSuccess(
    await on.api("POST", "/users/me/subscriptions", { subscriptions: [{ name }], ...params }, auth),
  );
  return assertSuccess(await on.api("GET", "/get_stream_id", { stream: name }, auth)).stream_id as number;
}
