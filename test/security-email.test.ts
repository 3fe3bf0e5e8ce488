// email_address_visibility as a data-leak boundary, black-box over HTTP: a
// user who hides their address from members ("administrators", 3) or from
// everyone ("nobody", 4) must not have it shown, nor its gravatar MD5, to
// a viewer who may not see it: in user objects, messages, events, the
// outgoing-webhook payload, and lookups by email (which must answer a
// hidden real address like an unknown one).

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  startEmbedded,
  type ApiResult,
  type Creds,
  type EmbeddedHandle,
  type Ev,
  type Member,
  type Queue,
} from "./support/index.ts";

let srv: EmbeddedHandle;
/** Hidden from all but administrators (3), and from everyone (4). */
let toAdmins: Member;
let toNobody: Member;
let member: Member;
let admin: Member;
let seq = 0;

const md5 = (email: string) => createHash("md5").update(email.toLowerCase()).digest("hex");

/** Neither the address nor its gravatar hash anywhere in `value` (any case). */
function assertHidden(value: unknown, who: Member, where: string): void {
  const text = JSON.stringify(value).toLowerCase();
  assert.ok(!text.includes(who.email.toLowerCase()), `${where}: ${who.email} shown`);
  assert.ok(!text.includes(md5(who.email)), `${where}: gravatar hash of ${who.email} shown`);
}

const dummyOf = (u: Member) => new RegExp(`^user${u.userId}@localhost$`);

async function setVisibility(u: Member, value: number): Promise<void> {
  assertSuccess(await srv.api("PATCH", "/settings", { email_address_visibility: value }, u));
}

/** A queue whose events carry real avatar URLs (client_gravatar off), so hashes would show. */
async function queue(auth: Creds, eventTypes: string[]): Promise<Queue> {
  const r = await srv.api("POST", "/register", { event_types: eventTypes, client_gravatar: false }, auth);
  assertSuccess(r);
  return { id: r.body.queue_id, last: r.body.last_event_id, auth };
}

async function channelWith(users: Member[]): Promise<string> {
  const name = `vis ${++seq}`;
  assertSuccess(
    await srv.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [srv.owner.userId, ...users.map((u) => u.userId)],
    }),
  );
  return name;
}

async function send(auth: Creds, params: Record<string, unknown>): Promise<number> {
  const r = await srv.api("POST", "/messages", { content: `hello ${++seq}`, ...params }, auth);
  assertSuccess(r);
  return r.body.id as number;
}

async function fetchNewest(auth: Creds, narrow: unknown[] = []): Promise<ApiResult> {
  const r = await srv.api(
    "GET",
    "/messages",
    { anchor: "newest", num_before: 50, num_after: 0, narrow, client_gravatar: false },
    auth,
  );
  assertSuccess(r);
  return r;
}

before(async () => {
  // The bot server of the webhook test listens on loopback, which outgoing
  // webhooks reach only when allowed (docs/webhooks.md "Destinations").
  process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS = "127.0.0.0/8";
  try {
    srv = await startEmbedded();
  } finally {
    delete process.env.OUTGOING_WEBHOOK_ALLOWED_NETWORKS;
  }
  toAdmins = await newUser(srv, 400, "Ada Hidden");
  toNobody = await newUser(srv, 400, "Nora Hidden");
  member = await newUser(srv, 400, "Mel Member");
  admin = await newUser(srv, 200, "Adam Admin");
  await setVisibility(toAdmins, 3);
  await setVisibility(toNobody, 4);
});

after(async () => {
  await srv?.stop();
});

describe("email visibility - user objects", () => {
  test("GET /users, /users/{id}, /users/me and /register show the real address only to those allowed", async () => {
    for (const cg of [true, false]) {
      const all = await srv.api("GET", "/users", { client_gravatar: cg }, member);
      assertSuccess(all);
      assertHidden(all.body, toAdmins, `GET /users (client_gravatar ${cg}) as member`);
      assertHidden(all.body, toNobody, `GET /users (client_gravatar ${cg}) as member`);
      const asAdmin = await srv.api("GET", "/users", { client_gravatar: cg }, admin);
      assertSuccess(asAdmin);
      assertHidden(asAdmin.body, toNobody, "GET /users as admin");
    }
    for (const [target, viewer, sees] of [
      [toAdmins, member, false],
      [toNobody, member, false],
      [toAdmins, admin, true],
      [toNobody, admin, false],
      [toAdmins, toAdmins, true],
      [toNobody, toNobody, true],
    ] as [Member, Member, boolean][]) {
      const r = await srv.api("GET", `/users/${target.userId}`, { client_gravatar: false }, viewer);
      assertSuccess(r);
      const u = r.body.user;
      assert.match(u.email, dummyOf(target));
      assert.equal(u.delivery_email, sees ? target.email : null);
      if (!sees) assertHidden(r.body, target, `GET /users/${target.userId} as ${viewer.userId}`);
      else
        assert.ok(String(u.avatar_url).includes(md5(target.email)), "allowed viewers get the real gravatar");
    }
    const me = await srv.api("GET", "/users/me", {}, toNobody);
    assertSuccess(me);
    assert.match(me.body.email, dummyOf(toNobody));
    assert.equal(me.body.delivery_email, toNobody.email);

    const reg = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: ["realm_user"], client_gravatar: false },
      member,
    );
    assertSuccess(reg);
    assertHidden(reg.body, toAdmins, "/register realm_users as member");
    assertHidden(reg.body, toNobody, "/register realm_users as member");
    const regAdmin = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: ["realm_user"], client_gravatar: false },
      admin,
    );
    assertSuccess(regAdmin);
    const seen = regAdmin.body.realm_users.find((u: Ev) => u.user_id === toAdmins.userId);
    assert.equal(seen.delivery_email, toAdmins.email);
    assertHidden(regAdmin.body, toNobody, "/register realm_users as admin");
  });

  test("a hidden real address is looked up like an unknown one; the dummy one resolves", async () => {
    const unknown = await srv.api(
      "GET",
      `/users/${encodeURIComponent("nobody-here@example.com")}`,
      {},
      member,
    );
    for (const target of [toAdmins, toNobody]) {
      const real = await srv.api("GET", `/users/${encodeURIComponent(target.email)}`, {}, member);
      assert.equal(real.status, unknown.status);
      assert.deepEqual(real.body, unknown.body);
      const dummy = `user${target.userId}@localhost`;
      const viaDummy = await srv.api("GET", `/users/${encodeURIComponent(dummy)}`, {}, member);
      assertSuccess(viaDummy);
      assert.equal(viaDummy.body.user.user_id, target.userId);
      // The presence route resolves emails the same way.
      const presence = await srv.api(
        "GET",
        `/users/${encodeURIComponent(target.email)}/presence`,
        {},
        member,
      );
      const unknownPresence = await srv.api(
        "GET",
        `/users/${encodeURIComponent("nobody-here@example.com")}/presence`,
        {},
        member,
      );
      assert.deepEqual([presence.status, presence.body], [unknownPresence.status, unknownPresence.body]);
    }
    // Allowed viewers may name the user by the real address; "nobody" means nobody else.
    const byAdmin = await srv.api("GET", `/users/${encodeURIComponent(toAdmins.email)}`, {}, admin);
    assertSuccess(byAdmin);
    assert.equal(byAdmin.body.user.user_id, toAdmins.userId);
    const hiddenFromAdmin = await srv.api("GET", `/users/${encodeURIComponent(toNobody.email)}`, {}, admin);
    assert.deepEqual(hiddenFromAdmin.body, unknown.body);
    const bySelf = await srv.api("GET", `/users/${encodeURIComponent(toNobody.email)}`, {}, toNobody);
    assertSuccess(bySelf);
  });

  test("a direct message to a hidden real address is refused like an unknown address", async () => {
    const refused = await srv.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify([toAdmins.email]), content: "hi" },
      member,
    );
    const unknown = await srv.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify(["nobody-here@example.com"]), content: "hi" },
      member,
    );
    assert.equal(refused.status, 400);
    assert.equal(refused.body.msg, `Invalid email '${toAdmins.email}'`);
    assert.equal(refused.body.code, unknown.body.code);
    const dummy = `user${toAdmins.userId}@localhost`;
    await send(member, { type: "direct", to: JSON.stringify([dummy]) });
    await send(admin, { type: "direct", to: JSON.stringify([toAdmins.email]) });
    const adminToNobody = await srv.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify([toNobody.email]), content: "hi" },
      admin,
    );
    assert.equal(adminToNobody.body.msg, `Invalid email '${toNobody.email}'`);
  });
});

describe("email visibility - bots", () => {
  test("PATCH /bots names a hidden owner by the dummy address to an administrator", async () => {
    const bot = await srv.api(
      "POST",
      "/bots",
      { full_name: "Nora Bot", short_name: `norabot${++seq}` },
      toNobody,
    );
    assertSuccess(bot);
    const r = await srv.api("PATCH", `/bots/${bot.body.user_id}`, { full_name: "Nora Bot Two" }, admin);
    assertSuccess(r);
    assert.match(r.body.bot_owner, dummyOf(toNobody));
    assertHidden(r.body, toNobody, "PATCH /bots reply");
  });
});

describe("email visibility - messages", () => {
  test("message events, GET /messages, reactions and edits name hidden senders by the dummy address", async () => {
    const q = await queue(member, ["message", "reaction", "update_message"]);
    const qAdmin = await queue(admin, ["message"]);
    const channel = await channelWith([toAdmins, toNobody, member, admin]);
    const ids = [
      await send(toAdmins, { type: "stream", to: channel, topic: "t" }),
      await send(toNobody, { type: "stream", to: channel, topic: "t" }),
      await send(toAdmins, {
        type: "direct",
        to: JSON.stringify([member.userId, admin.userId, toNobody.userId]),
      }),
      await send(member, { type: "direct", to: JSON.stringify([toNobody.userId]) }),
    ];
    assertSuccess(await srv.api("POST", `/messages/${ids[0]}/reactions`, { emoji_name: "smile" }, toNobody));
    assertSuccess(await srv.api("PATCH", `/messages/${ids[1]}`, { content: "edited" }, toNobody));
    const events = await eventsUntil(
      srv,
      q,
      (all) => all.some((e: Ev) => e.type === "update_message") && all.some((e: Ev) => e.type === "reaction"),
    );
    assert.equal(events.filter((e: Ev) => e.type === "message").length, 4);
    const byId = new Map(
      events.filter((e: Ev) => e.type === "message").map((e: Ev) => [e.message.id, e.message]),
    );
    assert.match(byId.get(ids[0]).sender_email, dummyOf(toAdmins));
    assert.match(byId.get(ids[1]).sender_email, dummyOf(toNobody));
    const dm = byId.get(ids[2]);
    assert.match(dm.display_recipient.find((r: Ev) => r.id === toNobody.userId).email, dummyOf(toNobody));
    // The reactor is a user id only (feature level 484): no address to leak.
    const reaction = events.find((e: Ev) => e.type === "reaction");
    assert.equal(reaction.user_id, toNobody.userId);
    assert.equal(reaction.user, undefined);
    for (const who of [toAdmins, toNobody]) assertHidden(events, who, "member's events");
    // The API email is the same for every viewer; the admin's events carry no gravatar of it either.
    const adminEvents = await eventsUntil(srv, qAdmin, (all) => all.length >= 3);
    assertHidden(adminEvents, toNobody, "admin's events");

    for (const narrow of [
      [],
      [{ operator: "channel", operand: channel }],
      [{ operator: "is", operand: "dm" }],
    ]) {
      const r = await fetchNewest(member, narrow);
      assert.ok(r.body.messages.length > 0);
      for (const who of [toAdmins, toNobody])
        assertHidden(r.body, who, `GET /messages ${JSON.stringify(narrow)}`);
    }
  });

  test("messages sent while the address was public show the dummy address once it is hidden", async () => {
    const later = await newUser(srv, 400, "Lou Later");
    const channel = await channelWith([later, member]);
    const id = await send(later, { type: "stream", to: channel, topic: "before" });
    const dmId = await send(later, { type: "direct", to: JSON.stringify([member.userId]) });
    await setVisibility(later, 4);
    const r = await fetchNewest(member);
    const msgs = r.body.messages.filter((m: Ev) => m.id === id || m.id === dmId);
    assert.equal(msgs.length, 2);
    for (const m of msgs) assert.match(m.sender_email, dummyOf(later));
    assertHidden(r.body, later, "GET /messages after hiding");
  });
});

describe("email visibility - outgoing webhooks", () => {
  let server: Server;
  const bodies: string[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        bodies.push(Buffer.concat(chunks).toString());
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ response_not_required: true }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  test("the payload a bot server receives names hidden users by the dummy address", async () => {
    const port = (server.address() as AddressInfo).port;
    const bot = await srv.api("POST", "/bots", {
      full_name: "Hook Vis",
      short_name: `hookvis${++seq}`,
      bot_type: 3,
      payload_url: JSON.stringify(`http://127.0.0.1:${port}/hook`),
      interface_type: 1,
    });
    assertSuccess(bot);
    const botId = bot.body.user_id as number;
    await send(toNobody, { type: "direct", to: JSON.stringify([botId, toAdmins.userId]) });
    const until = Date.now() + 15_000;
    while (!bodies.length && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
    assert.equal(bodies.length, 1);
    const payload = JSON.parse(bodies[0]!);
    assert.match(payload.message.sender_email, dummyOf(toNobody));
    assert.match(
      payload.message.display_recipient.find((r: Ev) => r.id === toAdmins.userId).email,
      dummyOf(toAdmins),
    );
    assertHidden(payload, toNobody, "webhook payload");
    assertHidden(payload, toAdmins, "webhook payload");
  });
});

describe("email visibility - changes of the setting", () => {
  test("each viewer hears of the address they may now see: new_email, delivery_email, avatar", async () => {
    const u = await newUser(srv, 400, "Val Changer");
    const qMember = await queue(member, ["realm_user"]);
    const qAdmin = await queue(admin, ["realm_user"]);
    const qSelf = await queue(u, ["realm_user"]);
    await setVisibility(u, 3);
    const about = (evs: Ev[]) =>
      evs.filter((e: Ev) => e.person?.user_id === u.userId).map((e: Ev) => e.person);
    const done = (evs: Ev[]) => about(evs).some((p: Ev) => "new_email" in p);

    const seenByMember = about(await eventsUntil(srv, qMember, done));
    assert.match(seenByMember.find((p: Ev) => "new_email" in p).new_email, dummyOf(u));
    assert.deepEqual(
      seenByMember.filter((p: Ev) => "delivery_email" in p),
      [{ user_id: u.userId, delivery_email: null }],
    );
    const avatar = seenByMember.find((p: Ev) => "avatar_url" in p);
    assert.ok(avatar, "the member's gravatar URL changes with the address they know");
    assert.ok(avatar.avatar_url.includes(md5(`user${u.userId}@localhost`)));
    assertHidden(seenByMember, u, "member's realm_user events");
    assertHidden(
      (await srv.api("GET", `/users/${u.userId}`, { client_gravatar: false }, member)).body,
      u,
      "GET",
    );

    const seenByAdmin = about(await eventsUntil(srv, qAdmin, done));
    assert.match(seenByAdmin.find((p: Ev) => "new_email" in p).new_email, dummyOf(u));
    // Administrators could and still can see it: no delivery_email or avatar change.
    assert.ok(!seenByAdmin.some((p: Ev) => "delivery_email" in p || "avatar_url" in p));
    const seenBySelf = about(await eventsUntil(srv, qSelf, done));
    assert.ok(!seenBySelf.some((p: Ev) => "delivery_email" in p));

    // Back to everyone: the member gets the address again.
    await setVisibility(u, 1);
    const back = about(
      await eventsUntil(srv, qMember, (evs) => about(evs).some((p: Ev) => "new_email" in p)),
    );
    assert.equal(back.find((p: Ev) => "new_email" in p).new_email, u.email);
    assert.deepEqual(
      back.filter((p: Ev) => "delivery_email" in p),
      [{ user_id: u.userId, delivery_email: u.email }],
    );
    await drain(srv, qAdmin);
  });
});
