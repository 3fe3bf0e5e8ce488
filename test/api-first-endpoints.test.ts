// Black-box HTTP tests of the first endpoints against a real embedded server
// (gateway + node + LMDB): GET /server_settings, POST /fetch_api_key,
// POST /users, GET /users/me, PATCH /settings (and its aliases), POST
// /users/me/status. Exact texts, codes and statuses; bad input must give a
// Zulip error, never a 500, and must change nothing.
//
// Only the owner (bootstrap) and members (POST /users) can be made over
// HTTP so far; administrator and guest cases live in test/actors-unit.test.ts.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { assertError, assertSuccess, useEmbedded, type Creds } from "./support/index.ts";

const srv = useEmbedded();
let seq = 0;

interface Member extends Creds {
  userId: number;
  password: string;
}

/** A fresh member created by the owner, with an API key fetched by password. */
async function newMember(name = "Mem Ber"): Promise<Member> {
  const email = `member${++seq}@example.com`;
  const password = `pw-${seq}-secret`;
  const created = await srv.api("POST", "/users", { email, password, full_name: name });
  assertSuccess(created);
  const key = await srv.api("POST", "/fetch_api_key", { username: email, password }, null);
  assertSuccess(key);
  return { email, apiKey: key.body.api_key, userId: created.body.user_id, password };
}

async function me(auth: Creds = srv.owner): Promise<Record<string, unknown>> {
  const res = await srv.api("GET", "/users/me", {}, auth);
  assertSuccess(res);
  return res.body;
}

// ---- GET /server_settings ----------------------------------------------------------

describe("server_settings", () => {
  test("every field, no authentication", async () => {
    const res = await srv.api("GET", "/server_settings", {}, null);
    assertSuccess(res);
    const b = res.body;
    assert.deepEqual(b.authentication_methods, {
      password: true,
      dev: false,
      email: true,
      ldap: false,
      remoteuser: false,
      github: false,
      azuread: false,
      gitlab: false,
      google: false,
      apple: false,
      discord: false,
      saml: false,
      "openid connect": false,
    });
    assert.deepEqual(b.external_authentication_methods, []);
    assert.equal(b.zulip_feature_level, 496);
    assert.equal(b.service_feature_level, 496);
    assert.equal(typeof b.zulip_version, "string");
    assert.equal(b.service_version, b.zulip_version);
    assert.equal(typeof b.zulip_merge_base, "string");
    assert.equal(b.service_merge_base, b.zulip_merge_base);
    assert.equal(b.push_notifications_enabled, false);
    assert.equal(b.is_incompatible, false);
    assert.equal(b.email_auth_enabled, true);
    assert.equal(b.require_email_format_usernames, true);
    assert.match(b.realm_url, /^http:\/\/\S+$/);
    assert.equal(b.realm_uri, b.realm_url);
    assert.equal(b.realm_name, "Test Org");
    assert.match(b.realm_icon, /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon$/);
    assert.equal(typeof b.realm_description, "string");
    assert.equal(b.realm_web_public_access_enabled, false);
    assert.equal(b.ignored_parameters_unsupported, undefined);
  });

  test("credentials are not even read; unknown parameters are reported", async () => {
    const res = await srv.api(
      "GET",
      "/server_settings",
      { foo: "1" },
      { email: "x@example.com", apiKey: "short" },
    );
    assertSuccess(res);
    assert.deepEqual(res.body.ignored_parameters_unsupported, ["foo"]);
  });
});

// ---- POST /fetch_api_key -----------------------------------------------------------

describe("fetch_api_key", () => {
  test("success: the key, the delivery email and the user id", async () => {
    const res = await srv.api(
      "POST",
      "/fetch_api_key",
      { username: srv.owner.email.toUpperCase(), password: srv.owner.password },
      null,
    );
    assertSuccess(res);
    assert.equal(res.body.api_key, srv.owner.apiKey);
    assert.equal(res.body.email, srv.owner.email);
    assert.equal(res.body.user_id, srv.owner.userId);
  });

  test("wrong password, unknown user, bad username, missing fields", async () => {
    const m = await newMember();
    const failed = "Your username or password is incorrect";
    assertError(
      await srv.api("POST", "/fetch_api_key", { username: m.email, password: "nope" }, null),
      failed,
      "AUTHENTICATION_FAILED",
      401,
    );
    assertError(
      await srv.api("POST", "/fetch_api_key", { username: "ghost@example.com", password: "x" }, null),
      failed,
      "AUTHENTICATION_FAILED",
      401,
    );
    assertError(
      await srv.api("POST", "/fetch_api_key", { username: m.email, password: "" }, null),
      failed,
      "AUTHENTICATION_FAILED",
      401,
    );
    assertError(
      await srv.api("POST", "/fetch_api_key", { username: "not-an-email", password: "x" }, null),
      "Enter a valid email address.",
    );
    assertError(
      await srv.api("POST", "/fetch_api_key", { password: "x" }, null),
      "Missing 'username' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("POST", "/fetch_api_key", { username: m.email }, null),
      "Missing 'password' argument",
      "REQUEST_VARIABLE_MISSING",
    );
  });

  test("rate limit: the 6th attempt in 30 minutes is refused, even with the right password", async () => {
    const m = await newMember(); // its own fetch succeeded and cleared the record
    for (let i = 0; i < 5; i++) {
      assertError(
        await srv.api("POST", "/fetch_api_key", { username: m.email, password: `bad-${i}` }, null),
        "Your username or password is incorrect",
        "AUTHENTICATION_FAILED",
        401,
      );
    }
    const res = await srv.api("POST", "/fetch_api_key", { username: m.email, password: m.password }, null);
    assertError(res, "API usage exceeded rate limit", "RATE_LIMIT_HIT", 429);
    const retry = res.body["retry-after"];
    assert.equal(typeof retry, "number");
    assert.ok(retry > 1790 && retry <= 1800, String(retry));
    assert.equal(Number(res.headers.get("retry-after")), retry);
    // Other usernames are unaffected, and API-key auth still works.
    assertSuccess(await srv.api("GET", "/users/me", {}, m));
  });
});

// ---- POST /users -------------------------------------------------------------------

describe("create user", () => {
  test("the owner creates a member who can log in", async () => {
    const res = await srv.api("POST", "/users", {
      email: "Newcomer@Example.com",
      password: "newcomer-pw",
      full_name: "  New Comer  ",
    });
    assertSuccess(res);
    assert.deepEqual(Object.keys(res.body).sort(), ["msg", "result", "user_id"]);
    const key = await srv.api(
      "POST",
      "/fetch_api_key",
      { username: "newcomer@example.com", password: "newcomer-pw" },
      null,
    );
    assertSuccess(key);
    assert.equal(key.body.user_id, res.body.user_id);
    assert.equal(key.body.email, "Newcomer@Example.com");
    const profile = await me({ email: "newcomer@example.com", apiKey: key.body.api_key });
    assert.equal(profile.full_name, "New Comer");
    assert.equal(profile.role, 400);
    assert.equal(profile.is_admin, false);
  });

  test("errors with Zulip's texts, and nothing is created", async () => {
    const ok = { email: "fresh@example.com", password: "fresh-password", full_name: "Fresh Person" };
    const cases: [Record<string, unknown>, string, string?][] = [
      [{ ...ok, full_name: "x" }, "Name too short!"],
      [{ ...ok, full_name: "y".repeat(101) }, "Name too long!"],
      [{ ...ok, full_name: "Bad `name`" }, "Invalid characters in name!"],
      [{ ...ok, full_name: "Name|12" }, "Invalid format!"],
      [{ ...ok, email: "not-an-email" }, "Bad name or username"],
      [
        { ...ok, email: srv.owner.email.toUpperCase() },
        `Email '${srv.owner.email.toUpperCase()}' already in use`,
      ],
      [{ ...ok, password: "12345" }, "The password is too weak."],
      [
        { password: ok.password, full_name: ok.full_name },
        "Missing 'email' argument",
        "REQUEST_VARIABLE_MISSING",
      ],
      [
        { email: ok.email, full_name: ok.full_name },
        "Missing 'password' argument",
        "REQUEST_VARIABLE_MISSING",
      ],
      [
        { email: ok.email, password: ok.password },
        "Missing 'full_name' argument",
        "REQUEST_VARIABLE_MISSING",
      ],
    ];
    for (const [params, msg, code] of cases) assertError(await srv.api("POST", "/users", params), msg, code);
    assertError(
      await srv.api("POST", "/fetch_api_key", { username: ok.email, password: ok.password }, null),
      "Your username or password is incorrect",
      "AUTHENTICATION_FAILED",
      401,
    );
  });

  test("members cannot create users; anonymous callers are not logged in", async () => {
    const m = await newMember();
    assertError(
      await srv.api(
        "POST",
        "/users",
        { email: "x1@example.com", password: "password-x", full_name: "X One" },
        m,
      ),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    const res = await srv.api(
      "POST",
      "/users",
      { email: "x2@example.com", password: "password-x", full_name: "X Two" },
      null,
    );
    assertError(res, "Not logged in: API authentication or user session required", "UNAUTHORIZED", 401);
    assert.equal(res.headers.get("www-authenticate"), 'Basic realm="zulip"');
  });
});

// ---- GET /users/me -------------------------------------------------------------------

describe("users/me", () => {
  test("the user object plus max_message_id", async () => {
    const b = await me();
    const md5 = createHash("md5").update(srv.owner.email.toLowerCase()).digest("hex");
    assert.deepEqual(
      { ...b, date_joined: undefined },
      {
        result: "success",
        msg: "",
        email: srv.owner.email,
        user_id: srv.owner.userId,
        avatar_version: 1,
        is_admin: true,
        is_owner: true,
        is_guest: false,
        role: 100,
        is_bot: false,
        full_name: b.full_name,
        timezone: b.timezone,
        is_active: true,
        date_joined: undefined,
        delivery_email: srv.owner.email,
        avatar_url: `https://secure.gravatar.com/avatar/${md5}?d=identicon&version=1`,
        is_imported_stub: false,
        profile_data: {},
        max_message_id: -1,
      },
    );
    assert.match(b.date_joined as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d\+00:00$/);
  });

  test("a wrong key is refused", async () => {
    assertError(
      await srv.api("GET", "/users/me", {}, { email: srv.owner.email, apiKey: "A".repeat(32) }),
      "Invalid API key",
      "UNAUTHORIZED",
      401,
    );
  });
});

// ---- PATCH /settings ---------------------------------------------------------------------

describe("settings", () => {
  test("changes: timezone and full_name read back through /users/me", async () => {
    const m = await newMember("Before Name");
    assertSuccess(
      await srv.api(
        "PATCH",
        "/settings",
        {
          full_name: "After Name",
          timezone: "Asia/Kolkata",
          color_scheme: 2,
          enter_sends: true,
          emojiset: "text",
        },
        m,
      ),
    );
    const b = await me(m);
    assert.equal(b.full_name, "After Name");
    assert.equal(b.timezone, "Asia/Kolkata");
    // The deprecated aliases behave the same.
    assertSuccess(
      await srv.api("PATCH", "/settings/display", { timezone: "UTC", default_language: "fr" }, m),
    );
    assertSuccess(
      await srv.api(
        "PATCH",
        "/settings/notifications",
        { enable_sounds: false, notification_sound: "ding" },
        m,
      ),
    );
    assert.equal((await me(m)).timezone, "UTC");
    // Unchanged values are fine, and unknown parameters are reported.
    const res = await srv.api("PATCH", "/settings", { timezone: "UTC", dense_mode: true }, m);
    assertSuccess(res);
    assert.deepEqual(res.body.ignored_parameters_unsupported, ["dense_mode"]);
  });

  test("bad values give Zulip's texts and change nothing", async () => {
    const m = await newMember("Steady Name");
    const cases: [Record<string, unknown>, string][] = [
      [{ color_scheme: 4 }, "Invalid color_scheme"],
      [{ web_channel_default_view: 5 }, "Invalid web_channel_default_view"],
      [{ demote_inactive_streams: 0 }, "Invalid demote_inactive_streams"],
      [{ user_list_style: 4 }, "Invalid user_list_style"],
      [{ web_stream_unreads_count_display_policy: 0 }, "Invalid web_stream_unreads_count_display_policy"],
      [{ web_home_view: "stream" }, "Invalid web_home_view"],
      [{ emojiset: "apple" }, "Invalid emojiset"],
      [{ web_animate_image_previews: "maybe" }, "Invalid web_animate_image_previews"],
      [{ default_language: "klingon" }, "Invalid default_language"],
      [{ notification_sound: "boom" }, "Invalid notification sound 'boom'"],
      [{ email_notifications_batching_period_seconds: 0 }, "Invalid email batching period: 0 seconds"],
      [{ timezone: "Mars/Base" }, "Invalid timezone: Not a recognized time zone"],
      [{ enter_sends: "yes" }, "enter_sends is not valid JSON"],
      [{ enter_sends: 1 }, "enter_sends is not a boolean"],
      [{ color_scheme: "2.5" }, "color_scheme is not an integer"],
      [{ full_name: "x" }, "Name too short!"],
      [{ full_name: "z".repeat(101) }, "Name too long!"],
      [{ target_users: "{" }, "target_users is not valid JSON"],
    ];
    for (const [params, msg] of cases) {
      // Each bad value rides along with good changes that must not be applied.
      assertError(await srv.api("PATCH", "/settings", { timezone: "Europe/Berlin", ...params }, m), msg);
    }
    const b = await me(m);
    assert.equal(b.full_name, "Steady Name");
    assert.equal(b.timezone, "");
  });

  test("garbage in every parameter is a 400, never a 500", async () => {
    const m = await newMember();
    const names = [
      "twenty_four_hour_time",
      "web_channel_default_view",
      "starred_message_counts",
      "receives_typing_notifications",
      "web_suggest_update_timezone",
      "fluid_layout_width",
      "high_contrast_mode",
      "web_font_size_px",
      "web_line_height_percent",
      "color_scheme",
      "enable_drafts_synchronization",
      "translate_emoticons",
      "display_emoji_reaction_users",
      "web_escape_navigates_to_home_view",
      "left_side_userlist",
      "demote_inactive_streams",
      "user_list_style",
      "web_stream_unreads_count_display_policy",
      "hide_ai_features",
      "web_inbox_show_channel_folders",
      "enable_stream_desktop_notifications",
      "enable_stream_email_notifications",
      "enable_stream_push_notifications",
      "enable_stream_audible_notifications",
      "enable_desktop_notifications",
      "enable_sounds",
      "email_notifications_batching_period_seconds",
      "target_users",
      "presence_enabled",
      "email_address_visibility",
    ];
    for (const name of names) {
      const res = await srv.api("PATCH", "/settings", { [name]: "{garbage" }, m);
      assert.equal(res.status, 400, `${name}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.result, "error");
    }
    for (const [name, value] of [
      ["web_font_size_px", 99999],
      ["web_line_height_percent", -5],
      ["timezone", "x".repeat(5000)],
      ["full_name", "q".repeat(10000)],
      ["emojiset", "e".repeat(5000)],
    ] as const) {
      const res = await srv.api("PATCH", "/settings", { [name]: value }, m);
      assert.equal(res.status, 400, `${name}: ${JSON.stringify(res.body)}`);
    }
  });

  test("email: checked, but only a confirmation link could change it", async () => {
    const m = await newMember();
    assertSuccess(await srv.api("PATCH", "/settings", { email: "elsewhere@example.com" }, m));
    assert.equal((await me(m)).email, m.email);
    assertError(await srv.api("PATCH", "/settings", { email: "bad address" }, m), "Invalid address.");
    assertError(
      await srv.api("PATCH", "/settings", { email: srv.owner.email }, m),
      "Already has an account.",
    );
  });

  test("password change: old password checked, new one must be strong, login uses it", async () => {
    const m = await newMember();
    assertError(await srv.api("PATCH", "/settings", { new_password: "next-password" }, m), "Wrong password!");
    assertError(
      await srv.api("PATCH", "/settings", { new_password: "next-password", old_password: "wrong" }, m),
      "Wrong password!",
    );
    assertError(
      await srv.api("PATCH", "/settings", { new_password: "abc", old_password: m.password }, m),
      "New password is too weak!",
    );
    assertSuccess(
      await srv.api("PATCH", "/settings", { new_password: "next-password", old_password: m.password }, m),
    );
    assertSuccess(
      await srv.api("POST", "/fetch_api_key", { username: m.email, password: "next-password" }, null),
    );
    assertError(
      await srv.api("POST", "/fetch_api_key", { username: m.email, password: m.password }, null),
      "Your username or password is incorrect",
      "AUTHENTICATION_FAILED",
      401,
    );
  });

  test("target_users: owner only, with Zulip's refusals", async () => {
    const m = await newMember();
    const other = await newMember();
    const target = { user_ids: [other.userId], skip_if_already_edited: false };
    assertSuccess(
      await srv.api("PATCH", "/settings", {
        target_users: target,
        color_scheme: 3,
        full_name: "Ignored Name",
      }),
    );
    assert.notEqual((await me(other)).full_name, "Ignored Name");
    assertError(
      await srv.api("PATCH", "/settings", { target_users: target, color_scheme: 3 }, m),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    for (const extra of [{ email: "a@example.com" }, { timezone: "UTC" }, { presence_enabled: false }]) {
      assertError(
        await srv.api("PATCH", "/settings", { target_users: target, ...extra }),
        "Cannot change this setting for other users.",
      );
    }
    assertError(
      await srv.api("PATCH", "/settings", {
        target_users: { user_ids: [other.userId, 99999], skip_if_already_edited: true },
        enter_sends: true,
      }),
      "Invalid user ID: 99999",
    );
    assertError(
      await srv.api("PATCH", "/settings", {
        target_users: { skip_if_already_edited: true },
        enter_sends: true,
      }),
      "Either user_ids or group_ids must be provided.",
    );
    assertError(
      await srv.api("PATCH", "/settings", { target_users: { user_ids: [other.userId] }, enter_sends: true }),
      "target_users field is missing: skip_if_already_edited",
    );
    assertError(
      await srv.api("PATCH", "/settings", { target_users: { user_ids: "x", skip_if_already_edited: true } }),
      'target_users["user_ids"] is not a list',
    );
  });

  test("anonymous and wrong-key callers are refused", async () => {
    assertError(
      await srv.api("PATCH", "/settings", { color_scheme: 2 }, null),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );
  });
});

// ---- POST /users/me/status ---------------------------------------------------------------

describe("status", () => {
  test("success cases", async () => {
    const m = await newMember();
    const ok = async (params: Record<string, unknown>) =>
      assertSuccess(await srv.api("POST", "/users/me/status", params, m));
    await ok({ status_text: "In a meeting", emoji_name: "calendar" });
    await ok({ status_text: "😀".repeat(60) });
    await ok({ away: true });
    await ok({ away: false, status_text: "" });
    await ok({ emoji_name: "+1", emoji_code: "1f44d", reaction_type: "unicode_emoji" });
    await ok({ emoji_name: "heart" });
    await ok({ emoji_name: "zulip" });
    await ok({ emoji_name: "" });
  });

  test("errors with Zulip's texts", async () => {
    const m = await newMember();
    const cases: [Record<string, unknown>, string][] = [
      [{}, "Client did not pass any new values."],
      [{ status_text: "😀".repeat(61) }, "status_text is too long (limit: 60 characters)"],
      [
        { status_text: "hi", emoji_code: "1f44d" },
        "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
      ],
      [
        { status_text: "hi", reaction_type: "unicode_emoji" },
        "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
      ],
      [{ emoji_name: "definitely_not_an_emoji" }, "Emoji 'definitely_not_an_emoji' does not exist"],
      [{ emoji_name: "heart", emoji_code: "fffff" }, "Invalid emoji code."],
      [{ emoji_name: "heart", emoji_code: "1f44d" }, "Invalid emoji name."],
      [{ emoji_name: "party", emoji_code: "1", reaction_type: "realm_emoji" }, "Invalid custom emoji."],
      [{ emoji_name: "zap", emoji_code: "zulip", reaction_type: "zulip_extra_emoji" }, "Invalid emoji name."],
      [{ emoji_name: "zulip", emoji_code: "zap", reaction_type: "zulip_extra_emoji" }, "Invalid emoji code."],
      [{ emoji_name: "heart", reaction_type: "bogus" }, "Invalid emoji type."],
      [{ away: "maybe" }, "away is not valid JSON"],
      [{ away: 1 }, "away is not a boolean"],
    ];
    for (const [params, msg] of cases) assertError(await srv.api("POST", "/users/me/status", params, m), msg);
    assertError(
      await srv.api("POST", "/users/me/status", { status_text: "x" }, null),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );
  });
});
