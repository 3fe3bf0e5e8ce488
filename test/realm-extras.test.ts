// Black-box tests of PATCH /realm/user_settings_defaults and code
// playgrounds (POST /realm/playgrounds, DELETE /realm/playgrounds/{id}):
// replies, Zulip's errors, permission denials, the realm_user_settings_defaults
// and realm_playgrounds events and /register keys, new users getting the
// realm's defaults. The main flow also runs on a cluster.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  roleMatrix,
  useCluster,
  useEmbedded,
  type Api,
  type Creds,
  type Ev,
} from "./support/index.ts";

const srv = useEmbedded();

async function registerKey(api: Api, key: string, auth?: Creds | null): Promise<unknown> {
  const r = await api("POST", "/register", { fetch_event_types: JSON.stringify([key]) }, auth);
  assertSuccess(r);
  return r.body[key];
}

async function settingsOf(api: Api, auth: Creds): Promise<Record<string, unknown>> {
  return (await registerKey(api, "user_settings", auth)) as Record<string, unknown>;
}

const PY = {
  name: "Python playground",
  pygments_language: "Python",
  url_template: "https://py.example.com?code={code}",
};

async function playgrounds(auth: Creds = srv.owner): Promise<Record<string, unknown>[]> {
  return (await registerKey(srv.api, "realm_playgrounds", auth)) as Record<string, unknown>[];
}

async function clearPlaygrounds(): Promise<void> {
  for (const p of await playgrounds()) assertSuccess(await srv.api("DELETE", `/realm/playgrounds/${p.id}`));
}

describe("PATCH /realm/user_settings_defaults", () => {
  test("changes the defaults: events to every user, /register, new users; existing users keep theirs", async () => {
    const before = await newUser(srv);
    const q = await openQueue(srv, before, ["realm_user_settings_defaults"]);
    const r = await srv.api("PATCH", "/realm/user_settings_defaults", {
      enter_sends: true,
      emojiset: "twitter",
      web_font_size_px: 18,
      // Unchanged: no event.
      color_scheme: 1,
    });
    assertSuccess(r);
    assert.equal(r.body.ignored_parameters_unsupported, undefined);
    const evs = await eventsUntil(srv, q, (e) => e.length >= 3);
    const props = evs.map((e: Ev) => ({ type: e.type, op: e.op, property: e.property, value: e.value }));
    assert.deepEqual(
      props.sort((a, b) => a.property.localeCompare(b.property)),
      [
        { type: "realm_user_settings_defaults", op: "update", property: "emojiset", value: "twitter" },
        { type: "realm_user_settings_defaults", op: "update", property: "enter_sends", value: true },
        { type: "realm_user_settings_defaults", op: "update", property: "web_font_size_px", value: 18 },
      ],
    );

    const defaults = (await registerKey(srv.api, "realm_user_settings_defaults", before)) as Record<
      string,
      unknown
    >;
    assert.equal(defaults.enter_sends, true);
    assert.equal(defaults.emojiset, "twitter");
    assert.equal(defaults.web_font_size_px, 18);
    assert.equal(defaults.color_scheme, 1);
    assert.equal(defaults.timezone, undefined);
    assert.ok(Array.isArray(defaults.available_notification_sounds));

    assert.equal((await settingsOf(srv.api, before)).enter_sends, false);
    const later = await newUser(srv);
    const s = await settingsOf(srv.api, later);
    assert.equal(s.enter_sends, true);
    assert.equal(s.emojiset, "twitter");
    assert.equal(s.web_font_size_px, 18);

    // A later user's own change still wins, and the change back to the
    // server's default is an event too.
    assertSuccess(await srv.api("PATCH", "/settings", { enter_sends: false }, later));
    assert.equal((await settingsOf(srv.api, later)).enter_sends, false);
    assertSuccess(
      await srv.api("PATCH", "/realm/user_settings_defaults", { enter_sends: false, emojiset: "google" }),
    );
    const back = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.deepEqual(back.map((e: Ev) => [e.property, e.value]).sort(), [
      ["emojiset", "google"],
      ["enter_sends", false],
    ]);
    assertSuccess(await srv.api("PATCH", "/realm/user_settings_defaults", { web_font_size_px: 16 }));
  });

  test("email visibility and typing defaults reach a new user's directory entry", async () => {
    assertSuccess(
      await srv.api("PATCH", "/realm/user_settings_defaults", {
        email_address_visibility: 4,
        receives_typing_notifications: false,
      }),
    );
    try {
      const u = await newUser(srv);
      const s = await settingsOf(srv.api, u);
      assert.equal(s.email_address_visibility, 4);
      assert.equal(s.receives_typing_notifications, false);
      // Visibility 4 (nobody): another member sees a fake address.
      const other = await newUser(srv);
      const seen = await srv.api("GET", `/users/${u.userId}`, {}, other);
      assertSuccess(seen);
      assert.notEqual(seen.body.user.email, u.email);
    } finally {
      assertSuccess(
        await srv.api("PATCH", "/realm/user_settings_defaults", {
          email_address_visibility: 1,
          receives_typing_notifications: true,
        }),
      );
    }
  });

  test("settings the endpoint does not take are ignored and reported", async () => {
    const r = await srv.api("PATCH", "/realm/user_settings_defaults", {
      default_language: "de",
      enable_login_emails: false,
      allow_private_data_export: true,
      __proto__x: 1,
      twenty_four_hour_time: false,
    });
    assertSuccess(r);
    assert.deepEqual([...r.body.ignored_parameters_unsupported].sort(), [
      "__proto__x",
      "allow_private_data_export",
      "default_language",
      "enable_login_emails",
    ]);
    const d = (await registerKey(srv.api, "realm_user_settings_defaults")) as Record<string, unknown>;
    assert.equal(d.default_language, "en");
    assert.equal(d.enable_login_emails, true);
  });

  test("non-administrators are refused and change nothing", async () => {
    const m = await roleMatrix(srv);
    for (const who of ["moderator", "member", "guest", "bot"]) {
      assertError(
        await srv.api("PATCH", "/realm/user_settings_defaults", { enter_sends: true }, m[who]),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      );
    }
    assertSuccess(
      await srv.api("PATCH", "/realm/user_settings_defaults", { left_side_userlist: true }, m.admin),
    );
    const d = (await registerKey(srv.api, "realm_user_settings_defaults")) as Record<string, unknown>;
    assert.equal(d.enter_sends, false);
    assert.equal(d.left_side_userlist, true);
    assertSuccess(await srv.api("PATCH", "/realm/user_settings_defaults", { left_side_userlist: false }));
  });

  test("invalid values: the texts of PATCH /settings, nothing changed", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ enter_sends: "maybe" }, "enter_sends is not valid JSON"],
      [{ enter_sends: 5 }, "enter_sends is not a boolean"],
      [{ color_scheme: 9 }, "Invalid color_scheme"],
      [{ color_scheme: "x" }, "color_scheme is not valid JSON"],
      [{ color_scheme: true }, "color_scheme is not an integer"],
      [{ emojiset: "nope" }, "Invalid emojiset"],
      [{ web_home_view: "elsewhere" }, "Invalid web_home_view"],
      [{ notification_sound: "kazoo" }, "Invalid notification sound 'kazoo'"],
      [{ web_font_size_px: 40000 }, "web_font_size_px is too large"],
    ];
    for (const [params, msg] of cases) {
      const forSettings = await srv.api("PATCH", "/settings", params);
      const r = await srv.api("PATCH", "/realm/user_settings_defaults", { enter_sends: true, ...params });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.msg, forSettings.body.msg);
      assertError(r, msg);
    }
    const period = await srv.api("PATCH", "/realm/user_settings_defaults", {
      email_notifications_batching_period_seconds: 0,
    });
    assert.equal(period.status, 400);
    assert.equal(
      period.body.msg,
      (await srv.api("PATCH", "/settings", { email_notifications_batching_period_seconds: 0 })).body.msg,
    );
    const d = (await registerKey(srv.api, "realm_user_settings_defaults")) as Record<string, unknown>;
    assert.equal(d.enter_sends, false);
  });
});

describe("code playgrounds", () => {
  test("add and remove: ids, events with the whole list, /register for members and spectators", async () => {
    await clearPlaygrounds();
    const member = await newUser(srv);
    const q = await openQueue(srv, member, ["realm_playgrounds"]);
    const r = await srv.api("POST", "/realm/playgrounds", {
      name: "  Python playground ",
      pygments_language: " Python",
      url_template: "https://py.example.com?code={code} ",
    });
    assertSuccess(r);
    const id = r.body.id as number;
    assert.equal(typeof id, "number");
    const js = await srv.api("POST", "/realm/playgrounds", {
      name: "JS",
      pygments_language: "JavaScript",
      url_template: "/run{?code}",
    });
    assertSuccess(js);
    const expected = [
      { id, ...PY },
      { id: js.body.id, name: "JS", pygments_language: "JavaScript", url_template: "/run{?code}" },
    ];
    assert.deepEqual(await playgrounds(member), expected);
    const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.deepEqual(evs[0].realm_playgrounds, [expected[0]]);
    assert.deepEqual(evs[1], { type: "realm_playgrounds", realm_playgrounds: expected, id: evs[1].id });

    assertSuccess(await srv.api("DELETE", `/realm/playgrounds/${id}`));
    const del = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.deepEqual(del[0].realm_playgrounds, [expected[1]]);
    assert.deepEqual(await playgrounds(member), [expected[1]]);

    assertError(await srv.api("DELETE", `/realm/playgrounds/${id}`), "Invalid playground");
    assertError(await srv.api("DELETE", "/realm/playgrounds/987654"), "Invalid playground");
    assertError(await srv.api("DELETE", "/realm/playgrounds/abc"), "Not Found", "NOT_FOUND", 404);
  });

  test("spectators get realm_playgrounds when the realm allows them", async () => {
    await clearPlaygrounds();
    assertSuccess(await srv.api("POST", "/realm/playgrounds", PY));
    assertSuccess(await srv.api("PATCH", "/realm", { enable_spectator_access: true }));
    try {
      const list = (await registerKey(srv.api, "realm_playgrounds", null)) as unknown[];
      assert.equal(list.length, 1);
    } finally {
      assertSuccess(await srv.api("PATCH", "/realm", { enable_spectator_access: false }));
    }
  });

  test("validation: Zulip's texts, first error wins, nothing stored", async () => {
    await clearPlaygrounds();
    assertSuccess(await srv.api("POST", "/realm/playgrounds", PY));
    const bad: [Record<string, unknown>, string][] = [
      [
        { ...PY, url_template: "https://x.example.com/" },
        'Missing the required variable "code" in the URL template',
      ],
      [
        { ...PY, url_template: "https://x.example.com/{code}/{lang}" },
        '"code" should be the only variable present in the URL template',
      ],
      [{ ...PY, url_template: "https://x.example.com/{code" }, "Invalid URL template."],
      [{ ...PY, url_template: "javascript:alert({code})" }, "Invalid URL template."],
      [{ ...PY, url_template: "JaVa\tScript:{code}" }, "Invalid URL template."],
      [{ ...PY, url_template: "{+code}" }, "Invalid URL template."],
      [{ ...PY, name: "   " }, "This field cannot be blank."],
      [{ ...PY, pygments_language: "" }, "This field cannot be blank."],
      [{ ...PY, pygments_language: "Py<thon>" }, "Invalid characters in pygments language"],
      [{ ...PY, pygments_language: "x".repeat(41) }, "pygments_language is too long (limit: 40 characters)"],
      [{ ...PY, name: "n".repeat(101) }, "name is too long (limit: 100 characters)"],
      [PY, "Realm playground with this Realm, Pygments language and Name already exists."],
    ];
    for (const [params, msg] of bad) assertError(await srv.api("POST", "/realm/playgrounds", params), msg);
    const missing: [Record<string, unknown>, string][] = [
      [{ name: "x", pygments_language: "Python" }, "Missing 'url_template' argument"],
      [{ url_template: PY.url_template, pygments_language: "Python" }, "Missing 'name' argument"],
    ];
    for (const [params, msg] of missing)
      assertError(await srv.api("POST", "/realm/playgrounds", params), msg, "REQUEST_VARIABLE_MISSING");
    const multi = await srv.api("POST", "/realm/playgrounds", {
      ...PY,
      name: "",
      url_template: "https://x/",
    });
    assertError(multi, "This field cannot be blank.");
    assert.deepEqual(multi.body.errors, {
      name: ["This field cannot be blank."],
      __all__: ['Missing the required variable "code" in the URL template'],
    });
    assert.equal((await playgrounds()).length, 1);
    // The same name for another language is a different playground.
    assertSuccess(await srv.api("POST", "/realm/playgrounds", { ...PY, pygments_language: "Python3" }));
  });

  test("non-administrators are refused and change nothing", async () => {
    await clearPlaygrounds();
    assertSuccess(await srv.api("POST", "/realm/playgrounds", PY));
    const [p] = await playgrounds();
    const m = await roleMatrix(srv);
    for (const who of ["moderator", "member", "guest", "bot"]) {
      assertError(
        await srv.api("POST", "/realm/playgrounds", { ...PY, name: "Other" }, m[who]),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      );
      assertError(
        await srv.api("DELETE", `/realm/playgrounds/${p!.id}`, {}, m[who]),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      );
    }
    assert.equal((await playgrounds()).length, 1);
    assertSuccess(await srv.api("POST", "/realm/playgrounds", { ...PY, name: "By admin" }, m.admin));
    assert.equal((await playgrounds()).length, 2);
  });
});

const skipCluster = requireBinaries("nats-server", "redis-server");

describe("realm extras - cluster", { skip: skipCluster }, () => {
  const c = useCluster();

  async function user(n: number): Promise<Creds & { userId: number }> {
    const email = `extras${n}@example.com`;
    const r = await c.api("POST", "/users", {
      email,
      password: `extras-pw-${n}-x`,
      full_name: `Extras ${n}`,
    });
    assertSuccess(r);
    const k = await c.api("POST", "/fetch_api_key", { username: email, password: `extras-pw-${n}-x` }, null);
    return { email, apiKey: k.body.api_key, userId: r.body.user_id };
  }

  test("defaults and playgrounds across nodes", async () => {
    const a = await user(1);
    assertSuccess(await c.api("PATCH", "/realm/user_settings_defaults", { twenty_four_hour_time: true }));
    assertError(
      await c.api("PATCH", "/realm/user_settings_defaults", { twenty_four_hour_time: false }, a),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    const b = await user(2);
    assert.equal((await settingsOf(c.api, b)).twenty_four_hour_time, true);
    assert.equal((await settingsOf(c.api, a)).twenty_four_hour_time, false);
    const d = (await registerKey(c.api, "realm_user_settings_defaults", a)) as Record<string, unknown>;
    assert.equal(d.twenty_four_hour_time, true);

    const added = await c.api("POST", "/realm/playgrounds", PY);
    assertSuccess(added);
    assert.deepEqual(await registerKey(c.api, "realm_playgrounds", b), [{ id: added.body.id, ...PY }]);
    assertSuccess(await c.api("DELETE", `/realm/playgrounds/${added.body.id}`));
    assert.deepEqual(await registerKey(c.api, "realm_playgrounds", a), []);
  });
});
