// Renames, removals and format changes of feature levels 449-487
// (docs/feature-levels/373-496.md) that no other test file covers whole:
// the bot objects of level 474 and their fewer realm_bot events, and the
// modern presence fields of level 487. Levels 341, 426, 442/453 are in
// test/register-state.test.ts, 443/472 in test/uploads.test.ts, 449 in
// test/export.test.ts and 484 in test/security-email.test.ts.

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  openQueue,
  useEmbedded,
  type Ev,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();
let owner: Member;
let admin: Member;

before(async () => {
  owner = await newUser(srv, 400, "Bot Owner");
  admin = await newUser(srv, 200, "Bot Admin");
});

describe("FL 474: bot objects", () => {
  test("realm_bots and realm_bot/add hold only what the user object lacks", async () => {
    const q = await openQueue(srv, owner, ["realm_bot"]);
    const r = await srv.api("POST", "/bots", { full_name: "Slim Bot", short_name: "slimbot" }, owner);
    assertSuccess(r);
    const botId = r.body.user_id as number;
    const want = [
      "default_all_public_streams",
      "default_events_register_stream",
      "default_sending_stream",
      "services",
      "user_id",
    ];
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["realm_bot"] }, owner);
    assertSuccess(reg);
    const bot = (reg.body.realm_bots as Ev[]).find((b) => b.user_id === botId);
    assert.deepEqual(Object.keys(bot).sort(), want);
    const isAdd = (e: Ev) => e.type === "realm_bot" && e.op === "add";
    const add = (await eventsUntil(srv, q, (evs) => evs.some(isAdd))).find(isAdd);
    assert.deepEqual(Object.keys(add.bot).sort(), want);
  });

  test("renaming, a new owner, a new key and (de)activation send no realm_bot update", async () => {
    const r = await srv.api("POST", "/bots", { full_name: "Quiet Bot", short_name: "quietbot" }, owner);
    assertSuccess(r);
    const botId = r.body.user_id as number;
    const q = await openQueue(srv, admin, ["realm_bot", "realm_user"]);
    assertSuccess(await srv.api("PATCH", `/bots/${botId}`, { full_name: "Quieter Bot" }, owner));
    assertSuccess(await srv.api("POST", `/bots/${botId}/api_key/regenerate`, {}, owner));
    assertSuccess(await srv.api("PATCH", `/bots/${botId}`, { bot_owner_id: admin.userId }, admin));
    assertSuccess(await srv.api("DELETE", `/bots/${botId}`, {}, admin));
    assertSuccess(await srv.api("POST", `/users/${botId}/reactivate`, {}, admin));
    const back = (e: Ev) =>
      e.type === "realm_user" && e.person?.user_id === botId && e.person.is_active === true;
    const events = await eventsUntil(srv, q, (evs) => evs.some(back));
    events.push(...(await drain(srv, q)));
    assert.deepEqual(
      events.filter((e) => e.type === "realm_bot" && e.op === "update"),
      [],
    );
    // realm_user carries each change instead.
    const person = events.filter((e) => e.type === "realm_user" && e.person?.user_id === botId);
    assert.ok(person.some((e) => e.person.full_name === "Quieter Bot"));
    assert.ok(person.some((e) => e.person.bot_owner_id === admin.userId));
    assert.ok(person.some((e) => e.person.is_active === false));
    assert.ok(person.some((e) => e.person.is_active === true));
  });
});

describe("FL 487: GET /users/{id}/presence", () => {
  test("carries the modern timestamps beside the legacy keys", async () => {
    assertSuccess(await srv.api("POST", "/users/me/presence", { status: "active" }, owner));
    const r = await srv.api("GET", `/users/${owner.userId}/presence`, {}, admin);
    assertSuccess(r);
    const p = r.body.presence as Ev;
    assert.equal(typeof p.active_timestamp, "number");
    assert.equal(typeof p.idle_timestamp, "number");
    assert.ok(Math.abs(p.active_timestamp - Date.now() / 1000) < 60);
    assert.equal(p.aggregated.status, "active");
    assert.equal(p.website.timestamp, p.active_timestamp);
  });
});
