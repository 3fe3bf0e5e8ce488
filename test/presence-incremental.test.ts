// POST /users/me/presence with last_update_id (Zulip feature level 263):
// -1 answers every row, a later id only the rows changed since, ping_only
// nothing; presence_last_update_id is the newest id returned, else the
// client's own. Black-box over HTTP, embedded and in a real cluster.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  useCluster,
  useEmbedded,
  type ApiResult,
  type Creds,
  type Member,
} from "./support/index.ts";
import { OpenApiSpec } from "./support/openapi.ts";

const spec = new OpenApiSpec();

function valid(method: string, path: string, res: ApiResult): void {
  const v = spec.validate(method, path, res.status, res.body);
  assert.deepEqual(v.issues, [], `${method} ${path}: ${JSON.stringify(res.body)}`);
}

describe("presence - last_update_id (embedded)", () => {
  const srv = useEmbedded();

  const beat = async (who: Creds, params: Record<string, unknown>): Promise<ApiResult> => {
    const res = await srv.api("POST", "/users/me/presence", params, who);
    assertSuccess(res);
    valid("POST", "/users/me/presence", res);
    return res;
  };

  test("-1 gives every row, then only the rows changed since", async () => {
    const [a, b, c, poller] = [
      await newUser(srv),
      await newUser(srv),
      await newUser(srv),
      await newUser(srv),
    ];
    for (const u of [a, b, c]) await beat(u, { status: "active", ping_only: true });
    const all = await beat(poller, { status: "active", last_update_id: -1 });
    for (const u of [a, b, c, poller]) {
      const row = all.body.presences[String(u.userId)];
      assert.ok(row, `row of ${u.userId}`);
      assert.deepEqual(Object.keys(row).sort(), ["active_timestamp", "idle_timestamp"]);
    }
    const first = all.body.presence_last_update_id as number;
    assert.ok(first > 0);

    // Nothing changed but possibly the poller's own row.
    const quiet = await beat(poller, { status: "active", last_update_id: first });
    const quietKeys = Object.keys(quiet.body.presences);
    assert.ok(
      quietKeys.every((k) => k === String(poller.userId)),
      JSON.stringify(quiet.body),
    );
    assert.ok(quiet.body.presence_last_update_id >= first);
    if (quietKeys.length === 0) assert.equal(quiet.body.presence_last_update_id, first);

    // A first beat always changes a row: only that row (and the poller's own) comes back.
    const since = quiet.body.presence_last_update_id as number;
    const d = await newUser(srv);
    await beat(d, { status: "active", ping_only: true, new_user_input: true });
    const changed = await beat(poller, { status: "active", last_update_id: since });
    const keys = Object.keys(changed.body.presences);
    assert.ok(keys.includes(String(d.userId)), JSON.stringify(changed.body));
    assert.ok(
      keys.every((k) => k === String(d.userId) || k === String(poller.userId)),
      JSON.stringify(changed.body),
    );
    assert.ok(changed.body.presence_last_update_id > since);

    // An id from the future (or a previous server) answers nothing and echoes it.
    const future = Number.MAX_SAFE_INTEGER - 1;
    const none = await beat(a, { status: "active", last_update_id: future });
    assert.deepEqual(none.body.presences, {});
    assert.equal(none.body.presence_last_update_id, future);
  });

  test("ping_only answers no presence data and still records the beat", async () => {
    const [pinger, poller] = [await newUser(srv), await newUser(srv)];
    const start = (await beat(poller, { status: "active", last_update_id: -1 })).body.presence_last_update_id;
    const ping = await beat(pinger, { status: "active", ping_only: true, last_update_id: -1 });
    assert.deepEqual(Object.keys(ping.body).sort(), ["msg", "result"]);
    const seen = await beat(poller, { status: "active", last_update_id: start });
    assert.ok(seen.body.presences[String(pinger.userId)], JSON.stringify(seen.body));
  });

  test("idle then active: the row moves forward and the presence events are unchanged", async () => {
    const watcher = await newUser(srv);
    const q = await openQueue(srv, watcher, ["presence"]);
    const u = await newUser(srv);
    const start = (await beat(watcher, { status: "active", last_update_id: -1 })).body
      .presence_last_update_id;

    await beat(u, { status: "idle", ping_only: true });
    const idle = await beat(watcher, { status: "active", last_update_id: start });
    const idleRow = idle.body.presences[String(u.userId)];
    assert.equal(idleRow.active_timestamp, 0);
    assert.ok(idleRow.idle_timestamp > 0);

    await beat(u, { status: "active", ping_only: true });
    const active = await beat(watcher, {
      status: "active",
      last_update_id: idle.body.presence_last_update_id,
    });
    const activeRow = active.body.presences[String(u.userId)];
    assert.equal(activeRow.active_timestamp, activeRow.idle_timestamp);
    assert.ok(active.body.presence_last_update_id > idle.body.presence_last_update_id);

    // A beat that changes nothing (same second, same status) sends nothing.
    const evs = await eventsUntil(srv, q, (e) => e.filter((x) => x.user_id === u.userId).length >= 2);
    const mine = evs.filter((e) => e.type === "presence" && e.user_id === u.userId);
    assert.equal(mine.length, 2);
    assert.deepEqual(
      mine.map((e) => e.presence.website.status),
      ["idle", "active"],
    );
    for (const e of mine) {
      assert.equal(e.email, u.email);
      assert.equal(typeof e.server_timestamp, "number");
      assert.ok(!("presences" in e), "legacy queues get the legacy form only");
      const check = spec.events().check(e);
      assert.deepEqual(check.issues, [], JSON.stringify(e));
    }
  });

  test("history_limit_days, legacy and slim formats, presence_disabled", async () => {
    const m = await newUser(srv);
    await beat(m, { status: "active", ping_only: true });
    const zero = await beat(m, { status: "active", history_limit_days: 0 });
    assert.deepEqual(zero.body.presences, {});
    assert.equal(zero.body.presence_last_update_id, -1);
    const zeroSince = await beat(m, { status: "active", history_limit_days: 0, last_update_id: -1 });
    assert.equal(zeroSince.body.presence_last_update_id, -1);

    const legacy = await beat(m, { status: "active" });
    assert.equal(legacy.body.presences[m.email].aggregated.status, "active");
    assert.equal(typeof legacy.body.presence_last_update_id, "number");
    const slim = await beat(m, { status: "active", slim_presence: true });
    assert.ok(slim.body.presences[String(m.userId)]);

    assertSuccess(await srv.api("PATCH", "/realm", { presence_disabled: true }));
    try {
      const off = await beat(m, { status: "active", last_update_id: 5 });
      assert.deepEqual(off.body.presences, {});
      assert.equal(off.body.presence_last_update_id, -1);
    } finally {
      assertSuccess(await srv.api("PATCH", "/realm", { presence_disabled: false }));
    }
  });

  test("register's presence_last_update_id starts a poll that sees only later changes", async () => {
    const [early, late, client] = [await newUser(srv), await newUser(srv), await newUser(srv)];
    await beat(early, { status: "active", ping_only: true });
    const reg = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: ["presence"], slim_presence: true },
      client,
    );
    assertSuccess(reg);
    assert.ok(reg.body.presences[String(early.userId)]);
    const id = reg.body.presence_last_update_id as number;
    assert.ok(id > 0);
    await beat(late, { status: "active", ping_only: true });
    const poll = await beat(client, { status: "idle", last_update_id: id });
    assert.ok(poll.body.presences[String(late.userId)]);
    assert.ok(!poll.body.presences[String(early.userId)]);
  });

  test("deactivated users drop out; GET forms keep Zulip's shapes", async () => {
    const [gone, poller] = [await newUser(srv), await newUser(srv)];
    const start = (await beat(poller, { status: "active", last_update_id: -1 })).body.presence_last_update_id;
    await beat(gone, { status: "active", ping_only: true });
    const one = await srv.api("GET", `/users/${gone.userId}/presence`);
    assertSuccess(one);
    valid("GET", `/users/${gone.userId}/presence`, one);
    assert.deepEqual(Object.keys(one.body.presence).sort(), [
      "active_timestamp",
      "aggregated",
      "idle_timestamp",
      "website",
    ]);
    assert.deepEqual(Object.keys(one.body.presence.website).sort(), ["status", "timestamp"]);
    assert.equal(one.body.presence.aggregated.status, "active");
    const realm = await srv.api("GET", "/realm/presence");
    assertSuccess(realm);
    valid("GET", "/realm/presence", realm);
    assert.ok(realm.body.presences[gone.email]);
    assert.ok(!("presence_last_update_id" in realm.body));

    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    const after = await beat(poller, { status: "active", last_update_id: start });
    assert.ok(!after.body.presences[String(gone.userId)]);
    assertError(await srv.api("GET", `/users/${gone.userId}/presence`), "No such user");
  });

  test("bad last_update_id and history_limit_days are refused and change nothing", async () => {
    const m: Member = await newUser(srv);
    assertError(
      await srv.api("POST", "/users/me/presence", { status: "active", last_update_id: "x" }, m),
      "last_update_id is not valid JSON",
    );
    assertError(
      await srv.api("POST", "/users/me/presence", { status: "active", last_update_id: "1.5" }, m),
      "last_update_id is not an integer",
    );
    assertError(
      await srv.api("POST", "/users/me/presence", { status: "active", history_limit_days: -1 }, m),
      "history_limit_days is too small",
    );
    assertError(await srv.api("GET", `/users/${m.userId}/presence`), `No presence data for ${m.userId}`);
  });
});

describe("presence - no events above 100 active users (embedded)", () => {
  const srv = useEmbedded();

  test("the 100th active user's coming online is an event, the 101st's is not", async () => {
    const watcher = await newUser(srv);
    const q = await openQueue(srv, watcher, ["presence", "realm_user"]);
    const activeUsers = async (): Promise<number> => {
      const r = await srv.api("GET", "/users", {}, watcher);
      assertSuccess(r);
      return (r.body.members as { is_active: boolean }[]).filter((m) => m.is_active).length;
    };
    // Bots count: Zulip's limit is on active_user_ids, bots included.
    let bots = 0;
    const bot = async (): Promise<number> => {
      const r = await srv.api("POST", "/bots", { full_name: `Crowd ${++bots}`, short_name: `crowd${bots}` });
      assertSuccess(r);
      return r.body.user_id as number;
    };
    for (let n = await activeUsers(); n < 99; n++) await bot();
    const hundredth = await newUser(srv);
    assert.equal(await activeUsers(), 100);
    await beat(hundredth);
    const first = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "presence"));
    assert.deepEqual(
      first.filter((e) => e.type === "presence").map((e) => e.user_id),
      [hundredth.userId],
    );

    const hundredFirst = await newUser(srv);
    assert.equal(await activeUsers(), 101);
    await beat(hundredFirst);
    // A later event from the same realm actor: whatever the beat sent is before it.
    const marker = await bot();
    const later = await eventsUntil(srv, q, (e) =>
      e.some((x) => x.type === "realm_user" && x.person?.user_id === marker),
    );
    assert.deepEqual(
      later.filter((e) => e.type === "presence"),
      [],
      "no presence event in an organization of 101 active users",
    );
    // The watcher still learns of it from its own heartbeat.
    const polled = await srv.api(
      "POST",
      "/users/me/presence",
      { status: "active", last_update_id: -1 },
      watcher,
    );
    assertSuccess(polled);
    assert.ok(polled.body.presences[String(hundredFirst.userId)], JSON.stringify(polled.body));
  });

  async function beat(who: Creds): Promise<void> {
    assertSuccess(await srv.api("POST", "/users/me/presence", { status: "active", ping_only: true }, who));
  }
});

describe("presence - last_update_id (cluster)", () => {
  const cl = useCluster({ nodes: ["n1", "n2"], shards: 8 });

  test("-1 gives all, a later id only what changed", async () => {
    const mk = async (n: string): Promise<Creds> => {
      const email = `p-${n}-${process.pid}@example.com`;
      const created = await cl.api("POST", "/users", {
        email,
        password: `pw-${n}-secret1`,
        full_name: `User ${n}`,
      });
      assertSuccess(created);
      const key = await cl.api(
        "POST",
        "/fetch_api_key",
        { username: email, password: `pw-${n}-secret1` },
        null,
      );
      assertSuccess(key);
      return { email, apiKey: key.body.api_key };
    };
    const [a, b, c] = [await mk("a"), await mk("b"), await mk("c")];
    assertSuccess(await cl.api("POST", "/users/me/presence", { status: "active", ping_only: true }, a));
    const all = await cl.api("POST", "/users/me/presence", { status: "active", last_update_id: -1 }, b);
    assertSuccess(all);
    valid("POST", "/users/me/presence", all);
    assert.equal(Object.keys(all.body.presences).length, 2);
    const id = all.body.presence_last_update_id as number;
    assertSuccess(await cl.api("POST", "/users/me/presence", { status: "idle", ping_only: true }, c));
    const next = await cl.api("POST", "/users/me/presence", { status: "active", last_update_id: id }, b);
    assertSuccess(next);
    valid("POST", "/users/me/presence", next);
    const bId = (await cl.api("GET", "/users/me", {}, b)).body.user_id as number;
    const cId = (await cl.api("GET", "/users/me", {}, c)).body.user_id as number;
    assert.ok(next.body.presences[String(cId)], JSON.stringify(next.body));
    assert.ok(Object.keys(next.body.presences).every((k) => k === String(cId) || k === String(bId)));
    assert.ok(next.body.presence_last_update_id > id);
  });
});
