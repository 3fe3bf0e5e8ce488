// Feature levels 466 (avatar source "J", Jdenticon avatars) and 479
// (GET /thumbnail/status/{realm_id_str}/{filename}), black-box over HTTP.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import sharp from "sharp";
import { startEmbedded, type EmbeddedHandle } from "./support/embedded.ts";
import { uploadFiles } from "./support/uploads.ts";
import { assertError, assertSuccess, newUser } from "./support/zulip-asserts.ts";

let srv: EmbeddedHandle;

before(async () => {
  srv = await startEmbedded();
});

after(async () => {
  await srv?.stop();
});

/** Upload as `auth`; the path after /user_uploads/ ("<realm>/<..>/<name>"). */
async function upload(
  auth: EmbeddedHandle["owner"] | Awaited<ReturnType<typeof newUser>>,
  data: Buffer,
  name: string,
  type: string,
) {
  const r = await uploadFiles(srv.baseUrl, auth, [{ data, filename: name, type }]);
  assertSuccess(r);
  return (r.body.url as string).slice("/user_uploads/".length);
}

const png = () =>
  sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 30, b: 30 } } })
    .png()
    .toBuffer();

describe("FL 479: GET /thumbnail/status/{realm_id_str}/{filename}", () => {
  test("FL 479: the owner of an uploaded image learns its thumbnail is ready", async () => {
    const pathId = await upload(srv.owner, await png(), "red.png", "image/png");
    const r = await srv.api("GET", `/thumbnail/status/${pathId}`);
    assertSuccess(r);
    assert.equal(r.body.has_thumbnail, true);
  });

  test("FL 479: not an image, someone else's file, unknown or malformed paths are Invalid attachment", async () => {
    const text = await upload(srv.owner, Buffer.from("hello"), "notes.txt", "text/plain");
    assertError(await srv.api("GET", `/thumbnail/status/${text}`), "Invalid attachment");
    const image = await upload(srv.owner, await png(), "mine.png", "image/png");
    const other = await newUser(srv);
    // Only the owner may ask, even of a file others could see.
    assertError(await srv.api("GET", `/thumbnail/status/${image}`, {}, other), "Invalid attachment");
    const [realm, ...rest] = image.split("/");
    assertError(
      await srv.api("GET", `/thumbnail/status/${realm}/00/${rest.slice(1).join("/")}`),
      "Invalid attachment",
    );
    assertError(
      await srv.api("GET", `/thumbnail/status/${Number(realm) + 1}/${rest.join("/")}`),
      "Invalid attachment",
    );
    assertError(await srv.api("GET", `/thumbnail/status/abc/${rest.join("/")}`), "Invalid attachment");
    assertError(await srv.api("GET", `/thumbnail/status/${realm}/__proto__`), "Invalid attachment");
    assertError(await srv.api("GET", `/thumbnail/status/${realm}/${"x".repeat(5000)}`), "Invalid attachment");
    // Without credentials: Zulip's authentication error.
    const anon = await srv.api("GET", `/thumbnail/status/${image}`, {}, null);
    assert.equal(anon.status, 401);
    // The owner still gets the answer: nothing changed.
    assert.equal((await srv.api("GET", `/thumbnail/status/${image}`)).body.has_thumbnail, true);
  });
});
