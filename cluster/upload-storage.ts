// Where uploaded files' bytes live (docs/uploads.md): one contract, two
// implementations, chosen by the environment as Zulip's settings choose
// them. A local directory (LOCAL_UPLOADS_DIR, default <DATA_DIR>/uploads)
// or an S3-compatible bucket (S3_AUTH_UPLOADS_BUCKET). Only the gateway
// reads and writes bytes; the attachments' records (owner, size, the
// messages linking them) are the realm's uploads actor's (actors/blob).
//
// Keys are path_ids ("<realm>/<hex>/<random>/<name>") and the names of
// their thumbnails, made by the gateway; the local implementation still
// refuses any key that could leave its directory.

import type * as S3Module from "@aws-sdk/client-s3";
import type { S3Client } from "@aws-sdk/client-s3";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { dirname, join, resolve, sep } from "node:path";
import { env } from "./config.ts";

export interface UploadStorage {
  readonly kind: "local" | "s3";
  put(key: string, data: Buffer, contentType: string): Promise<void>;
  /** The bytes, or null when nothing is stored under the key. */
  get(key: string): Promise<Buffer | null>;
  /** Removing a missing key is not an error. */
  delete(key: string): Promise<void>;
  close(): void;
}

/** A key is segments of safe characters: no "..", no empty segment, no backslash or NUL. */
export function validKey(key: string): boolean {
  if (key.length === 0 || key.length > 1024) return false;
  for (const seg of key.split("/")) {
    if (seg === "" || seg === "." || seg === "..") return false;
  }
  return !/[\\\0]/.test(key);
}

export function localUploadStorage(dir: string): UploadStorage {
  const root = resolve(dir);
  const pathOf = (key: string): string => {
    if (!validKey(key)) throw new Error(`bad upload key ${JSON.stringify(key)}`);
    const p = resolve(join(root, key));
    if (!p.startsWith(root + sep)) throw new Error(`bad upload key ${JSON.stringify(key)}`);
    return p;
  };
  return {
    kind: "local",
    async put(key, data) {
      const p = pathOf(key);
      await mkdir(dirname(p), { recursive: true });
      // Written aside, then renamed: a reader never sees half a file.
      const tmp = `${p}.${randomBytes(6).toString("hex")}.part`;
      await writeFile(tmp, data);
      await rename(tmp, p);
    },
    async get(key) {
      try {
        return await readFile(pathOf(key));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === "ENOENT" || code === "EISDIR" || code === "ENOTDIR") return null;
        throw err;
      }
    },
    async delete(key) {
      await rm(pathOf(key), { force: true });
    },
    close() {},
  };
}

export interface S3Options {
  bucket: string;
  /** S3_ENDPOINT_URL: another S3-compatible service (path-style addressing then). */
  endpoint?: string;
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
}

type S3Sdk = typeof S3Module;
let sdk: Promise<S3Sdk> | undefined;
/** The AWS SDK loads at the first S3 operation: a server without a bucket never pays its ~0.2 s of start-up. */
const loadSdk = (): Promise<S3Sdk> => (sdk ??= import("@aws-sdk/client-s3"));

export function s3UploadStorage(o: S3Options): UploadStorage {
  let made: Promise<{ s3: S3Sdk; client: S3Client }> | undefined;
  const ready = () =>
    (made ??= loadSdk().then((s3) => ({
      s3,
      client: new s3.S3Client({
        region: o.region || "us-east-1",
        ...(o.endpoint ? { endpoint: o.endpoint, forcePathStyle: true } : {}),
        ...(o.accessKeyId && o.secretAccessKey
          ? { credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey } }
          : {}),
      }),
    })));
  return {
    kind: "s3",
    async put(key, data, contentType) {
      if (!validKey(key)) throw new Error(`bad upload key ${JSON.stringify(key)}`);
      const { s3, client } = await ready();
      await client.send(
        new s3.PutObjectCommand({ Bucket: o.bucket, Key: key, Body: data, ContentType: contentType }),
      );
    },
    async get(key) {
      if (!validKey(key)) return null;
      const { s3, client } = await ready();
      try {
        const r = await client.send(new s3.GetObjectCommand({ Bucket: o.bucket, Key: key }));
        if (!r.Body) return null;
        return Buffer.from(await r.Body.transformToByteArray());
      } catch (err) {
        const name = (err as { name?: string }).name;
        const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (name === "NoSuchKey" || name === "NotFound" || status === 404) return null;
        throw err;
      }
    },
    async delete(key) {
      if (!validKey(key)) return;
      const { s3, client } = await ready();
      await client.send(new s3.DeleteObjectCommand({ Bucket: o.bucket, Key: key }));
    },
    close() {
      void made?.then(({ client }) => client.destroy());
    },
  };
}

/**
 * S3_AUTH_UPLOADS_BUCKET set: that bucket (S3_ENDPOINT_URL, S3_REGION,
 * S3_KEY/S3_SECRET_KEY, else the SDK's default credential chain);
 * otherwise LOCAL_UPLOADS_DIR, default <DATA_DIR>/uploads.
 */
export function uploadStorageFromEnv(dataDir = env.dataDir()): UploadStorage {
  const bucket = env.str("S3_AUTH_UPLOADS_BUCKET");
  if (bucket !== "") {
    const accessKeyId = env.str("S3_KEY");
    const secretAccessKey = env.str("S3_SECRET_KEY");
    if ((accessKeyId === "") !== (secretAccessKey === "")) {
      throw new Error("S3_KEY and S3_SECRET_KEY: set both or neither");
    }
    return s3UploadStorage({
      bucket,
      endpoint: env.str("S3_ENDPOINT_URL"),
      region: env.str("S3_REGION"),
      accessKeyId,
      secretAccessKey,
    });
  }
  return localUploadStorage(env.str("LOCAL_UPLOADS_DIR", join(dataDir, "uploads")));
}
