// Feature level 295: resumable uploads over the tus 1.0 protocol at
// /api/v1/tus (gateway/routes/tus.ts). Black-box over HTTP: create, a
// partial PATCH, HEAD (also after a restart: the partial bytes are in the
// upload storage), resume, complete into an ordinary upload; the protocol's
// errors; the bound on unfinished uploads; the main flow in cluster mode.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertSuccess,
  basicAuth,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  useCluster,
  useEmbedded,
  type Creds,
} from "./support/index.ts";
import { getFile } from "./support/uploads.ts";

interface TusReply {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown> | null;
}

async function tus(
  baseUrl: string,
  method: string,
  path: string,
  auth: Creds | null,
  headers: Record<string, string> = {},
  body?: Buffer,
): Promise<TusReply> {
  const h: Record<string, string> = { "Tus-Resumable": "1.0.0", ...headers };
  if (auth) h.authorization = basicAuth(auth);
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: h,
    ...(body ? { body: new Uint8Array(body) } : {}),
  });
  const text = await res.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, text, json };
}

const b64 = (s: string) => Buffer.from(s).toString("base64");
const CHUNK = { "Content-Type": "application/offset+octet-stream" };

function tusError(r: TusReply, msg: string, status: number): void {
  assert.equal(r.status, status, r.text);
  assert.deepEqual([r.json?.result, r.json?.msg, r.json?.code], ["error", msg, "BAD_REQUEST"]);
}

async function create(
  baseUrl: string,
  auth: Creds,
  length: number,
  filename = "tus notes.txt",
  filetype = "text/plain",
): Promise<string> {
  const r = await tus(baseUrl, "POST", "/api/v1/tus", auth, {
    "Upload-Length": String(length),
    "Upload-Metadata": `filename ${b64(filename)},filetype ${b64(filetype)}`,
  });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.headers.get("tus-resumable"), "1.0.0");
  const loc = r.headers.get("location") ?? "";
  assert.match(loc, /^\/api\/v1\/tus\/[A-Za-z0-9_-]{24}$/);
  return loc;
}

/** The whole flow on a running server; `restart` (embedded only) between the two halves. */
async function flow(baseUrl: () => string, me: Creds, restart?: () => Promise<void>): Promise<string> {
  const content = Buffer.from("resumable bytes, sent in two parts\n");
  const loc = await create(baseUrl(), me, content.length);

  const first = await tus(
    baseUrl(),
    "PATCH",
    loc,
    me,
    { ...CHUNK, "Upload-Offset": "0" },
    content.subarray(0, 9),
  );
  assert.equal(first.status, 204, first.text);
  assert.equal(first.headers.get("upload-offset"), "9");
  assert.ok(first.headers.get("upload-expires"));

  if (restart) await restart();
  const head = await tus(baseUrl(), "HEAD", loc, me);
  assert.equal(head.status, 200);
  assert.equal(head.headers.get("upload-offset"), "9");
  assert.equal(head.headers.get("upload-length"), String(content.length));
  assert.equal(head.headers.get("cache-control"), "no-store");

  // Resuming from the wrong offset is refused and changes nothing.
  const stale = await tus(baseUrl(), "PATCH", loc, me, { ...CHUNK, "Upload-Offset": "0" }, content);
  tusError(stale, "mismatched offset", 409);

  const last = await tus(
    baseUrl(),
    "PATCH",
    loc,
    me,
    { ...CHUNK, "Upload-Offset": "9" },
    content.subarray(9),
  );
  assert.equal(last.status, 200, last.text);
  assert.equal(last.headers.get("upload-offset"), String(content.length));
  assert.deepEqual(Object.keys(last.json ?? {}).sort(), ["filename", "url"]);
  assert.equal(last.json?.filename, "tus notes.txt");
  const url = String(last.json?.url);
  assert.match(url, /^\/user_uploads\/\d+\/[0-9a-f]{2}\/[A-Za-z0-9_-]{24}\/tus-notes\.txt$/);

  const file = await getFile(baseUrl(), url, me);
  assert.equal(file.status, 200);
  assert.equal(file.data.toString(), content.toString());
  assert.equal(file.headers.get("content-type"), "text/plain");

  // Finished: the protocol's record is gone.
  assert.equal((await tus(baseUrl(), "HEAD", loc, me)).status, 404);
  return url;
}

describe("FL 295: tus resumable uploads - embedded", () => {
  const srv = useEmbedded();

  test("FL 295: OPTIONS answers the protocol's capabilities without credentials", async () => {
    const r = await tus(srv.baseUrl, "OPTIONS", "/api/v1/tus", null);
    assert.equal(r.status, 204);
    assert.equal(r.headers.get("tus-resumable"), "1.0.0");
    assert.equal(r.headers.get("tus-version"), "1.0.0");
    assert.equal(r.headers.get("tus-extension"), "creation,termination,expiration");
    assert.equal(r.headers.get("tus-max-size"), String(25 * 1024 * 1024));
  });

  test("FL 295: create, partial PATCH, HEAD across a restart, resume, complete into an ordinary upload", async () => {
    const me = await newUser(srv);
    const url = await flow(
      () => srv.baseUrl,
      me,
      () => srv.restart(),
    );
    const list = await srv.api("GET", "/attachments", {}, me);
    assertSuccess(list);
    const atts = list.body.attachments as { name: string; path_id: string; size: number }[];
    assert.equal(atts.length, 1);
    assert.equal(atts[0]!.path_id, url.slice("/user_uploads/".length));
    assert.equal(atts[0]!.name, "tus notes.txt");
    assert.equal(atts[0]!.size, "resumable bytes, sent in two parts\n".length);
  });

  test("FL 295: completing sends the owner the attachment add event", async () => {
    const me = await newUser(srv);
    const q = await openQueue(srv, me, ["attachment"]);
    const loc = await create(srv.baseUrl, me, 3, "", "");
    const done = await tus(
      srv.baseUrl,
      "PATCH",
      loc,
      me,
      { ...CHUNK, "Upload-Offset": "0" },
      Buffer.from("abc"),
    );
    assert.equal(done.status, 200, done.text);
    // No filename: Zulip's "uploaded-file".
    assert.equal(done.json?.filename, "uploaded-file");
    const evs = await eventsUntil(srv, q, (all) => all.some((e) => e.type === "attachment"));
    const ev = evs.find((e) => e.type === "attachment")!;
    assert.equal(ev.op, "add");
    assert.equal((ev.attachment as { path_id: string }).path_id, String(done.json?.url).slice(14));
  });

  test("FL 295: protocol errors answer Zulip-style JSON and change nothing", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const base = srv.baseUrl;

    const noVersion = await fetch(`${base}/api/v1/tus`, {
      method: "POST",
      headers: { authorization: basicAuth(me), "Upload-Length": "3" },
    });
    assert.equal(noVersion.status, 412);
    assert.equal(noVersion.headers.get("tus-version"), "1.0.0");

    const anon = await tus(base, "POST", "/api/v1/tus", null, { "Upload-Length": "3" });
    assert.equal(anon.status, 401);

    tusError(await tus(base, "POST", "/api/v1/tus", me, {}), "SizeIsDeferred is not supported", 411);
    tusError(
      await tus(base, "POST", "/api/v1/tus", me, { "Upload-Length": "-1" }),
      "missing or invalid Upload-Length header",
      400,
    );
    tusError(
      await tus(base, "POST", "/api/v1/tus", me, { "Upload-Length": String(25 * 1024 * 1024 + 1) }),
      "File is larger than this server's configured maximum upload size (25 MiB).",
      413,
    );
    for (const bad of [
      "filename !!!",
      "filename a b c",
      `filename ${b64("a")},filename ${b64("b")}`,
      "x".repeat(9000),
    ]) {
      tusError(
        await tus(base, "POST", "/api/v1/tus", me, { "Upload-Length": "3", "Upload-Metadata": bad }),
        "invalid Upload-Metadata header",
        400,
      );
    }

    const loc = await create(base, me, 4, "__proto__", "text/plain");
    const unknown = "/api/v1/tus/AAAAAAAAAAAAAAAAAAAAAAAA";
    // HEAD answers carry no body: the status says it.
    assert.equal((await tus(base, "HEAD", unknown, me)).status, 404);
    tusError(
      await tus(base, "PATCH", unknown, me, { ...CHUNK, "Upload-Offset": "0" }, Buffer.from("x")),
      "upload not found",
      404,
    );
    tusError(
      await tus(
        base,
        "PATCH",
        "/api/v1/tus/..%2F..",
        me,
        { ...CHUNK, "Upload-Offset": "0" },
        Buffer.from("x"),
      ),
      "upload not found",
      404,
    );
    // Someone else's upload does not exist for them.
    tusError(
      await tus(base, "PATCH", loc, other, { ...CHUNK, "Upload-Offset": "0" }, Buffer.from("x")),
      "upload not found",
      404,
    );
    assert.equal((await tus(base, "HEAD", loc, other)).status, 404);
    tusError(await tus(base, "DELETE", loc, other), "upload not found", 404);
    tusError(
      await tus(
        base,
        "PATCH",
        loc,
        me,
        { "Content-Type": "text/plain", "Upload-Offset": "0" },
        Buffer.from("x"),
      ),
      "missing or invalid Content-Type header",
      415,
    );
    tusError(
      await tus(base, "PATCH", loc, me, { ...CHUNK, "Upload-Offset": "zero" }, Buffer.from("x")),
      "missing or invalid Upload-Offset header",
      400,
    );
    tusError(
      await tus(base, "PATCH", loc, me, { ...CHUNK, "Upload-Offset": "0" }, Buffer.from("too long")),
      "upload's size exceeded",
      413,
    );
    // None of that moved the offset.
    const head = await tus(base, "HEAD", loc, me);
    assert.equal(head.headers.get("upload-offset"), "0");

    // Termination: gone for good, and nothing became an attachment.
    const del = await tus(base, "DELETE", loc, me);
    assert.equal(del.status, 204);
    assert.equal((await tus(base, "HEAD", loc, me)).status, 404);
    const list = await srv.api("GET", "/attachments", {}, me);
    assertSuccess(list);
    assert.deepEqual(list.body.attachments, []);
  });

  test("FL 295: an empty file completes at creation", async () => {
    const me = await newUser(srv);
    const r = await tus(srv.baseUrl, "POST", "/api/v1/tus", me, {
      "Upload-Length": "0",
      "Upload-Metadata": `filename ${b64("empty.txt")}`,
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json?.filename, "empty.txt");
    const file = await getFile(srv.baseUrl, String(r.json?.url), me);
    assert.equal(file.status, 200);
    assert.equal(file.data.length, 0);
  });

  test("FL 295: a user's unfinished uploads are bounded: the oldest goes first", async () => {
    const me = await newUser(srv);
    const locs: string[] = [];
    for (let i = 0; i < 11; i++) locs.push(await create(srv.baseUrl, me, 10));
    assert.equal((await tus(srv.baseUrl, "HEAD", locs[0]!, me)).status, 404);
    for (const loc of locs.slice(1)) assert.equal((await tus(srv.baseUrl, "HEAD", loc, me)).status, 200);
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("FL 295: tus resumable uploads - cluster", { skip }, () => {
  const c = useCluster();

  test("FL 295: create, partial PATCH, HEAD, resume and complete through the gateway", async () => {
    const email = "tus-cluster@example.com";
    const password = "tus-cluster-secret-words";
    const made = await c.api("POST", "/users", { email, password, full_name: "Tus Cluster" });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const key = await c.api("POST", "/fetch_api_key", { username: email, password }, null);
    assert.equal(key.status, 200, JSON.stringify(key.body));
    const me = { email, apiKey: key.body.api_key as string };
    const url = await flow(() => c.baseUrl, me);
    const list = await c.api("GET", "/attachments", {}, me);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.deepEqual(
      (list.body.attachments as { path_id: string }[]).map((a) => a.path_id),
      [url.slice("/user_uploads/".length)],
    );
  });
});
