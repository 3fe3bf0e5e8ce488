// Thumbnails per input format, black-box: an upload of each image type
// Zulip thumbnails (JPEG, PNG, GIF still and animated, WebP, TIFF, AVIF)
// gets the 840x560.webp thumbnail (and 840x560-anim.webp when animated);
// a HEIC upload, which this build's libvips cannot decode (no HEVC
// decoder), is kept and served as uploaded, without thumbnails.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import sharp from "sharp";
import { assertSuccess, useEmbedded } from "./support/index.ts";
import { assertFileError, getFile, uploadFiles } from "./support/uploads.ts";

const srv = useEmbedded();

const still = () =>
  sharp({ create: { width: 1200, height: 900, channels: 3, background: { r: 10, g: 120, b: 200 } } });

/** Three 20x10 frames of different colours. */
async function animatedGif(): Promise<Buffer> {
  const w = 20;
  const h = 10;
  const raw = Buffer.alloc(w * h * 3 * 4);
  for (let f = 0; f < 3; f++)
    for (let i = 0; i < w * h; i++) raw.set([f * 100, 50, 200 - f * 50, 255], (f * w * h + i) * 4);
  return sharp(raw, { raw: { width: w, height: h * 3, channels: 4, pageHeight: h } })
    .gif({ delay: [100, 100, 100] })
    .toBuffer();
}

async function upload(data: Buffer, filename: string, type: string): Promise<string> {
  const r = await uploadFiles(srv.baseUrl, srv.owner, [{ data, filename, type }]);
  assertSuccess(r);
  return (r.body.url as string).slice("/user_uploads/".length);
}

const thumbnail = (pathId: string, format: string) =>
  getFile(srv.baseUrl, `/user_uploads/thumbnail/${pathId}/${format}`, srv.owner);

describe("thumbnails of each input format", () => {
  const cases: [string, string, () => Promise<Buffer>, [number, number]][] = [
    ["photo.jpg", "image/jpeg", () => still().jpeg().toBuffer(), [747, 560]],
    ["image.png", "image/png", () => still().png().toBuffer(), [747, 560]],
    ["image.gif", "image/gif", () => still().gif().toBuffer(), [747, 560]],
    ["image.webp", "image/webp", () => still().webp().toBuffer(), [747, 560]],
    ["scan.tiff", "image/tiff", () => still().tiff().toBuffer(), [747, 560]],
    ["image.avif", "image/avif", () => still().avif().toBuffer(), [747, 560]],
  ];
  for (const [filename, type, make, [width, height]] of cases) {
    test(`${type}: the still thumbnail`, async () => {
      const pathId = await upload(await make(), filename, type);
      const got = await thumbnail(pathId, "840x560.webp");
      assert.equal(got.status, 200, got.data.toString());
      assert.equal(got.headers.get("content-type"), "image/webp");
      const meta = await sharp(got.data).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ["webp", width, height]);
      assertFileError(await thumbnail(pathId, "840x560-anim.webp"), "File not found.", 404);
    });
  }

  test("an animated GIF: both thumbnails, the animated one with every frame", async () => {
    const pathId = await upload(await animatedGif(), "anim.gif", "image/gif");
    const stillThumb = await thumbnail(pathId, "840x560.webp");
    assert.equal(stillThumb.status, 200);
    assert.equal((await sharp(stillThumb.data).metadata()).pages ?? 1, 1);
    const anim = await thumbnail(pathId, "840x560-anim.webp");
    assert.equal(anim.status, 200);
    const meta = await sharp(anim.data, { animated: true }).metadata();
    assert.deepEqual([meta.format, meta.pages, meta.width, meta.pageHeight], ["webp", 3, 20, 10]);
  });

  test("HEIC: kept and served as uploaded, no thumbnail (no HEVC decoder here)", async () => {
    // The prebuilt libvips decodes HEIF files with AV1 (AVIF) only.
    assert.ok(!(sharp.format.heif.input.fileSuffix ?? []).includes(".heic"));
    // An ISO-BMFF file with the "heic" brand and HEVC item data sharp cannot decode.
    const ftyp = Buffer.concat([
      Buffer.from([0, 0, 0, 24]),
      Buffer.from("ftypheic"),
      Buffer.from([0, 0, 0, 0]),
      Buffer.from("mif1heic"),
    ]);
    const heic = Buffer.concat([ftyp, Buffer.alloc(64, 7)]);
    const pathId = await upload(heic, "IMG_0001.heic", "image/heic");
    const file = await getFile(srv.baseUrl, `/user_uploads/${pathId}`, srv.owner);
    assert.equal(file.status, 200);
    assert.deepEqual(file.data, heic);
    assert.equal(file.headers.get("content-type"), "application/octet-stream");
    for (const f of ["840x560.webp", "840x560-anim.webp"])
      assertFileError(await thumbnail(pathId, f), "File not found.", 404);
  });
});
