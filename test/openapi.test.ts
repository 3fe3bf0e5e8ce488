// OpenAPI conformance: real requests against an embedded server, every
// response body validated against Zulip's published schema
// (test/facts/zulip-openapi.json) for its path, method and
// status, the way Zulip's own test suite checks its responses
// (validate_test_response: every key documented, every type right). The
// events that all these requests generate are fetched from one queue and
// each validated against the GET /events event schemas.
//
// Deviations (fields Zulip added after 10.2; our server reports a later
// feature level) live in test/openapi-deviations.ts.
//
// Two coverage checks close the loop: every route the gateway serves under
// /api/v1 has a success and an error case here, and every endpoint the API
// spec lists exists on the server.
//
//   node --import tsx --test test/openapi.test.ts

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { routes } from "../gateway/routes/index.ts";
import {
  basicAuth,
  newUser,
  startEmbedded,
  type ApiResult,
  type Creds,
  type EmbeddedHandle,
  type Member,
} from "./support/index.ts";
import { OpenApiSpec, type SchemaIssue } from "./support/openapi.ts";
import { deviations } from "./openapi-deviations.ts";

/** The operations the original API contract names (test/facts/README.md). */
const CONTRACT_ROUTES = fileURLToPath(new URL("./facts/contract-routes.json", import.meta.url));

const spec = new OpenApiSpec();

/** Ids made along the way; later cases read them. */
interface Fx {
  member: Member;
  spare: Member;
  channelId: number;
  channelName: string;
  channel2Id: number;
  messageId: number;
  dmId: number;
  groupId: number;
  group2Id: number;
  adminsGroupId: number;
  filterId: number;
  fieldId: number;
  snippetId: number;
  draftId: number;
  botId: number;
  queueId: string;
  deviceId: number;
  playgroundId: number;
  [k: string]: unknown;
}

type Val<T> = T | ((fx: Fx) => T);

interface Case {
  method: string;
  path: Val<string>;
  params?: Val<Record<string, unknown>>;
  /** undefined: the owner; null: anonymous; or a fixture user. */
  auth?: null | ((fx: Fx) => Creds);
  status: number;
  /** Multipart file upload (custom emoji). */
  file?: boolean;
  save?: (body: Record<string, unknown>, fx: Fx) => void;
}

/** Test names show fixture paths as placeholders: {channelId}, {member.userId}. */
const LABELS = new Proxy({} as Fx, {
  get: (_t, k) => (k === "member" || k === "spare" ? { userId: `{${String(k)}.userId}` } : `{${String(k)}}`),
});

function pathLabel(path: (fx: Fx) => string): string {
  try {
    return path(LABELS);
  } catch {
    return "{fixture}"; // reads the server handle, which does not exist yet
  }
}

let srv: EmbeddedHandle;
const fx = {} as Fx;
/** Every (route, outcome) seen, for the coverage test. */
const seen = new Map<string, { ok: boolean; err: boolean }>();

const PNG_1X1 = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

function val<T>(v: Val<T> | undefined, dflt: T): T {
  if (v === undefined) return dflt;
  return typeof v === "function" ? (v as (fx: Fx) => T)(fx) : v;
}

async function uploadEmoji(path: string, auth: Creds | null): Promise<ApiResult> {
  const form = new FormData();
  form.append("file", new Blob([PNG_1X1], { type: "image/png" }), "emoji.png");
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = basicAuth(auth);
  const res = await fetch(`${srv.baseUrl}/api/v1${path}`, { method: "POST", headers, body: form });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

/** The gateway route a request lands on (":x" one segment, "*" the rest). */
function routeOf(method: string, path: string): string | undefined {
  const segs = path.split("?", 1)[0]!.split("/");
  // Literal segments win: try routes with fewer parameters first.
  const candidates = routes
    .filter((r) => r.method === method && r.prefix === undefined)
    .sort((a, b) => (a.path.match(/[:*]/g)?.length ?? 0) - (b.path.match(/[:*]/g)?.length ?? 0));
  for (const r of candidates) {
    const pat = r.path.split("/");
    let ok = true;
    for (let i = 0; i < pat.length; i++) {
      const p = pat[i]!;
      if (p === "*") break;
      if (i >= segs.length || (!p.startsWith(":") && p !== segs[i])) {
        ok = false;
        break;
      }
      if (i === pat.length - 1 && pat.length !== segs.length) ok = false;
    }
    if (ok) return `${method} ${r.path}`;
  }
  return undefined;
}

function fmt(issues: SchemaIssue[]): string {
  return issues.map((i) => `  ${i.pointer || "(root)"}: ${i.message}`).join("\n");
}

async function run(c: Case): Promise<ApiResult> {
  const path = val(c.path, "");
  const params = val(c.params, {});
  const auth = c.auth === undefined ? srv.owner : c.auth === null ? null : c.auth(fx);
  const res = c.file ? await uploadEmoji(path, auth) : await srv.api(c.method, path, params, auth);
  assert.equal(res.status, c.status, `${c.method} ${path}: ${JSON.stringify(res.body)}`);
  const route = routeOf(c.method, path);
  if (route !== undefined) {
    const s = seen.get(route) ?? { ok: false, err: false };
    if (res.status === 200) s.ok = true;
    else s.err = true;
    seen.set(route, s);
  }
  if (c.save) c.save(res.body, fx);
  const v = spec.validate(c.method, path, res.status, res.body, deviations);
  if (v.issues.length > 0) {
    assert.fail(
      `${c.method} ${path} -> ${res.status} against ${v.template}:\n${fmt(v.issues)}\nbody: ${JSON.stringify(res.body).slice(0, 2000)}`,
    );
  }
  return res;
}

/** Routes with no way to fail: no auth, no parameters. */
const NO_ERROR_POSSIBLE = new Set(["GET /server_settings"]);

const spare = (f: Fx): Creds => f.spare;
const BAD_ID = 987654;
const APNS_TOKEN = "c0ffee".repeat(10) + "abcd";

// In order: later cases use what earlier ones made.
const cases: Case[] = [
  // --- server, auth, register, events
  { method: "GET", path: "/server_settings", auth: null, status: 200 },
  {
    method: "POST",
    path: "/fetch_api_key",
    auth: null,
    params: () => ({ username: srv.owner.email, password: srv.owner.password }),
    status: 200,
  },
  {
    method: "POST",
    path: "/fetch_api_key",
    auth: null,
    params: () => ({ username: srv.owner.email, password: "wrong" }),
    status: 401,
  },
  { method: "POST", path: "/fetch_api_key", auth: null, params: { username: "x@example.com" }, status: 400 },
  {
    method: "POST",
    path: "/register",
    params: {
      apply_markdown: true,
      client_gravatar: false,
      include_subscribers: true,
      client_capabilities: { notification_settings_null: true, bulk_message_deletion: true },
    },
    status: 200,
    save: (b, f) => {
      f.queueId = b.queue_id as string;
    },
  },
  { method: "POST", path: "/register", params: { event_types: "not json" }, status: 400 },
  // No spectator access in this realm: anonymous register is refused before its parameters.
  { method: "POST", path: "/register", auth: null, params: { client_gravatar: true }, status: 401 },
  {
    method: "GET",
    path: "/events",
    params: (f) => ({ queue_id: f.queueId, last_event_id: -1, dont_block: true }),
    status: 200,
  },
  { method: "GET", path: "/events", params: { queue_id: "nope", last_event_id: -1 }, status: 400 },

  // --- users
  { method: "GET", path: "/users/me", status: 200 },
  { method: "GET", path: "/users/me", auth: null, status: 401 },
  { method: "GET", path: "/users", params: { include_custom_profile_fields: true }, status: 200 },
  { method: "GET", path: "/users", params: { user_ids: "[1" }, status: 400 },
  {
    method: "POST",
    path: "/users",
    params: { email: "made@example.com", password: "made-password-1", full_name: "Made User" },
    status: 200,
    save: (b, f) => {
      f.madeId = b.user_id;
    },
  },
  {
    method: "POST",
    path: "/users",
    params: { email: "not-an-email", password: "x", full_name: "X" },
    status: 400,
  },
  { method: "GET", path: (f) => `/users/${f.member.userId}`, status: 200 },
  { method: "GET", path: `/users/${BAD_ID}`, status: 400 },
  {
    method: "PATCH",
    path: (f) => `/users/${f.member.userId}`,
    params: { full_name: "Mem Ber" },
    status: 200,
  },
  { method: "PATCH", path: `/users/${BAD_ID}`, params: { full_name: "Nobody" }, status: 400 },
  { method: "DELETE", path: (f) => `/users/${f.madeId}`, status: 200 },
  { method: "DELETE", path: `/users/${BAD_ID}`, status: 400 },
  { method: "POST", path: (f) => `/users/${f.madeId}/reactivate`, status: 200 },
  { method: "POST", path: `/users/${BAD_ID}/reactivate`, status: 400 },
  { method: "DELETE", path: "/users/me", auth: null, status: 401 },
  { method: "DELETE", path: "/users/me", auth: spare, status: 200 },

  // --- settings and status
  {
    method: "PATCH",
    path: "/settings",
    params: { twenty_four_hour_time: true, color_scheme: 2 },
    status: 200,
  },
  { method: "PATCH", path: "/settings", params: { color_scheme: 9 }, status: 400 },
  { method: "PATCH", path: "/settings/display", params: { emojiset: "google" }, status: 200 },
  { method: "PATCH", path: "/settings/display", params: { emojiset: "nope" }, status: 400 },
  { method: "PATCH", path: "/settings/notifications", params: { enable_sounds: false }, status: 200 },
  { method: "PATCH", path: "/settings/notifications", params: { enable_sounds: "maybe" }, status: 400 },
  {
    method: "POST",
    path: "/users/me/status",
    params: { status_text: "on a break", emoji_name: "car" },
    status: 200,
  },
  { method: "POST", path: "/users/me/status", params: {}, status: 400 },

  // --- presence
  { method: "POST", path: "/users/me/presence", params: { status: "active" }, status: 200 },
  { method: "POST", path: "/users/me/presence", params: { status: "sleepy" }, status: 400 },
  { method: "GET", path: "/realm/presence", status: 200 },
  { method: "GET", path: "/realm/presence", auth: null, status: 401 },
  { method: "GET", path: () => `/users/${srv.owner.userId}/presence`, status: 200 },
  { method: "GET", path: `/users/${BAD_ID}/presence`, status: 400 },

  // --- channels and subscriptions
  {
    method: "POST",
    path: "/channels/create",
    params: (f) => ({
      name: "conformance",
      subscribers: [srv.owner.userId, f.member.userId],
      description: "d",
    }),
    status: 200,
    save: (b, f) => {
      f.channelId = b.id as number;
      f.channelName = "conformance";
    },
  },
  { method: "POST", path: "/channels/create", params: { name: "x", subscribers: [BAD_ID] }, status: 400 },
  {
    method: "POST",
    path: "/users/me/subscriptions",
    params: { subscriptions: [{ name: "conformance-two", description: "second" }] },
    status: 200,
  },
  { method: "POST", path: "/users/me/subscriptions", params: { subscriptions: "[{" }, status: 400 },
  {
    method: "GET",
    path: "/get_stream_id",
    params: { stream: "conformance-two" },
    status: 200,
    save: (b, f) => {
      f.channel2Id = b.stream_id as number;
    },
  },
  { method: "GET", path: "/get_stream_id", params: { stream: "no such channel" }, status: 400 },
  { method: "GET", path: "/users/me/subscriptions", params: { include_subscribers: true }, status: 200 },
  { method: "GET", path: "/users/me/subscriptions", auth: null, status: 401 },
  { method: "GET", path: "/streams", params: { include_all: true }, status: 200 },
  { method: "GET", path: "/streams", params: { include_public: "perhaps" }, status: 400 },
  { method: "GET", path: (f) => `/streams/${f.channelId}`, status: 200 },
  { method: "GET", path: `/streams/${BAD_ID}`, status: 400 },
  { method: "GET", path: (f) => `/streams/${f.channelId}/members`, status: 200 },
  { method: "GET", path: `/streams/${BAD_ID}/members`, status: 400 },
  {
    method: "PATCH",
    path: (f) => `/streams/${f.channelId}`,
    params: { description: "new description" },
    status: 200,
  },
  { method: "PATCH", path: `/streams/${BAD_ID}`, params: { description: "x" }, status: 400 },
  {
    method: "PATCH",
    path: (f) => `/users/me/subscriptions/${f.channelId}`,
    params: { property: "pin_to_top", value: true },
    status: 200,
  },
  {
    method: "PATCH",
    path: (f) => `/users/me/subscriptions/${f.channelId}`,
    params: { property: "no_such_property", value: true },
    status: 400,
  },
  {
    method: "POST",
    path: "/users/me/subscriptions/properties",
    params: (f) => ({ subscription_data: [{ stream_id: f.channelId, property: "color", value: "#aabbcc" }] }),
    status: 200,
  },
  {
    method: "POST",
    path: "/users/me/subscriptions/properties",
    params: { subscription_data: [{ stream_id: BAD_ID, property: "color", value: "#aabbcc" }] },
    status: 400,
  },

  // --- messages
  {
    method: "POST",
    path: "/messages",
    params: (f) => ({
      type: "stream",
      to: f.channelId,
      topic: "greetings",
      content: "hello **world** #**conformance**",
    }),
    status: 200,
    save: (b, f) => {
      f.messageId = b.id as number;
    },
  },
  {
    method: "POST",
    path: "/messages",
    params: (f) => ({ type: "direct", to: [f.member.userId], content: "psst" }),
    status: 200,
    save: (b, f) => {
      f.dmId = b.id as number;
    },
  },
  {
    method: "POST",
    path: "/messages",
    params: { type: "stream", to: "no such channel", topic: "t", content: "x" },
    status: 400,
  },
  { method: "POST", path: "/messages", params: { type: "stream", topic: "t" }, status: 400 },
  {
    method: "GET",
    path: "/messages",
    params: (f) => ({
      anchor: "newest",
      num_before: 10,
      num_after: 0,
      narrow: [{ operator: "channel", operand: f.channelId }],
    }),
    status: 200,
  },
  {
    method: "GET",
    path: "/messages",
    params: { anchor: "sideways", num_before: 1, num_after: 0 },
    status: 400,
  },
  { method: "GET", path: (f) => `/messages/${f.messageId}`, status: 200 },
  { method: "GET", path: `/messages/${BAD_ID}`, status: 400 },
  {
    method: "PATCH",
    path: (f) => `/messages/${f.messageId}`,
    params: { content: "hello again", topic: "greetings" },
    status: 200,
  },
  { method: "PATCH", path: `/messages/${BAD_ID}`, params: { content: "x" }, status: 400 },
  {
    method: "POST",
    path: (f) => `/messages/${f.messageId}/reactions`,
    params: { emoji_name: "octopus" },
    status: 200,
  },
  {
    method: "POST",
    path: (f) => `/messages/${f.messageId}/reactions`,
    params: { emoji_name: "no_such_emoji_zz" },
    status: 400,
  },
  {
    method: "DELETE",
    path: (f) => `/messages/${f.messageId}/reactions`,
    params: { emoji_name: "octopus" },
    status: 200,
  },
  { method: "DELETE", path: `/messages/${BAD_ID}/reactions`, params: { emoji_name: "octopus" }, status: 400 },
  // --- typing
  { method: "POST", path: "/typing", params: (f) => ({ op: "start", to: [f.member.userId] }), status: 200 },
  {
    method: "POST",
    path: "/typing",
    params: (f) => ({ type: "channel", op: "stop", stream_id: f.channelId, topic: "greetings" }),
    status: 200,
  },
  { method: "POST", path: "/typing", params: { op: "start", to: [BAD_ID] }, status: 400 },
  { method: "POST", path: "/typing", params: { type: "stream", op: "start", topic: "t" }, status: 400 },
  { method: "POST", path: (f) => `/messages/${f.messageId}/typing`, params: { op: "start" }, status: 200 },
  { method: "POST", path: `/messages/${BAD_ID}/typing`, params: { op: "start" }, status: 400 },
  {
    method: "POST",
    path: "/messages/flags",
    params: (f) => ({ messages: [f.messageId], op: "add", flag: "starred" }),
    status: 200,
  },
  {
    method: "POST",
    path: "/messages/flags",
    params: { messages: [1], op: "toggle", flag: "starred" },
    status: 400,
  },
  {
    method: "POST",
    path: "/messages/flags/narrow",
    params: { anchor: "oldest", num_before: 0, num_after: 50, narrow: [], op: "add", flag: "read" },
    status: 200,
  },
  {
    method: "POST",
    path: "/messages/flags/narrow",
    params: { anchor: "oldest", op: "add", flag: "read" },
    status: 400,
  },
  { method: "POST", path: "/mark_all_as_read", status: 200 },
  { method: "POST", path: "/mark_all_as_read", auth: null, status: 401 },
  { method: "POST", path: "/mark_stream_as_read", params: (f) => ({ stream_id: f.channelId }), status: 200 },
  { method: "POST", path: "/mark_stream_as_read", params: { stream_id: BAD_ID }, status: 400 },
  {
    method: "POST",
    path: "/mark_topic_as_read",
    params: (f) => ({ stream_id: f.channelId, topic_name: "GREETINGS" }),
    status: 200,
  },
  {
    method: "POST",
    path: "/mark_topic_as_read",
    params: (f) => ({ stream_id: f.channelId, topic_name: "no such topic" }),
    status: 400,
  },
  // message extras (gateway/routes/message-extras.ts)
  { method: "GET", path: (f) => `/messages/${f.messageId}/history`, status: 200 },
  { method: "GET", path: `/messages/${BAD_ID}/history`, status: 400 },
  { method: "POST", path: "/messages/render", params: { content: "**foo** :octopus:" }, status: 200 },
  { method: "POST", path: "/messages/render", params: {}, status: 400 },
  { method: "GET", path: (f) => `/messages/${f.messageId}/read_receipts`, status: 200 },
  { method: "GET", path: `/messages/${BAD_ID}/read_receipts`, status: 400 },
  {
    method: "GET",
    path: "/messages/matches_narrow",
    params: (f) => ({ msg_ids: [f.messageId], narrow: [{ operator: "search", operand: "hello" }] }),
    status: 200,
  },
  { method: "GET", path: "/messages/matches_narrow", params: { narrow: [] }, status: 400 },
  { method: "GET", path: (f) => `/users/me/${f.channelId}/topics`, status: 200 },
  { method: "GET", path: `/users/me/${BAD_ID}/topics`, status: 400 },
  {
    method: "POST",
    path: "/user_topics",
    params: (f) => ({ stream_id: f.channelId, topic: "greetings", visibility_policy: 1 }),
    status: 200,
  },
  {
    method: "POST",
    path: "/user_topics",
    params: { stream_id: BAD_ID, topic: "t", visibility_policy: 1 },
    status: 400,
  },
  {
    method: "PATCH",
    path: "/users/me/subscriptions/muted_topics",
    params: (f) => ({ stream_id: f.channelId, topic: "quiet please", op: "add" }),
    status: 200,
  },
  {
    method: "PATCH",
    path: "/users/me/subscriptions/muted_topics",
    params: { stream_id: BAD_ID, topic: "t", op: "add" },
    status: 400,
  },
  { method: "DELETE", path: (f) => `/messages/${f.dmId}`, status: 200 },
  { method: "DELETE", path: `/messages/${BAD_ID}`, status: 400 },

  // --- user groups
  {
    method: "GET",
    path: "/user_groups",
    status: 200,
    save: (b, f) => {
      const groups = b.user_groups as { id: number; name: string }[];
      f.adminsGroupId = groups.find((g) => g.name === "role:administrators")!.id;
    },
  },
  { method: "GET", path: "/user_groups", auth: null, status: 401 },
  {
    method: "POST",
    path: "/user_groups/create",
    params: () => ({ name: "conformers", description: "testers", members: [srv.owner.userId] }),
    status: 200,
    save: (b, f) => {
      f.groupId = b.group_id as number;
    },
  },
  {
    method: "POST",
    path: "/user_groups/create",
    params: () => ({ name: "conformers-two", description: "more", members: [] }),
    status: 200,
    save: (b, f) => {
      f.group2Id = b.group_id as number;
    },
  },
  {
    method: "POST",
    path: "/user_groups/create",
    params: { name: "bad", description: "", members: [BAD_ID] },
    status: 400,
  },
  {
    method: "PATCH",
    path: (f) => `/user_groups/${f.groupId}`,
    params: { description: "better testers" },
    status: 200,
  },
  { method: "PATCH", path: `/user_groups/${BAD_ID}`, params: { description: "x" }, status: 400 },
  {
    method: "POST",
    path: (f) => `/user_groups/${f.groupId}/members`,
    params: (f) => ({ add: [f.member.userId] }),
    status: 200,
  },
  { method: "POST", path: `/user_groups/${BAD_ID}/members`, params: { add: [1] }, status: 400 },
  { method: "GET", path: (f) => `/user_groups/${f.groupId}/members`, status: 200 },
  { method: "GET", path: `/user_groups/${BAD_ID}/members`, status: 400 },
  { method: "GET", path: (f) => `/user_groups/${f.groupId}/members/${f.member.userId}`, status: 200 },
  { method: "GET", path: (f) => `/user_groups/${BAD_ID}/members/${f.member.userId}`, status: 400 },
  {
    method: "POST",
    path: (f) => `/user_groups/${f.groupId}/subgroups`,
    params: (f) => ({ add: [f.group2Id] }),
    status: 200,
  },
  {
    method: "POST",
    path: (f) => `/user_groups/${f.groupId}/subgroups`,
    params: { add: [BAD_ID] },
    status: 400,
  },
  { method: "GET", path: (f) => `/user_groups/${f.groupId}/subgroups`, status: 200 },
  { method: "GET", path: `/user_groups/${BAD_ID}/subgroups`, status: 400 },
  { method: "POST", path: (f) => `/user_groups/${f.group2Id}/deactivate`, params: {}, status: 400 },
  {
    method: "POST",
    path: (f) => `/user_groups/${f.groupId}/subgroups`,
    params: (f) => ({ delete: [f.group2Id] }),
    status: 200,
  },
  { method: "POST", path: (f) => `/user_groups/${f.group2Id}/deactivate`, status: 200 },

  // --- realm settings
  {
    method: "PATCH",
    path: "/realm",
    params: (f) => ({ can_create_groups: { new: f.adminsGroupId } }),
    status: 200,
  },
  { method: "PATCH", path: "/realm", params: { can_create_groups: { new: BAD_ID } }, status: 400 },

  // --- linkifiers
  {
    method: "POST",
    path: "/realm/filters",
    params: { pattern: "#(?P<id>[0-9]+)", url_template: "https://tracker.example.com/issue/{id}" },
    status: 200,
    save: (b, f) => {
      f.filterId = b.id as number;
    },
  },
  {
    method: "POST",
    path: "/realm/filters",
    params: { pattern: "(", url_template: "https://x.example.com/" },
    status: 400,
  },
  { method: "GET", path: "/realm/linkifiers", status: 200 },
  { method: "GET", path: "/realm/linkifiers", auth: null, status: 401 },
  {
    method: "PATCH",
    path: (f) => `/realm/filters/${f.filterId}`,
    params: { pattern: "#(?P<id>[0-9]{2,})", url_template: "https://tracker.example.com/issue/{id}" },
    status: 200,
  },
  {
    method: "PATCH",
    path: `/realm/filters/${BAD_ID}`,
    params: { pattern: "#(?P<id>[0-9]+)", url_template: "https://tracker.example.com/issue/{id}" },
    status: 400,
  },
  {
    method: "PATCH",
    path: "/realm/linkifiers",
    params: (f) => ({ ordered_linkifier_ids: [f.filterId] }),
    status: 200,
  },
  { method: "PATCH", path: "/realm/linkifiers", params: { ordered_linkifier_ids: [BAD_ID] }, status: 400 },
  { method: "DELETE", path: (f) => `/realm/filters/${f.filterId}`, status: 200 },
  { method: "DELETE", path: `/realm/filters/${BAD_ID}`, status: 400 },

  // --- realm defaults of user settings, code playgrounds
  {
    method: "PATCH",
    path: "/realm/user_settings_defaults",
    params: { left_side_userlist: false },
    status: 200,
  },
  { method: "PATCH", path: "/realm/user_settings_defaults", params: { emojiset: "nope" }, status: 400 },
  {
    method: "POST",
    path: "/realm/playgrounds",
    params: {
      name: "Python",
      pygments_language: "Python",
      url_template: "https://py.example.com?code={code}",
    },
    status: 200,
    save: (b, f) => {
      f.playgroundId = b.id as number;
    },
  },
  {
    method: "POST",
    path: "/realm/playgrounds",
    params: { name: "Python", pygments_language: "Py<thon>", url_template: "https://py.example.com/{code}" },
    status: 400,
  },
  { method: "DELETE", path: (f) => `/realm/playgrounds/${f.playgroundId}`, status: 200 },
  { method: "DELETE", path: `/realm/playgrounds/${BAD_ID}`, status: 400 },

  // --- invitations
  {
    method: "POST",
    path: "/invites",
    params: { invitee_emails: "openapi-invitee@example.com", stream_ids: [], invite_as: 600 },
    status: 200,
  },
  { method: "POST", path: "/invites", params: { invitee_emails: "", stream_ids: [] }, status: 400 },
  {
    method: "POST",
    path: "/invites",
    params: { invitee_emails: "owner@example.com", stream_ids: [] },
    status: 400,
  },
  { method: "POST", path: "/invites/multiuse", params: { invite_expires_in_minutes: 60 }, status: 200 },
  { method: "POST", path: "/invites/multiuse", params: { invite_as: 123 }, status: 400 },
  {
    method: "GET",
    path: "/invites",
    status: 200,
    save: (b, f) => {
      const list = b.invites as { id: number; is_multiuse: boolean }[];
      f.inviteId = list.find((i) => !i.is_multiuse)!.id;
      f.multiuseId = list.find((i) => i.is_multiuse)!.id;
    },
  },
  { method: "GET", path: "/invites", auth: null, status: 401 },
  { method: "POST", path: (f) => `/invites/${f.inviteId}/resend`, status: 200 },
  { method: "POST", path: `/invites/${BAD_ID}/resend`, status: 400 },
  { method: "DELETE", path: (f) => `/invites/${f.inviteId}`, status: 200 },
  { method: "DELETE", path: `/invites/${BAD_ID}`, status: 400 },
  { method: "DELETE", path: (f) => `/invites/multiuse/${f.multiuseId}`, status: 200 },
  { method: "DELETE", path: (f) => `/invites/multiuse/${f.multiuseId}`, status: 400 },

  // --- custom profile fields
  {
    method: "POST",
    path: "/realm/profile_fields",
    params: { name: "Phone", hint: "a number", field_type: 1 },
    status: 200,
    save: (b, f) => {
      f.fieldId = b.id as number;
    },
  },
  { method: "POST", path: "/realm/profile_fields", params: { name: "Bad", field_type: 99 }, status: 400 },
  { method: "GET", path: "/realm/profile_fields", status: 200 },
  { method: "GET", path: "/realm/profile_fields", auth: null, status: 401 },
  {
    method: "PATCH",
    path: (f) => `/realm/profile_fields/${f.fieldId}`,
    params: { hint: "digits" },
    status: 200,
  },
  { method: "PATCH", path: `/realm/profile_fields/${BAD_ID}`, params: { hint: "x" }, status: 400 },
  { method: "PATCH", path: "/realm/profile_fields", params: (f) => ({ order: [f.fieldId] }), status: 200 },
  { method: "PATCH", path: "/realm/profile_fields", params: { order: "[" }, status: 400 },
  {
    method: "PATCH",
    path: "/users/me/profile_data",
    params: (f) => ({ data: [{ id: f.fieldId, value: "555-1234" }] }),
    status: 200,
  },
  {
    method: "PATCH",
    path: "/users/me/profile_data",
    params: { data: [{ id: BAD_ID, value: "x" }] },
    status: 400,
  },
  { method: "DELETE", path: "/users/me/profile_data", params: (f) => ({ data: [f.fieldId] }), status: 200 },
  { method: "DELETE", path: "/users/me/profile_data", params: { data: [BAD_ID] }, status: 400 },
  { method: "DELETE", path: (f) => `/realm/profile_fields/${f.fieldId}`, status: 200 },
  { method: "DELETE", path: `/realm/profile_fields/${BAD_ID}`, status: 400 },

  // --- saved snippets
  {
    method: "POST",
    path: "/saved_snippets",
    params: { title: "Greeting", content: "Hello there" },
    status: 200,
    save: (b, f) => {
      f.snippetId = b.saved_snippet_id as number;
    },
  },
  { method: "POST", path: "/saved_snippets", params: { title: "No content" }, status: 400 },
  { method: "GET", path: "/saved_snippets", status: 200 },
  { method: "GET", path: "/saved_snippets", auth: null, status: 401 },
  { method: "PATCH", path: (f) => `/saved_snippets/${f.snippetId}`, params: { title: "Hi" }, status: 200 },
  { method: "PATCH", path: `/saved_snippets/${BAD_ID}`, params: { title: "Hi" }, status: 404 },
  { method: "DELETE", path: (f) => `/saved_snippets/${f.snippetId}`, status: 200 },
  { method: "DELETE", path: `/saved_snippets/${BAD_ID}`, status: 404 },

  // --- drafts
  {
    method: "POST",
    path: "/drafts",
    params: (f) => ({
      drafts: [
        { type: "stream", to: [f.channelId], topic: "drafts", content: "A draft", timestamp: 1595479019 },
      ],
    }),
    status: 200,
    save: (b, f) => {
      f.draftId = (b.ids as number[])[0]!;
    },
  },
  {
    method: "POST",
    path: "/drafts",
    params: { drafts: [{ type: "stream", to: [], topic: "", content: "x" }] },
    status: 400,
  },
  { method: "GET", path: "/drafts", status: 200 },
  { method: "GET", path: "/drafts", auth: null, status: 401 },
  {
    method: "PATCH",
    path: (f) => `/drafts/${f.draftId}`,
    params: { draft: { type: "", to: [], topic: "", content: "Edited" } },
    status: 200,
  },
  {
    method: "PATCH",
    path: `/drafts/${BAD_ID}`,
    params: { draft: { type: "", to: [], topic: "", content: "x" } },
    status: 404,
  },
  { method: "DELETE", path: (f) => `/drafts/${f.draftId}`, status: 200 },
  { method: "DELETE", path: `/drafts/${BAD_ID}`, status: 404 },
  // --- scheduled messages
  {
    method: "POST",
    path: "/scheduled_messages",
    params: (f) => ({
      type: "stream",
      to: String(f.channelId),
      topic: "later",
      content: "Scheduled",
      scheduled_delivery_timestamp: 3165826990,
    }),
    status: 200,
    save: (b, f) => {
      f.scheduledId = b.scheduled_message_id as number;
    },
  },
  {
    method: "POST",
    path: "/scheduled_messages",
    params: { type: "direct", to: `[${BAD_ID}]`, content: "x", scheduled_delivery_timestamp: 3165826990 },
    status: 400,
  },
  { method: "GET", path: "/scheduled_messages", status: 200 },
  { method: "GET", path: "/scheduled_messages", auth: null, status: 401 },
  {
    method: "PATCH",
    path: (f) => `/scheduled_messages/${f.scheduledId as number}`,
    params: { content: "Edited" },
    status: 200,
  },
  { method: "PATCH", path: `/scheduled_messages/${BAD_ID}`, params: { content: "x" }, status: 404 },
  { method: "DELETE", path: (f) => `/scheduled_messages/${f.scheduledId as number}`, status: 200 },
  { method: "DELETE", path: `/scheduled_messages/${BAD_ID}`, status: 404 },
  // --- a user's status, alert words, muted users
  { method: "GET", path: (f) => `/users/${f.member.userId}/status`, status: 200 },
  { method: "GET", path: `/users/${BAD_ID}/status`, status: 400 },
  { method: "POST", path: "/users/me/alert_words", params: { alert_words: ["conformance"] }, status: 200 },
  { method: "POST", path: "/users/me/alert_words", params: { alert_words: ["x".repeat(101)] }, status: 400 },
  { method: "GET", path: "/users/me/alert_words", status: 200 },
  { method: "GET", path: "/users/me/alert_words", auth: null, status: 401 },
  { method: "DELETE", path: "/users/me/alert_words", params: { alert_words: ["conformance"] }, status: 200 },
  { method: "DELETE", path: "/users/me/alert_words", params: {}, status: 400 },
  { method: "POST", path: (f) => `/users/me/muted_users/${f.member.userId}`, status: 200 },
  { method: "POST", path: (f) => `/users/me/muted_users/${f.member.userId}`, status: 400 },
  { method: "DELETE", path: (f) => `/users/me/muted_users/${f.member.userId}`, status: 200 },
  { method: "DELETE", path: (f) => `/users/me/muted_users/${f.member.userId}`, status: 400 },

  // --- bots
  {
    method: "POST",
    path: "/bots",
    params: { full_name: "Conformance Bot", short_name: "conformance" },
    status: 200,
    save: (b, f) => {
      f.botId = b.user_id as number;
    },
  },
  { method: "POST", path: "/bots", params: { full_name: "No Short Name" }, status: 400 },
  { method: "GET", path: "/bots", status: 200 },
  { method: "GET", path: "/bots", auth: null, status: 401 },
  { method: "PATCH", path: (f) => `/bots/${f.botId}`, params: { full_name: "Renamed Bot" }, status: 200 },
  { method: "PATCH", path: `/bots/${BAD_ID}`, params: { full_name: "x" }, status: 400 },
  { method: "POST", path: (f) => `/bots/${f.botId}/api_key/regenerate`, status: 200 },
  { method: "POST", path: `/bots/${BAD_ID}/api_key/regenerate`, status: 400 },
  { method: "GET", path: (f) => `/bots/${f.botId}/api_key`, status: 200 },
  { method: "GET", path: `/bots/${BAD_ID}/api_key`, status: 400 },
  { method: "DELETE", path: (f) => `/bots/${f.botId}`, status: 200 },
  { method: "DELETE", path: `/bots/${BAD_ID}`, status: 400 },

  // --- push devices
  {
    method: "POST",
    path: "/users/me/apns_device_token",
    params: { token: APNS_TOKEN, appid: "org.zulip.Zulip" },
    status: 200,
  },
  {
    method: "POST",
    path: "/users/me/apns_device_token",
    params: { token: "", appid: "org.zulip.Zulip" },
    status: 400,
  },
  { method: "DELETE", path: "/users/me/apns_device_token", params: { token: APNS_TOKEN }, status: 200 },
  { method: "DELETE", path: "/users/me/apns_device_token", params: { token: APNS_TOKEN }, status: 400 },
  { method: "POST", path: "/users/me/android_gcm_reg_id", params: { token: "android-token-1" }, status: 200 },
  { method: "POST", path: "/users/me/android_gcm_reg_id", params: { token: "" }, status: 400 },
  {
    method: "DELETE",
    path: "/users/me/android_gcm_reg_id",
    params: { token: "android-token-1" },
    status: 200,
  },
  {
    method: "DELETE",
    path: "/users/me/android_gcm_reg_id",
    params: { token: "android-token-1" },
    status: 400,
  },

  // --- client devices and E2EE push (newer than 10.2: envelope checks only).
  // As the member, so the device events stay out of the owner's queue;
  // the push relay is a local HTTP server (see before()).
  {
    method: "POST",
    path: "/register_client_device",
    auth: (f) => f.member,
    status: 200,
    save: (b, f) => {
      f.deviceId = b.device_id as number;
    },
  },
  { method: "POST", path: "/register_client_device", auth: null, status: 401 },
  {
    method: "POST",
    path: "/mobile_push/register",
    auth: (f) => f.member,
    params: (f) => ({
      device_id: f.deviceId,
      token_kind: "fcm",
      push_key: Buffer.concat([Buffer.from([0x31]), Buffer.alloc(32, 7)]).toString("base64"),
      push_key_id: 2408,
      bouncer_public_key: "bouncer-public-key",
      encrypted_push_registration: "encrypted-push-registration-data",
      token_id: Buffer.alloc(8, 1).toString("base64"),
    }),
    status: 200,
  },
  {
    method: "POST",
    path: "/mobile_push/register",
    auth: (f) => f.member,
    params: (f) => ({ device_id: f.deviceId }),
    status: 400,
  },
  { method: "POST", path: "/mobile_push/e2ee/test_notification", auth: (f) => f.member, status: 200 },
  // The owner has no device: NO_ACTIVE_PUSH_DEVICE.
  { method: "POST", path: "/mobile_push/e2ee/test_notification", status: 400 },
  {
    method: "POST",
    path: "/remove_client_device",
    auth: (f) => f.member,
    params: (f) => ({ device_id: f.deviceId }),
    status: 200,
  },
  {
    method: "POST",
    path: "/remove_client_device",
    auth: (f) => f.member,
    params: (f) => ({ device_id: f.deviceId }),
    status: 400,
  },

  // --- custom emoji
  { method: "POST", path: "/realm/emoji/conformance_emoji", file: true, status: 200 },
  { method: "POST", path: "/realm/emoji/bad name!", file: true, status: 400 },
  { method: "GET", path: "/realm/emoji", status: 200 },
  { method: "GET", path: "/realm/emoji", auth: null, status: 401 },
  { method: "DELETE", path: "/realm/emoji/conformance_emoji", status: 200 },
  { method: "DELETE", path: "/realm/emoji/never_made", status: 404 },

  // --- channel extras
  { method: "POST", path: "/default_streams", params: (f) => ({ stream_id: f.channel2Id }), status: 200 },
  { method: "POST", path: "/default_streams", params: { stream_id: BAD_ID }, status: 400 },
  { method: "DELETE", path: "/default_streams", params: (f) => ({ stream_id: f.channel2Id }), status: 200 },
  { method: "DELETE", path: "/default_streams", params: { stream_id: BAD_ID }, status: 400 },
  { method: "GET", path: (f) => `/users/${f.member.userId}/subscriptions/${f.channelId}`, status: 200 },
  { method: "GET", path: (f) => `/users/${f.member.userId}/subscriptions/${BAD_ID}`, status: 400 },
  {
    method: "PATCH",
    path: "/users/me/subscriptions",
    params: (f) => ({ add: [{ name: f.channelName }], delete: ["conformance-two"] }),
    status: 200,
  },
  { method: "PATCH", path: "/users/me/subscriptions", params: {}, status: 400 },
  {
    method: "PATCH",
    path: "/users/me/subscriptions",
    params: { add: [{ name: "conformance-two" }] },
    status: 200,
  },
  {
    method: "POST",
    path: (f) => `/streams/${f.channelId}/delete_topic`,
    params: { topic_name: "conformance no such topic" },
    status: 200,
  },
  {
    method: "POST",
    path: (f) => `/streams/${f.channelId}/delete_topic`,
    auth: (f) => f.member,
    params: { topic_name: "x" },
    status: 400,
  },

  // --- uploads and attachments
  {
    method: "POST",
    path: "/user_uploads",
    file: true,
    status: 200,
    save: (b, f) => {
      f.uploadUrl = b.url as string;
    },
  },
  { method: "POST", path: "/user_uploads", status: 400 },
  { method: "GET", path: (f) => f.uploadUrl as string, status: 200 },
  { method: "GET", path: (f) => (f.uploadUrl as string).replace(/[^/]+$/, "missing.png"), status: 404 },
  // Thumbnail status (feature level 479, newer than 10.2: envelope checks only).
  {
    method: "GET",
    path: (f) => (f.uploadUrl as string).replace("/user_uploads/", "/thumbnail/status/"),
    status: 200,
  },
  { method: "GET", path: "/thumbnail/status/1/missing.png", status: 400 },
  {
    method: "GET",
    path: "/attachments",
    status: 200,
    save: (b, f) => {
      f.attachmentId = (b.attachments as { id: number }[])[0]!.id;
    },
  },
  { method: "GET", path: "/attachments", auth: null, status: 401 },
  { method: "DELETE", path: (f) => `/attachments/${f.attachmentId}`, status: 200 },
  { method: "DELETE", path: `/attachments/${BAD_ID}`, status: 400 },

  // --- exports (gateway/routes/export.ts)
  { method: "POST", path: "/export/realm", params: { export_type: 1 }, status: 200 },
  { method: "POST", path: "/export/realm", params: { export_type: 9 }, status: 400 },
  { method: "GET", path: "/export/realm", status: 200 },
  { method: "GET", path: "/export/realm", auth: (f) => f.member, status: 400 },
  { method: "GET", path: "/export/realm/consents", status: 200 },
  { method: "GET", path: "/export/realm/consents", auth: (f) => f.member, status: 400 },

  // --- push test notification (gateway/routes/push-test.ts): no tokens, nothing sent
  { method: "POST", path: "/mobile_push/test_notification", status: 200 },
  { method: "POST", path: "/mobile_push/test_notification", params: { token: "unknown" }, status: 400 },

  // --- API key (the member's: later cases see the new key)
  {
    method: "POST",
    path: "/users/me/api_key/regenerate",
    auth: (f) => f.member,
    status: 200,
    save: (b, f) => {
      f.member = { ...f.member, apiKey: b.api_key as string };
    },
  },
  { method: "POST", path: "/users/me/api_key/regenerate", auth: null, status: 401 },

  // --- message reports (newer than 10.2: envelope checks only), into channel2 for now
  {
    method: "PATCH",
    path: "/realm",
    params: (f) => ({ moderation_request_channel_id: f.channel2Id }),
    status: 200,
  },
  {
    method: "POST",
    path: (f) => `/messages/${f.messageId}/report`,
    params: { report_type: "spam" },
    status: 200,
  },
  {
    method: "POST",
    path: (f) => `/messages/${f.messageId}/report`,
    params: { report_type: "other" },
    status: 400,
  },
  { method: "PATCH", path: "/realm", params: { moderation_request_channel_id: -1 }, status: 200 },

  // --- message reminders (newer than 10.2: envelope checks only). As the
  // member, so the reminders events stay out of the owner's queue.
  {
    method: "POST",
    path: "/reminders",
    auth: (f) => f.member,
    params: (f) => ({ message_id: f.messageId, scheduled_delivery_timestamp: 4102444800 }),
    status: 200,
    save: (b, f) => {
      f.reminderId = b.reminder_id as number;
    },
  },
  {
    method: "POST",
    path: "/reminders",
    auth: (f) => f.member,
    params: (f) => ({ message_id: f.messageId, scheduled_delivery_timestamp: 1 }),
    status: 400,
  },
  { method: "GET", path: "/reminders", auth: (f) => f.member, status: 200 },
  { method: "GET", path: "/reminders", auth: null, status: 401 },
  {
    method: "DELETE",
    path: (f) => `/reminders/${f.reminderId as number}`,
    auth: (f) => f.member,
    status: 200,
  },
  { method: "DELETE", path: `/reminders/${BAD_ID}`, auth: (f) => f.member, status: 404 },
  // --- navigation views (newer than 10.2: envelope checks only; as the
  // member, so the navigation_view events stay out of the owner's queue)
  { method: "GET", path: "/navigation_views", auth: (f) => f.member, status: 200 },
  { method: "GET", path: "/navigation_views", auth: null, status: 401 },
  {
    method: "POST",
    path: "/navigation_views",
    auth: (f) => f.member,
    params: { fragment: "narrow/is/starred", is_pinned: true },
    status: 200,
  },
  {
    method: "POST",
    path: "/navigation_views",
    auth: (f) => f.member,
    params: { fragment: "narrow/is/dm", is_pinned: true },
    status: 400,
  },
  {
    method: "PATCH",
    path: "/navigation_views/narrow/is/starred",
    auth: (f) => f.member,
    params: { is_pinned: false },
    status: 200,
  },
  { method: "PATCH", path: "/navigation_views/nowhere", auth: (f) => f.member, status: 404 },
  { method: "DELETE", path: "/navigation_views/narrow/is/starred", auth: (f) => f.member, status: 200 },
  { method: "DELETE", path: "/navigation_views/nowhere", auth: (f) => f.member, status: 404 },

  // --- channel folders (newer than 10.2: envelope checks only)
  {
    method: "POST",
    path: "/channel_folders/create",
    params: { name: "conformance folder", description: "d" },
    status: 200,
    save: (b, f) => {
      f.folderId = b.channel_folder_id as number;
    },
  },
  { method: "POST", path: "/channel_folders/create", params: { name: " ", description: "" }, status: 400 },
  { method: "GET", path: "/channel_folders", params: { include_archived: true }, status: 200 },
  { method: "GET", path: "/channel_folders", auth: null, status: 401 },
  {
    method: "PATCH",
    path: (f) => `/channel_folders/${f.folderId}`,
    params: { description: "e" },
    status: 200,
  },
  { method: "PATCH", path: `/channel_folders/${BAD_ID}`, params: { name: "x" }, status: 400 },
  { method: "PATCH", path: "/channel_folders", params: (f) => ({ order: [f.folderId] }), status: 200 },
  { method: "PATCH", path: "/channel_folders", params: { order: [] }, status: 400 },
  // --- misc feature-level gaps (newer than 10.2: envelope checks only)
  {
    method: "POST",
    path: (f) => `/users/${f.member.userId}/status`,
    params: { status_text: "set by the owner" },
    status: 200,
  },
  { method: "POST", path: `/users/${BAD_ID}/status`, params: { status_text: "x" }, status: 400 },
  // --- a user's channels (FL 440, newer than 10.2: envelope checks only)
  { method: "GET", path: (f) => `/users/${f.member.userId}/channels`, status: 200 },
  { method: "GET", path: `/users/${BAD_ID}/channels`, status: 400 },
  // FL 416 (newer than 10.2: envelope checks only)
  {
    method: "POST",
    path: "/realm/test_welcome_bot_custom_message",
    params: { welcome_message_custom_text: "Hello" },
    status: 200,
  },
  {
    method: "POST",
    path: "/realm/test_welcome_bot_custom_message",
    params: { welcome_message_custom_text: "" },
    status: 400,
  },

  // --- channel removal, then the queue
  {
    method: "DELETE",
    path: "/users/me/subscriptions",
    params: { subscriptions: ["conformance-two"] },
    status: 200,
  },
  { method: "DELETE", path: "/users/me/subscriptions", params: {}, status: 400 },
  { method: "DELETE", path: (f) => `/streams/${f.channel2Id}`, status: 200 },
  { method: "DELETE", path: `/streams/${BAD_ID}`, status: 400 },
];

let relay: Server;

before(async () => {
  // A push relay that accepts everything (routes/push-relay.ts reads the URL per request).
  relay = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ result: "success", msg: "" }));
    });
  });
  await new Promise<void>((r) => relay.listen(0, "127.0.0.1", r));
  const addr = relay.address();
  if (addr === null || typeof addr === "string") throw new Error("relay did not listen");
  process.env.PUSH_BOUNCER_URL = `http://127.0.0.1:${addr.port}`;
  process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS = "127.0.0.0/8";
  srv = await startEmbedded();
  fx.member = await newUser(srv, 400, "Mem Ber");
  fx.spare = await newUser(srv, 400, "Spare User");
});
after(async () => {
  delete process.env.PUSH_BOUNCER_URL;
  delete process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS;
  relay?.close();
  await srv?.stop();
});

describe("responses validate against zulip-openapi-10.2.yaml", () => {
  for (const c of cases) {
    const p = typeof c.path === "string" ? c.path : pathLabel(c.path);
    const label = `${c.method} ${p} -> ${c.status}${c.auth === null ? " (anonymous)" : ""}`;
    test(label, async () => {
      await run(c);
    });
  }

  test("every event the run produced matches a GET /events event schema", async () => {
    const res = await srv.api("GET", "/events", {
      queue_id: fx.queueId,
      last_event_id: -1,
      dont_block: true,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const v = spec.validate("GET", "/events", 200, res.body, deviations);
    if (v.issues.length > 0) assert.fail(fmt(v.issues));
    const events = res.body.events as Record<string, unknown>[];
    assert.ok(events.length > 20, `only ${events.length} events`);
    const bad: string[] = [];
    const kinds = new Set<string>();
    for (const e of events) {
      const r = spec.events().check(e, deviations);
      kinds.add(`${r.type}${r.op ? `/${r.op}` : ""}`);
      if (r.issues.length > 0) {
        bad.push(
          `${r.type}${r.op ? `/${r.op}` : ""}: ${fmt(r.issues)}\n  event: ${JSON.stringify(e).slice(0, 600)}`,
        );
      }
    }
    if (bad.length > 0)
      assert.fail(`${bad.length} of ${events.length} events do not validate:\n${bad.join("\n")}`);
    assert.ok(kinds.size > 10, [...kinds].join(", "));
  });

  test("DELETE /events -> 200, then 400 BAD_EVENT_QUEUE_ID", async () => {
    await run({ method: "DELETE", path: "/events", params: { queue_id: fx.queueId }, status: 200 });
    await run({ method: "DELETE", path: "/events", params: { queue_id: fx.queueId }, status: 400 });
  });
});

describe("coverage", () => {
  test("every /api/v1 route the gateway serves has a success and an error case above", () => {
    const missing: string[] = [];
    for (const r of routes) {
      if (r.prefix !== undefined) continue;
      const key = `${r.method} ${r.path}`;
      const s = seen.get(key);
      if (!s?.ok) missing.push(`${key} (success)`);
      if (!s?.err && !NO_ERROR_POSSIBLE.has(key)) missing.push(`${key} (error)`);
    }
    if (missing.length > 0) assert.fail(`routes without conformance cases:\n${missing.join("\n")}`);
  });

  test("every endpoint the API spec lists exists on the server", async () => {
    const listed = new Set(JSON.parse(readFileSync(CONTRACT_ROUTES, "utf8")) as string[]);
    assert.ok(listed.size >= 25, `parsed only ${listed.size} endpoints from the spec`);
    const absent: string[] = [];
    for (const entry of [...listed].sort()) {
      const [method, template] = entry.split(" ") as [string, string];
      // Unknown ids and emails: the route must answer with its own error, not "no such route".
      const path = template
        .replace(/\{email\}/g, encodeURIComponent("nobody@example.com"))
        .replace(/\{[a-z_]*id\}/g, String(BAD_ID))
        .replace(/\{[a-z_]+\}/g, String(BAD_ID));
      const res = await srv.api(method, path, {});
      const noRoute = res.status === 404 && res.body?.code === "NOT_FOUND";
      if (noRoute || res.status === 405) absent.push(`${entry} -> ${res.status} ${JSON.stringify(res.body)}`);
    }
    if (absent.length > 0) assert.fail(`spec endpoints the server lacks:\n${absent.join("\n")}`);
  });
});
