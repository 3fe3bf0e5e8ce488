// POST /register returns every key Zulip's schema lists for the register
// response (test/facts/zulip-openapi.json), for a register of everything
// and for each fetch_event_types value alone, with values computed from
// the server's state; and what zulip-terminal reads at start.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, describe, it } from "node:test";
import {
  assertSuccess,
  newUser,
  requireBinaries,
  useCluster,
  useEmbedded,
  WELCOME_BOT,
  type Member,
} from "./support/index.ts";
import { OPENAPI_FILE } from "./support/openapi.ts";

/** Keys of features this server does not have yet; each appears with its feature. */
const NOT_BUILT_YET = new Set<string>([]);

/**
 * Keys Zulip itself leaves out of these registers: ignored_parameters_unsupported
 * only names ignored parameters, and demo_organization_scheduled_deletion_date
 * exists only for demo organizations (none can be created here).
 */
const ABSENT_IN_ZULIP_TOO = new Set([
  "ignored_parameters_unsupported",
  "demo_organization_scheduled_deletion_date",
]);

/**
 * Keys of the 10.2 schema that Zulip renamed or removed at a later feature
 * level this server claims (496): absent, with the key that replaced them.
 */
const CHANGED_AFTER_10_2: Record<string, { level: number; now: string | null }> = {
  can_subscribe_other_users: { level: 341, now: null },
  realm_is_zephyr_mirror_realm: { level: 426, now: null },
  giphy_rating_options: { level: 453, now: "gif_rating_policy_options" },
  realm_giphy_rating: { level: 453, now: "realm_gif_rating_policy" },
};

type Schema = Record<string, unknown>;

/** The keys of the POST /register 200 response the schema lists. */
function schemaKeys(): string[] {
  const doc = JSON.parse(readFileSync(OPENAPI_FILE, "utf8")) as Schema;
  const post = (doc.paths as Record<string, Record<string, Schema>>)["/register"]!.post!;
  const ok = (post.responses as Record<string, Schema>)["200"]!;
  const schema = ((ok.content as Schema)["application/json"] as Schema).schema as { allOf: Schema[] };
  const keys = new Set<string>();
  for (const part of schema.allOf)
    if (part.properties) for (const k of Object.keys(part.properties)) keys.add(k);
  return [...keys];
}

/** The schema's keys this server must return: all but Zulip's own absences and later removals. */
function wantedKeys(): string[] {
  return schemaKeys()
    .filter((k) => !ABSENT_IN_ZULIP_TOO.has(k) && k !== "result" && k !== "msg")
    .map((k) => (Object.hasOwn(CHANGED_AFTER_10_2, k) ? CHANGED_AFTER_10_2[k]!.now : k))
    .filter((k): k is string => k !== null);
}

/**
 * The fetch_event_types value under which the schema's descriptions list
 * each key ("Present if `X` is present in `fetch_event_types`"; the facts
 * file drops descriptions, so the mapping is kept here).
 */
const FETCH_TYPE_KEYS: Record<string, string[]> = {
  alert_words: ["alert_words"],
  custom_profile_fields: ["custom_profile_fields", "custom_profile_field_types"],
  onboarding_steps: ["onboarding_steps", "navigation_tour_video_url"],
  message: ["max_message_id"],
  scheduled_messages: ["scheduled_messages"],
  muted_topics: ["muted_topics"],
  muted_users: ["muted_users"],
  presence: ["presences", "presence_last_update_id", "server_timestamp"],
  realm_domains: ["realm_domains"],
  realm_emoji: ["realm_emoji"],
  realm_linkifiers: ["realm_linkifiers"],
  realm_filters: ["realm_filters"],
  realm_playgrounds: ["realm_playgrounds"],
  realm_user_groups: ["realm_user_groups"],
  realm_bot: ["realm_bots"],
  realm_embedded_bots: ["realm_embedded_bots"],
  realm_incoming_webhook_bots: ["realm_incoming_webhook_bots"],
  recent_private_conversations: ["recent_private_conversations"],
  saved_snippets: ["saved_snippets"],
  subscription: ["subscriptions", "unsubscribed", "never_subscribed"],
  starred_messages: ["starred_messages"],
  stream: ["streams"],
  default_streams: ["realm_default_streams"],
  default_stream_groups: ["realm_default_stream_groups"],
  stop_words: ["stop_words"],
  user_status: ["user_status"],
  user_settings: ["user_settings"],
  user_topic: ["user_topics"],
  video_calls: ["has_zoom_token"],
  giphy: ["giphy_api_key"],
  realm_billing: ["realm_billing"],
  realm_user_settings_defaults: ["realm_user_settings_defaults"],
  update_global_notifications: [
    "enable_desktop_notifications",
    "enable_digest_emails",
    "enable_login_emails",
    "enable_marketing_emails",
    "email_notifications_batching_period_seconds",
    "enable_offline_email_notifications",
    "enable_offline_push_notifications",
    "enable_online_push_notifications",
    "enable_sounds",
    "enable_stream_desktop_notifications",
    "enable_stream_email_notifications",
    "enable_stream_push_notifications",
    "enable_stream_audible_notifications",
    "wildcard_mentions_notify",
    "message_content_in_email_notifications",
    "notification_sound",
    "pm_content_in_desktop_notifications",
    "desktop_icon_count_display",
    "realm_name_in_email_notifications_policy",
    "presence_enabled",
    "available_notification_sounds",
  ],
  update_display_settings: [
    "color_scheme",
    "default_language",
    "demote_inactive_streams",
    "emojiset",
    "enable_drafts_synchronization",
    "fluid_layout_width",
    "web_home_view",
    "high_contrast_mode",
    "left_side_userlist",
    "starred_message_counts",
    "timezone",
    "translate_emoticons",
    "twenty_four_hour_time",
    "enter_sends",
    "emojiset_choices",
  ],
  realm_user: [
    "realm_users",
    "realm_non_active_users",
    "avatar_source",
    "avatar_url_medium",
    "avatar_url",
    "can_create_streams",
    "can_create_public_streams",
    "can_create_private_streams",
    "can_create_web_public_streams",
    "can_invite_others_to_realm",
    "is_admin",
    "is_owner",
    "is_moderator",
    "is_guest",
    "user_id",
    "email",
    "delivery_email",
    "full_name",
    "cross_realm_bots",
  ],
  realm: [
    "realm_message_retention_days",
    "realm_allow_message_editing",
    "realm_message_content_edit_limit_seconds",
    "realm_authentication_methods",
    "realm_default_external_accounts",
    "realm_available_video_chat_providers",
    "server_supported_permission_settings",
    "gif_rating_policy_options",
    "server_generation",
    "realm_bot_domain",
    "realm_name",
    "realm_url",
    "max_message_length",
  ],
};

/**
 * What zulip-terminal's Model reads from its register at start
 * (zulipterminal/model.py: its fetch_event_types, then initial_data[...]
 * without a default); a missing one is its KeyError.
 */
const ZT_FETCH_TYPES = [
  "realm",
  "presence",
  "subscription",
  "message",
  "starred_messages",
  "update_message_flags",
  "muted_topics",
  "realm_user",
  "realm_user_groups",
  "update_global_notifications",
  "update_display_settings",
  "user_settings",
  "realm_emoji",
  "custom_profile_fields",
  "zulip_version",
];
const ZT_READS = [
  "zulip_version",
  "realm_users",
  "cross_realm_bots",
  "presences",
  "subscriptions",
  "realm_message_retention_days",
  "muted_topics",
  "realm_user_groups",
  "unread_msgs",
  "realm_emoji",
  "twenty_four_hour_time",
  "pm_content_in_desktop_notifications",
  "starred_messages",
  "realm_allow_message_editing",
  "custom_profile_fields",
];

function missing(body: Record<string, unknown>, keys: Iterable<string>): string[] {
  return [...keys].filter((k) => !NOT_BUILT_YET.has(k) && !Object.hasOwn(body, k));
}

describe("POST /register state keys (embedded)", () => {
  const srv = useEmbedded();
  let member: Member;

  before(async () => {
    member = await newUser(srv, 400, "Register Member");
  });

  it("a register of everything returns every key the schema lists", async () => {
    const r = await srv.api("POST", "/register", {});
    assertSuccess(r);
    const want = wantedKeys();
    assert.ok(want.length > 200, `schema walk found ${want.length} keys`);
    assert.deepEqual(missing(r.body, want), []);
  });

  it("keys renamed or removed after 10.2 are gone, their replacements present", async () => {
    const r = await srv.api("POST", "/register", {});
    assertSuccess(r);
    for (const [old, { level, now }] of Object.entries(CHANGED_AFTER_10_2)) {
      assert.ok(!Object.hasOwn(r.body, old), `${old} is gone at feature level ${level}`);
      if (now !== null) assert.ok(Object.hasOwn(r.body, now), `${now} replaces ${old}`);
    }
  });

  it("each fetch_event_types value returns its keys", async () => {
    const gaps: string[] = [];
    for (const [type, keys] of Object.entries(FETCH_TYPE_KEYS)) {
      const r = await srv.api("POST", "/register", { fetch_event_types: [type] });
      assertSuccess(r);
      for (const k of missing(r.body, keys)) gaps.push(`${type}: ${k}`);
    }
    assert.deepEqual(gaps, []);
    // unread_msgs needs both of its types.
    const u = await srv.api("POST", "/register", { fetch_event_types: ["message", "update_message_flags"] });
    assert.ok(u.body.unread_msgs);
  });

  it("legacy top-level settings only for clients without user_settings_object", async () => {
    const legacy = await srv.api("POST", "/register", { fetch_event_types: ["update_display_settings"] });
    assert.equal(typeof legacy.body.twenty_four_hour_time, "boolean");
    const modern = await srv.api("POST", "/register", {
      fetch_event_types: ["update_display_settings", "user_settings"],
      client_capabilities: { user_settings_object: true },
    });
    assert.equal(Object.hasOwn(modern.body, "twenty_four_hour_time"), false);
    assert.equal(typeof modern.body.user_settings.twenty_four_hour_time, "boolean");
  });

  it("starred_messages, recent_private_conversations and muted_topics come from the user's state", async () => {
    const dm1 = await srv.api("POST", "/messages", { type: "direct", to: [member.userId], content: "hi" });
    assertSuccess(dm1);
    const self = await srv.api("POST", "/messages", {
      type: "direct",
      to: [srv.owner.userId],
      content: "me",
    });
    assertSuccess(self);
    const dm2 = await srv.api("POST", "/messages", { type: "direct", to: [member.userId], content: "again" });
    assertSuccess(dm2);
    assertSuccess(
      await srv.api("POST", "/messages/flags", { messages: [dm1.body.id], op: "add", flag: "starred" }),
    );
    const chan = `regstate ${process.pid}`;
    assertSuccess(await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: chan }] }));
    const sent = await srv.api("POST", "/messages", {
      type: "stream",
      to: chan,
      topic: "quiet",
      content: "x",
    });
    assertSuccess(sent);
    const sid = (await srv.api("GET", "/get_stream_id", { stream: chan })).body.stream_id as number;
    assertSuccess(
      await srv.api("POST", "/user_topics", { stream_id: sid, topic: "quiet", visibility_policy: 1 }),
    );

    const r = await srv.api("POST", "/register", {
      fetch_event_types: ["starred_messages", "recent_private_conversations", "muted_topics"],
    });
    assertSuccess(r);
    assert.deepEqual(r.body.starred_messages, [dm1.body.id]);
    // Less Welcome Bot's greeting of a new user (FL 416), which arrives on its own time.
    const convs = (r.body.recent_private_conversations as { user_ids: number[] }[]).filter(
      (c) => !c.user_ids.includes(WELCOME_BOT.id),
    );
    assert.deepEqual(convs, [
      { max_message_id: dm2.body.id, user_ids: [member.userId] },
      { max_message_id: self.body.id, user_ids: [] },
    ]);
    assert.equal(r.body.muted_topics.length, 1);
    assert.deepEqual(r.body.muted_topics[0].slice(0, 2), [chan, "quiet"]);
    assert.equal(typeof r.body.muted_topics[0][2], "number");
    // Only what was asked for.
    assert.equal(Object.hasOwn(r.body, "realm_users"), false);

    // The member sees the same conversation from the other side.
    const m = await srv.api(
      "POST",
      "/register",
      { fetch_event_types: ["recent_private_conversations"] },
      member,
    );
    assert.deepEqual(
      (m.body.recent_private_conversations as { user_ids: number[] }[]).filter(
        (c) => !c.user_ids.includes(WELCOME_BOT.id),
      ),
      [{ max_message_id: dm2.body.id, user_ids: [srv.owner.userId] }],
    );
  });

  it("presences: legacy by email by default, modern by id for slim clients", async () => {
    assertSuccess(await srv.api("POST", "/users/me/presence", { status: "active" }, member));
    const legacy = await srv.api("POST", "/register", { fetch_event_types: ["presence"] });
    assertSuccess(legacy);
    const mine = legacy.body.presences[member.email];
    assert.equal(mine.aggregated.status, "active");
    assert.equal(mine.website.client, "website");
    assert.equal(typeof legacy.body.server_timestamp, "number");
    assert.ok(legacy.body.presence_last_update_id >= 1);
    const slim = await srv.api("POST", "/register", { fetch_event_types: ["presence"], slim_presence: true });
    const entry = slim.body.presences[String(member.userId)];
    assert.deepEqual(Object.keys(entry).sort(), ["active_timestamp", "idle_timestamp"]);
    const simplified = await srv.api("POST", "/register", {
      fetch_event_types: ["presence"],
      client_capabilities: { simplified_presence_events: true },
    });
    assert.ok(simplified.body.presences[String(member.userId)]);
  });

  it("realm_default_streams lists the default channels; guests get none", async () => {
    const chan = `default ${process.pid}`;
    assertSuccess(await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: chan }] }));
    const sid = (await srv.api("GET", "/get_stream_id", { stream: chan })).body.stream_id as number;
    assertSuccess(await srv.api("PATCH", `/streams/${sid}`, { is_default_stream: true }));
    const r = await srv.api("POST", "/register", { fetch_event_types: ["default_streams"] });
    assert.ok(r.body.realm_default_streams.includes(sid));
    const guest = await newUser(srv, 600);
    const g = await srv.api("POST", "/register", { fetch_event_types: ["default_streams"] }, guest);
    assert.deepEqual(g.body.realm_default_streams, []);
  });

  it("zulip-terminal's startup reads are all there", async () => {
    const r = await srv.api("POST", "/register", {
      fetch_event_types: ZT_FETCH_TYPES,
      client_gravatar: true,
    });
    assertSuccess(r);
    assert.deepEqual(
      ZT_READS.filter((k) => !Object.hasOwn(r.body, k)),
      [],
    );
    // It sorts presences by the email keys' users and reads aggregated.status.
    for (const [email, p] of Object.entries(
      r.body.presences as Record<string, { aggregated: { status: string } }>,
    )) {
      assert.ok(email.includes("@"));
      assert.ok(["active", "idle"].includes(p.aggregated.status));
    }
    for (const s of r.body.subscriptions) assert.ok(Object.hasOwn(s, "message_retention_days"));
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("POST /register state keys (cluster)", { skip }, () => {
  const cl = useCluster();

  it("a register of everything returns every key the schema lists", { skip }, async () => {
    const r = await cl.api("POST", "/register", {});
    assertSuccess(r);
    assert.deepEqual(missing(r.body, wantedKeys()), []);
    assert.ok(Array.isArray(r.body.recent_private_conversations));
    assert.equal(typeof r.body.presences, "object");
  });
});
