// What an uploaded emoji image is, read from its bytes.
//
// Zulip accepts an emoji whose declared content type is both thumbnailable
// and safe to serve inline (THUMBNAIL_ACCEPT_IMAGE_TYPES ∩ INLINE_MIME_TYPES:
// AVIF, GIF, JPEG, PNG, WebP), then decodes it with libvips and refuses what
// does not decode. We do not carry an image library: we check the format's
// signature instead, so a renamed text file or a TIFF labelled image/png is
// refused with Zulip's "Could not decode image" text. The stored type is the
// sniffed one, so the image is always served with the type its bytes have.
//
// Zulip also scales emoji to 64x64 and keeps a PNG still of an animated
// image's first frame (still_url). We keep the original bytes and report
// still_url null: clients then animate the emoji everywhere.

import { own } from "../dict.ts";

/** Declared content types Zulip takes for emoji, with the extension its file name gets. */
export const EMOJI_IMAGE_TYPES: Record<string, string> = {
  "image/avif": "avif",
  "image/gif": "gif",
  "image/jpeg": "jpeg",
  "image/png": "png",
  "image/webp": "webp",
};

/** Extension -> content type, for uploads that declare no useful type. */
const TYPE_BY_EXTENSION: Record<string, string> = {
  avif: "image/avif",
  gif: "image/gif",
  jpe: "image/jpeg",
  jpeg: "image/jpeg",
  jpg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  tif: "image/tiff",
  tiff: "image/tiff",
};

// Names some clients use for an accepted type (Android pickers and
// extension-based guesses say image/jpg; old browsers image/pjpeg).
const TYPE_ALIASES: Record<string, string> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "image/x-png": "image/png",
};

// Types that say nothing about the bytes: a file part without a
// Content-Type (the Python client's; busboy reports it as text/plain) or
// the generic binary type.
const UNDECLARED_TYPES = new Set(["", "application/octet-stream", "binary/octet-stream", "text/plain"]);

/**
 * The content type an upload declares: its part's type (aliases folded),
 * else the one its file name's extension names, like Django's guess from
 * the name; null when neither says anything, and the bytes must tell.
 */
export function declaredImageType(mimetype: string, filename: string): string | null {
  const raw = mimetype.split(";")[0]!.trim().toLowerCase();
  const t = own(TYPE_ALIASES, raw) ?? raw;
  if (!UNDECLARED_TYPES.has(t)) return t;
  const dot = filename.lastIndexOf(".");
  const ext = dot >= 0 ? filename.slice(dot + 1).toLowerCase() : "";
  return own(TYPE_BY_EXTENSION, ext) ?? null;
}

function ascii(b: Uint8Array, at: number, s: string): boolean {
  if (b.length < at + s.length) return false;
  for (let i = 0; i < s.length; i++) if (b[at + i] !== s.charCodeAt(i)) return false;
  return true;
}

/** The accepted image format the bytes are, by signature; null if none. */
export function sniffImageType(b: Uint8Array): string | null {
  if (b.length >= 8 && ascii(b, 1, "PNG") && b[0] === 0x89 && b[4] === 0x0d && b[5] === 0x0a)
    return "image/png";
  if (ascii(b, 0, "GIF87a") || ascii(b, 0, "GIF89a")) return "image/gif";
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WEBP")) return "image/webp";
  if (ascii(b, 4, "ftyp") && (ascii(b, 8, "avif") || ascii(b, 8, "avis"))) return "image/avif";
  return null;
}

/** Whether the image has more than one frame (GIF, APNG, animated WebP, AVIF sequence). */
export function isAnimated(b: Uint8Array, type: string): boolean {
  switch (type) {
    case "image/png":
      return pngHasChunk(b, "acTL");
    case "image/gif":
      return gifFrameCount(b) > 1;
    case "image/webp":
      // VP8X header flag bit 1 = animation.
      return ascii(b, 12, "VP8X") && b.length > 20 && (b[20]! & 0x02) !== 0;
    case "image/avif":
      return ascii(b, 8, "avis");
    default:
      return false;
  }
}

function pngHasChunk(b: Uint8Array, name: string): boolean {
  let at = 8;
  while (at + 8 <= b.length) {
    const len = ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
    if (ascii(b, at + 4, name)) return true;
    if (ascii(b, at + 4, "IDAT")) return false; // acTL must precede the image data
    at += 12 + len;
  }
  return false;
}

/** Image descriptors in a GIF, stopping at 2 (all we need to know). */
function gifFrameCount(b: Uint8Array): number {
  if (b.length < 13) return 0;
  let at = 13;
  const flags = b[10]!;
  if (flags & 0x80) at += 3 * (1 << ((flags & 0x07) + 1)); // global colour table
  let frames = 0;
  const skipSubBlocks = () => {
    while (at < b.length) {
      const n = b[at]!;
      at += 1;
      if (n === 0) return;
      at += n;
    }
  };
  while (at < b.length && frames < 2) {
    const tag = b[at]!;
    if (tag === 0x3b) break; // trailer
    if (tag === 0x21) {
      at += 2; // extension introducer + label
      skipSubBlocks();
    } else if (tag === 0x2c) {
      frames++;
      if (at + 10 > b.length) break;
      const f = b[at + 9]!;
      at += 10;
      if (f & 0x80) at += 3 * (1 << ((f & 0x07) + 1)); // local colour table
      at += 1; // LZW minimum code size
      skipSubBlocks();
    } else {
      break;
    }
  }
  return frames;
}
