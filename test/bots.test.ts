// Black-box HTTP tests of bots: POST /bots, GET /bots, PATCH /bots/{id},
// POST /bots/{id}/api_key/regenerate, DELETE /bots/{id}, bot authentication,
// realm_bot and realm_user events, and who may see a bot's secrets.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  roleMatrix,
  useEmbedded,
  type Creds,
} from "./support/index.ts";

const srv = useEmbedded();
let seq = 0;

async function createBot(params: Record<string, unknown> = {}, auth: Creds = srv.owner) {
  const n = ++seq;
  return srv.api("POST", "/bots", { full_name: `Bot ${n}`, short_name: `b${n}`, ...params }, auth);
}

async function botCreds(userId: number, apiKey: string): Promise<Creds> {
  const u = await srv.api("GET", `/users/${userId}`);
  assertSuccess(u);
  return { email: u.body.user.email, apiKey };
}

describe("bots - create", () => {
  test("POST /bots creates a generic bot owned by the caller", async () => {
    const res = await srv.api("POST", "/bots", { full_name: "Helper Bot", short_name: "helper" });
    assertSuccess(res);
    assert.equal(typeof res.body.user_id, "number");
    assert.match(res.body.api_key, /^[A-Za-z0-9]{32}$/);
    assert.equal(typeof res.body.avatar_url, "string");
    assert.equal(res.body.default_sending_stream, null);
    assert.equal(res.body.default_events_register_stream, null);
    assert.equal(res.body.default_all_public_streams, false);
    const u = (await srv.api("GET", `/users/${res.body.user_id}`)).body.user;
    assert.equal(u.email, "helper-bot@localhost");
    assert.equal(u.delivery_email, "helper-bot@localhost");
    assert.equal(u.full_name, "Helper Bot");
    assert.equal(u.is_bot, true);
    assert.equal(u.bot_type, 1);
    assert.equal(u.bot_owner_id, srv.owner.userId);
    assert.equal(u.role, 400);
    assert.ok(!("api_key" in u));
  });

  test("a bot authenticates with its API key; incoming webhook bots cannot use normal endpoints", async () => {
    const generic = await createBot();
    assertSuccess(generic);
    const creds = await botCreds(generic.body.user_id, generic.body.api_key);
    const me = await srv.api("GET", "/users/me", {}, creds);
    assertSuccess(me);
    assert.equal(me.body.user_id, generic.body.user_id);
    assert.equal(me.body.is_bot, true);

    const hook = await createBot({ bot_type: 2 });
    assertSuccess(hook);
    const hookCreds = await botCreds(hook.body.user_id, hook.body.api_key);
    assertError(
      await srv.api("GET", "/users/me", {}, hookCreds),
      "This API is not available to incoming webhook bots.",
      "UNAUTHORIZED",
      401,
    );
  });

  test("outgoing webhook bots get a service with a fixed token, shown only to who administers the bot", async () => {
    const member = await newUser(srv);
    const other = await newUser(srv);
    const admin = await newUser(srv, 200);
    const qOwner = await openQueue(srv, member, ["realm_bot", "realm_user"]);
    const qAdmin = await openQueue(srv, admin, ["realm_bot", "realm_user"]);
    const qOther = await openQueue(srv, other, ["realm_bot", "realm_user"]);
    const res = await createBot(
      { bot_type: 3, payload_url: JSON.stringify("https://hooks.example.com/x"), interface_type: 2 },
      member,
    );
    assertSuccess(res);
    const id = res.body.user_id;
    const isAdd = (e: { type: string; op: string }) => e.type === "realm_bot" && e.op === "add";
    const ownerEvents = await eventsUntil(srv, qOwner, (evs) => evs.some(isAdd) && evs.length >= 2);
    const add = ownerEvents.find(isAdd);
    assert.ok(add, JSON.stringify(ownerEvents));
    assert.equal(add.bot.user_id, id);
    // Since feature level 474 the key, owner and type are not in bot objects.
    for (const gone of ["api_key", "owner_id", "bot_type", "email", "full_name"])
      assert.ok(!Object.hasOwn(add.bot, gone), gone);
    assert.equal(add.bot.services.length, 1);
    assert.equal(add.bot.services[0].base_url, "https://hooks.example.com/x");
    assert.equal(add.bot.services[0].interface, 2);
    const token = add.bot.services[0].token as string;
    assert.match(token, /^[A-Za-z0-9]{32}$/);
    const userAdd = ownerEvents.find((e) => e.type === "realm_user" && e.op === "add");
    assert.equal(userAdd.person.user_id, id);
    assert.equal(userAdd.person.bot_owner_id, member.userId);
    assert.equal(userAdd.person.bot_type, 3);

    const adminEvents = await eventsUntil(srv, qAdmin, (evs) => evs.some(isAdd));
    assert.equal(adminEvents.find(isAdd).bot.services[0].token, token);

    // Someone else hears of the new user, never of its key or token.
    const otherEvents = await eventsUntil(srv, qOther, (evs) => evs.some((e) => e.type === "realm_user"));
    assert.ok(otherEvents.some((e) => e.type === "realm_user" && e.op === "add" && e.person.user_id === id));
    assert.ok(!otherEvents.some(isAdd));
    const text = JSON.stringify(otherEvents);
    assert.ok(!text.includes(res.body.api_key));
    assert.ok(!text.includes(token));
    const bots = await srv.api("GET", "/bots", {}, other);
    assertSuccess(bots);
    assert.deepEqual(bots.body.bots, []);
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["realm_bot"] }, other);
    assertSuccess(reg);
    assert.deepEqual(reg.body.realm_bots, []);
    // The administrator's /register shows it, with the token.
    const regAdmin = await srv.api("POST", "/register", { fetch_event_types: ["realm_bot"] }, admin);
    const mine = regAdmin.body.realm_bots.find((b: { user_id: number }) => b.user_id === id);
    assert.equal(mine.services[0].token, token);
    // The token is fixed: a later /register shows the same one.
    const regOwner = await srv.api("POST", "/register", { fetch_event_types: ["realm_bot"] }, member);
    assert.equal(
      regOwner.body.realm_bots.find((b: { user_id: number }) => b.user_id === id).services[0].token,
      token,
    );
  });

  test("POST /bots errors, each changing nothing", async () => {
    const before = (await srv.api("GET", "/users")).body.members.length;
    assertError(
      await srv.api("POST", "/bots", { short_name: "x" }),
      "Missing 'full_name' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("POST", "/bots", { full_name: "X Y" }),
      "Missing 'short_name' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("POST", "/bots", { full_name: "X Y", short_name: "  " }),
      "Bad name or username",
    );
    assertError(
      await srv.api("POST", "/bots", { full_name: "X Y", short_name: "a b" }),
      "Bad name or username",
    );
    assertError(await srv.api("POST", "/bots", { full_name: "", short_name: "zz1" }), "Name too short!");
    assertError(
      await srv.api("POST", "/bots", { full_name: "x".repeat(101), short_name: "zz1" }),
      "Name too long!",
    );
    assertError(await createBot({ bot_type: 9 }), "Invalid bot type");
    assertError(await createBot({ bot_type: 4 }), "Invalid bot type");
    assertError(await createBot({ bot_type: "one" }), "bot_type is not valid JSON");
    assertError(
      await createBot({ bot_type: 3, interface_type: 5, payload_url: "https://a.example" }),
      "Invalid interface type",
    );
    assertError(
      await createBot({ bot_type: 3, payload_url: JSON.stringify("ftp://a.example") }),
      "payload_url is not a URL",
    );
    assertError(await createBot({ bot_type: 3, payload_url: "not a url" }), "payload_url is not a URL");
    assertError(
      await createBot({ bot_type: 3, payload_url: "javascript:alert(1)" }),
      "payload_url is not a URL",
    );
    assertSuccess(await srv.api("POST", "/bots", { full_name: "Unique Name", short_name: "uniq" }));
    assertError(
      await srv.api("POST", "/bots", { full_name: "Other", short_name: "uniq" }),
      "Username already in use",
    );
    assertError(
      await srv.api("POST", "/bots", { full_name: "Unique Name", short_name: "uniq2" }),
      "Name is already in use!",
    );
    assertError(
      await srv.api("POST", "/bots", { full_name: "Olivia Owner", short_name: "uniq3" }),
      "Name is already in use!",
    );
    const after = (await srv.api("GET", "/users")).body.members.length;
    assert.equal(after, before + 1);
  });

  test("authorization matrix: guests and bots may not create bots; every other role may", async () => {
    const m = await roleMatrix(srv);
    for (const role of ["owner", "admin", "moderator", "member"]) {
      assertSuccess(await createBot({}, m[role]!));
    }
    assertError(await createBot({}, m.guest!), "Not allowed for guest users");
    assertError(await createBot({}, m.bot!), "This endpoint does not accept bot requests.");
  });
});

describe("bots - list, update, keys, deactivate", () => {
  test("GET /bots lists the caller's own active bots with their keys", async () => {
    const member = await newUser(srv);
    const a = await createBot({}, member);
    const b = await createBot({ bot_type: 2 }, member);
    await createBot({}); // the owner's, not listed
    const res = await srv.api("GET", "/bots", {}, member);
    assertSuccess(res);
    assert.deepEqual(
      res.body.bots.map((x: { user_id: number; api_key: string }) => [x.user_id, x.api_key]),
      [
        [a.body.user_id, a.body.api_key],
        [b.body.user_id, b.body.api_key],
      ],
    );
    const first = res.body.bots[0];
    for (const k of [
      "username",
      "full_name",
      "avatar_url",
      "default_sending_stream",
      "default_events_register_stream",
      "default_all_public_streams",
    ]) {
      assert.ok(k in first, k);
    }
    assertSuccess(await srv.api("DELETE", `/bots/${a.body.user_id}`, {}, member));
    const again = await srv.api("GET", "/bots", {}, member);
    assert.deepEqual(
      again.body.bots.map((x: { user_id: number }) => x.user_id),
      [b.body.user_id],
    );
  });

  test("PATCH /bots/{id} changes the name, owner and service, with events", async () => {
    const member = await newUser(srv);
    const newOwner = await newUser(srv);
    const bot = await createBot({ bot_type: 3, payload_url: "https://one.example/h" }, member);
    assertSuccess(bot);
    const id = bot.body.user_id;
    const q = await openQueue(srv, member, ["realm_bot", "realm_user"]);
    const qNew = await openQueue(srv, newOwner, ["realm_bot", "realm_user"]);

    const r1 = await srv.api("PATCH", `/bots/${id}`, { full_name: "Renamed Bot" }, member);
    assertSuccess(r1);
    assert.equal(r1.body.full_name, "Renamed Bot");
    assert.equal(r1.body.bot_owner, member.email);
    const r2 = await srv.api(
      "PATCH",
      `/bots/${id}`,
      { service_payload_url: JSON.stringify("http://two.example/h"), service_interface: 2 },
      member,
    );
    assertSuccess(r2);
    assert.equal(r2.body.service_payload_url, "http://two.example/h");
    assert.equal(r2.body.service_interface, 2);
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "realm_bot"));
    // The rename is realm_user news only (feature level 474); the service is realm_bot's.
    const botUpdates = evs.filter((e) => e.type === "realm_bot" && e.op === "update");
    assert.equal(botUpdates.length, 1);
    assert.equal(botUpdates[0].bot.services[0].base_url, "http://two.example/h");
    assert.equal(botUpdates[0].bot.services[0].interface, 2);
    assert.ok(
      evs.some((e) => e.type === "realm_user" && e.op === "update" && e.person.full_name === "Renamed Bot"),
    );

    const r3 = await srv.api("PATCH", `/bots/${id}`, { bot_owner_id: newOwner.userId }, member);
    assertSuccess(r3);
    assert.equal(r3.body.bot_owner, newOwner.email);
    assert.equal((await srv.api("GET", `/users/${id}`)).body.user.bot_owner_id, newOwner.userId);
    const oldOwnerEvs = await eventsUntil(srv, q, (e) => e.some((x) => x.op === "delete"));
    assert.ok(oldOwnerEvs.some((e) => e.type === "realm_bot" && e.op === "delete" && e.bot.user_id === id));
    const newOwnerEvs = await eventsUntil(srv, qNew, (e) => e.some((x) => x.type === "realm_bot"));
    const add = newOwnerEvs.find((e) => e.type === "realm_bot" && e.op === "add");
    assert.equal(add.bot.user_id, id);
    // The old owner no longer administers it.
    assertError(
      await srv.api("PATCH", `/bots/${id}`, { full_name: "Nope Bot" }, member),
      "Insufficient permission",
    );
    assert.deepEqual((await srv.api("GET", "/bots", {}, member)).body.bots, []);
    assert.equal((await srv.api("GET", "/bots", {}, newOwner)).body.bots[0].user_id, id);
  });

  test("PATCH /bots/{id} errors change nothing", async () => {
    const bot = await createBot();
    const id = bot.body.user_id;
    const human = await newUser(srv);
    const gone = await newUser(srv);
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    const other = await createBot();
    assertError(await srv.api("PATCH", `/bots/${human.userId}`, { full_name: "X Y" }), "No such bot");
    assertError(await srv.api("PATCH", "/bots/999999", { full_name: "X Y" }), "No such bot");
    assertError(
      await srv.api("PATCH", `/bots/${id}`, { bot_owner_id: 999999 }),
      "Failed to change owner, no such user",
    );
    assertError(
      await srv.api("PATCH", `/bots/${id}`, { bot_owner_id: gone.userId }),
      "Failed to change owner, user is deactivated",
    );
    assertError(
      await srv.api("PATCH", `/bots/${id}`, { bot_owner_id: other.body.user_id }),
      "Failed to change owner, bots can't own other bots",
    );
    assertError(
      await srv.api("PATCH", `/bots/${id}`, { bot_owner_id: "x" }),
      "bot_owner_id is not valid JSON",
    );
    assertError(await srv.api("PATCH", `/bots/${id}`, { role: 7 }), "Invalid role");
    assertError(
      await srv.api("PATCH", `/bots/${id}`, { full_name: "Olivia Owner" }),
      "Name is already in use!",
    );
    assertError(await srv.api("PATCH", `/bots/${id}`, { full_name: "x".repeat(101) }), "Name too long!");
    assertError(
      await srv.api("PATCH", `/bots/${id}`, { service_payload_url: "nope" }),
      "service_payload_url is not a URL",
    );
    const u = (await srv.api("GET", `/users/${id}`)).body.user;
    assert.equal(u.bot_owner_id, srv.owner.userId);
    assert.equal(u.role, 400);
    assert.equal((await srv.api("PATCH", "/bots/abc", {})).status, 404);
  });

  test("POST /bots/{id}/api_key/regenerate replaces the key; the old one stops working at once", async () => {
    const bot = await createBot();
    const id = bot.body.user_id;
    const oldCreds = await botCreds(id, bot.body.api_key);
    assertSuccess(await srv.api("GET", "/users/me", {}, oldCreds)); // cached by the gateway now
    const res = await srv.api("POST", `/bots/${id}/api_key/regenerate`);
    assertSuccess(res);
    assert.match(res.body.api_key, /^[A-Za-z0-9]{32}$/);
    assert.notEqual(res.body.api_key, bot.body.api_key);
    assertError(await srv.api("GET", "/users/me", {}, oldCreds), "Invalid API key", "UNAUTHORIZED", 401);
    assertSuccess(await srv.api("GET", "/users/me", {}, { ...oldCreds, apiKey: res.body.api_key }));
    assertError(await srv.api("POST", "/bots/999999/api_key/regenerate"), "No such bot");
  });

  test("DELETE /bots/{id} deactivates the bot and its key", async () => {
    const bot = await createBot();
    const id = bot.body.user_id;
    const creds = await botCreds(id, bot.body.api_key);
    assertSuccess(await srv.api("GET", "/users/me", {}, creds));
    assertSuccess(await srv.api("DELETE", `/bots/${id}`));
    assert.equal((await srv.api("GET", `/users/${id}`)).body.user.is_active, false);
    assertError(await srv.api("GET", "/users/me", {}, creds), "Account is deactivated", "UNAUTHORIZED", 401);
    assertError(await srv.api("DELETE", `/bots/${id}`), "User is deactivated");
  });

  test("authorization matrix for another user's bot: only owners and administrators", async () => {
    const m = await roleMatrix(srv);
    const allowed = ["owner", "admin"];
    for (const role of ["owner", "admin", "moderator", "member", "guest", "bot"]) {
      const bot = await createBot({}, srv.owner);
      const id = bot.body.user_id;
      const nameBefore = (await srv.api("GET", `/users/${id}`)).body.user.full_name;
      const who = m[role]!;
      const patch = await srv.api("PATCH", `/bots/${id}`, { full_name: `Patched ${seq}` }, who);
      const regen = await srv.api("POST", `/bots/${id}/api_key/regenerate`, {}, who);
      const del = await srv.api("DELETE", `/bots/${id}`, {}, who);
      if (allowed.includes(role)) {
        assertSuccess(patch);
        assertSuccess(regen);
        assertSuccess(del);
        continue;
      }
      const expected =
        role === "guest"
          ? "Not allowed for guest users"
          : role === "bot"
            ? "This endpoint does not accept bot requests."
            : "Insufficient permission";
      assertError(patch, expected);
      assertError(regen, expected);
      assertError(del, expected);
      const u = (await srv.api("GET", `/users/${id}`)).body.user;
      assert.equal(u.full_name, nameBefore);
      assert.equal(u.is_active, true);
      // The key still works.
      assertSuccess(await srv.api("GET", "/users/me", {}, await botCreds(id, bot.body.api_key)));
    }
    // A bot's role: only administrators; owner role only by owners.
    const bot = await createBot({}, m.member!);
    assertError(
      await srv.api("PATCH", `/bots/${bot.body.user_id}`, { role: 200 }, m.member!),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertError(
      await srv.api("PATCH", `/bots/${bot.body.user_id}`, { role: 100 }, m.admin!),
      "Must be an organization owner",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertSuccess(await srv.api("PATCH", `/bots/${bot.body.user_id}`, { role: 200 }, m.admin!));
    assert.equal((await srv.api("GET", `/users/${bot.body.user_id}`)).body.user.role, 200);
  });

  test("deactivating a user deactivates their bots", async () => {
    const member = await newUser(srv);
    const bot = await createBot({}, member);
    const creds = await botCreds(bot.body.user_id, bot.body.api_key);
    assertSuccess(await srv.api("DELETE", `/users/${member.userId}`));
    assert.equal((await srv.api("GET", `/users/${bot.body.user_id}`)).body.user.is_active, false);
    assertError(await srv.api("GET", "/users/me", {}, creds), "Account is deactivated", "UNAUTHORIZED", 401);
  });
  test("the bots each owner sees follow owner changes, deactivation and a restart", async () => {
    const alice = await newUser(srv);
    const bob = await newUser(srv);
    const a1 = (await createBot({}, alice)).body.user_id as number;
    const a2 = (await createBot({}, alice)).body.user_id as number;
    const b1 = (await createBot({}, bob)).body.user_id as number;
    assertSuccess(await srv.api("PATCH", `/bots/${a2}`, { bot_owner_id: bob.userId }, alice));
    assertSuccess(await srv.api("DELETE", `/bots/${b1}`, {}, bob));
    const ids = (bots: { user_id: number }[]) => bots.map((b) => b.user_id);
    const realmBots = async (who: Creds) =>
      ids((await srv.api("POST", "/register", { fetch_event_types: ["realm_bot"] }, who)).body.realm_bots);
    const listed = async (who: Creds) => ids((await srv.api("GET", "/bots", {}, who)).body.bots);
    const seen = async () => ({
      aliceListed: await listed(alice),
      bobListed: await listed(bob),
      aliceRealm: await realmBots(alice),
      bobRealm: await realmBots(bob),
      admin: (await realmBots(srv.owner)).filter((id) => [a1, a2, b1].includes(id)),
    });
    const before = await seen();
    // GET /bots: active bots only; realm_bots: the owner's, active or not.
    assert.deepEqual(before, {
      aliceListed: [a1],
      bobListed: [a2],
      aliceRealm: [a1],
      bobRealm: [a2, b1].sort((x, y) => x - y),
      admin: [a1, a2, b1].sort((x, y) => x - y),
    });
    await srv.restart();
    assert.deepEqual(await seen(), before);
  });
});
