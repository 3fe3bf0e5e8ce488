// Black-box HTTP tests of custom emoji: GET /realm/emoji,
// POST /realm/emoji/{name} (multipart upload), DELETE /realm/emoji/{name},
// the image URL, realm_emoji events (with and without the
// individual_emoji_changes capability), /register's realm_emoji, and custom
// emoji in user status and reactions. One cluster test uploads through the
// gateway and reads the image back from another process.

import assert from "node:assert/strict";
import { deflateSync } from "node:zlib";
import { before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  basicAuth,
  eventsUntil,
  newUser,
  roleMatrix,
  startCluster,
  useEmbedded,
  type ApiResult,
  type Creds,
  type Ev,
  type Member,
} from "./support/index.ts";
import { shapeForQueue } from "../actors/queue/shape.ts";
import type { Registration } from "../actors/queue/index.ts";

// ---- test images --------------------------------------------------------------

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

/** A real 1x1 RGBA PNG whose pixel is `seed`, so each test image differs. */
function png(seed = 0): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0);
  ihdr.writeUInt32BE(1, 4);
  ihdr[8] = 8;
  ihdr[9] = 6;
  const raw = Buffer.from([0, seed & 255, (seed >> 8) & 255, 7, 255]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", deflateSync(raw)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A 1x1 GIF89a with `frames` image descriptors (2+ = animated). */
function gif(frames = 1): Buffer {
  const header = Buffer.from("GIF89a", "ascii");
  const lsd = Buffer.from([1, 0, 1, 0, 0x80, 0, 0]); // 1x1, global table of 2 colours
  const table = Buffer.from([0, 0, 0, 255, 255, 255]);
  const frame = Buffer.from([
    0x21,
    0xf9,
    4,
    0,
    10,
    0,
    0,
    0, // graphic control extension
    0x2c,
    0,
    0,
    0,
    0,
    1,
    0,
    1,
    0,
    0, // image descriptor
    2,
    2,
    0x4c,
    0x01,
    0, // LZW data
  ]);
  return Buffer.concat([header, lsd, table, ...Array<Buffer>(frames).fill(frame), Buffer.from([0x3b])]);
}

interface FilePart {
  field?: string;
  data: Buffer;
  type?: string;
  filename?: string;
}

async function upload(baseUrl: string, auth: Creds, name: string, files: FilePart[]): Promise<ApiResult> {
  const form = new FormData();
  files.forEach((f, i) => {
    form.append(
      f.field ?? `f${i + 1}`,
      new Blob([new Uint8Array(f.data)], { type: f.type ?? "image/png" }),
      f.filename ?? `img${i}.png`,
    );
  });
  const res = await fetch(`${baseUrl}/api/v1/realm/emoji/${name}`, {
    method: "POST",
    headers: { authorization: basicAuth(auth) },
    body: form,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // leave the text
  }
  return { status: res.status, headers: res.headers, body };
}

// ---- embedded ------------------------------------------------------------------

const srv = useEmbedded();
let seq = 0;
const uniq = (p = "emo") => `${p}_${++seq}x`;

async function listEmoji(): Promise<Record<string, Ev>> {
  const r = await srv.api("GET", "/realm/emoji");
  assertSuccess(r);
  return r.body.emoji;
}

async function uploadOk(auth: Creds, name: string, data = png(seq)): Promise<Ev> {
  assertSuccess(await upload(srv.baseUrl, auth, name, [{ data }]));
  const e = Object.values(await listEmoji()).find((x: Ev) => x.name === name && !x.deactivated);
  assert.ok(e, `emoji ${name} listed`);
  return e;
}

async function setAddEmojiGroup(groupName: string): Promise<void> {
  const groups = await srv.api("GET", "/user_groups");
  assertSuccess(groups);
  const g = groups.body.user_groups.find((x: Ev) => x.name === groupName);
  assert.ok(g, groupName);
  assertSuccess(await srv.api("PATCH", "/realm", { can_add_custom_emoji_group: { new: g.id } }));
}

describe("custom emoji - list and upload", () => {
  test("custom emoji - upload, list shape and the image URL", async () => {
    const member = await newUser(srv);
    const name = uniq();
    const bytes = png(4242);
    const res = await upload(srv.baseUrl, member, name, [{ data: bytes }]);
    assertSuccess(res);
    assert.deepEqual(Object.keys(res.body).sort(), ["msg", "result"]);

    const all = await listEmoji();
    const [id, e] = Object.entries(all).find(([, x]) => x.name === name)!;
    assert.deepEqual(e, {
      id,
      name,
      source_url: `/user_avatars/${e.source_url.split("/")[2]}/emoji/images/${id}.png`,
      still_url: null,
      deactivated: false,
      author_id: member.userId,
    });
    assert.match(id, /^\d+$/);

    // The image is public: no credentials, same bytes, image type, long cache.
    const img = await fetch(srv.baseUrl + e.source_url);
    assert.equal(img.status, 200);
    assert.equal(img.headers.get("content-type"), "image/png");
    assert.match(img.headers.get("cache-control") ?? "", /max-age=\d+/);
    assert.deepEqual(Buffer.from(await img.arrayBuffer()), bytes);
    const head = await fetch(srv.baseUrl + e.source_url, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-type"), "image/png");
    assert.equal(head.headers.get("content-length"), String(bytes.length));

    // Another realm id, an unknown id or the wrong extension: not found.
    const realmId = e.source_url.split("/")[2];
    for (const path of [
      `/user_avatars/${Number(realmId) + 1}/emoji/images/${id}.png`,
      `/user_avatars/${realmId}/emoji/images/999999.png`,
      `/user_avatars/${realmId}/emoji/images/${id}.gif`,
      `/user_avatars/${realmId}/emoji/images/x${id}.png`,
    ]) {
      const r = await fetch(srv.baseUrl + path);
      assert.equal(r.status, 404, path);
      await r.arrayBuffer();
    }
  });

  test("custom emoji - GIF uploads keep their type; animated ones have no still image", async () => {
    const still = uniq("gif");
    const anim = uniq("anim");
    assertSuccess(
      await upload(srv.baseUrl, srv.owner, still, [{ data: gif(1), type: "image/gif", filename: "a.gif" }]),
    );
    assertSuccess(
      await upload(srv.baseUrl, srv.owner, anim, [{ data: gif(3), type: "image/gif", filename: "b.gif" }]),
    );
    const all = Object.values(await listEmoji());
    for (const name of [still, anim]) {
      const e = all.find((x: Ev) => x.name === name);
      assert.ok(e.source_url.endsWith(".gif"));
      assert.equal(e.still_url, null);
      const img = await fetch(srv.baseUrl + e.source_url);
      assert.equal(img.headers.get("content-type"), "image/gif");
      assert.deepEqual(Buffer.from(await img.arrayBuffer()), name === still ? gif(1) : gif(3));
    }
  });

  test("custom emoji - a file sent as application/octet-stream is typed by its name", async () => {
    const name = uniq("oct");
    assertSuccess(
      await upload(srv.baseUrl, srv.owner, name, [
        { data: png(9), type: "application/octet-stream", filename: "x.png" },
      ]),
    );
    const e = Object.values(await listEmoji()).find((x: Ev) => x.name === name);
    assert.ok(e.source_url.endsWith(".png"));
  });

  test("custom emoji - names: spaces become underscores; Zulip's name errors", async () => {
    const spaced = `${uniq("two")} words`;
    assertSuccess(await upload(srv.baseUrl, srv.owner, encodeURIComponent(spaced), [{ data: png(1) }]));
    assert.ok(Object.values(await listEmoji()).some((x: Ev) => x.name === spaced.replace(" ", "_")));

    const before = await listEmoji();
    const bad =
      "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.";
    assertError(await upload(srv.baseUrl, srv.owner, "my_EMoji", [{ data: png() }]), bad);
    assertError(await upload(srv.baseUrl, srv.owner, "my_em*oji", [{ data: png() }]), bad);
    assertError(await upload(srv.baseUrl, srv.owner, "my/emoji/with/slash/", [{ data: png() }]), bad);
    assertError(await upload(srv.baseUrl, srv.owner, "caf%C3%A9", [{ data: png() }]), bad);
    assertError(
      await upload(srv.baseUrl, srv.owner, "my_emoji_", [{ data: png() }]),
      "Emoji names must end with either a letter or digit.",
    );
    assertError(
      await upload(srv.baseUrl, srv.owner, "my-emoji-", [{ data: png() }]),
      "Emoji names must end with either a letter or digit.",
    );
    assertError(await upload(srv.baseUrl, srv.owner, "%20", [{ data: png() }]), "Emoji name is missing");
    // No name at all matches no route.
    assertError(await upload(srv.baseUrl, srv.owner, "", [{ data: png() }]), "Not Found", "NOT_FOUND", 404);
    assert.deepEqual(await listEmoji(), before);
  });

  test("custom emoji - exactly one file; duplicates; default emoji names", async () => {
    const name = uniq();
    const before = await listEmoji();
    assertError(await upload(srv.baseUrl, srv.owner, name, []), "You must upload exactly one file.");
    assertError(
      await upload(srv.baseUrl, srv.owner, name, [{ data: png(1) }, { data: png(2) }]),
      "You must upload exactly one file.",
    );
    // A plain form POST carries no file either.
    assertError(
      await srv.api("POST", `/realm/emoji/${name}`, { x: "1" }),
      "You must upload exactly one file.",
    );
    assert.deepEqual(await listEmoji(), before);

    await uploadOk(srv.owner, name);
    const afterOne = await listEmoji();
    assertError(
      await upload(srv.baseUrl, srv.owner, name, [{ data: png(3) }]),
      "A custom emoji with this name already exists.",
    );
    assert.deepEqual(await listEmoji(), afterOne);

    // Overriding a default (unicode) emoji name is for administrators.
    const member = await newUser(srv);
    const admin = await newUser(srv, 200);
    assertError(
      await upload(srv.baseUrl, member, "laughing", [{ data: png() }]),
      "Only administrators can override default emoji.",
    );
    assert.deepEqual(await listEmoji(), afterOne);
    await uploadOk(admin, "laughing");
  });

  test("custom emoji - oversized and wrong-type uploads change nothing", async () => {
    const before = await listEmoji();
    const name = uniq("big");
    const big = Buffer.concat([png(), Buffer.alloc(5 * 1024 * 1024 + 1 - png().length)]);
    assertError(
      await upload(srv.baseUrl, srv.owner, name, [{ data: big }]),
      "Uploaded file is larger than the allowed limit of 5 MiB",
    );
    // Exactly the limit is fine as far as size goes.
    const atLimit = Buffer.concat([png(), Buffer.alloc(5 * 1024 * 1024 - png().length)]);
    assertSuccess(await upload(srv.baseUrl, srv.owner, uniq("limit"), [{ data: atLimit }]));
    const withLimit = await listEmoji();
    assert.equal(Object.keys(withLimit).length, Object.keys(before).length + 1);

    const wrong: FilePart[] = [
      { data: Buffer.from("hello"), type: "text/plain", filename: "a.txt" },
      { data: png(), type: "image/tiff", filename: "a.tif" },
      { data: png(), type: "image/svg+xml", filename: "a.svg" },
      { data: Buffer.from("hello"), type: "application/octet-stream", filename: "noext" },
    ];
    for (const f of wrong) {
      assertError(await upload(srv.baseUrl, srv.owner, name, [f]), "Invalid image format", "BAD_IMAGE");
    }
    for (const f of [
      { data: Buffer.from("not an image at all"), type: "image/png" },
      { data: Buffer.alloc(0), type: "image/gif", filename: "e.gif" },
      { data: Buffer.from("II*\0 a tiff"), type: "image/jpeg", filename: "t.jpg" },
    ]) {
      assertError(
        await upload(srv.baseUrl, srv.owner, name, [f]),
        "Could not decode image; did you upload an image file?",
        "BAD_IMAGE",
      );
    }
    assert.deepEqual(await listEmoji(), withLimit);
  });

  test("custom emoji - GET needs credentials; wrong methods", async () => {
    assertError(
      await srv.api("GET", "/realm/emoji", {}, null),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );
    assertError(
      await upload(srv.baseUrl, { email: srv.owner.email, apiKey: "x".repeat(32) }, uniq(), [
        { data: png() },
      ]),
      "Invalid API key",
      "UNAUTHORIZED",
      401,
    );
    const r = await srv.api("PATCH", "/realm/emoji/abc");
    assert.equal(r.status, 405);
  });
});

describe("custom emoji - permissions", () => {
  test("custom emoji - upload by role follows can_add_custom_emoji_group", async () => {
    const m = await roleMatrix(srv);
    // Default: role:members.
    for (const role of ["owner", "admin", "moderator", "member"]) await uploadOk(m[role]!, uniq(role));
    const before = await listEmoji();
    assertError(
      await upload(srv.baseUrl, m.guest!, uniq(), [{ data: png() }]),
      "Not allowed for guest users",
    );
    assertError(
      await upload(srv.baseUrl, m.bot!, uniq(), [{ data: png() }]),
      "This endpoint does not accept bot requests.",
    );

    await setAddEmojiGroup("role:administrators");
    try {
      for (const role of ["moderator", "member"])
        assertError(
          await upload(srv.baseUrl, m[role]!, uniq(), [{ data: png() }]),
          "Insufficient permission",
        );
      assertError(
        await upload(srv.baseUrl, m.guest!, uniq(), [{ data: png() }]),
        "Not allowed for guest users",
      );
      assert.deepEqual(await listEmoji(), before);
      for (const role of ["owner", "admin"]) await uploadOk(m[role]!, uniq(role));

      await setAddEmojiGroup("role:moderators");
      await uploadOk(m.moderator!, uniq("mod"));
      assertError(await upload(srv.baseUrl, m.member!, uniq(), [{ data: png() }]), "Insufficient permission");

      // Permission is checked before the file, as in Zulip.
      assertError(await upload(srv.baseUrl, m.member!, uniq(), []), "Insufficient permission");
    } finally {
      await setAddEmojiGroup("role:members");
    }
    await uploadOk(m.member!, uniq("back"));
  });

  test("custom emoji - delete: author or administrator; deactivation keeps the entry", async () => {
    const author = await newUser(srv);
    const other = await newUser(srv);
    const moderator = await newUser(srv, 300);
    const admin = await newUser(srv, 200);
    const n1 = uniq("del");
    const e1 = await uploadOk(author, n1);

    assertError(
      await srv.api("DELETE", `/realm/emoji/${n1}`, {}, other),
      "Must be an organization administrator or emoji author",
    );
    assertError(
      await srv.api("DELETE", `/realm/emoji/${n1}`, {}, moderator),
      "Must be an organization administrator or emoji author",
    );
    assert.equal((await listEmoji())[e1.id].deactivated, false);

    assertSuccess(await srv.api("DELETE", `/realm/emoji/${n1}`, {}, author));
    const afterDelete = await listEmoji();
    assert.deepEqual(afterDelete[e1.id], { ...e1, deactivated: true });
    // The image stays served: old messages and reactions still show it.
    const img = await fetch(srv.baseUrl + e1.source_url);
    assert.equal(img.status, 200);
    await img.arrayBuffer();

    assertError(
      await srv.api("DELETE", `/realm/emoji/${n1}`, {}, author),
      `Emoji '${n1}' does not exist`,
      "BAD_REQUEST",
      404,
    );
    assertError(
      await srv.api("DELETE", "/realm/emoji/invalid_emoji"),
      "Emoji 'invalid_emoji' does not exist",
      "BAD_REQUEST",
      404,
    );

    // The name is free again: a new emoji with a new id.
    const e2 = await uploadOk(other, n1);
    assert.notEqual(e2.id, e1.id);
    assert.equal((await listEmoji())[e1.id].deactivated, true);
    // Administrators delete anyone's.
    assertSuccess(await srv.api("DELETE", `/realm/emoji/${n1}`, {}, admin));
    assert.equal((await listEmoji())[e2.id].deactivated, true);
  });
});

describe("custom emoji - events and register", () => {
  async function register(
    auth: Creds,
    caps?: Record<string, boolean>,
  ): Promise<{ id: string; last: number; auth: Creds; body: Ev }> {
    const params: Record<string, unknown> = { event_types: ["realm_emoji"] };
    if (caps) params.client_capabilities = caps;
    const r = await srv.api("POST", "/register", params, auth);
    assertSuccess(r);
    return { id: r.body.queue_id, last: r.body.last_event_id, auth, body: r.body };
  }

  test("custom emoji - realm_emoji events with and without individual_emoji_changes", async () => {
    const watcher = await newUser(srv);
    const legacy = await register(watcher);
    const modern = await register(watcher, { individual_emoji_changes: true });
    assert.deepEqual(legacy.body.realm_emoji, await listEmoji());

    const name = uniq("ev");
    const e = await uploadOk(srv.owner, name);
    const all = await listEmoji();

    const lev = await eventsUntil(srv, legacy, (evs) => evs.length >= 1);
    assert.deepEqual(
      lev.map(({ id: _id, ...rest }: Ev) => rest),
      [{ type: "realm_emoji", op: "update", realm_emoji: all }],
    );
    const mev = await eventsUntil(srv, modern, (evs) => evs.length >= 1);
    assert.deepEqual(
      mev.map(({ id: _id, ...rest }: Ev) => rest),
      [{ type: "realm_emoji", op: "add", emoji: e }],
    );

    assertSuccess(await srv.api("DELETE", `/realm/emoji/${name}`));
    const after = await listEmoji();
    assert.equal(after[e.id].deactivated, true);
    const lev2 = await eventsUntil(srv, legacy, (evs) => evs.length >= 1);
    assert.deepEqual(
      lev2.map(({ id: _id, ...rest }: Ev) => rest),
      [{ type: "realm_emoji", op: "update", realm_emoji: after }],
    );
    const mev2 = await eventsUntil(srv, modern, (evs) => evs.length >= 1);
    assert.deepEqual(
      mev2.map(({ id: _id, ...rest }: Ev) => rest),
      [{ type: "realm_emoji", op: "update_one", emoji_id: e.id, data: { deactivated: true } }],
    );

    // A fresh register sees the same state the events built.
    const again = await register(watcher, { individual_emoji_changes: true });
    assert.deepEqual(again.body.realm_emoji, after);

    // Failed uploads and deletes send nothing.
    assertError(
      await upload(srv.baseUrl, srv.owner, name + "_", [{ data: png() }]),
      "Emoji names must end with either a letter or digit.",
    );
    assertError(
      await srv.api("DELETE", `/realm/emoji/${name}`),
      `Emoji '${name}' does not exist`,
      "BAD_REQUEST",
      404,
    );
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await eventsUntil(srv, legacy, () => false), []);
  });
});

describe("custom emoji - status and reactions", () => {
  let member: Member;
  let emo: Ev;
  let gone: Ev;

  before(async () => {
    member = await newUser(srv);
    emo = await uploadOk(srv.owner, uniq("use"));
    gone = await uploadOk(srv.owner, uniq("gone"));
    assertSuccess(await srv.api("DELETE", `/realm/emoji/${gone.name}`));
  });

  async function statusOf(userId: number): Promise<Ev> {
    const r = await srv.api("POST", "/register", { fetch_event_types: ["user_status"] }, member);
    assertSuccess(r);
    return r.body.user_status[String(userId)];
  }

  test("custom emoji - user status takes active custom emoji", async () => {
    assertSuccess(await srv.api("POST", "/users/me/status", { emoji_name: emo.name }, member));
    assert.deepEqual(await statusOf(member.userId), {
      emoji_name: emo.name,
      emoji_code: emo.id,
      reaction_type: "realm_emoji",
    });
    assertSuccess(
      await srv.api(
        "POST",
        "/users/me/status",
        { emoji_name: emo.name, emoji_code: emo.id, reaction_type: "realm_emoji" },
        member,
      ),
    );

    const cases: [Record<string, string>, string][] = [
      [
        { emoji_name: gone.name, emoji_code: gone.id, reaction_type: "realm_emoji" },
        "This custom emoji has been deactivated.",
      ],
      [{ emoji_name: emo.name, emoji_code: "999999", reaction_type: "realm_emoji" }, "Invalid custom emoji."],
      [
        { emoji_name: "other", emoji_code: emo.id, reaction_type: "realm_emoji" },
        "Invalid custom emoji name.",
      ],
      // A deactivated emoji's name no longer resolves.
      [{ emoji_name: gone.name }, `Emoji '${gone.name}' does not exist`],
    ];
    for (const [params, msg] of cases)
      assertError(await srv.api("POST", "/users/me/status", params, member), msg);
    assert.deepEqual(await statusOf(member.userId), {
      emoji_name: emo.name,
      emoji_code: emo.id,
      reaction_type: "realm_emoji",
    });
  });

  test("custom emoji - reactions take active custom emoji", async () => {
    const channel = uniq("chan");
    assertSuccess(await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }] }));
    const sent = await srv.api("POST", "/messages", {
      type: "stream",
      to: channel,
      topic: "t",
      content: "hi",
    });
    assertSuccess(sent);
    const id = sent.body.id as number;
    const reactions = async () => {
      const r = await srv.api("GET", `/messages/${id}`);
      assertSuccess(r);
      return r.body.message.reactions.map(({ user: _u, ...x }: Ev) => x);
    };

    assertSuccess(await srv.api("POST", `/messages/${id}/reactions`, { emoji_name: emo.name }));
    assert.deepEqual(await reactions(), [
      { emoji_name: emo.name, emoji_code: emo.id, reaction_type: "realm_emoji", user_id: srv.owner.userId },
    ]);
    assertError(
      await srv.api("POST", `/messages/${id}/reactions`, {
        emoji_name: emo.name,
        emoji_code: emo.id,
        reaction_type: "realm_emoji",
      }),
      "Reaction already exists.",
      "REACTION_ALREADY_EXISTS",
    );
    const bad: [Record<string, string>, string][] = [
      [
        { emoji_name: gone.name, emoji_code: gone.id, reaction_type: "realm_emoji" },
        "This custom emoji has been deactivated.",
      ],
      [{ emoji_name: "x", emoji_code: "999999", reaction_type: "realm_emoji" }, "Invalid custom emoji."],
      [
        { emoji_name: "other", emoji_code: emo.id, reaction_type: "realm_emoji" },
        "Invalid custom emoji name.",
      ],
      [{ emoji_name: gone.name }, `Emoji '${gone.name}' does not exist`],
    ];
    for (const [params, msg] of bad)
      assertError(await srv.api("POST", `/messages/${id}/reactions`, params, srv.owner), msg);
    assert.equal((await reactions()).length, 1);

    // Removing by name resolves the custom emoji's code; reaction_type
    // defaults to unicode_emoji there (Zulip's remove_reaction), so it is needed.
    assertError(
      await srv.api("DELETE", `/messages/${id}/reactions`, { emoji_name: emo.name }),
      "Reaction doesn't exist.",
      "REACTION_DOES_NOT_EXIST",
    );
    assertSuccess(
      await srv.api("DELETE", `/messages/${id}/reactions`, {
        emoji_name: emo.name,
        reaction_type: "realm_emoji",
      }),
    );
    assert.deepEqual(await reactions(), []);
  });
});

// ---- queue shaping (pure) ---------------------------------------------------------

describe("custom emoji - queue shape", () => {
  const reg = (caps: Record<string, boolean>, eventTypes: string[] | null = null): Registration => ({
    eventTypes,
    narrow: [],
    capabilities: caps,
    applyMarkdown: true,
    clientGravatar: false,
    allPublicStreams: false,
    timeoutSecs: 600,
  });
  const emoji = { id: "3", name: "x", source_url: "/u", still_url: null, deactivated: false, author_id: 1 };
  const all = { "3": emoji };

  test("custom emoji - shape: add and update_one, per capability", () => {
    const add = { type: "realm_emoji", op: "add", emoji, realm_emoji: all };
    assert.deepEqual(shapeForQueue(add, reg({ individual_emoji_changes: true }), 1, "q"), [
      { type: "realm_emoji", op: "add", emoji },
    ]);
    assert.deepEqual(shapeForQueue(add, reg({}), 1, "q"), [
      { type: "realm_emoji", op: "update", realm_emoji: all },
    ]);
    const off = { "3": { ...emoji, deactivated: true } };
    const one = {
      type: "realm_emoji",
      op: "update_one",
      emoji_id: "3",
      data: { deactivated: true },
      realm_emoji: off,
    };
    assert.deepEqual(shapeForQueue(one, reg({ individual_emoji_changes: true }), 1, "q"), [
      { type: "realm_emoji", op: "update_one", emoji_id: "3", data: { deactivated: true } },
    ]);
    assert.deepEqual(shapeForQueue(one, reg({ individual_emoji_changes: false }), 1, "q"), [
      { type: "realm_emoji", op: "update", realm_emoji: off },
    ]);
    assert.deepEqual(shapeForQueue(add, reg({}, ["message"]), 1, "q"), []);
  });
});

// ---- cluster -------------------------------------------------------------------

describe("custom emoji - cluster", () => {
  test(
    "custom emoji - cluster: upload through the gateway, list and fetch the image back",
    { timeout: 120_000 },
    async () => {
      const c = await startCluster();
      try {
        // Larger than NATS's default 1 MB payload, so a node-to-node hop would fail.
        const bytes = Buffer.concat([png(77), Buffer.alloc(3 * 1024 * 1024, 7)]);
        const res = await upload(c.baseUrl, c.owner, "cluster_emoji", [{ data: bytes }]);
        assertSuccess(res);
        const list = await c.api("GET", "/realm/emoji");
        assertSuccess(list);
        const e = Object.values(list.body.emoji as Record<string, Ev>).find(
          (x) => x.name === "cluster_emoji",
        );
        assert.ok(e);
        const img = await fetch(c.baseUrl + e.source_url);
        assert.equal(img.status, 200);
        assert.equal(img.headers.get("content-type"), "image/png");
        assert.deepEqual(Buffer.from(await img.arrayBuffer()), bytes);
        assertSuccess(await c.api("DELETE", "/realm/emoji/cluster_emoji"));
        const after = await c.api("GET", "/realm/emoji");
        assert.equal(after.body.emoji[e.id].deactivated, true);
      } finally {
        await c.stop();
      }
    },
  );
});
