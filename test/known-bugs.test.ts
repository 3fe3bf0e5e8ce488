// Regressions of bugs real Zulip clients hit, black-box over HTTP: one
// describe per bug.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startEmbedded, type EmbeddedHandle } from "./support/embedded.ts";
import { assertSuccess, newUser } from "./support/zulip-asserts.ts";

describe("bots and dummy addresses when EXTERNAL_HOST has a port", () => {
  let srv: EmbeddedHandle;
  before(async () => {
    srv = await startEmbedded({ env: { EXTERNAL_HOST: "chat.example.com:9991" } });
  });
  after(async () => {
    await srv?.stop();
  });

  test("POST /bots names the bot at the host without its port", async () => {
    const res = await srv.api("POST", "/bots", { full_name: "Port Bot", short_name: "port" });
    assertSuccess(res);
    const u = (await srv.api("GET", `/users/${res.body.user_id}`)).body.user;
    assert.equal(u.email, "port-bot@chat.example.com");
  });

  test("a hidden address becomes a dummy one at the same domain", async () => {
    const m = await newUser(srv);
    assertSuccess(await srv.api("PATCH", "/settings", { email_address_visibility: 4 }, m));
    const u = (await srv.api("GET", `/users/${m.userId}`)).body.user;
    assert.equal(u.email, `user${m.userId}@chat.example.com`);
  });
});
