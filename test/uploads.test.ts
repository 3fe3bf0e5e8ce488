// Black-box HTTP tests of file uploads and attachments: POST /user_uploads,
// the file at /user_uploads/{realm}/{path} and its temporary URL,
// GET /attachments, DELETE /attachments/{id}, the attachment events, and
// access that follows the messages linking a file. Once with the local
// directory storage, once against a real S3-protocol server (s3rver).

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import sharp from "sharp";
import {
  assertError,
  assertSuccess,
  basicAuth,
  eventsUntil,
  newUser,
  openQueue,
  startEmbedded,
  type EmbeddedHandle,
} from "./support/index.ts";
import { assertFileError, getFile, uploadFiles } from "./support/uploads.ts";
import { blobBehavior } from "../actors/blob/index.ts";
import { uploadsBehavior } from "../actors/uploads/index.ts";
import type { Obj } from "../actors/types.ts";
import { requireS3rver, startS3, type S3Server } from "./support/s3.ts";

const PATH = /^\/user_uploads\/(\d+)\/[0-9a-f]{2}\/[A-Za-z0-9_-]{24}\/([^/]+)$/;

/** The whole flow, against whichever storage the server was started with. */
function flowTests(get: () => EmbeddedHandle, storedBytes: (pathId: string) => Promise<Buffer | null>) {
  test("upload, fetch, temporary URL, attachments list and events; access follows the messages", async () => {
    const srv = get();
    const me = await newUser(srv);
    const friend = await newUser(srv);
    const stranger = await newUser(srv);
    const q = await openQueue(srv, me, ["attachment"]);
    const qFriend = await openQueue(srv, friend, ["attachment"]);
    const before = Date.now();

    const up = await uploadFiles(srv.baseUrl, me, [
      { data: Buffer.from("zulip!\n"), filename: "my notes.txt" },
    ]);
    assertSuccess(up);
    assert.deepEqual(Object.keys(up.body).sort(), ["filename", "msg", "result", "uri", "url"]);
    assert.equal(up.body.uri, up.body.url);
    assert.equal(up.body.filename, "my notes.txt");
    const m = PATH.exec(up.body.url as string);
    assert.ok(m, up.body.url);
    assert.equal(m[2], "my-notes.txt");
    const url = up.body.url as string;
    const pathId = url.slice("/user_uploads/".length);
    assert.equal((await storedBytes(pathId))?.toString(), "zulip!\n");

    // The owner fetches the file with the API key.
    const own = await getFile(srv.baseUrl, url, me);
    assert.equal(own.status, 200);
    assert.equal(own.data.toString(), "zulip!\n");
    assert.equal(own.headers.get("content-type"), "text/plain");
    assert.equal(own.headers.get("x-content-type-options"), "nosniff");
    assert.match(own.headers.get("content-disposition") ?? "", /^inline; filename\*=UTF-8''my%20notes\.txt$/);

    // The API form answers a temporary URL that needs no credentials.
    const tmp = await srv.api("GET", url, {}, me);
    assertSuccess(tmp);
    assert.match(tmp.body.url, /^\/user_uploads\/temporary\/[0-9a-f]+\/my-notes\.txt$/);
    const anon = await getFile(srv.baseUrl, tmp.body.url, null);
    assert.equal(anon.status, 200);
    assert.equal(anon.data.toString(), "zulip!\n");
    const wrongName = tmp.body.url.replace(/my-notes\.txt$/, "other.txt");
    assertFileError(await getFile(srv.baseUrl, wrongName, null), "Invalid filename", 400);
    const token = (tmp.body.url as string).split("/")[3]!;
    const forged = `/user_uploads/temporary/${token.slice(0, -2)}${token.endsWith("00") ? "11" : "00"}/my-notes.txt`;
    assertFileError(await getFile(srv.baseUrl, forged, null), "Invalid token", 400);
    assertFileError(
      await getFile(srv.baseUrl, "/user_uploads/temporary/zz/my-notes.txt", null),
      "Invalid token",
      400,
    );

    // Nobody else may fetch it until a message they can read links it.
    assertFileError(
      await getFile(srv.baseUrl, url, friend),
      "You are not authorized to view this file.",
      403,
    );
    assertError(
      await srv.api("GET", url, {}, friend),
      "You are not authorized to view this file.",
      "BAD_REQUEST",
      403,
    );
    const sent = await srv.api(
      "POST",
      "/messages",
      {
        type: "direct",
        to: JSON.stringify([friend.userId]),
        content: `[my notes.txt](${url})`,
      },
      me,
    );
    assertSuccess(sent);
    const friendGets = await getFile(srv.baseUrl, url, friend);
    assert.equal(friendGets.status, 200);
    assert.equal(friendGets.data.toString(), "zulip!\n");
    assertSuccess(await srv.api("GET", url, {}, friend));
    assertFileError(
      await getFile(srv.baseUrl, url, stranger),
      "You are not authorized to view this file.",
      403,
    );

    const list = await srv.api("GET", "/attachments", {}, me);
    assertSuccess(list);
    assert.equal(list.body.attachments.length, 1);
    const a = list.body.attachments[0];
    assert.deepEqual(Object.keys(a).sort(), ["create_time", "id", "message_ids", "name", "path_id", "size"]);
    assert.equal(a.name, "my notes.txt");
    assert.equal(a.path_id, pathId);
    assert.equal(a.size, 7);
    // Seconds (feature level 443); message ids only (472).
    assert.ok(a.create_time >= Math.floor(before / 1000) - 1 && a.create_time <= Date.now() / 1000);
    assert.deepEqual(a.message_ids, [sent.body.id]);
    assert.ok(list.body.upload_space_used >= 7);
    // Others see only their own (none).
    assert.deepEqual((await srv.api("GET", "/attachments", {}, friend)).body.attachments, []);

    const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.deepEqual(
      evs.map((e) => [e.type, e.op]),
      [
        ["attachment", "add"],
        ["attachment", "update"],
      ],
    );
    assert.deepEqual(evs[0].attachment, { ...a, message_ids: [] });
    assert.deepEqual(evs[1].attachment, a);
    assert.equal(typeof evs[0].upload_space_used, "number");

    // Deleting: only the owner's own, then the file is gone for everyone.
    assertError(await srv.api("DELETE", `/attachments/${a.id}`, {}, friend), "Invalid attachment");
    assertError(await srv.api("DELETE", `/attachments/${a.id + 100000}`, {}, me), "Invalid attachment");
    assertSuccess(await srv.api("DELETE", `/attachments/${a.id}`, {}, me));
    assertError(await srv.api("DELETE", `/attachments/${a.id}`, {}, me), "Invalid attachment");
    assertFileError(await getFile(srv.baseUrl, url, me), "File not found.", 404);
    assertFileError(await getFile(srv.baseUrl, url, friend), "File not found.", 404);
    assert.equal(await storedBytes(pathId), null);
    const rm = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.deepEqual(rm, [
      {
        type: "attachment",
        op: "remove",
        attachment: { id: a.id },
        upload_space_used: rm[0].upload_space_used,
        id: rm[0].id,
      },
    ]);
    assert.deepEqual(await eventsUntil(srv, qFriend, () => false), []);
  });

  test("an image gets Zulip's thumbnails, served like the image and removed with it", async () => {
    const srv = get();
    const me = await newUser(srv);
    const other = await newUser(srv);
    const png = await sharp({
      create: { width: 1200, height: 900, channels: 3, background: { r: 200, g: 10, b: 10 } },
    })
      .png()
      .toBuffer();
    const up = await uploadFiles(srv.baseUrl, me, [{ data: png, filename: "red.png", type: "image/png" }]);
    assertSuccess(up);
    const pathId = (up.body.url as string).slice("/user_uploads/".length);
    const thumb = `/user_uploads/thumbnail/${pathId}/840x560.webp`;
    const got = await getFile(srv.baseUrl, thumb, me);
    assert.equal(got.status, 200, got.data.toString());
    assert.equal(got.headers.get("content-type"), "image/webp");
    const meta = await sharp(got.data).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ["webp", 747, 560]);
    assert.ok(await storedBytes(`thumbnail/${pathId}/840x560.webp`));
    // A still image has no animated thumbnail; unknown formats name nothing.
    for (const f of ["840x560-anim.webp", "100x100.webp", "..", "__proto__"]) {
      assertFileError(
        await getFile(srv.baseUrl, `/user_uploads/thumbnail/${pathId}/${f}`, me),
        "File not found.",
        404,
      );
    }
    assertFileError(
      await getFile(srv.baseUrl, thumb, other),
      "You are not authorized to view this file.",
      403,
    );
    // Messages linking it show Zulip's preview; an image-only paragraph becomes the preview.
    const preview = (title: string) =>
      `<div class="message_inline_image"><a href="/user_uploads/${pathId}" title="${title}">` +
      `<img data-original-content-type="image/png" data-original-dimensions="1200x900" ` +
      `src="/user_uploads/thumbnail/${pathId}/840x560.webp"></a></div>`;
    const dm = { type: "direct", to: JSON.stringify([other.userId]) };
    const alone = await srv.api("POST", "/messages", { ...dm, content: `[red.png](${up.body.url})` }, me);
    assertSuccess(alone);
    const aloneMsg = (await srv.api("GET", `/messages/${alone.body.id}`, {}, other)).body.message;
    assert.equal(aloneMsg.content, preview("red.png"));
    const inText = await srv.api("POST", "/messages", { ...dm, content: `An [image](${up.body.url})` }, me);
    const inTextMsg = (await srv.api("GET", `/messages/${inText.body.id}`, {}, other)).body.message;
    assert.match(inTextMsg.content, /^<p>An <a [^>]*>image<\/a><\/p>\n/);
    assert.ok(inTextMsg.content.endsWith(`</p>\n${preview("image")}`), inTextMsg.content);
    assert.equal((await getFile(srv.baseUrl, thumb, other)).status, 200);
    // A link to a file that is no image gets no preview.
    const txt = await uploadFiles(srv.baseUrl, me, [{ data: Buffer.from("t"), filename: "t.txt" }]);
    const plain = await srv.api("POST", "/messages", { ...dm, content: `[t.txt](${txt.body.url})` }, me);
    const plainMsg = (await srv.api("GET", `/messages/${plain.body.id}`, {}, other)).body.message;
    assert.ok(!plainMsg.content.includes("message_inline_image"), plainMsg.content);
    // Bytes that only claim to be an image get none, and the upload still succeeds.
    const fake = await uploadFiles(srv.baseUrl, me, [
      { data: Buffer.from("not a png"), filename: "fake.png", type: "image/png" },
    ]);
    assertSuccess(fake);
    assertFileError(
      await getFile(
        srv.baseUrl,
        `${fake.body.url}/840x560.webp`.replace("/user_uploads/", "/user_uploads/thumbnail/"),
        me,
      ),
      "File not found.",
      404,
    );

    const id = (await srv.api("GET", "/attachments", {}, me)).body.attachments.find(
      (a: { path_id: string }) => a.path_id === pathId,
    ).id;
    assertSuccess(await srv.api("DELETE", `/attachments/${id}`, {}, me));
    assert.equal(await storedBytes(`thumbnail/${pathId}/840x560.webp`), null);
    assertFileError(await getFile(srv.baseUrl, thumb, me), "File not found.", 404);
  });

  test("a channel message shares the file with whoever can read the channel", async () => {
    const srv = get();
    const me = await newUser(srv);
    const reader = await newUser(srv);
    const name = `uploads-${Date.now()}`;
    assertSuccess(await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] }, me));
    const up = await uploadFiles(srv.baseUrl, me, [
      { data: Buffer.from([0x89, 0x50]), filename: "x.bin", type: "application/octet-stream" },
    ]);
    assertSuccess(up);
    assertFileError(
      await getFile(srv.baseUrl, up.body.url, reader),
      "You are not authorized to view this file.",
      403,
    );
    assertSuccess(
      await srv.api(
        "POST",
        "/messages",
        { type: "stream", to: name, topic: "t", content: `see ${up.body.url}` },
        me,
      ),
    );
    // Public channel history: readable without being subscribed.
    const got = await getFile(srv.baseUrl, up.body.url, reader);
    assert.equal(got.status, 200);
    // Not an inline type: a download, never sniffed.
    assert.equal(got.headers.get("content-type"), "application/octet-stream");
    assert.match(got.headers.get("content-disposition") ?? "", /^attachment;/);
  });
}

let local: EmbeddedHandle;
let localDir: string;

describe("uploads, local directory storage", () => {
  before(async () => {
    localDir = mkdtempSync(join(tmpdir(), "uploads-dir-"));
    const saved = process.env.LOCAL_UPLOADS_DIR;
    process.env.LOCAL_UPLOADS_DIR = localDir;
    try {
      local = await startEmbedded();
    } finally {
      if (saved === undefined) delete process.env.LOCAL_UPLOADS_DIR;
      else process.env.LOCAL_UPLOADS_DIR = saved;
    }
  });
  after(async () => {
    await local?.stop();
    rmSync(localDir, { recursive: true, force: true });
  });

  flowTests(
    () => local,
    async (pathId) => {
      const file = join(localDir, pathId);
      return existsSync(file) ? readFileSync(file) : null;
    },
  );

  test("a subscriber who received a channel message linking a file shares it on by DM", async () => {
    const srv = local;
    const me = await newUser(srv);
    const member = await newUser(srv);
    const outsider = await newUser(srv);
    const name = `uploads-private-${Date.now()}`;
    assertSuccess(
      await srv.api(
        "POST",
        "/users/me/subscriptions",
        { subscriptions: [{ name }], principals: [me.userId, member.userId], invite_only: true },
        me,
      ),
    );
    const up = await uploadFiles(srv.baseUrl, me, [{ data: Buffer.from("team"), filename: "team.txt" }]);
    assertSuccess(up);
    assertSuccess(
      await srv.api("POST", "/messages", { type: "stream", to: name, topic: "t", content: up.body.url }, me),
    );
    // The member holds no stored row of that message (received through the subscription).
    assertSuccess(
      await srv.api(
        "POST",
        "/messages",
        { type: "direct", to: JSON.stringify([outsider.userId]), content: up.body.url },
        member,
      ),
    );
    assert.equal((await getFile(srv.baseUrl, up.body.url, outsider)).status, 200);
  });

  test("an edit that adds a link shares the file; a reader's link shares it on, a stranger's does not", async () => {
    const srv = local;
    const me = await newUser(srv);
    const friend = await newUser(srv);
    const up = await uploadFiles(srv.baseUrl, me, [{ data: Buffer.from("later"), filename: "later.txt" }]);
    assertSuccess(up);
    const dm = { type: "direct", to: JSON.stringify([friend.userId]) };
    const sent = await srv.api("POST", "/messages", { ...dm, content: "soon" }, me);
    assertSuccess(sent);
    assertFileError(
      await getFile(srv.baseUrl, up.body.url, friend),
      "You are not authorized to view this file.",
      403,
    );
    assertSuccess(
      await srv.api("PATCH", `/messages/${sent.body.id}`, { content: `here: ${up.body.url}` }, me),
    );
    assert.equal((await getFile(srv.baseUrl, up.body.url, friend)).status, 200);
    const mine = (await srv.api("GET", "/attachments", {}, me)).body.attachments;
    assert.deepEqual(
      mine.map((a: { message_ids: number[] }) => a.message_ids),
      [[sent.body.id]],
    );
    // The friend can see it, so their message to a third user shares it on.
    const third = await newUser(srv);
    const fourth = await newUser(srv);
    const reshared = await srv.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify([third.userId]), content: up.body.url },
      friend,
    );
    assertSuccess(reshared);
    assert.equal((await getFile(srv.baseUrl, up.body.url, third)).status, 200);
    // The fourth never received a message linking it: their link to a fifth shares nothing.
    const fifth = await newUser(srv);
    assertSuccess(
      await srv.api(
        "POST",
        "/messages",
        { type: "direct", to: JSON.stringify([fifth.userId]), content: up.body.url },
        fourth,
      ),
    );
    assertFileError(
      await getFile(srv.baseUrl, up.body.url, fifth),
      "You are not authorized to view this file.",
      403,
    );
    const after = (await srv.api("GET", "/attachments", {}, me)).body.attachments;
    assert.deepEqual(
      after.map((a: { message_ids: number[] }) => a.message_ids),
      [[sent.body.id, reshared.body.id]],
    );
  });

  test("bad requests are refused with Zulip's errors and change nothing", async () => {
    const srv = local;
    const me = await newUser(srv);
    const listBefore = (await srv.api("GET", "/attachments", {}, me)).body;
    assertError(await uploadFiles(srv.baseUrl, me, []), "You must specify a file to upload");
    // A multipart body without a file part at all.
    const form = new FormData();
    form.append("note", "not a file");
    const noFile = await fetch(`${srv.baseUrl}/api/v1/user_uploads`, {
      method: "POST",
      headers: { authorization: basicAuth(me) },
      body: form,
    });
    assert.equal(noFile.status, 400);
    assert.equal(((await noFile.json()) as { msg: string }).msg, "You must specify a file to upload");
    assertError(
      await uploadFiles(srv.baseUrl, me, [
        { data: Buffer.from("a"), filename: "a.txt" },
        { data: Buffer.from("b"), filename: "b.txt" },
      ]),
      "You may only upload one file at a time",
    );
    assertError(
      await uploadFiles(srv.baseUrl, null, [{ data: Buffer.from("a"), filename: "a.txt" }]),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );
    // Over the body limit (Zulip's client_max_body_size): refused before the file is read.
    const big = await uploadFiles(srv.baseUrl, me, [
      { data: Buffer.alloc(25 * 1024 * 1024 + 1), filename: "big.bin" },
    ]);
    assert.equal(big.status, 413);
    assert.equal(big.body.result, "error");
    assert.deepEqual((await srv.api("GET", "/attachments", {}, me)).body, listBefore);

    // Paths that name no file of this realm: 404, whatever they look like.
    const up = await uploadFiles(srv.baseUrl, me, [{ data: Buffer.from("ok"), filename: "ok.txt" }]);
    assertSuccess(up);
    const realm = PATH.exec(up.body.url)![1]!;
    for (const p of [
      `/user_uploads/${realm}/__proto__`,
      `/user_uploads/${realm}/constructor/prototype/x`,
      `/user_uploads/${realm}/..%2F..%2F..%2Fetc%2Fpasswd`,
      `/user_uploads/${realm}/ab/${"A".repeat(24)}/missing.txt`,
      `/user_uploads/${Number(realm) + 1}/${up.body.url.split("/").slice(3).join("/")}`,
      `/user_uploads/99999999999999999999/x`,
    ]) {
      assertFileError(await getFile(srv.baseUrl, p, me), "File not found.", 404);
      assertError(await srv.api("GET", p, {}, me), "File not found.", "BAD_REQUEST", 404);
    }
    assertFileError(
      await getFile(srv.baseUrl, up.body.url, null),
      "Not logged in: API authentication or user session required",
      401,
      "UNAUTHORIZED",
    );
    assertError(await srv.api("DELETE", "/attachments/abc", {}, me), "Not Found", "NOT_FOUND", 404);
    assertError(
      await srv.api("DELETE", "/attachments/99999999999999999999999", {}, me),
      "Invalid attachment",
    );
    assertError(await srv.api("DELETE", "/attachments/0", {}, me), "Invalid attachment");
  });

  test("file names are sanitized for the path, kept as given in the name", async () => {
    const srv = local;
    const me = await newUser(srv);
    for (const [given, stored] of [
      // The multipart parser keeps the base name only, as Django's UploadedFile.
      ["../../etc/passwd", "passwd"],
      ["ünïcödé  file (1).PNG", "ünïcödé-file-1.PNG"],
      ["<script>.html", "script.html"],
      ["...", "..."],
      ["@#!", "uploaded-file"],
      ["__proto__", "__proto__"],
      [`${"x".repeat(300)}.txt`, `${"x".repeat(196)}.txt`],
    ] as const) {
      const up = await uploadFiles(srv.baseUrl, me, [{ data: Buffer.from("d"), filename: given }]);
      assertSuccess(up);
      assert.equal(up.body.filename, given.startsWith("../") ? "passwd" : given);
      const m = PATH.exec(up.body.url);
      assert.ok(m, up.body.url);
      assert.equal(m[2], stored);
      const got = await getFile(srv.baseUrl, encodeURI(up.body.url), me);
      assert.equal(got.status, 200, `${given}: ${got.data.toString()}`);
    }
    // An HTML upload is never served as HTML.
    const html = await uploadFiles(srv.baseUrl, me, [
      { data: Buffer.from("<script>alert(1)</script>"), filename: "x.html", type: "text/html" },
    ]);
    const got = await getFile(srv.baseUrl, html.body.url, me);
    assert.equal(got.headers.get("content-type"), "application/octet-stream");
    assert.match(got.headers.get("content-disposition") ?? "", /^attachment;/);
  });

  test("another gateway on the same storage honours a temporary URL (the key is in the storage)", async () => {
    const me = await newUser(local);
    const up = await uploadFiles(local.baseUrl, me, [{ data: Buffer.from("shared"), filename: "s.txt" }]);
    assertSuccess(up);
    const tmp = await local.api("GET", up.body.url, {}, me);
    assertSuccess(tmp);
    const saved = process.env.LOCAL_UPLOADS_DIR;
    process.env.LOCAL_UPLOADS_DIR = localDir;
    let other: EmbeddedHandle | undefined;
    try {
      other = await startEmbedded();
    } finally {
      if (saved === undefined) delete process.env.LOCAL_UPLOADS_DIR;
      else process.env.LOCAL_UPLOADS_DIR = saved;
    }
    try {
      const got = await getFile(other.baseUrl, tmp.body.url, null);
      assert.equal(got.status, 200);
      assert.equal(got.data.toString(), "shared");
    } finally {
      await other.stop();
    }
  });

  test("POST /register reports the upload limit", async () => {
    const r = await local.api("POST", "/register", { fetch_event_types: ["realm"] });
    assertSuccess(r);
    assert.equal(r.body.max_file_upload_size_mib, 25);
    assert.deepEqual(r.body.server_thumbnail_formats, [
      { name: "840x560-anim.webp", max_width: 840, max_height: 560, format: "webp", animated: true },
      { name: "840x560.webp", max_width: 840, max_height: 560, format: "webp", animated: false },
    ]);
  });
});

describe("uploads, S3 storage", () => {
  const skip = requireS3rver();
  let s3: S3Server;
  let srv: EmbeddedHandle;
  let client: S3Client;

  before(async () => {
    if (skip) return;
    s3 = await startS3();
    const saved: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(s3.env)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    try {
      srv = await startEmbedded();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.key, secretAccessKey: s3.secret },
    });
  });
  after(async () => {
    client?.destroy();
    await srv?.stop();
    await s3?.stop();
  });

  if (skip) {
    test("S3 storage", { skip }, () => {});
    return;
  }
  flowTests(
    () => srv,
    async (pathId) => {
      try {
        const r = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: pathId }));
        return Buffer.from(await r.Body!.transformToByteArray());
      } catch {
        return null;
      }
    },
  );
});

describe("uploads directory state", () => {
  test("a snapshot restores every record; an older one without the total recomputes it", () => {
    const ref = { kind: "uploads" as const, realm: 3, key: "uploads" };
    let state = uploadsBehavior.initial(ref);
    const att = (id: number, size: number) => ({
      type: "attachmentAdded",
      attachment: {
        id,
        pathId: `3/ab/${"x".repeat(23)}${id}/f${id}.png`,
        name: `f${id}.png`,
        size,
        contentType: "image/png",
        ownerId: 9,
        createTime: 1000 + id,
        messages: [],
        ...(id === 1 ? { image: { width: 10, height: 20, animated: false } } : {}),
      },
    });
    const facts: Obj[] = [
      att(1, 100),
      att(2, 50),
      { type: "attachmentClaimed", pathId: `3/ab/${"x".repeat(23)}1/f1.png`, messageId: 7, dateSent: 5000 },
      { type: "attachmentRemoved", pathId: `3/ab/${"x".repeat(23)}2/f2.png` },
    ];
    for (const f of facts) {
      state = uploadsBehavior.apply(state, f, ref);
    }
    const snap = uploadsBehavior.toSnapshot(state);
    const back = uploadsBehavior.fromSnapshot(snap, ref);
    assert.equal(uploadsBehavior.toSnapshot(back), snap);
    const parsed = JSON.parse(snap) as { attachments: unknown[]; spaceUsed: number };
    assert.equal(parsed.spaceUsed, 100);
    assert.equal(parsed.attachments.length, 1);
    const old = JSON.stringify({ realmId: 3, attachments: parsed.attachments });
    assert.equal(
      JSON.parse(uploadsBehavior.toSnapshot(uploadsBehavior.fromSnapshot(old, ref))).spaceUsed,
      100,
    );
    // A file blob next to it keeps its own shape.
    const file = { kind: "blob" as const, realm: 3, key: "emoji.5" };
    assert.deepEqual(blobBehavior.fromSnapshot(JSON.stringify({ data: "AA==" }), file), {
      data: "AA==",
      contentType: "",
      size: 0,
    });
  });
});
