// Event queues over HTTP: POST /register, GET /events, DELETE /events, in
// Zulip's verify_action style (register, act, poll, check the events' shapes,
// apply them to the first register's state and compare with a fresh one),
// plus the queue semantics of https://zulip.com/api/get-events.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NOTIFICATION_BOT, useEmbedded, WELCOME_BOT, type Creds } from "./support/index.ts";

// Short heartbeats so the heartbeat test is quick; every parked poll below is
// woken well before this.
process.env.EVENT_QUEUE_HEARTBEAT_MS = "2000";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const srv = useEmbedded();
let seq = 0;

async function newUser(name = "Test User"): Promise<Creds & { userId: number }> {
  const email = `user${++seq}-${Date.now()}@example.com`;
  const password = "a-long-password-123";
  const r = await srv.api("POST", "/users", { email, password, full_name: name });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const k = await srv.api("POST", "/fetch_api_key", { username: email, password }, null);
  assert.equal(k.status, 200, JSON.stringify(k.body));
  return { email, apiKey: k.body.api_key, userId: r.body.user_id };
}

async function register(params: Record<string, unknown> = {}, auth?: Creds): Promise<Json> {
  const r = await srv.api("POST", "/register", params, auth);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.result, "success");
  return r.body;
}

async function poll(queueId: string, lastEventId: number, auth?: Creds, extra: Record<string, unknown> = {}) {
  return srv.api("GET", "/events", { queue_id: queueId, last_event_id: lastEventId, ...extra }, auth);
}

/** Poll with dont_block until `n` events (other than heartbeats) are there. */
async function eventsAfter(queueId: string, last: number, n: number, auth?: Creds): Promise<Json[]> {
  for (let i = 0; i < 100; i++) {
    const r = await poll(queueId, last, auth, { dont_block: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const events = r.body.events.filter((e: Json) => e.type !== "heartbeat");
    if (events.length >= n) return events;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error(`fewer than ${n} events arrived`);
}

function assertError(r: { status: number; body: Json }, status: number, code: string, msg: string) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.result, "error");
  assert.equal(r.body.code, code);
  assert.equal(r.body.msg, msg);
}

// ---- Zulip's apply_event for the events these tests cause ---------------------

function applyEvent(state: Json, e: Json, me: number): void {
  switch (e.type) {
    case "user_settings":
      assert.equal(e.op, "update");
      state.user_settings[e.property] = e.value;
      break;
    case "user_status": {
      const entry = { ...(state.user_status[String(e.user_id)] ?? {}) };
      if (e.away === true) entry.away = true;
      if (e.away === false) delete entry.away;
      if (e.status_text !== undefined) {
        if (e.status_text === "") delete entry.status_text;
        else entry.status_text = e.status_text;
      }
      if (e.emoji_name !== undefined) {
        if (e.emoji_name === "") {
          delete entry.emoji_name;
          delete entry.emoji_code;
          delete entry.reaction_type;
        } else {
          entry.emoji_name = e.emoji_name;
          entry.emoji_code = e.emoji_code;
          entry.reaction_type = e.reaction_type;
        }
      }
      if (Object.keys(entry).length) state.user_status[String(e.user_id)] = entry;
      else delete state.user_status[String(e.user_id)];
      break;
    }
    case "realm_user":
      if (e.op === "add") {
        const { is_active, ...person } = e.person;
        assert.equal(is_active ?? true, true);
        state.realm_users.push(person);
        state.realm_users.sort((a: Json, b: Json) => a.user_id - b.user_id);
      } else if (e.op === "update") {
        const u = state.realm_users.find((x: Json) => x.user_id === e.person.user_id);
        assert.ok(u, "update for an unknown user");
        const { user_id, ...changes } = e.person;
        Object.assign(u, changes);
        if (user_id === me && "full_name" in changes) state.full_name = changes.full_name;
      } else {
        assert.fail(`unexpected realm_user op ${e.op}`);
      }
      break;
    default:
      assert.fail(`no apply rule for ${e.type}`);
  }
}

/**
 * verify_action: register, act, poll the events, check each with `check`,
 * apply them to the first state and compare with a fresh register.
 */
async function verifyAction(
  who: Creds & { userId: number },
  action: () => Promise<void>,
  expected: { count: number; check: (events: Json[]) => void; keys: string[] },
  registerParams: Record<string, unknown> = {},
): Promise<Json[]> {
  const state = await register(registerParams, who);
  await action();
  const events = await eventsAfter(state.queue_id, -1, expected.count, who);
  assert.equal(events.length, expected.count, JSON.stringify(events));
  events.forEach((e, i) => {
    assert.equal(typeof e.id, "number");
    if (i) assert.ok(e.id > events[i - 1].id, "ids increase");
  });
  expected.check(events);
  for (const e of events) {
    const { id: _id, ...body } = e;
    applyEvent(state, body, who.userId);
  }
  const fresh = await register(registerParams, who);
  for (const k of expected.keys) assert.deepEqual(state[k], fresh[k], `state key ${k} after applying events`);
  await srv.api("DELETE", "/events", { queue_id: state.queue_id }, who);
  await srv.api("DELETE", "/events", { queue_id: fresh.queue_id }, who);
  return events;
}

// ---- POST /register ---------------------------------------------------------------

describe("register", () => {
  test("register - reply shape and initial state", async () => {
    const r = await register();
    assert.match(r.queue_id, new RegExp(`^${srv.owner.userId}:[0-9a-f]{16}$`));
    assert.equal(r.last_event_id, -1);
    assert.equal(typeof r.zulip_version, "string");
    assert.equal(typeof r.zulip_feature_level, "number");
    assert.equal(typeof r.zulip_merge_base, "string");
    assert.equal(r.idle_queue_timeout_secs, 600);
    assert.equal(r.msg, "");
    // realm
    assert.equal(r.max_stream_name_length, 60);
    assert.equal(r.max_stream_description_length, 1024);
    assert.equal(r.max_topic_length, 60);
    assert.equal(r.max_message_length, 10000);
    assert.equal(r.realm_empty_topic_display_name, "general chat");
    assert.equal(r.event_queue_longpoll_timeout_seconds, 90);
    assert.equal(r.server_presence_ping_interval_seconds, 60);
    assert.equal(r.server_typing_started_expiry_period_milliseconds, 45000);
    assert.equal(r.realm_name, "Test Org");
    assert.equal(typeof r.realm_description, "string");
    assert.equal(r.realm_presence_disabled, false);
    assert.match(r.realm_url, /^http:\/\//);
    assert.equal(r.realm_uri, r.realm_url);
    // user_settings
    assert.equal(r.user_settings.enable_sounds, true);
    assert.equal(r.user_settings.default_language, "en");
    assert.ok(Array.isArray(r.user_settings.emojiset_choices));
    // realm_user
    assert.ok(Array.isArray(r.realm_users) && r.realm_users.length >= 1);
    const me = r.realm_users.find((u: Json) => u.user_id === srv.owner.userId);
    assert.ok(me);
    assert.equal("is_active" in me, false);
    assert.equal(me.avatar_url, null, "client_gravatar defaults to true");
    assert.deepEqual(r.realm_non_active_users, []);
    assert.deepEqual(
      (r.cross_realm_bots as { email: string }[]).map((b) => b.email).sort(),
      [NOTIFICATION_BOT.email, WELCOME_BOT.email].sort(),
    );
    assert.equal(r.user_id, srv.owner.userId);
    assert.equal(r.email, srv.owner.email);
    assert.equal(r.is_owner, true);
    assert.equal(r.is_admin, true);
    assert.equal(r.is_guest, false);
    assert.match(r.avatar_url, /^https:\/\/secure\.gravatar\.com\//);
    // user_status
    assert.equal(typeof r.user_status, "object");
  });

  test("register - client_gravatar false gives avatar URLs", async () => {
    const r = await register({ client_gravatar: false });
    for (const u of r.realm_users) assert.match(u.avatar_url, /^https:\/\//);
  });

  test("register - fetch_event_types and event_types choose the areas", async () => {
    const r = await register({ fetch_event_types: ["user_settings"] });
    assert.ok(r.user_settings);
    assert.equal(r.realm_users, undefined);
    assert.equal(r.max_topic_length, undefined);
    assert.ok(r.queue_id);
    assert.equal(r.idle_queue_timeout_secs, 600);
    const e = await register({ event_types: ["realm_user"] });
    assert.ok(e.realm_users);
    assert.equal(e.user_settings, undefined);
    const both = await register({ event_types: ["realm_user"], fetch_event_types: ["realm"] });
    assert.equal(both.realm_users, undefined);
    assert.equal(both.max_topic_length, 60);
    // Unknown types are ignored.
    const u = await register({ fetch_event_types: ["no_such_type"] });
    assert.equal(u.realm_users, undefined);
    assert.ok(u.queue_id);
  });

  test("register - idle_queue_timeout and queue_lifespan_secs", async () => {
    assert.equal((await register({ idle_queue_timeout: 30 })).idle_queue_timeout_secs, 30);
    assert.equal((await register({ idle_queue_timeout: "mobile" })).idle_queue_timeout_secs, 43200);
    assert.equal((await register({ idle_queue_timeout: 10_000_000 })).idle_queue_timeout_secs, 604800);
    assert.equal((await register({ queue_lifespan_secs: 120 })).idle_queue_timeout_secs, 120);
    assert.equal((await register({ queue_lifespan_secs: 0 })).idle_queue_timeout_secs, 600);
  });

  test("register - bad parameters are Zulip errors", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ idle_queue_timeout: 0 }, "idle_queue_timeout is too small"],
      [{ idle_queue_timeout: "soon" }, "idle_queue_timeout is not valid JSON"],
      [{ apply_markdown: "yes" }, "apply_markdown is not valid JSON"],
      [{ apply_markdown: "1" }, "apply_markdown is not a boolean"],
      [{ event_types: "message" }, "event_types is not valid JSON"],
      [{ event_types: { a: 1 } }, "event_types is not a list"],
      [{ event_types: [1] }, "event_types[0] is not a string"],
      [{ narrow: [["foo", "bar"]] }, "Operator foo not supported."],
      [{ narrow: [["stream"]] }, "narrow[0] is not length 2"],
      [{ narrow: "x" }, "narrow is not valid JSON"],
      [{ client_capabilities: [] }, "client_capabilities is not a dict"],
      [
        { client_capabilities: { bulk_message_deletion: 1 } },
        'client_capabilities["bulk_message_deletion"] is not a boolean',
      ],
      [{ include_subscribers: "maybe" }, "include_subscribers is not valid JSON"],
      [{ include_subscribers: 3 }, "Invalid include_subscribers"],
      [{ presence_history_limit_days: "x" }, "presence_history_limit_days is not valid JSON"],
    ];
    for (const [params, msg] of cases) {
      const r = await srv.api("POST", "/register", params);
      assertError(r, 400, "BAD_REQUEST", msg);
    }
  });

  test("register - unauthenticated without public access is 401", async () => {
    const r = await srv.api("POST", "/register", {}, null);
    assertError(r, 401, "UNAUTHORIZED", "Not logged in: API authentication or user session required");
    assert.equal(r.headers.get("www-authenticate"), 'Basic realm="zulip"');
  });

  test("register - unknown parameters are reported", async () => {
    const r = await register({ bogus: 1 });
    assert.deepEqual(r.ignored_parameters_unsupported, ["bogus"]);
  });
});

// ---- verify_action ----------------------------------------------------------------------

describe("verify_action", () => {
  test("verify_action - PATCH /settings sends user_settings update", async () => {
    const u = await newUser();
    await verifyAction(
      u,
      async () => {
        const r = await srv.api("PATCH", "/settings", { enable_sounds: false, default_language: "de" }, u);
        assert.equal(r.status, 200, JSON.stringify(r.body));
      },
      {
        count: 2,
        keys: ["user_settings"],
        check(events) {
          const byProp = Object.fromEntries(events.map((e) => [e.property, e]));
          assert.deepEqual(byProp.enable_sounds, {
            type: "user_settings",
            op: "update",
            property: "enable_sounds",
            value: false,
            id: byProp.enable_sounds.id,
          });
          assert.equal(byProp.default_language.value, "de");
          assert.equal(typeof byProp.default_language.language_name, "string");
        },
      },
      // Without it, the legacy settings events come too (test/fl-001-200-settings.test.ts).
      { client_capabilities: { user_settings_object: true } },
    );
  });

  test("verify_action - POST /users/me/status sends user_status", async () => {
    const u = await newUser();
    await verifyAction(
      u,
      async () => {
        const r = await srv.api(
          "POST",
          "/users/me/status",
          { status_text: "on vacation", emoji_name: "car" },
          u,
        );
        assert.equal(r.status, 200, JSON.stringify(r.body));
      },
      {
        count: 1,
        keys: ["user_status"],
        check([e]) {
          assert.equal(e.type, "user_status");
          assert.equal(e.user_id, u.userId);
          assert.equal(e.status_text, "on vacation");
          assert.equal(e.emoji_name, "car");
          assert.equal(typeof e.emoji_code, "string");
          assert.equal(e.reaction_type, "unicode_emoji");
        },
      },
      { event_types: ["user_status"] },
    );
  });

  test("verify_action - status away sends user_status and user_settings", async () => {
    const u = await newUser();
    await verifyAction(
      u,
      async () => {
        const r = await srv.api("POST", "/users/me/status", { away: true }, u);
        assert.equal(r.status, 200, JSON.stringify(r.body));
      },
      {
        count: 2,
        keys: ["user_status", "user_settings"],
        check(events) {
          const types = events.map((e) => e.type).sort();
          assert.deepEqual(types, ["user_settings", "user_status"]);
        },
      },
      { client_capabilities: { user_settings_object: true } },
    );
  });

  test("verify_action - POST /users sends realm_user add to everyone", async () => {
    const watcher = await newUser();
    let created = 0;
    await verifyAction(
      watcher,
      async () => {
        const email = `added${++seq}-${Date.now()}@example.com`;
        const r = await srv.api("POST", "/users", {
          email,
          password: "a-long-password-123",
          full_name: "New Person",
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        created = r.body.user_id;
      },
      {
        count: 1,
        keys: ["realm_users", "realm_non_active_users"],
        check([e]) {
          assert.equal(e.type, "realm_user");
          assert.equal(e.op, "add");
          assert.equal(e.person.user_id, created);
          assert.equal(e.person.full_name, "New Person");
          assert.equal(e.person.avatar_url, null, "client_gravatar queue gets null gravatar URLs");
        },
      },
      { event_types: ["realm_user"] },
    );
  });

  test("verify_action - full_name change sends realm_user update", async () => {
    const u = await newUser();
    await verifyAction(
      u,
      async () => {
        const r = await srv.api("PATCH", "/settings", { full_name: "Renamed Person" }, u);
        assert.equal(r.status, 200, JSON.stringify(r.body));
      },
      {
        count: 1,
        keys: ["realm_users", "full_name"],
        check([e]) {
          assert.deepEqual(e, {
            type: "realm_user",
            op: "update",
            person: { user_id: u.userId, full_name: "Renamed Person" },
            id: e.id,
          });
        },
      },
      { event_types: ["realm_user"] },
    );
  });
});

// ---- GET /events and DELETE /events ----------------------------------------------------

describe("queue semantics", () => {
  test("events - acknowledging prunes; pruned and unknown ids are errors", async () => {
    const u = await newUser();
    const q = (await register({ event_types: ["user_settings"] }, u)).queue_id;
    for (const v of [false, true, false]) await srv.api("PATCH", "/settings", { enable_sounds: v }, u);
    const all = await eventsAfter(q, -1, 3, u);
    assert.deepEqual(
      all.map((e) => e.id),
      [0, 1, 2],
    );
    // Events stay until acknowledged.
    assert.equal((await eventsAfter(q, -1, 3, u)).length, 3);
    const r = await poll(q, 1, u, { dont_block: true });
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.events.map((e: Json) => e.id),
      [2],
    );
    assert.equal(r.body.queue_id, undefined, "immediate reply to a request with queue_id");
    assertError(
      await poll(q, 0, u, { dont_block: true }),
      400,
      "BAD_REQUEST",
      "An event newer than 0 has already been pruned!",
    );
    assertError(
      await poll(q, -1, u, { dont_block: true }),
      400,
      "BAD_REQUEST",
      "An event newer than -1 has already been pruned!",
    );
    assertError(
      await poll(q, 7, u, { dont_block: true }),
      400,
      "BAD_REQUEST",
      "Event 7 was not in this queue",
    );
    // The same acknowledgement again is fine.
    assert.equal((await poll(q, 1, u, { dont_block: true })).status, 200);
    const last = await poll(q, 2, u, { dont_block: true });
    assert.deepEqual(last.body.events, []);
  });

  test("events - a fresh queue rejects ids it never had", async () => {
    const q = (await register()).queue_id;
    assertError(
      await poll(q, 0, undefined, { dont_block: true }),
      400,
      "BAD_REQUEST",
      "Event 0 was not in this queue",
    );
    assertError(
      await poll(q, -2, undefined, { dont_block: true }),
      400,
      "BAD_REQUEST",
      "An event newer than -2 has already been pruned!",
    );
  });

  test("events - dont_block with nothing waiting returns []", async () => {
    const q = (await register()).queue_id;
    const r = await poll(q, -1, undefined, { dont_block: true });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.events, []);
  });

  test("events - a parked poll is woken by an event", async () => {
    const u = await newUser();
    const q = (await register({ event_types: ["user_settings"] }, u)).queue_id;
    const t0 = Date.now();
    const parked = poll(q, -1, u);
    await new Promise((res) => setTimeout(res, 150));
    await srv.api("PATCH", "/settings", { enable_sounds: false }, u);
    const r = await parked;
    assert.ok(Date.now() - t0 < 1900, "woken by the event, not the heartbeat");
    assert.equal(r.status, 200);
    assert.equal(r.body.queue_id, q);
    assert.deepEqual(r.body.events, [
      { type: "user_settings", op: "update", property: "enable_sounds", value: false, id: 0 },
    ]);
  });

  test("events - a newer poll finishes the older one with no events", async () => {
    const u = await newUser();
    const q = (await register({ client_capabilities: { user_settings_object: true } }, u)).queue_id;
    const first = poll(q, -1, u);
    await new Promise((res) => setTimeout(res, 150));
    const second = poll(q, -1, u);
    const r1 = await first;
    assert.equal(r1.status, 200);
    assert.deepEqual(r1.body.events, []);
    await srv.api("PATCH", "/settings", { enable_sounds: false }, u);
    const r2 = await second;
    assert.equal(r2.body.events.length, 1);
    assert.equal(r2.body.events[0].type, "user_settings");
  });

  test("events - a heartbeat ends a long wait and takes an id", async () => {
    const u = await newUser();
    const q = (await register({ event_types: ["user_settings"] }, u)).queue_id;
    const t0 = Date.now();
    const r = await poll(q, -1, u);
    const waited = Date.now() - t0;
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.events, [{ type: "heartbeat", id: 0 }]);
    assert.equal(r.body.queue_id, q);
    assert.ok(waited >= 1700, `heartbeat after ${waited} ms`);
    // The heartbeat is acknowledged like any event; the next event gets id 1.
    await srv.api("PATCH", "/settings", { enable_sounds: false }, u);
    const next = await eventsAfter(q, 0, 1, u);
    assert.equal(next[0].id, 1);
  });

  test("events - event_types filters what a queue gets", async () => {
    const u = await newUser();
    const q = (await register({ event_types: ["user_status"] }, u)).queue_id;
    await srv.api("PATCH", "/settings", { enable_sounds: false }, u);
    await srv.api("POST", "/users/me/status", { status_text: "here" }, u);
    const events = await eventsAfter(q, -1, 1, u);
    assert.deepEqual(
      events.map((e) => e.type),
      ["user_status"],
    );
  });

  test("events - every queue of every recipient gets the event", async () => {
    const a = await newUser();
    const b = await newUser();
    const qa1 = (await register({ event_types: ["user_status"] }, a)).queue_id;
    const qa2 = (await register({ event_types: ["user_status"] }, a)).queue_id;
    const qb = (await register({ event_types: ["user_status"] }, b)).queue_id;
    await srv.api("POST", "/users/me/status", { status_text: "fan-out" }, a);
    for (const [q, who] of [
      [qa1, a],
      [qa2, a],
      [qb, b],
    ] as const) {
      const [e] = await eventsAfter(q, -1, 1, who);
      assert.equal(e.status_text, "fan-out");
      assert.equal(e.user_id, a.userId);
    }
  });

  test("events - idle queues expire", async () => {
    const u = await newUser();
    const q = (await register({ idle_queue_timeout: 1 }, u)).queue_id;
    await new Promise((res) => setTimeout(res, 1300));
    const r = await poll(q, -1, u, { dont_block: true });
    assertError(r, 400, "BAD_EVENT_QUEUE_ID", `Bad event queue ID: ${q}`);
    assert.equal(r.body.queue_id, q);
  });

  test("events - polling keeps a queue alive", async () => {
    const u = await newUser();
    const q = (await register({ idle_queue_timeout: 1 }, u)).queue_id;
    for (let i = 0; i < 4; i++) {
      await new Promise((res) => setTimeout(res, 400));
      assert.equal((await poll(q, -1, u, { dont_block: true })).status, 200);
    }
  });

  test("events - an overflowing queue is expired", async () => {
    const u = await newUser();
    const q = (await register({ event_types: ["user_settings"] }, u)).queue_id;
    process.env.EVENT_QUEUE_MAX_EVENTS = "3";
    try {
      for (const v of [false, true, false, true])
        await srv.api("PATCH", "/settings", { enable_sounds: v }, u);
      let r: Json;
      for (let i = 0; i < 50; i++) {
        r = await poll(q, -1, u, { dont_block: true });
        if (r.status !== 200) break;
        await new Promise((res) => setTimeout(res, 20));
      }
      assertError(r, 400, "BAD_EVENT_QUEUE_ID", `Bad event queue ID: ${q}`);
    } finally {
      delete process.env.EVENT_QUEUE_MAX_EVENTS;
    }
  });

  test("events - DELETE /events removes the queue and wakes its poll", async () => {
    const u = await newUser();
    const q = (await register({}, u)).queue_id;
    const parked = poll(q, -1, u);
    await new Promise((res) => setTimeout(res, 150));
    const d = await srv.api("DELETE", "/events", { queue_id: q }, u);
    assert.equal(d.status, 200);
    assert.deepEqual(d.body, { result: "success", msg: "" });
    assert.deepEqual((await parked).body.events, []);
    assertError(
      await poll(q, -1, u, { dont_block: true }),
      400,
      "BAD_EVENT_QUEUE_ID",
      `Bad event queue ID: ${q}`,
    );
    const again = await srv.api("DELETE", "/events", { queue_id: q }, u);
    assertError(again, 400, "BAD_EVENT_QUEUE_ID", `Bad event queue ID: ${q}`);
    assert.equal(again.body.queue_id, q);
  });

  test("events - another user's queue is a bad queue id, and stays intact", async () => {
    const a = await newUser();
    const b = await newUser();
    const q = (await register({ event_types: ["user_settings"] }, a)).queue_id;
    assertError(
      await poll(q, -1, b, { dont_block: true }),
      400,
      "BAD_EVENT_QUEUE_ID",
      `Bad event queue ID: ${q}`,
    );
    assertError(
      await srv.api("DELETE", "/events", { queue_id: q }, b),
      400,
      "BAD_EVENT_QUEUE_ID",
      `Bad event queue ID: ${q}`,
    );
    assert.equal((await poll(q, -1, a, { dont_block: true })).status, 200);
  });

  test("events - malformed and unknown queue ids", async () => {
    for (const q of [
      "nonsense",
      "",
      "1:zz",
      `${srv.owner.userId}:0000000000000000`,
      "99999:0123456789abcdef",
    ]) {
      const r = await poll(q, -1, undefined, { dont_block: true });
      assertError(r, 400, "BAD_EVENT_QUEUE_ID", `Bad event queue ID: ${q}`);
      assert.equal(r.body.queue_id, q);
    }
  });

  test("events - missing and bad arguments", async () => {
    assertError(await srv.api("GET", "/events", {}), 400, "BAD_REQUEST", "Missing 'queue_id' argument");
    const q = (await register()).queue_id;
    assertError(
      await srv.api("GET", "/events", { queue_id: q }),
      400,
      "BAD_REQUEST",
      "Missing 'last_event_id' argument",
    );
    assertError(
      await srv.api("GET", "/events", { queue_id: q, last_event_id: "x" }),
      400,
      "BAD_REQUEST",
      "last_event_id is not valid JSON",
    );
    assertError(
      await srv.api("GET", "/events", { queue_id: q, last_event_id: "1.5" }),
      400,
      "BAD_REQUEST",
      "last_event_id is not an integer",
    );
    assertError(
      await srv.api("GET", "/events", { queue_id: q, last_event_id: -1, dont_block: "maybe" }),
      400,
      "BAD_REQUEST",
      "dont_block is not valid JSON",
    );
    const d = await srv.api("DELETE", "/events", {});
    assertError(d, 400, "REQUEST_VARIABLE_MISSING", "Missing 'queue_id' argument");
    const anon = await srv.api("GET", "/events", { queue_id: q, last_event_id: -1 }, null);
    assertError(anon, 401, "UNAUTHORIZED", "Not logged in: API authentication or user session required");
    // None of these touched the queue.
    assert.equal((await poll(q, -1, undefined, { dont_block: true })).status, 200);
  });

  test("events - a user's 101st queue evicts the least recently polled", async () => {
    const u = await newUser();
    const light = { fetch_event_types: ["no_such_type"] };
    const first = (await register(light, u)).queue_id;
    const second = (await register(light, u)).queue_id;
    // Polling `first` makes `second` the least recently polled.
    assert.equal((await poll(first, -1, u, { dont_block: true })).status, 200);
    for (let i = 2; i < 101; i++) await register(light, u);
    assertError(
      await poll(second, -1, u, { dont_block: true }),
      400,
      "BAD_EVENT_QUEUE_ID",
      `Bad event queue ID: ${second}`,
    );
    assert.equal((await poll(first, -1, u, { dont_block: true })).status, 200);
  });

  test("events - GET without queue_id but dont_block registers a queue", async () => {
    const u = await newUser();
    const r = await srv.api("GET", "/events", { dont_block: true, event_types: ["user_settings"] }, u);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.events, []);
    assert.match(r.body.queue_id, new RegExp(`^${u.userId}:`));
    await srv.api("PATCH", "/settings", { enable_sounds: false }, u);
    const [e] = await eventsAfter(r.body.queue_id, -1, 1, u);
    assert.equal(e.type, "user_settings");
  });
});
