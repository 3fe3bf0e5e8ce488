// Black-box tests of GET /bots/{bot_id}/api_key (Zulip feature level 463,
// docs/feature-levels/373-496.md): who may read a bot's key, Zulip's
// errors, and the main flow in cluster mode.

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  newUser,
  requireBinaries,
  useCluster,
  useEmbedded,
  type Creds,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();
let owner: Member;
let other: Member;
let seq = 0;

before(async () => {
  owner = await newUser(srv);
  other = await newUser(srv);
});

async function makeBot(auth: Creds): Promise<{ id: number; key: string; creds: Creds }> {
  const r = await srv.api(
    "POST",
    "/bots",
    { full_name: `Key Bot ${++seq}`, short_name: `keybot${seq}` },
    auth,
  );
  assertSuccess(r);
  const email = (await srv.api("GET", `/users/${r.body.user_id}`)).body.user.email as string;
  return {
    id: r.body.user_id as number,
    key: r.body.api_key as string,
    creds: { email, apiKey: r.body.api_key },
  };
}

describe("GET /bots/{bot_id}/api_key", () => {
  test("the owner and administrators read the current key; regeneration shows", async () => {
    const bot = await makeBot(owner);
    const r = await srv.api("GET", `/bots/${bot.id}/api_key`, {}, owner);
    assertSuccess(r);
    assert.deepEqual(Object.keys(r.body).sort(), ["api_key", "msg", "result"]);
    assert.equal(r.body.api_key, bot.key);
    const admin = await newUser(srv, 200);
    assert.equal((await srv.api("GET", `/bots/${bot.id}/api_key`, {}, admin)).body.api_key, bot.key);
    const regen = await srv.api("POST", `/bots/${bot.id}/api_key/regenerate`, {}, owner);
    assertSuccess(regen);
    assert.equal(
      (await srv.api("GET", `/bots/${bot.id}/api_key`, {}, owner)).body.api_key,
      regen.body.api_key,
    );
  });

  test("others, guests, bots and unknown ids are refused; reading changes nothing", async () => {
    const bot = await makeBot(owner);
    assertError(await srv.api("GET", `/bots/${bot.id}/api_key`, {}, other), "Insufficient permission");
    const guest = await newUser(srv, 600);
    assertError(await srv.api("GET", `/bots/${bot.id}/api_key`, {}, guest), "Not allowed for guest users");
    assertError(
      await srv.api("GET", `/bots/${bot.id}/api_key`, {}, bot.creds),
      "This endpoint does not accept bot requests.",
    );
    assertError(await srv.api("GET", "/bots/999999/api_key", {}, owner), "No such bot");
    assertError(await srv.api("GET", `/bots/${other.userId}/api_key`, {}, owner), "No such bot");
    assertError(await srv.api("GET", "/bots/99999999999999999999/api_key", {}, owner), "No such bot");
    assertError(await srv.api("GET", "/bots/abc/api_key", {}, owner), "Not Found", "NOT_FOUND", 404);
    const anon = await srv.api("GET", `/bots/${bot.id}/api_key`, {}, null);
    assert.equal(anon.status, 401);
    // The key still works: reading it regenerated nothing.
    assertSuccess(await srv.api("GET", "/users/me", {}, bot.creds));
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("GET /bots/{bot_id}/api_key - cluster", { skip }, () => {
  const c = useCluster();

  test("the owner reads the bot's key through the gateway", async () => {
    const r = await c.api("POST", "/bots", { full_name: "Cluster Key Bot", short_name: "ckeybot" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const got = await c.api("GET", `/bots/${r.body.user_id}/api_key`);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.api_key, r.body.api_key);
  });
});
