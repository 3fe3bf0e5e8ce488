// Names that collide with Object.prototype (`__proto__`, `constructor`,
// `toString`, `hasOwnProperty`, ...) are ordinary user input: every index
// keyed by a user-chosen name must treat them as any other name. Black-box
// over HTTP against an embedded server, including a restart on the same
// data directory (snapshot and journal replay).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "node:http";
import { deflateSync } from "node:zlib";
import { after, before, describe, test } from "node:test";
import { channelDirectoryBehavior, type DirState } from "../actors/channel-directory/index.ts";
import { realmBehavior } from "../actors/realm/index.ts";
import { realmDirectoryBehavior } from "../actors/realm-directory/index.ts";
import type { ActorRef, Obj } from "../actors/types.ts";
import { startEmbedded, type EmbeddedServer } from "../server.ts";
import {
  assertSuccess,
  basicAuth,
  makeApi,
  TEST_BOOTSTRAP,
  type Api,
  type ApiResult,
  type Creds,
} from "./support/index.ts";

const NAMES = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "__defineGetter__",
  "isPrototypeOf",
];

let dir: string;
let srv: EmbeddedServer;
let api: Api;
let owner: Creds & { userId: number };

const BOOT = TEST_BOOTSTRAP;

/** Start (or restart) the server on `dir`, without the per-user rate limit (this suite sends many requests). */
async function boot(): Promise<void> {
  const saved = process.env.RATE_LIMIT_PER_MINUTE;
  process.env.RATE_LIMIT_PER_MINUTE = "0";
  try {
    srv = await startEmbedded({ port: 0, host: "127.0.0.1", dataDir: dir, shards: 8, bootstrap: BOOT });
  } finally {
    if (saved === undefined) delete process.env.RATE_LIMIT_PER_MINUTE;
    else process.env.RATE_LIMIT_PER_MINUTE = saved;
  }
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "zulip-proto-keys-"));
  await boot();
  const b = srv.bootstrapped!;
  owner = { email: BOOT.ownerEmail, apiKey: b.apiKey!, userId: b.userId! };
  api = makeApi(srv.url, owner);
});

after(async () => {
  await srv?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A Zulip-shaped answer, success or error, never a 500. */
function zulipShaped(res: ApiResult, what: string): void {
  assert.ok(res.status < 500, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
  assert.equal(typeof res.body, "object", `${what}: ${JSON.stringify(res.body)}`);
  assert.ok(
    res.body.result === "success" || res.body.result === "error",
    `${what}: ${JSON.stringify(res.body)}`,
  );
  if (res.body.result === "error") assert.equal(typeof res.body.msg, "string");
}

function ok(res: ApiResult, what = ""): ApiResult["body"] {
  assert.equal(res.status, 200, `${what}: ${JSON.stringify(res.body)}`);
  assertSuccess(res);
  return res.body;
}

function crc32(buf: Buffer): number {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

function png(seed: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0);
  ihdr.writeUInt32BE(1, 4);
  ihdr[8] = 8;
  ihdr[9] = 6;
  const raw = Buffer.from([0, seed & 255, 3, 7, 255]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", deflateSync(raw)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

async function uploadEmoji(name: string, seed: number): Promise<ApiResult> {
  const form = new FormData();
  form.append("f1", new Blob([new Uint8Array(png(seed))], { type: "image/png" }), "e.png");
  const res = await fetch(`${srv.url}/api/v1/realm/emoji/${encodeURIComponent(name)}`, {
    method: "POST",
    headers: { authorization: basicAuth(owner) },
    body: form,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) };
}

async function rawJson(method: string, path: string, body: string, type: string): Promise<ApiResult> {
  const res = await fetch(`${srv.url}/api/v1${path}`, {
    method,
    headers: { authorization: basicAuth(owner), "content-type": type },
    body,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // leave the text for the assertion
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

describe("prototype-named keys", () => {
  const channelIds = new Map<string, number>();
  let plainId = 0;

  test("channels named like Object.prototype members are created, found and listed", async () => {
    plainId = ok(await api("POST", "/channels/create", { name: "plain", subscribers: [owner.userId] })).id;
    // Channel links to names that exist nowhere render as text.
    const links = ok(
      await api("POST", "/messages", {
        type: "stream",
        to: plainId,
        topic: "links",
        content: "#**__proto__** #**constructor** #**toString>x**",
      }),
      "channel links before",
    ).id;
    const before = ok(await api("GET", `/messages/${links}`)).message.content as string;
    assert.doesNotMatch(before, /href/);
    for (const name of NAMES) {
      const before = await api("GET", "/get_stream_id", { stream: name });
      zulipShaped(before, `get_stream_id ${name} before`);
      assert.equal(before.body.result, "error", name);
      const created = ok(await api("POST", "/channels/create", { name, subscribers: [owner.userId] }), name);
      channelIds.set(name, created.id);
      assert.equal(ok(await api("GET", "/get_stream_id", { stream: name })).stream_id, created.id, name);
      const again = await api("POST", "/channels/create", { name, subscribers: [owner.userId] });
      zulipShaped(again, `create ${name} twice`);
      assert.equal(again.body.result, "error", name);
    }
    assert.equal(ok(await api("GET", "/get_stream_id", { stream: "plain" })).stream_id, plainId);
    const names = (ok(await api("GET", "/streams")).streams as { name: string }[]).map((s) => s.name);
    for (const name of NAMES) assert.ok(names.includes(name), name);
    const subs = ok(await api("GET", "/users/me/subscriptions")).subscriptions as { name: string }[];
    for (const name of NAMES)
      assert.ok(
        subs.some((s) => s.name === name),
        name,
      );
    // Subscribing by name resolves the existing channel, not a prototype member.
    const sub = await api("POST", "/users/me/subscriptions", {
      subscriptions: NAMES.map((name) => ({ name })),
    });
    ok(sub);
    assert.deepEqual(sub.body.subscribed, {});
    // Renaming to and from such names.
    const rid = ok(
      await api("POST", "/channels/create", { name: "renamed", subscribers: [owner.userId] }),
    ).id;
    const clash = await api("PATCH", `/streams/${rid}`, { new_name: "__proto__" });
    zulipShaped(clash, "rename onto __proto__");
    assert.equal(clash.body.result, "error");
    ok(await api("PATCH", `/streams/${rid}`, { new_name: "__lookupGetter__" }));
    assert.equal(ok(await api("GET", "/get_stream_id", { stream: "__lookupGetter__" })).stream_id, rid);
    // Channel links and `to` by name reach the channels of those names.
    const after = ok(
      await api("POST", "/messages", {
        type: "stream",
        to: "constructor",
        topic: "links",
        content: "#**__proto__** #**constructor**",
      }),
      "send to channel named constructor",
    ).id;
    const msg = ok(await api("GET", `/messages/${after}`)).message;
    assert.equal(msg.stream_id, channelIds.get("constructor"));
    assert.match(msg.content, new RegExp(`#narrow/channel/${channelIds.get("__proto__")}-`));
    assert.match(msg.content, new RegExp(`#narrow/channel/${channelIds.get("constructor")}-`));
  });

  test("topics named like Object.prototype members are sent, read back and listed", async () => {
    const cid = channelIds.get("__proto__")!;
    for (const topic of NAMES) {
      ok(
        await api("POST", "/messages", { type: "stream", to: cid, topic, content: `in topic` }),
        `send to ${topic}`,
      );
      ok(
        await api("POST", "/messages", { type: "stream", to: plainId, topic, content: `plain ${topic}` }),
        `send plain ${topic}`,
      );
    }
    for (const topic of NAMES) {
      const got = ok(
        await api("GET", "/messages", {
          anchor: "newest",
          num_before: 20,
          num_after: 0,
          narrow: [
            ["channel", cid],
            ["topic", topic],
          ],
        }),
        `read ${topic}`,
      );
      assert.deepEqual(
        (got.messages as { content: string }[]).map((m) => m.content),
        [`<p>in topic</p>`],
        topic,
      );
    }
    const topics = ok(await api("GET", `/users/me/${cid}/topics`), "list topics").topics as {
      name: string;
    }[];
    assert.deepEqual(topics.map((t) => t.name).sort(), [...NAMES].sort());
    const plainTopics = ok(await api("GET", `/users/me/${plainId}/topics`)).topics as { name: string }[];
    for (const name of NAMES)
      assert.ok(
        plainTopics.some((t) => t.name === name),
        name,
      );
    // Per-user topic state keyed by topic name.
    for (const topic of ["__proto__", "constructor"]) {
      ok(await api("POST", "/user_topics", { stream_id: cid, topic, visibility_policy: 1 }), `mute ${topic}`);
    }
    const reg = ok(await api("POST", "/register", { fetch_event_types: ["user_topic"] }));
    // Topics the owner started are followed automatically (feature level 214): keep the muted ones.
    const muted = (
      reg.user_topics as { topic_name: string; stream_id: number; visibility_policy: number }[]
    ).filter((t) => t.stream_id === cid && t.visibility_policy === 1);
    assert.deepEqual(muted.map((t) => t.topic_name).sort(), ["__proto__", "constructor"]);
    // Mark a topic read: the flag index is keyed by topic.
    zulipShaped(
      await api("POST", "/messages/flags/narrow", {
        anchor: "oldest",
        num_before: 0,
        num_after: 100,
        op: "add",
        flag: "read",
        narrow: [
          ["channel", cid],
          ["topic", "__proto__"],
        ],
      }),
      "flags/narrow",
    );
  });

  test("narrow operators and parameter names that collide with prototype members", async () => {
    for (const op of ["__proto__", "constructor", "hasOwnProperty", "toString", "valueOf"]) {
      const r = await api("GET", "/messages", {
        anchor: "newest",
        num_before: 1,
        num_after: 0,
        narrow: [[op, "x"]],
      });
      zulipShaped(r, `narrow ${op}`);
      assert.equal(r.body.result, "error", op);
      const r2 = await api("GET", "/messages", {
        anchor: "newest",
        num_before: 1,
        num_after: 0,
        narrow: [{ operator: op, operand: "x" }],
      });
      zulipShaped(r2, `narrow dict ${op}`);
      assert.equal(r2.body.result, "error", op);
      const r3 = await api("GET", "/messages", {
        anchor: "newest",
        num_before: 1,
        num_after: 0,
        narrow: [["is", op]],
      });
      zulipShaped(r3, `is:${op}`);
      assert.equal(r3.body.result, "error", op);
      const r4 = await api("POST", "/messages/flags", { messages: [1], op: "add", flag: op });
      zulipShaped(r4, `flag ${op}`);
      assert.equal(r4.body.result, "error", op);
    }
    for (const name of ["__proto__", "constructor", "toString"]) {
      for (const [method, path] of [
        ["GET", "/users/me"],
        ["GET", "/streams"],
        ["POST", "/saved_snippets"],
        ["PATCH", "/settings"],
        ["GET", "/messages"],
        ["POST", "/register"],
      ] as const) {
        const r = await api(method, path, { [name]: "1" });
        zulipShaped(r, `${method} ${path} ${name}=`);
      }
      const r = await api("PATCH", "/settings", { [name]: "1", left_side_userlist: true });
      ok(r, `settings ${name}`);
      assert.deepEqual(r.body.ignored_parameters_unsupported, [name]);
    }
  });

  test("hosts, queue ids and event narrows named like prototype members", async () => {
    // fetch() drops a Host header: node:http sends it.
    for (const host of ["constructor", "__proto__", "tostring"]) {
      const u = new URL(srv.url);
      const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(
          {
            host: u.hostname,
            port: u.port,
            path: "/api/v1/users/me",
            headers: { host, authorization: basicAuth(owner) },
          },
          (res) => {
            let text = "";
            res.on("data", (c: Buffer) => (text += c.toString()));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on("error", reject);
        req.end();
      });
      // No organization has that host (and this server does not set
      // SINGLE_ORGANIZATION): Zulip's error, not a prototype member found as a realm.
      assert.equal(status, 404, `Host ${host}: ${status} ${text}`);
      assert.deepEqual(JSON.parse(text), {
        result: "error",
        msg: "Invalid subdomain",
        code: "NONEXISTENT_SUBDOMAIN",
      });
    }
    for (const queue_id of ["__proto__", "constructor", "1:__proto__"]) {
      const r = await api("GET", "/events", { queue_id, last_event_id: -1, dont_block: true });
      zulipShaped(r, `GET /events ${queue_id}`);
      assert.equal(r.body.code, "BAD_EVENT_QUEUE_ID", queue_id);
      zulipShaped(await api("DELETE", "/events", { queue_id }), `DELETE /events ${queue_id}`);
    }
    const reg = await api("POST", "/register", { narrow: [["__proto__", "x"]], event_types: ["message"] });
    zulipShaped(reg, "register narrow __proto__");
  });

  test("users, emails and full names", async () => {
    const r = await api("GET", "/users/__proto__");
    zulipShaped(r, "GET /users/__proto__");
    assert.equal(r.body.result, "error");
    for (const n of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      const presence = await api("GET", `/users/${n}/presence`);
      zulipShaped(presence, `GET /users/${n}/presence`);
      assert.equal(presence.body.msg, "No such user", n);
      zulipShaped(await api("GET", `/users/${n}`), `GET /users/${n}`);
      zulipShaped(await api("GET", `/users/${n}@example.com`), `GET /users/${n}@example.com`);
    }
    // Full names equal to prototype members.
    for (const [i, full_name] of ["__proto__", "constructor", "toString"].entries()) {
      const email = `proto${i}@example.com`;
      const made = ok(
        await api("POST", "/users", { email, password: "pw-secret-123", full_name }),
        full_name,
      );
      const got = ok(await api("GET", `/users/${made.user_id}`));
      assert.equal(got.user.full_name, full_name);
      assert.equal(ok(await api("GET", `/users/${email}`)).user.user_id, made.user_id);
    }
    // Messages addressed by an email that is a prototype member name.
    const dm = await api("POST", "/messages", { type: "private", to: ["__proto__"], content: "hi" });
    zulipShaped(dm, "dm to __proto__");
    assert.equal(dm.body.result, "error");
    const dm2 = await api("POST", "/messages", { type: "private", to: ["constructor"], content: "hi" });
    zulipShaped(dm2, "dm to constructor");
    assert.equal(dm2.body.msg, "Invalid email 'constructor'");
  });

  test("custom emoji named like prototype members", async () => {
    let seed = 1;
    for (const name of ["constructor", "tostring", "valueof", "hasownproperty"]) {
      const before = await api("DELETE", `/realm/emoji/${name}`);
      zulipShaped(before, `delete ${name} before`);
      assert.equal(before.body.result, "error", name);
      ok(await uploadEmoji(name, seed++), `upload ${name}`);
      const again = await uploadEmoji(name, seed++);
      zulipShaped(again, `upload ${name} twice`);
      assert.equal(again.body.result, "error");
    }
    zulipShaped(await uploadEmoji("__proto__", seed++), "upload __proto__");
    const list = ok(await api("GET", "/realm/emoji")).emoji as Record<string, { name: string }>;
    const names = Object.values(list).map((e) => e.name);
    for (const name of ["constructor", "tostring", "valueof", "hasownproperty"])
      assert.ok(names.includes(name));
    // Reacting with such names: realm emoji by name, and unknown names.
    const mid = ok(
      await api("POST", "/messages", { type: "stream", to: plainId, topic: "react", content: "x" }),
    ).id;
    ok(await api("POST", `/messages/${mid}/reactions`, { emoji_name: "constructor" }), "react constructor");
    for (const name of ["__proto__", "toString", "hasOwnProperty", "tostring_"]) {
      const r = await api("POST", `/messages/${mid}/reactions`, { emoji_name: name });
      zulipShaped(r, `react ${name}`);
      assert.equal(r.body.result, "error", name);
    }
    // A realm_emoji code is an id: a prototype member name is no emoji.
    for (const code of ["constructor", "__proto__", "toString"]) {
      const r = await api("POST", `/messages/${mid}/reactions`, {
        emoji_name: "constructor",
        emoji_code: code,
        reaction_type: "realm_emoji",
      });
      zulipShaped(r, `realm_emoji code ${code}`);
      assert.equal(r.body.msg, "Invalid custom emoji.", code);
    }
    // The declared content type is looked up as an own key.
    const form = new FormData();
    form.append("f1", new Blob([new Uint8Array(png(99))], { type: "constructor" }), "e.png");
    const odd = await fetch(`${srv.url}/api/v1/realm/emoji/oddext`, {
      method: "POST",
      headers: { authorization: basicAuth(owner) },
      body: form,
    });
    const oddBody = (await odd.json()) as { result: string; msg: string };
    assert.equal(odd.status, 400, JSON.stringify(oddBody));
    assert.equal(oddBody.msg, "Invalid image format");
    const msg = ok(await api("GET", `/messages/${mid}`)).message;
    assert.deepEqual(
      (msg.reactions as { emoji_name: string }[]).map((r) => r.emoji_name),
      ["constructor"],
    );
  });

  test("user groups named like prototype members", async () => {
    for (const name of NAMES) {
      const made = await api("POST", "/user_groups/create", {
        name,
        description: "d",
        members: [owner.userId],
      });
      ok(made, `group ${name}`);
      const again = await api("POST", "/user_groups/create", {
        name,
        description: "d",
        members: [owner.userId],
      });
      zulipShaped(again, `group ${name} twice`);
      assert.equal(again.body.result, "error");
    }
    const groups = ok(await api("GET", "/user_groups")).user_groups as { name: string }[];
    for (const name of NAMES) assert.equal(groups.filter((g) => g.name === name).length, 1, name);
    // Group-setting parameters named like prototype members.
    const gid = (groups.find((g) => g.name === "__proto__") as unknown as { id: number }).id;
    zulipShaped(await api("PATCH", `/user_groups/${gid}`, { __proto__: "{}" }), "group PATCH __proto__");
    ok(await api("PATCH", `/user_groups/${gid}`, { description: "new" }));
  });

  test("custom profile fields, profile data and snippets", async () => {
    const ids: number[] = [];
    for (const name of ["__proto__", "constructor", "toString"]) {
      const r = await api("POST", "/realm/profile_fields", { name, field_type: 1 });
      ids.push(ok(r, `field ${name}`).id);
      const again = await api("POST", "/realm/profile_fields", { name, field_type: 1 });
      zulipShaped(again, `field ${name} twice`);
      assert.equal(again.body.result, "error");
    }
    // Select-field options keyed by user-chosen keys.
    const sel = await api("POST", "/realm/profile_fields", {
      name: "Choice",
      field_type: 3,
      field_data: { __proto__: { text: "A", order: "1" }, constructor: { text: "B", order: "2" } },
    });
    zulipShaped(sel, "select with __proto__ option");
    const sel2 = await rawJson(
      "POST",
      "/realm/profile_fields",
      `name=Choice2&field_type=3&field_data=${encodeURIComponent('{"__proto__":{"text":"A","order":"1"},"constructor":{"text":"B","order":"2"}}')}`,
      "application/x-www-form-urlencoded",
    );
    zulipShaped(sel2, "select with raw __proto__ option");
    const fields = ok(await api("GET", "/realm/profile_fields")).custom_fields as { name: string }[];
    for (const name of ["__proto__", "constructor", "toString"])
      assert.ok(fields.some((f) => f.name === name));
    // The option keyed "__proto__" is a choice like any other.
    const selId = ok(sel2, "select field").id as number;
    ok(
      await api("PATCH", "/users/me/profile_data", { data: [{ id: selId, value: "__proto__" }] }),
      "choose __proto__",
    );
    const chosen = ok(
      await api("GET", `/users/${owner.userId}`, { include_custom_profile_fields: true }),
    ).user;
    assert.equal(chosen.profile_data[String(selId)].value, "__proto__");
    const wrong = await api("PATCH", "/users/me/profile_data", { data: [{ id: selId, value: "toString" }] });
    zulipShaped(wrong, "choose toString");
    assert.equal(wrong.body.result, "error");
    ok(
      await api("PATCH", "/users/me/profile_data", { data: ids.map((id, i) => ({ id, value: `v${i}` })) }),
      "profile data",
    );
    const me = ok(await api("GET", `/users/${owner.userId}`, { include_custom_profile_fields: true })).user;
    assert.equal(me.profile_data[String(ids[0])].value, "v0");
    zulipShaped(
      await api("PATCH", `/users/${owner.userId}`, { profile_data: [{ id: "__proto__", value: "x" }] }),
      "profile_data id __proto__",
    );
    zulipShaped(
      await rawJson(
        "PATCH",
        `/users/${owner.userId}`,
        `profile_data=${encodeURIComponent('{"__proto__":{"x":1}}')}`,
        "application/x-www-form-urlencoded",
      ),
      "profile_data object __proto__",
    );

    for (const title of ["__proto__", "constructor"])
      ok(await api("POST", "/saved_snippets", { title, content: "c" }));
    const snippets = ok(await api("GET", "/saved_snippets")).saved_snippets as { title: string }[];
    assert.deepEqual(snippets.map((s) => s.title).sort(), ["__proto__", "constructor"]);
  });

  test("linkifiers, subscription properties and JSON objects with __proto__ keys", async () => {
    for (const [i, pattern] of [
      "__proto__",
      "constructor",
      "#(?P<__proto__>[0-9]+)",
      "#(?P<constructor>[0-9]+)",
    ].entries()) {
      const r = await api("POST", "/realm/filters", {
        pattern,
        url_template: pattern.includes("?P<")
          ? `https://example.com/${i}/{${pattern.includes("__proto__") ? "__proto__" : "constructor"}}`
          : `https://example.com/${i}`,
      });
      zulipShaped(r, `linkifier ${pattern}`);
    }
    const linkifiers = ok(await api("GET", "/realm/linkifiers")).linkifiers as { pattern: string }[];
    assert.equal(linkifiers.length, 4);
    const mid = ok(
      await api("POST", "/messages", {
        type: "stream",
        to: plainId,
        topic: "links",
        content: "see #12 and constructor",
      }),
    ).id;
    const rendered = ok(await api("GET", `/messages/${mid}`)).message.content as string;
    assert.match(rendered, /https:\/\/example\.com\/2\/12"/);
    assert.match(rendered, /https:\/\/example\.com\/1"/);

    const props = await api("POST", "/users/me/subscriptions/properties", {
      subscription_data: [
        { stream_id: plainId, property: "__proto__", value: true },
        { stream_id: plainId, property: "constructor", value: true },
      ],
    });
    zulipShaped(props, "subscription property __proto__");
    assert.equal(props.body.result, "error");
    const props2 = await api("POST", `/users/me/subscriptions/${plainId}`, {
      property: "toString",
      value: true,
    });
    zulipShaped(props2, "subscription property toString");
    // JSON bodies with a literal "__proto__" key.
    const raw = await rawJson(
      "POST",
      "/users/me/subscriptions",
      `subscriptions=${encodeURIComponent('[{"name":"jsonproto","__proto__":{"name":"plain"}}]')}`,
      "application/x-www-form-urlencoded",
    );
    zulipShaped(raw, "subscriptions with __proto__ key");
    const reg = await api("POST", "/register", {
      client_capabilities: '{"__proto__":{"notification_settings_null":true}}',
    });
    zulipShaped(reg, "register client_capabilities __proto__");
    zulipShaped(
      await api("PATCH", "/settings", {
        target_users: '{"__proto__":{"user_ids":[1]},"skip_if_already_edited":true}',
      }),
      "target_users __proto__",
    );
  });

  test("prototype-named entries survive a restart (snapshot and journal replay)", async () => {
    await srv.close();
    await boot();
    api = makeApi(srv.url, owner);
    for (const name of NAMES) {
      assert.equal(
        ok(await api("GET", "/get_stream_id", { stream: name })).stream_id,
        channelIds.get(name),
        name,
      );
    }
    assert.equal(ok(await api("GET", "/get_stream_id", { stream: "plain" })).stream_id, plainId);
    const topics = ok(await api("GET", `/users/me/${channelIds.get("__proto__")}/topics`)).topics as {
      name: string;
    }[];
    assert.deepEqual(topics.map((t) => t.name).sort(), [...NAMES].sort());
    const groups = ok(await api("GET", "/user_groups")).user_groups as { name: string }[];
    for (const name of NAMES) assert.equal(groups.filter((g) => g.name === name).length, 1, name);
    const snippets = ok(await api("GET", "/saved_snippets")).saved_snippets as { title: string }[];
    assert.deepEqual(snippets.map((s) => s.title).sort(), ["__proto__", "constructor"]);
    const fields = ok(await api("GET", "/realm/profile_fields")).custom_fields as { name: string }[];
    for (const name of ["__proto__", "constructor", "toString"])
      assert.ok(fields.some((f) => f.name === name));
    const list = ok(await api("GET", "/realm/emoji")).emoji as Record<string, { name: string }>;
    assert.ok(Object.values(list).some((e) => e.name === "constructor"));
    assert.equal(ok(await api("GET", "/users/proto0@example.com")).user.full_name, "__proto__");
    const reg = ok(await api("POST", "/register", { fetch_event_types: ["user_topic"] }));
    const cid = channelIds.get("__proto__")!;
    // Topics the owner started are followed automatically (feature level 214): keep the muted ones.
    const muted = (
      reg.user_topics as { topic_name: string; stream_id: number; visibility_policy: number }[]
    ).filter((t) => t.stream_id === cid && t.visibility_policy === 1);
    assert.deepEqual(muted.map((t) => t.topic_name).sort(), ["__proto__", "constructor"]);
  });
});

describe("prototype-named keys in journal replay and snapshots", () => {
  const dirRef: ActorRef = { kind: "channelDirectory", realm: 1, key: "directory" };
  const realm: ActorRef = { kind: "realm", realm: 1, key: "realm" };
  const hostsRef: ActorRef = { kind: "realmDirectory", realm: 0, key: "directory" };
  /** A lookup by a string that TypeScript does not resolve to an Object member. */
  const at = <T>(o: Record<string, T>, k: string): T | undefined => o[k];

  test("the channel name index replays and reloads __proto__ and constructor", () => {
    const b = channelDirectoryBehavior;
    let s = b.initial(dirRef);
    for (const [id, name] of [
      [1, "__proto__"],
      [2, "constructor"],
    ] as const) {
      s = b.apply(s, { type: "channelCreated", channel: { id, name } } as unknown as Obj, dirRef);
    }
    const check = (st: DirState) => {
      assert.equal(at(st.byName, "__proto__"), 1);
      assert.equal(at(st.byName, "constructor"), 2);
      assert.equal(at(st.byName, "tostring"), undefined);
      assert.equal(at(st.byName, "hasownproperty"), undefined);
    };
    check(s as DirState);
    const data = b.toSnapshot(s);
    assert.match(data, /"byName":\{"__proto__":1,"constructor":2\}/);
    check(b.fromSnapshot(data, dirRef) as DirState);
    // A snapshot written before the change (a plain object) still loads.
    const old = JSON.stringify({ realmId: 1, channels: {}, byName: { plain: 3 }, subs: {} });
    const loaded = b.fromSnapshot(old, dirRef) as DirState;
    assert.equal(at(loaded.byName, "plain"), 3);
    assert.equal(at(loaded.byName, "constructor"), undefined);
  });

  test("the realm's email and host indexes replay and reload prototype member names", () => {
    const b = realmBehavior;
    let s = b.initial(realm);
    s = b.apply(s, { type: "userAdded", entry: { userId: 7, email: "__proto__" } } as unknown as Obj, realm);
    s = b.apply(
      s,
      { type: "userAdded", entry: { userId: 8, email: "Constructor" } } as unknown as Obj,
      realm,
    );
    const users = (st: unknown) => (st as { users: Record<string, { userId: number }> }).users;
    for (const st of [s, b.fromSnapshot(b.toSnapshot(s), realm)]) {
      assert.equal(at(users(st), "__proto__")?.userId, 7);
      assert.equal(at(users(st), "constructor")?.userId, 8);
      assert.equal(at(users(st), "tostring"), undefined);
    }
    const h = realmDirectoryBehavior;
    let d = h.initial(hostsRef);
    d = h.apply(d, { type: "realmRegistered", realmId: 2, host: "constructor" }, hostsRef);
    const hosts = (st: unknown) => (st as { hosts: Record<string, number> }).hosts;
    for (const st of [d, h.fromSnapshot(h.toSnapshot(d), hostsRef)]) {
      assert.equal(at(hosts(st), "constructor"), 2);
      assert.equal(at(hosts(st), "__proto__"), undefined);
      assert.equal(at(hosts(st), "valueof"), undefined);
    }
  });
});
