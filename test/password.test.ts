// actors/user/password.ts: scrypt hashes, and a hash begun ahead of its use
// (the embedded server's first start hashes the owner's password while it
// loads the rest).
import assert from "node:assert/strict";
import { test } from "node:test";
import { hashPassword, hashPasswordAhead, verifyPassword } from "../actors/user/index.ts";

test("a hash verifies its password only", async () => {
  const h = await hashPassword("correct horse");
  assert.match(h, /^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
  assert.equal(await verifyPassword("correct horse", h), true);
  assert.equal(await verifyPassword("correct horsE", h), false);
  assert.equal(await verifyPassword("correct horse", null), false);
  assert.equal(await verifyPassword("correct horse", "scrypt$0$8$1$x$y"), false);
});

test("a hash begun ahead goes to the next hashPassword of that password, once", async () => {
  hashPasswordAhead("battery staple");
  hashPasswordAhead("battery staple"); // a second call starts no second hash
  const [first, other] = await Promise.all([hashPassword("battery staple"), hashPassword("other")]);
  const second = await hashPassword("battery staple");
  assert.equal(await verifyPassword("battery staple", first), true);
  assert.equal(await verifyPassword("battery staple", second), true);
  assert.equal(await verifyPassword("other", other), true);
  // Each hash has its own salt: the early one was not handed out twice.
  assert.notEqual(first, second);
});
