// Black-box tests of small Zulip API changes (docs/feature-levels/*.md):
// each describe is named after the feature level it covers.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  startEmbedded,
  useCluster,
  type Creds,
  type EmbeddedHandle,
  type Ev,
  type Member,
} from "./support/index.ts";
import { uploadFiles } from "./support/uploads.ts";

let srv: EmbeddedHandle;
let admin: Member;
let member: Member;
let other: Member;
let seq = 0;

async function newBot(auth?: Creds): Promise<Creds & { userId: number }> {
  const n = ++seq;
  const b = await srv.api("POST", "/bots", { full_name: `Misc Bot ${n}`, short_name: `miscbot${n}` }, auth);
  assertSuccess(b);
  const email = (await srv.api("GET", `/users/${b.body.user_id}`)).body.user.email as string;
  return { email, apiKey: b.body.api_key as string, userId: b.body.user_id as number };
}

before(async () => {
  srv = await startEmbedded();
  admin = await newUser(srv, 200);
  member = await newUser(srv);
  other = await newUser(srv);
});

after(async () => {
  await srv?.stop();
});

describe("FL 407/473: POST /users/{user_id}/status", () => {
  test("FL 407: an administrator sets another user's status; everyone hears user_status", async () => {
    const q = await openQueue(srv, other, ["user_status"]);
    const r = await srv.api(
      "POST",
      `/users/${member.userId}/status`,
      {
        status_text: "  in a meeting  ",
        emoji_name: "car",
      },
      admin,
    );
    assertSuccess(r);
    const got = await srv.api("GET", `/users/${member.userId}/status`, {}, other);
    assertSuccess(got);
    assert.deepEqual(got.body.status, {
      status_text: "in a meeting",
      emoji_name: "car",
      emoji_code: "1f697",
      reaction_type: "unicode_emoji",
    });
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.type === "user_status"));
    const ev = evs.find((x: Ev) => x.type === "user_status");
    assert.equal(ev.user_id, member.userId);
    assert.equal(ev.status_text, "in a meeting");
    assert.equal(ev.emoji_name, "car");
    assert.equal("away" in ev, false);
  });

  test("FL 407: members and moderators are refused; nothing changes", async () => {
    const mod = await newUser(srv, 300);
    for (const who of [other, mod]) {
      assertError(
        await srv.api("POST", `/users/${member.userId}/status`, { status_text: "hijacked" }, who),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      );
    }
    const got = await srv.api("GET", `/users/${member.userId}/status`, {}, other);
    assert.notEqual(got.body.status.status_text, "hijacked");
  });

  test("FL 407: unknown, bot and deactivated targets; bad input", async () => {
    assertError(await srv.api("POST", "/users/999999/status", { status_text: "x" }, admin), "No such user");
    const bot = await newBot();
    assertError(
      await srv.api("POST", `/users/${bot.userId}/status`, { status_text: "x" }, admin),
      "No such user",
    );
    const gone = await newUser(srv);
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`, {}));
    assertError(
      await srv.api("POST", `/users/${gone.userId}/status`, { status_text: "x" }, admin),
      "User is deactivated",
    );
    assertError(
      await srv.api("POST", `/users/${member.userId}/status`, {}, admin),
      "Client did not pass any new values.",
    );
    assertError(
      await srv.api("POST", `/users/${member.userId}/status`, { status_text: "x".repeat(61) }, admin),
      "status_text is too long (limit: 60 characters)",
    );
    const r = await srv.api(
      "POST",
      `/users/${member.userId}/status`,
      { emoji_name: "no_such_emoji_xyz" },
      admin,
    );
    assert.equal(r.status, 400);
    assert.equal(r.body.result, "error");
    const bad = await srv.api("POST", "/users/__proto__/status", { status_text: "x" }, admin);
    assert.equal(bad.status, 404);
  });

  test("FL 473: an administrator's bot may set a status; a member's bot may not", async () => {
    const adminBot = await newBot(admin);
    // A bot's role is its own: the owner makes it an administrator.
    assertSuccess(await srv.api("PATCH", `/bots/${adminBot.userId}`, { role: 200 }));
    assertSuccess(
      await srv.api("POST", `/users/${member.userId}/status`, { status_text: "set by a bot" }, adminBot),
    );
    const got = await srv.api("GET", `/users/${member.userId}/status`, {}, other);
    assert.equal(got.body.status.status_text, "set by a bot");
    const memberBot = await newBot(member);
    assertError(
      await srv.api("POST", `/users/${member.userId}/status`, { status_text: "nope" }, memberBot),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
  });
});

describe("FL 447: PATCH /bots/{bot_id} short_name", () => {
  test("FL 447: short_name moves the bot to a new email; events and credentials follow", async () => {
    const bot = await newBot(member);
    const qOwner = await openQueue(srv, member, ["realm_bot", "realm_user"]);
    const qOther = await openQueue(srv, other, ["realm_bot", "realm_user"]);
    const n = ++seq;
    const r = await srv.api("PATCH", `/bots/${bot.userId}`, { short_name: `renamed${n}` }, member);
    assertSuccess(r);
    const got = await srv.api("GET", `/users/${bot.userId}`, {}, other);
    const email = got.body.user.email as string;
    assert.match(email, new RegExp(`^renamed${n}-bot@`));
    assert.equal(got.body.user.delivery_email, email);
    // The bot's key now goes with the new address only.
    assertSuccess(await srv.api("GET", "/users/me", {}, { email, apiKey: bot.apiKey }));
    const old = await srv.api("GET", "/users/me", {}, bot);
    assert.equal(old.status, 401);
    const own = await eventsUntil(srv, qOwner, (e) =>
      e.some((x: Ev) => x.type === "realm_user" && x.person.new_email === email),
    );
    assert.ok(own.some((x: Ev) => x.type === "realm_user" && x.person.delivery_email === email));
    const others = await eventsUntil(srv, qOther, (e) =>
      e.some((x: Ev) => x.type === "realm_user" && x.person.new_email === email),
    );
    assert.ok(others.some((x: Ev) => x.type === "realm_user" && x.person.new_email === email));
  });

  test("FL 447: a taken or empty short name is refused and changes nothing", async () => {
    const a = await newBot(member);
    const b = await newBot(member);
    const bShort = (b.email.split("@")[0] ?? "").replace(/-bot$/, "");
    assertError(
      await srv.api("PATCH", `/bots/${a.userId}`, { short_name: bShort }, member),
      "Username already in use",
    );
    assertError(
      await srv.api("PATCH", `/bots/${a.userId}`, { short_name: "   " }, member),
      "Bad name or username",
    );
    assertError(
      await srv.api("PATCH", `/bots/${a.userId}`, { short_name: "bad name@x" }, member),
      "Bad name or username",
    );
    const got = await srv.api("GET", `/users/${a.userId}`, {}, other);
    assert.equal(got.body.user.email, a.email);
    // Someone who does not administer the bot may not rename it.
    const r = await srv.api("PATCH", `/bots/${a.userId}`, { short_name: `x${++seq}` }, other);
    assert.equal(r.status, 400);
    assert.equal((await srv.api("GET", `/users/${a.userId}`, {}, other)).body.user.email, a.email);
  });
});

describe("FL 490: is_deleted on user objects", () => {
  test("FL 490: delete_profile marks the user and their bots deleted; plain deactivation does not", async () => {
    const doomed = await newUser(srv);
    const bot = await newBot(doomed);
    const plain = await newUser(srv);
    const q = await openQueue(srv, other, ["realm_user"]);
    assertSuccess(
      await srv.api("DELETE", `/users/${doomed.userId}`, {
        actions: JSON.stringify({ delete_profile: true }),
      }),
    );
    assertSuccess(await srv.api("DELETE", `/users/${plain.userId}`, {}));
    for (const id of [doomed.userId, bot.userId]) {
      const u = (await srv.api("GET", `/users/${id}`, {}, other)).body.user;
      assert.equal(u.is_deleted, true, JSON.stringify(u));
      assert.equal(u.is_active, false);
    }
    const p = (await srv.api("GET", `/users/${plain.userId}`, {}, other)).body.user;
    assert.equal("is_deleted" in p, false);
    assert.equal(
      "is_deleted" in (await srv.api("GET", `/users/${other.userId}`, {}, other)).body.user,
      false,
    );
    const reg = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: JSON.stringify(["realm_user"]) },
      other,
    );
    const gone = (reg.body.realm_non_active_users as { user_id: number; is_deleted?: boolean }[]).find(
      (u) => u.user_id === doomed.userId,
    );
    assert.equal(gone?.is_deleted, true);
    const evs = await eventsUntil(srv, q, (e) =>
      e.some((x: Ev) => x.person?.user_id === doomed.userId && x.person.is_deleted === true),
    );
    assert.ok(evs.some((x: Ev) => x.person?.user_id === doomed.userId && x.person.is_deleted === true));
  });
});

describe("FL 455: custom profile field use_for_user_matching", () => {
  test("FL 455: set at creation and by PATCH, listed, registered and sent in events", async () => {
    const q = await openQueue(srv, other, ["custom_profile_fields"]);
    const name = `Matching ${++seq}`;
    const made = await srv.api("POST", "/realm/profile_fields", {
      name,
      field_type: 1,
      use_for_user_matching: true,
    });
    assertSuccess(made);
    const id = made.body.id as number;
    const plain = await srv.api("POST", "/realm/profile_fields", { name: `Plain ${++seq}`, field_type: 1 });
    assertSuccess(plain);
    type F = { id: number; use_for_user_matching?: boolean };
    const list = async () =>
      (await srv.api("GET", "/realm/profile_fields", {}, other)).body.custom_fields as F[];
    let fields = await list();
    assert.equal(fields.find((f) => f.id === id)?.use_for_user_matching, true);
    assert.equal(fields.find((f) => f.id === plain.body.id)?.use_for_user_matching, false);
    assertSuccess(await srv.api("PATCH", `/realm/profile_fields/${id}`, { use_for_user_matching: false }));
    fields = await list();
    assert.equal(fields.find((f) => f.id === id)?.use_for_user_matching, false);
    const reg = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: JSON.stringify(["custom_profile_fields"]) },
      other,
    );
    assert.equal(
      (reg.body.custom_profile_fields as F[]).find((f) => f.id === id)?.use_for_user_matching,
      false,
    );
    const evs = await eventsUntil(
      srv,
      q,
      (e) => e.filter((x: Ev) => x.type === "custom_profile_fields").length >= 3,
    );
    const last = evs.filter((x: Ev) => x.type === "custom_profile_fields").at(-1);
    assert.equal((last.fields as F[]).find((f) => f.id === id)?.use_for_user_matching, false);
    const first = evs.find((x: Ev) => x.type === "custom_profile_fields");
    assert.equal((first.fields as F[]).find((f) => f.id === id)?.use_for_user_matching, true);
  });

  test("FL 455: a non-boolean or a member's change is refused and changes nothing", async () => {
    const made = await srv.api("POST", "/realm/profile_fields", {
      name: `Matching ${++seq}`,
      field_type: 1,
      use_for_user_matching: true,
    });
    const id = made.body.id as number;
    assertError(
      await srv.api("PATCH", `/realm/profile_fields/${id}`, { use_for_user_matching: "maybe" }),
      "use_for_user_matching is not valid JSON",
    );
    assertError(
      await srv.api("PATCH", `/realm/profile_fields/${id}`, { use_for_user_matching: false }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    const fields = (await srv.api("GET", "/realm/profile_fields")).body.custom_fields as {
      id: number;
      use_for_user_matching: boolean;
    }[];
    assert.equal(fields.find((f) => f.id === id)?.use_for_user_matching, true);
  });
});

describe("FL 456/469: realm default_avatar_source and media_preview_size", () => {
  test("FL 456: default_avatar_source is registered, set by PATCH /realm and sent as a realm update", async () => {
    const reg = async () =>
      (await srv.api("POST", "/register", { fetch_event_types: JSON.stringify(["realm"]) }, other)).body;
    assert.equal((await reg()).realm_default_avatar_source, "G");
    const q = await openQueue(srv, other, ["realm"]);
    assertSuccess(await srv.api("PATCH", "/realm", { default_avatar_source: "J" }));
    assert.equal((await reg()).realm_default_avatar_source, "J");
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.property === "default_avatar_source"));
    const ev = evs.find((x: Ev) => x.property === "default_avatar_source");
    assert.deepEqual([ev.type, ev.op, ev.value], ["realm", "update", "J"]);
    // "U" (an uploaded avatar) cannot be a default; members may not change it.
    const bad = await srv.api("PATCH", "/realm", { default_avatar_source: "U" });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.result, "error");
    assertError(
      await srv.api("PATCH", "/realm", { default_avatar_source: "G" }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assert.equal((await reg()).realm_default_avatar_source, "J");
    assertSuccess(await srv.api("PATCH", "/realm", { default_avatar_source: "G" }));
  });

  test("FL 469: media_preview_size is registered, set by PATCH /realm and sent as a realm update", async () => {
    const reg = async () =>
      (await srv.api("POST", "/register", { fetch_event_types: JSON.stringify(["realm"]) }, other)).body;
    assert.equal((await reg()).realm_media_preview_size, 100);
    const q = await openQueue(srv, other, ["realm"]);
    assertSuccess(await srv.api("PATCH", "/realm", { media_preview_size: 150 }));
    assert.equal((await reg()).realm_media_preview_size, 150);
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.property === "media_preview_size"));
    assert.equal(evs.find((x: Ev) => x.property === "media_preview_size").value, 150);
    assertError(
      await srv.api("PATCH", "/realm", { media_preview_size: 120 }),
      "Invalid media_preview_size 120",
    );
    assertError(
      await srv.api("PATCH", "/realm", { media_preview_size: "big" }),
      "media_preview_size is not valid JSON",
    );
    assertError(
      await srv.api("PATCH", "/realm", { media_preview_size: 200 }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assert.equal((await reg()).realm_media_preview_size, 150);
  });
});

describe("FL 466: register realm_uuid", () => {
  test("FL 466: realm_uuid is a stable UUID", async () => {
    const reg = async () =>
      (await srv.api("POST", "/register", { fetch_event_types: JSON.stringify(["realm"]) }, other)).body;
    const a = (await reg()).realm_uuid as string;
    assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal((await reg()).realm_uuid, a);
  });
});

describe("FL 475: date_joined at first login", () => {
  test("FL 475: an API-created user's first login resets date_joined with a realm_user update", async () => {
    const q = await openQueue(srv, other, ["realm_user"]);
    const n = ++seq;
    const email = `first-login-${n}-${process.pid}@example.com`;
    const password = `pw-first-${n}-secret`;
    const made = await srv.api("POST", "/users", { email, password, full_name: `First Login ${n}` });
    assertSuccess(made);
    const userId = made.body.user_id as number;
    assertSuccess(await srv.api("POST", "/fetch_api_key", { username: email, password }, null));
    const evs = await eventsUntil(srv, q, (e) =>
      e.some((x: Ev) => x.op === "update" && x.person.user_id === userId && "date_joined" in x.person),
    );
    const ev = evs.find(
      (x: Ev) => x.op === "update" && x.person.user_id === userId && "date_joined" in x.person,
    );
    assert.deepEqual(Object.keys(ev.person).sort(), ["date_joined", "user_id"]);
    assert.match(ev.person.date_joined, /^\d{4}-\d\d-\d\dT\d\d:\d\d\+00:00$/);
    const u = (await srv.api("GET", `/users/${userId}`, {}, other)).body.user;
    assert.equal(u.date_joined, ev.person.date_joined);
    // A second login is not a first one.
    assertSuccess(await srv.api("POST", "/fetch_api_key", { username: email, password }, null));
    assertSuccess(await srv.api("POST", "/users/me/status", { status_text: "marker" }, other));
    const later = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.type === "user_status"));
    assert.equal(
      later.filter(
        (x: Ev) => x.type === "realm_user" && x.person.user_id === userId && "date_joined" in x.person,
      ).length,
      0,
    );
  });

  test("FL 475: a wrong password is no login and changes nothing", async () => {
    const q = await openQueue(srv, other, ["realm_user", "user_status"]);
    const n = ++seq;
    const email = `first-login-${n}-${process.pid}@example.com`;
    const made = await srv.api("POST", "/users", {
      email,
      password: `pw-first-${n}-secret`,
      full_name: `FL ${n}`,
    });
    assertSuccess(made);
    const bad = await srv.api(
      "POST",
      "/fetch_api_key",
      { username: email, password: "wrong-password" },
      null,
    );
    assert.equal(bad.status, 401);
    assertSuccess(await srv.api("POST", "/users/me/status", { status_text: `marker ${n}` }, other));
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.type === "user_status"));
    assert.equal(evs.filter((x: Ev) => x.type === "realm_user" && x.op === "update").length, 0);
  });
});

async function channelWith(name: string, userIds: number[]): Promise<number> {
  const r = await srv.api("POST", "/channels/create", { name, subscribers: JSON.stringify(userIds) });
  assertSuccess(r);
  return r.body.id as number;
}

async function post(channelId: number, content: string, auth?: Creds, topic = "t"): Promise<number> {
  const r = await srv.api("POST", "/messages", { type: "stream", to: channelId, topic, content }, auth);
  assertSuccess(r);
  return r.body.id as number;
}

describe("FL 445: GET /messages anchor=date", () => {
  test("FL 445: the anchor is the narrow's first message sent at or after anchor_date", async () => {
    const ch = await channelWith(`anchor-date-${++seq}`, [srv.owner.userId, other.userId]);
    const ids: number[] = [];
    for (const word of ["one", "two", "three"]) {
      ids.push(await post(ch, word));
      await new Promise((r) => setTimeout(r, 1100));
    }
    const narrow = JSON.stringify([{ operator: "channel", operand: ch }]);
    const all = await srv.api("GET", "/messages", { anchor: "oldest", num_after: 10, narrow }, other);
    const ts = (all.body.messages as { id: number; timestamp: number }[]).map((m) => m.timestamp);
    const iso = (s: number) => new Date(s * 1000).toISOString();
    const get = (anchor_date: string) =>
      srv.api(
        "GET",
        "/messages",
        { anchor: "date", anchor_date, num_before: 1, num_after: 1, narrow },
        other,
      );
    const mid = await get(iso(ts[1]!));
    assertSuccess(mid);
    assert.equal(mid.body.anchor, ids[1]);
    assert.equal(mid.body.found_anchor, true);
    assert.deepEqual(
      (mid.body.messages as { id: number }[]).map((m) => m.id),
      ids,
    );
    const before = await get(iso(ts[0]! - 3600));
    assert.equal(before.body.anchor, ids[0]);
    const after = await get(iso(ts[2]! + 3600));
    assertSuccess(after);
    assert.equal(after.body.found_newest, true);
    assert.deepEqual(
      (after.body.messages as { id: number }[]).map((m) => m.id),
      [ids[2]],
    );
  });

  test("FL 445: a missing or malformed anchor_date is refused", async () => {
    const r = await srv.api("GET", "/messages", { anchor: "date", num_before: 1 }, other);
    assertError(r, "Missing 'anchor_date' argument", "REQUEST_VARIABLE_MISSING");
    for (const bad of ["yesterday", "2024-13-45T99:99", "1".repeat(5000), "2024-01-01T00:00:00Z; DROP"]) {
      assertError(
        await srv.api("GET", "/messages", { anchor: "date", anchor_date: bad, num_before: 1 }, other),
        "Invalid anchor_date",
      );
    }
  });
});

describe("FL 446: narrow operator mentions", () => {
  test("FL 446: mentions matches direct, visible mentions of the user, by id or email", async () => {
    const ch = await channelWith(`mentions-${++seq}`, [srv.owner.userId, other.userId, member.userId]);
    const name = (await srv.api("GET", `/users/${other.userId}`)).body.user.full_name as string;
    const loud = await post(ch, `hello @**${name}**`);
    const silent = await post(ch, `hello @_**${name}**`);
    const plainMsg = await post(ch, "hello nobody");
    const everyone = await post(ch, "hello @**all**");
    const ids = async (narrow: unknown[], auth: Creds = member) => {
      const r = await srv.api(
        "GET",
        "/messages",
        { anchor: "newest", num_before: 100, narrow: JSON.stringify(narrow) },
        auth,
      );
      assertSuccess(r);
      return (r.body.messages as { id: number }[]).map((m) => m.id);
    };
    const inCh = { operator: "channel", operand: ch };
    assert.deepEqual(await ids([inCh, { operator: "mentions", operand: other.userId }]), [loud]);
    assert.deepEqual(await ids([inCh, { operator: "mentions", operand: other.email }]), [loud]);
    assert.deepEqual(await ids([inCh, { operator: "mentions", operand: other.userId, negated: true }]), [
      silent,
      plainMsg,
      everyone,
    ]);
    // Without a channel term the caller's own messages are searched (a member who received them).
    const all = await ids([{ operator: "mentions", operand: other.userId }], other);
    assert.ok(all.includes(loud));
    assert.ok(!all.includes(silent) && !all.includes(everyone));
    const matches = await srv.api(
      "GET",
      "/messages/matches_narrow",
      {
        msg_ids: JSON.stringify([loud, silent]),
        narrow: JSON.stringify([{ operator: "mentions", operand: other.userId }]),
      },
      other,
    );
    assertSuccess(matches);
    assert.deepEqual(Object.keys(matches.body.messages).map(Number), [loud]);
  });

  test("FL 446: an unknown user or a malformed operand is refused", async () => {
    for (const operand of [999999, "nobody@example.com"]) {
      const r = await srv.api(
        "GET",
        "/messages",
        { anchor: "newest", num_before: 5, narrow: JSON.stringify([{ operator: "mentions", operand }]) },
        member,
      );
      assert.equal(r.status, 400);
      assert.equal(r.body.code, "BAD_NARROW");
    }
    const r = await srv.api(
      "GET",
      "/messages",
      { anchor: "newest", num_before: 5, narrow: JSON.stringify([{ operator: "mentions", operand: [1] }]) },
      member,
    );
    assertError(r, "operand is not a string or integer");
  });
});

describe("FL 270: direct message permission groups", () => {
  async function systemGroup(name: string): Promise<number> {
    const r = await srv.api("GET", "/user_groups");
    return (r.body.user_groups as { id: number; name: string }[]).find((g) => g.name === name)!.id;
  }
  async function setRealm(name: string, id: number) {
    assertSuccess(await srv.api("PATCH", "/realm", { [name]: JSON.stringify({ new: id }) }));
  }
  const dm = (to: number[], auth: Creds, content = "hi") =>
    srv.api("POST", "/messages", { type: "private", to: JSON.stringify(to), content }, auth);

  test("FL 270: only the initiator group starts a conversation; replies are free", async () => {
    const [admins, everyone] = [await systemGroup("role:administrators"), await systemGroup("role:everyone")];
    const a = await newUser(srv);
    const b = await newUser(srv);
    await setRealm("direct_message_initiator_group", admins);
    try {
      assertError(
        await dm([b.userId], a),
        "You do not have permission to initiate direct message conversations.",
      );
      assertSuccess(await dm([a.userId], admin));
      assertSuccess(await dm([admin.userId], a, "a reply"));
      // To oneself and to bots needs nobody's leave.
      assertSuccess(await dm([a.userId], a));
      const bot = await newBot(a);
      assertSuccess(await dm([bot.userId], a));
      const seen = await srv.api(
        "GET",
        "/messages",
        {
          anchor: "newest",
          num_before: 5,
          narrow: JSON.stringify([{ operator: "dm", operand: [b.userId] }]),
        },
        a,
      );
      assert.equal(seen.body.messages.length, 0);
    } finally {
      await setRealm("direct_message_initiator_group", everyone);
    }
  });

  test("FL 270: every direct message needs a member of the permission group", async () => {
    const [admins, everyone, nobody] = [
      await systemGroup("role:administrators"),
      await systemGroup("role:everyone"),
      await systemGroup("role:nobody"),
    ];
    const a = await newUser(srv);
    const b = await newUser(srv);
    assertSuccess(await dm([b.userId], a, "before"));
    await setRealm("direct_message_permission_group", admins);
    try {
      assertError(
        await dm([b.userId], a),
        "This conversation does not include any users who can authorize it.",
      );
      assertSuccess(await dm([b.userId, admin.userId], a));
      assertSuccess(await dm([b.userId], admin));
      await setRealm("direct_message_permission_group", nobody);
      assertError(await dm([b.userId], a), "Direct messages are disabled in this organization.");
      assertSuccess(await dm([a.userId], a));
    } finally {
      await setRealm("direct_message_permission_group", everyone);
    }
    assertSuccess(await dm([b.userId], a, "after"));
  });
});

describe("FL 285: detached_uploads", () => {
  test("FL 285: an edit dropping the last link to the editor's upload lists it", async () => {
    const ch = await channelWith(`detached-${++seq}`, [srv.owner.userId, other.userId]);
    const up = async (name: string) => {
      const r = await uploadFiles(srv.baseUrl, other, [
        { data: Buffer.from(`data ${name}`), filename: name },
      ]);
      assertSuccess(r as never);
      return (r.body as { url: string }).url;
    };
    const [u1, u2, u3] = [await up("one.txt"), await up("two.txt"), await up("three.txt")];
    const msg = await post(ch, `[a](${u1}) [b](${u2}) [c](${u3})`, other);
    // Another message still links u2: it is no detached upload.
    await post(ch, `again [b](${u2})`, other);
    const r = await srv.api("PATCH", `/messages/${msg}`, { content: `only [c](${u3})` }, other);
    assertSuccess(r);
    const detached = r.body.detached_uploads as { path_id: string; name: string }[];
    assert.deepEqual(
      detached.map((d) => d.name),
      ["one.txt"],
    );
    assert.equal(`/user_uploads/${detached[0]!.path_id}`, u1);
    // A topic-only edit and a content edit that keeps every link detach nothing.
    const t = await srv.api("PATCH", `/messages/${msg}`, { topic: "renamed" }, other);
    assertSuccess(t);
    assert.deepEqual(t.body.detached_uploads, []);
    const same = await srv.api("PATCH", `/messages/${msg}`, { content: `still [c](${u3})` }, other);
    assert.deepEqual(same.body.detached_uploads, []);
    // The attachment list shows u1 linked by no message now.
    const list = await srv.api("GET", "/attachments", {}, other);
    const a1 = (list.body.attachments as { path_id: string; [k: string]: unknown }[]).find(
      (a) => `/user_uploads/${a.path_id}` === u1,
    )!;
    const links = (a1.message_ids ?? a1.messages) as unknown[];
    assert.equal(links.length, 0);
  });
});

describe("FL misc in cluster mode", { skip: requireBinaries("nats-server", "redis-server") }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("FL 407/447/475/446: admin status, bot rename, first login and mentions across nodes", async () => {
    const admin2 = await newUser(c, 200);
    const target = await newUser(c);
    // 475: the helper's fetch_api_key was the first login; a fresh one now.
    const q = await openQueue(c, target, ["user_status", "realm_user"]);
    const n = ++seq;
    const email = `cluster-first-${n}-${process.pid}@example.com`;
    const made = await c.api("POST", "/users", {
      email,
      password: `pw-cl-${n}-secret`,
      full_name: `Cluster ${n}`,
    });
    assertSuccess(made);
    assertSuccess(
      await c.api("POST", "/fetch_api_key", { username: email, password: `pw-cl-${n}-secret` }, null),
    );
    // 407
    assertSuccess(await c.api("POST", `/users/${target.userId}/status`, { status_text: "cluster" }, admin2));
    const evs = await eventsUntil(
      c,
      q,
      (e) =>
        e.some((x: Ev) => x.type === "user_status") &&
        e.some(
          (x: Ev) =>
            x.type === "realm_user" && x.person.user_id === made.body.user_id && x.person.date_joined,
        ),
    );
    assert.ok(evs.some((x: Ev) => x.type === "user_status" && x.user_id === target.userId));
    assert.ok(evs.some((x: Ev) => x.type === "realm_user" && x.person.user_id === made.body.user_id));
    assert.equal((await c.api("GET", `/users/${target.userId}/status`)).body.status.status_text, "cluster");
    // 447
    const b = await c.api(
      "POST",
      "/bots",
      { full_name: `Cluster Bot ${n}`, short_name: `clbot${n}` },
      target,
    );
    assertSuccess(b);
    assertSuccess(await c.api("PATCH", `/bots/${b.body.user_id}`, { short_name: `clrenamed${n}` }, target));
    const botEmail = (await c.api("GET", `/users/${b.body.user_id}`)).body.user.email as string;
    assert.match(botEmail, new RegExp(`^clrenamed${n}-bot@`));
    assertSuccess(await c.api("GET", "/users/me", {}, { email: botEmail, apiKey: b.body.api_key as string }));
    // 446
    const ch = await c.api("POST", "/channels/create", {
      name: `cluster-mentions-${n}`,
      subscribers: JSON.stringify([(await c.api("GET", "/users/me")).body.user_id, target.userId]),
    });
    assertSuccess(ch);
    const name = (await c.api("GET", `/users/${target.userId}`)).body.user.full_name as string;
    const sent = await c.api("POST", "/messages", {
      type: "stream",
      to: ch.body.id,
      topic: "t",
      content: `hi @**${name}**`,
    });
    assertSuccess(sent);
    await c.api("POST", "/messages", { type: "stream", to: ch.body.id, topic: "t", content: "no mention" });
    const got = await c.api(
      "GET",
      "/messages",
      {
        anchor: "newest",
        num_before: 10,
        narrow: JSON.stringify([
          { operator: "channel", operand: ch.body.id },
          { operator: "mentions", operand: target.userId },
        ]),
      },
      target,
    );
    assertSuccess(got);
    assert.deepEqual(
      (got.body.messages as { id: number }[]).map((m) => m.id),
      [sent.body.id],
    );
  });
});
