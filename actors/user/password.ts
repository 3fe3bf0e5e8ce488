// Password hashing. Runs in the user actor only: a hash costs ~50 ms of a
// libuv worker thread, and the realm actor, the one hot actor per
// organization, must never wait on one.
//
// Stored form: "scrypt$N$r$p$<salt base64>$<hash base64>", so the cost
// parameters can be raised later while old hashes still verify.

import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

const N = 16384;
const R = 8;
const P = 1;
const KEY_LENGTH = 64;
const SALT_BYTES = 16;

function derive(password: string, salt: Buffer, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_LENGTH, opts, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

async function newHash(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, { N, r: R, p: P });
  return ["scrypt", N, R, P, salt.toString("base64"), key.toString("base64")].join("$");
}

/** Hashes begun ahead of their use, by password; each is taken once. */
const ahead = new Map<string, Promise<string>>();

/**
 * Begin hashing `password` now, for the next hashPassword of the same text
 * in this process (within a minute): a server creating its owner on first
 * start hashes while it loads the rest. The hash is an ordinary one (its
 * own salt), given to one caller only.
 */
export function hashPasswordAhead(password: string): void {
  if (ahead.has(password)) return;
  const hash = newHash(password);
  hash.catch(() => {});
  ahead.set(password, hash);
  setTimeout(() => {
    if (ahead.get(password) === hash) ahead.delete(password);
  }, 60_000).unref();
}

export async function hashPassword(password: string): Promise<string> {
  const early = ahead.get(password);
  if (early) {
    ahead.delete(password);
    return await early;
  }
  return await newHash(password);
}

/** True when `password` matches `stored`; false for a malformed or missing hash. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  if (!stored) return false;
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (![n, r, p].every((x) => Number.isInteger(x) && x > 0)) return false;
  const salt = Buffer.from(parts[4]!, "base64");
  const expected = Buffer.from(parts[5]!, "base64");
  const actual = await derive(password, salt, { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
