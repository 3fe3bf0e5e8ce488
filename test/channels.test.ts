// Black-box HTTP tests of channels and subscriptions against a real
// embedded server: POST /channels/create, POST/GET/DELETE
// /users/me/subscriptions, GET /streams, GET /streams/{id}, GET
// /get_stream_id, GET /streams/{id}/members, PATCH and DELETE
// /streams/{id}, subscription properties. Events are read from the node's
// event listener (what the queues consume). Admins and guests are made
// through the realm's internal createUser (the CLI path), since no HTTP
// endpoint sets roles yet.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Obj, OutEvent } from "../actors/types.ts";
import { err, ok, reaches, uniq, useChat, type ApiResult, type Creds } from "./support/index.ts";

// The node's emitted events are recorded in chat.events, emptied before each test.
const chat = useChat({ clearEvents: true });
const { api, newUser } = chat;

async function create(name: string, params: Obj = {}, auth: Creds = chat.owner): Promise<number> {
  const body = ok(await api("POST", "/channels/create", { name, subscribers: [], ...params }, auth));
  return body.id as number;
}

async function allStreams(auth: Creds = chat.owner): Promise<Obj[]> {
  return ok(await api("GET", "/streams", { include_all: true, exclude_archived: false }, auth))
    .streams as Obj[];
}

function eventsOf(type: string, op?: string): OutEvent[] {
  return chat.events.filter((e) => e.event.type === type && (op === undefined || e.event.op === op));
}

const GROUP_FIELDS = [
  "can_add_subscribers_group",
  "can_administer_channel_group",
  "can_create_topic_group",
  "can_delete_any_message_group",
  "can_delete_own_message_group",
  "can_move_messages_out_of_channel_group",
  "can_move_messages_within_channel_group",
  "can_remove_subscribers_group",
  "can_resolve_topics_group",
  "can_send_message_group",
  "can_subscribe_group",
];

describe("channels - create", () => {
  test("creates with defaults, subscribers get add events, others peer_add", async () => {
    const m = await newUser();
    const other = await newUser();
    const name = uniq("Design");
    const id = await create(name, {
      subscribers: [chat.owner.userId, m.userId],
      description: "Hello **world**",
    });
    const s = ok(await api("GET", `/streams/${id}`)).stream as Obj;
    assert.equal(s.stream_id, id);
    assert.equal(s.name, name);
    assert.equal(s.description, "Hello **world**");
    assert.equal(s.rendered_description, "<p>Hello <strong>world</strong></p>");
    assert.equal(s.invite_only, false);
    assert.equal(s.is_web_public, false);
    assert.equal(s.history_public_to_subscribers, true);
    assert.equal(s.message_retention_days, null);
    assert.equal(s.topics_policy, "inherit");
    assert.equal(s.is_archived, false);
    assert.equal(s.creator_id, chat.owner.userId);
    assert.equal(s.stream_post_policy, 1);
    assert.equal(s.is_announcement_only, false);
    assert.equal(s.first_message_id, null);
    assert.equal(s.folder_id, null);
    assert.equal(s.subscriber_count, 2);
    assert.equal(typeof s.date_created, "number");
    for (const g of GROUP_FIELDS) assert.ok(g in s, g);
    assert.deepEqual(s.can_administer_channel_group, {
      direct_members: [chat.owner.userId],
      direct_subgroups: [],
    });

    const creates = eventsOf("stream", "create");
    assert.equal(creates.length, 1);
    assert.ok(creates[0]!.userIds.includes(other.userId));
    const adds = eventsOf("subscription", "add");
    assert.deepEqual(adds.map((e) => e.userIds[0]).sort(), [chat.owner.userId, m.userId].sort());
    const sub = (adds[0]!.event.subscriptions as Obj[])[0]!;
    assert.deepEqual(
      sub.subscribers,
      [chat.owner.userId, m.userId].sort((a, b) => a - b),
    );
    assert.match(String(sub.color), /^#[0-9a-f]{6}$/);
    const peer = eventsOf("subscription", "peer_add");
    assert.equal(peer.length, 1);
    // A public channel's peers are the realm (less the new subscribers), not a list of it.
    assert.equal(peer[0]!.everyone, true);
    assert.ok(reaches(peer[0]!, other.userId));
    assert.ok(!reaches(peer[0]!, m.userId));
  });

  test("bad input gives Zulip errors and creates nothing", async () => {
    const before = (await allStreams()).length;
    err(
      await api("POST", "/channels/create", { subscribers: [] }),
      "Missing 'name' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(
      await api("POST", "/channels/create", { name: "x" }),
      "Missing 'subscribers' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(
      await api("POST", "/channels/create", { name: "   ", subscribers: [] }),
      "Channel name can't be empty.",
    );
    err(
      await api("POST", "/channels/create", { name: "n".repeat(61), subscribers: [] }),
      "Channel name too long (limit: 60 characters).",
    );
    err(
      await api("POST", "/channels/create", { name: "bad\u0001name", subscribers: [] }),
      "Invalid character in channel name, at position 3.",
    );
    err(
      await api("POST", "/channels/create", { name: uniq(), subscribers: [], description: "d".repeat(1025) }),
      "description is too long (limit: 1024 characters)",
    );
    err(
      await api("POST", "/channels/create", { name: uniq(), subscribers: [999999] }),
      "Invalid user ID: 999999",
    );
    err(
      await api("POST", "/channels/create", { name: uniq(), subscribers: "[1" }),
      "subscribers is not valid JSON",
    );
    err(
      await api("POST", "/channels/create", { name: uniq(), subscribers: [], topics_policy: "nope" }),
      "Invalid topics_policy",
    );
    err(
      await api("POST", "/channels/create", { name: uniq(), subscribers: [], invite_only: "yes" }),
      "invite_only is not valid JSON",
    );
    err(
      await api("POST", "/channels/create", {
        name: uniq(),
        subscribers: [],
        message_retention_days: "soon",
      }),
      "Bad value for 'message_retention_days': soon",
      "REQUEST_VARIABLE_INVALID",
    );
    err(
      await api("POST", "/channels/create", {
        name: uniq(),
        subscribers: [],
        invite_only: true,
        is_default_stream: true,
      }),
      "Private channels cannot be made default.",
    );
    const name = uniq();
    await create(name);
    err(
      await api("POST", "/channels/create", { name: name.toUpperCase(), subscribers: [] }),
      `Channel '${name.toUpperCase()}' already exists`,
    );
    assert.equal((await allStreams()).length, before + 1);
  });

  test("permissions: guests cannot create; only owners set retention; only admins set default", async () => {
    const guest = await newUser(600);
    const member = await newUser(400);
    const admin = await newUser(200);
    err(
      await api("POST", "/channels/create", { name: uniq(), subscribers: [] }, guest),
      "Insufficient permission",
    );
    err(
      await api(
        "POST",
        "/channels/create",
        { name: uniq(), subscribers: [], message_retention_days: 30 },
        admin,
      ),
      "Must be an organization owner",
      "UNAUTHORIZED_PRINCIPAL",
    );
    err(
      await api(
        "POST",
        "/channels/create",
        { name: uniq(), subscribers: [], is_default_stream: true },
        member,
      ),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    const id = await create(uniq(), { message_retention_days: "unlimited" });
    assert.equal((ok(await api("GET", `/streams/${id}`)).stream as Obj).message_retention_days, -1);
    const id2 = await create(uniq(), { message_retention_days: 30 });
    assert.equal((ok(await api("GET", `/streams/${id2}`)).stream as Obj).message_retention_days, 30);
  });

  test("private channels: protected history by default, hidden from non-subscribers", async () => {
    const member = await newUser();
    const admin = await newUser(200);
    const name = uniq("secret");
    const id = await create(name, { invite_only: true });
    const s = ok(await api("GET", `/streams/${id}`)).stream as Obj;
    assert.equal(s.invite_only, true);
    assert.equal(s.history_public_to_subscribers, false);
    const creates = eventsOf("stream", "create");
    assert.ok(!creates[0]!.userIds.includes(member.userId));
    assert.ok(creates[0]!.userIds.includes(admin.userId));
    err(await api("GET", `/streams/${id}`, {}, member), "Invalid channel ID");
    err(await api("GET", "/get_stream_id", { stream: name }, member), `Invalid channel name '${name}'`);
    err(await api("GET", `/streams/${id}/members`, {}, member), "Invalid channel ID");
    const listed = ok(await api("GET", "/streams", {}, member)).streams as Obj[];
    assert.ok(!listed.some((c) => c.stream_id === id));
    const adminList = ok(await api("GET", "/streams", { include_all: true }, admin)).streams as Obj[];
    assert.ok(adminList.some((c) => c.stream_id === id));
  });
});

describe("channels - legacy subscribe and unsubscribe", () => {
  test("subscribe creates, reports subscribed and already_subscribed by user id", async () => {
    const m = await newUser();
    const name = uniq("legacy");
    const r1 = ok(
      await api("POST", "/users/me/subscriptions", { subscriptions: [{ name, description: "d" }] }),
    );
    assert.deepEqual(r1.subscribed, { [String(chat.owner.userId)]: [name] });
    assert.deepEqual(r1.already_subscribed, {});
    assert.ok(!("unauthorized" in r1));
    const r2 = ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: [chat.owner.email, m.userId],
      }),
    );
    assert.deepEqual(r2.subscribed, { [String(m.userId)]: [name] });
    assert.deepEqual(r2.already_subscribed, { [String(chat.owner.userId)]: [name] });
    const id = ok(await api("GET", "/get_stream_id", { stream: name })).stream_id as number;
    assert.deepEqual(
      ok(await api("GET", `/streams/${id}/members`)).subscribers,
      [chat.owner.userId, m.userId].sort((a, b) => a - b),
    );
    const subs = ok(await api("GET", "/users/me/subscriptions", {}, m)).subscriptions as Obj[];
    const mine = subs.find((x) => x.stream_id === id)!;
    assert.equal(mine.name, name);
    assert.equal(mine.description, "d");
    assert.equal(mine.is_muted, false);
    assert.equal(mine.in_home_view, true);
    assert.equal(mine.pin_to_top, false);
    assert.equal(mine.desktop_notifications, null);
    assert.equal(mine.wildcard_mentions_notify, null);
    assert.ok(!("subscribers" in mine));
    const withSubs = ok(await api("GET", "/users/me/subscriptions", { include_subscribers: true }, m))
      .subscriptions as Obj[];
    assert.deepEqual(
      withSubs.find((x) => x.stream_id === id)!.subscribers,
      [chat.owner.userId, m.userId].sort((a, b) => a - b),
    );
  });

  test("private channels: unauthorized fatal and not fatal; guests cannot add others", async () => {
    const member = await newUser();
    const guest = await newUser(600);
    const name = uniq("priv");
    await create(name, { invite_only: true });
    err(
      await api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] }, member),
      `Unable to access channel (${name}).`,
    );
    const r = ok(
      await api(
        "POST",
        "/users/me/subscriptions",
        { subscriptions: [{ name }], authorization_errors_fatal: false },
        member,
      ),
    );
    assert.deepEqual(r.unauthorized, [name]);
    assert.deepEqual(r.subscribed, {});
    const pub = uniq("pub");
    await create(pub);
    err(
      await api(
        "POST",
        "/users/me/subscriptions",
        { subscriptions: [{ name: pub }], principals: [member.userId] },
        guest,
      ),
      "Insufficient permission",
    );
    err(
      await api("POST", "/users/me/subscriptions", { subscriptions: [{ name: pub }] }, guest),
      `Unable to access channel (${pub}).`,
    );
    err(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: pub }],
        principals: ["nobody@example.com"],
      }),
      "No such user",
    );
    err(
      await api("POST", "/users/me/subscriptions", { subscriptions: [{}] }),
      "subscriptions[0] field is missing: name",
    );
    err(await api("POST", "/users/me/subscriptions", { subscriptions: {} }), "subscriptions is not a list");
  });

  test("unsubscribe: removed / not_removed, events, permission for others", async () => {
    const m = await newUser();
    const m2 = await newUser();
    const name = uniq("leave");
    const id = await create(name, { subscribers: [chat.owner.userId, m.userId] });
    chat.events.length = 0;
    err(
      await api(
        "DELETE",
        "/users/me/subscriptions",
        { subscriptions: [name], principals: [chat.owner.userId] },
        m,
      ),
      "Insufficient permission",
    );
    err(
      await api("DELETE", "/users/me/subscriptions", { subscriptions: ["no such channel"] }, m),
      "Channel 'no such channel' does not exist",
      "STREAM_DOES_NOT_EXIST",
    );
    assert.equal(chat.events.length, 0);
    const r = ok(await api("DELETE", "/users/me/subscriptions", { subscriptions: [name] }, m));
    assert.deepEqual(r, { result: "success", msg: "", removed: [name], not_removed: [] });
    assert.deepEqual(
      eventsOf("subscription", "remove").map((e) => e.event.subscriptions),
      [[{ stream_id: id, name }]],
    );
    const peer = eventsOf("subscription", "peer_remove")[0]!;
    assert.deepEqual(peer.event.user_ids, [m.userId]);
    assert.ok(reaches(peer, m2.userId));
    const r2 = ok(await api("DELETE", "/users/me/subscriptions", { subscriptions: [name] }, m));
    assert.deepEqual(r2.not_removed, [name]);
    // Administrators may remove others (can_remove_subscribers_group: role:administrators).
    const r3 = ok(
      await api("DELETE", "/users/me/subscriptions", {
        subscriptions: [name],
        principals: [chat.owner.userId],
      }),
    );
    assert.deepEqual(r3.removed, [name]);
  });
});

describe("channels - lists", () => {
  test("GET /streams flags and the include_all_active alias", async () => {
    const member = await newUser();
    const guest = await newUser(600);
    const pub = await create(uniq("list-pub"));
    const priv = await create(uniq("list-priv"), { invite_only: true, subscribers: [guest.userId] });
    const ids = (r: ApiResult) => (ok(r).streams as Obj[]).map((c) => c.stream_id);
    assert.ok(ids(await api("GET", "/streams", {}, member)).includes(pub));
    assert.ok(!ids(await api("GET", "/streams", { include_public: false }, member)).includes(pub));
    assert.ok(!ids(await api("GET", "/streams", {}, guest)).includes(pub));
    assert.ok(ids(await api("GET", "/streams", {}, guest)).includes(priv));
    assert.ok(!ids(await api("GET", "/streams", { include_subscribed: false }, guest)).includes(priv));
    err(
      await api("GET", "/streams", { include_all: true }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assert.ok(ids(await api("GET", "/streams", { include_all_active: true })).includes(priv));
    err(
      await api("GET", "/streams", { include_all: true, include_all_active: true }),
      "Can't decide between 'include_all' and 'include_all_active' arguments",
      "REQUEST_CONFUSING_VAR",
    );
    err(await api("GET", "/streams", { include_public: "maybe" }), "include_public is not valid JSON");
    assert.ok(
      ids(
        await api("GET", "/streams", { include_can_access_content: true, include_public: false }, member),
      ).includes(pub),
    );
  });

  test("GET /streams/{id}, /get_stream_id, members: unknown ids", async () => {
    err(await api("GET", "/streams/99999"), "Invalid channel ID");
    err(await api("GET", "/streams/99999/members"), "Invalid channel ID");
    err(await api("GET", "/get_stream_id", { stream: "nope nope" }), "Invalid channel name 'nope nope'");
    err(await api("GET", "/get_stream_id"), "Missing 'stream' argument", "REQUEST_VARIABLE_MISSING");
  });
});

describe("channels - update and archive", () => {
  test("rename, description, privacy with events", async () => {
    const member = await newUser();
    const name = uniq("upd");
    const id = await create(name, { subscribers: [chat.owner.userId] });
    chat.events.length = 0;
    const newName = uniq("renamed");
    ok(await api("PATCH", `/streams/${id}`, { new_name: newName, description: "line1\nline2 *x*" }));
    const s = ok(await api("GET", `/streams/${id}`)).stream as Obj;
    assert.equal(s.name, newName);
    assert.equal(s.description, "line1 line2 *x*");
    assert.equal(s.rendered_description, "<p>line1 line2 <em>x</em></p>");
    const upd = eventsOf("stream", "update");
    assert.deepEqual(
      upd.map((e) => [e.event.property, e.event.value, e.event.name]),
      [
        ["name", newName, name],
        ["description", "line1 line2 *x*", name],
      ],
    );
    assert.equal(upd[1]!.event.rendered_description, "<p>line1 line2 <em>x</em></p>");
    assert.ok(upd[0]!.userIds.includes(member.userId));
    chat.events.length = 0;
    ok(await api("PATCH", `/streams/${id}`, { is_private: true }));
    const p = eventsOf("stream", "update")[0]!;
    assert.deepEqual(
      [p.event.property, p.event.value, p.event.history_public_to_subscribers, p.event.is_web_public],
      ["invite_only", true, true, false],
    );
    // Members who lose access still hear about the change.
    assert.ok(p.userIds.includes(member.userId));
    ok(await api("PATCH", `/streams/${id}`, { history_public_to_subscribers: false }));
    assert.equal((ok(await api("GET", `/streams/${id}`)).stream as Obj).history_public_to_subscribers, false);
  });

  test("errors change nothing", async () => {
    const member = await newUser();
    const name = uniq("keep");
    const taken = uniq("taken");
    const id = await create(name, { subscribers: [chat.owner.userId, member.userId] });
    await create(taken);
    const before = ok(await api("GET", `/streams/${id}`)).stream;
    err(await api("PATCH", `/streams/${id}`, { new_name: taken }), `Channel '${taken}' already exists`);
    err(await api("PATCH", `/streams/${id}`, { new_name: "" }), "Channel name can't be empty.");
    err(
      await api("PATCH", `/streams/${id}`, { description: "x".repeat(1025) }),
      "description is too long (limit: 1024 characters)",
    );
    err(await api("PATCH", `/streams/${id}`, { history_public_to_subscribers: false }), "Invalid parameters");
    err(await api("PATCH", `/streams/${id}`, { topics_policy: "x" }), "Invalid topics_policy");
    err(
      await api("PATCH", `/streams/${id}`, { new_name: uniq("z") }, member),
      "You do not have permission to administer this channel.",
    );
    err(await api("PATCH", "/streams/99999", { new_name: "zz" }), "Invalid channel ID");
    err(
      await api("PATCH", `/streams/${id}`, { message_retention_days: "x" }),
      "Bad value for 'message_retention_days': x",
      "REQUEST_VARIABLE_INVALID",
    );
    const admin = await newUser(200);
    err(
      await api("PATCH", `/streams/${id}`, { message_retention_days: 5 }, admin),
      "Must be an organization owner",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assert.deepEqual(ok(await api("GET", `/streams/${id}`)).stream, before);
    ok(
      await api("PATCH", `/streams/${id}`, {
        message_retention_days: "unlimited",
        topics_policy: "disable_empty_topic",
      }),
    );
    const after = ok(await api("GET", `/streams/${id}`)).stream as Obj;
    assert.equal(after.message_retention_days, -1);
    assert.equal(after.topics_policy, "disable_empty_topic");
  });

  test("archive with DELETE, unarchive with PATCH", async () => {
    const member = await newUser();
    const name = uniq("arch");
    const id = await create(name, { subscribers: [chat.owner.userId] });
    err(
      await api("DELETE", `/streams/${id}`, {}, member),
      "You do not have permission to administer this channel.",
    );
    chat.events.length = 0;
    ok(await api("DELETE", `/streams/${id}`));
    const del = eventsOf("stream", "delete")[0]!;
    assert.deepEqual(del.event.stream_ids, [id]);
    assert.deepEqual(del.event.streams, [{ stream_id: id }]);
    assert.ok(del.userIds.includes(member.userId));
    const listed = (ok(await api("GET", "/streams")).streams as Obj[]).map((c) => c.stream_id);
    assert.ok(!listed.includes(id));
    const archived = (await allStreams()).find((c) => c.stream_id === id)!;
    assert.equal(archived.is_archived, true);
    err(await api("DELETE", `/streams/${id}`), "Invalid channel ID");
    ok(await api("PATCH", `/streams/${id}`, { is_archived: false }));
    assert.equal((ok(await api("GET", `/streams/${id}`)).stream as Obj).is_archived, false);
  });
});

describe("channels - subscription properties", () => {
  test("each property, two events for is_muted / in_home_view", async () => {
    const m = await newUser();
    const id = await create(uniq("props"), { subscribers: [m.userId] });
    chat.events.length = 0;
    ok(await api("PATCH", `/users/me/subscriptions/${id}`, { property: "is_muted", value: true }, m));
    assert.deepEqual(
      eventsOf("subscription", "update").map((e) => [e.event.property, e.event.value, e.userIds]),
      [
        ["in_home_view", false, [m.userId]],
        ["is_muted", true, [m.userId]],
      ],
    );
    ok(
      await api(
        "POST",
        "/users/me/subscriptions/properties",
        {
          subscription_data: [
            { stream_id: id, property: "color", value: "#123abc" },
            { stream_id: id, property: "pin_to_top", value: true },
            { stream_id: id, property: "in_home_view", value: true },
            { stream_id: id, property: "desktop_notifications", value: false },
            { stream_id: id, property: "audible_notifications", value: true },
            { stream_id: id, property: "push_notifications", value: true },
            { stream_id: id, property: "email_notifications", value: false },
            { stream_id: id, property: "wildcard_mentions_notify", value: true },
          ],
        },
        m,
      ),
    );
    const sub = (ok(await api("GET", "/users/me/subscriptions", {}, m)).subscriptions as Obj[]).find(
      (s) => s.stream_id === id,
    )!;
    assert.equal(sub.color, "#123abc");
    assert.equal(sub.pin_to_top, true);
    assert.equal(sub.is_muted, false);
    assert.equal(sub.in_home_view, true);
    assert.equal(sub.desktop_notifications, false);
    assert.equal(sub.audible_notifications, true);
    assert.equal(sub.push_notifications, true);
    assert.equal(sub.email_notifications, false);
    assert.equal(sub.wildcard_mentions_notify, true);
  });

  test("errors change nothing", async () => {
    const m = await newUser();
    const id = await create(uniq("props-err"), { subscribers: [m.userId] });
    const other = await create(uniq("props-other"));
    const before = ok(await api("GET", "/users/me/subscriptions", {}, m)).subscriptions;
    err(
      await api("PATCH", `/users/me/subscriptions/${id}`, { property: "volume", value: true }, m),
      "Unknown subscription property: volume",
    );
    err(
      await api("PATCH", `/users/me/subscriptions/${id}`, { property: "color", value: "blue" }, m),
      "value is not a valid hex color code",
    );
    err(
      await api("PATCH", `/users/me/subscriptions/${id}`, { property: "pin_to_top", value: "yes" }, m),
      "value is not a boolean",
    );
    err(
      await api("PATCH", `/users/me/subscriptions/${other}`, { property: "pin_to_top", value: true }, m),
      "Not subscribed to channel ID",
    );
    err(
      await api("PATCH", "/users/me/subscriptions/99999", { property: "pin_to_top", value: true }, m),
      "Invalid channel ID",
    );
    err(
      await api("PATCH", `/users/me/subscriptions/${id}`, { property: "pin_to_top" }, m),
      "Missing 'value' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    // A bad item later in the list rejects the whole request.
    err(
      await api(
        "POST",
        "/users/me/subscriptions/properties",
        {
          subscription_data: [
            { stream_id: id, property: "pin_to_top", value: true },
            { stream_id: id, property: "bogus", value: true },
          ],
        },
        m,
      ),
      "Unknown subscription property: bogus",
    );
    assert.deepEqual(ok(await api("GET", "/users/me/subscriptions", {}, m)).subscriptions, before);
  });
});

describe("channels - group settings", () => {
  // System group ids are fixed in every realm (actors/group/config.ts).
  const ADMINISTRATORS = 3;
  const EVERYONE = 7;
  const NOBODY = 1;

  test("creation form, stream_post_policy, update form with old", async () => {
    const member = await newUser();
    const id = await create(uniq("groups"), { can_send_message_group: ADMINISTRATORS });
    let s = ok(await api("GET", `/streams/${id}`)).stream as Obj;
    assert.equal(s.can_send_message_group, ADMINISTRATORS);
    assert.equal(s.stream_post_policy, 2);
    assert.equal(s.is_announcement_only, true);
    err(
      await api("POST", "/channels/create", { name: uniq(), subscribers: [], can_subscribe_group: EVERYONE }),
      "'can_subscribe_group' setting cannot be set to 'role:everyone' group.",
    );
    chat.events.length = 0;
    ok(
      await api("PATCH", `/streams/${id}`, {
        can_send_message_group: { new: EVERYONE, old: ADMINISTRATORS },
      }),
    );
    s = ok(await api("GET", `/streams/${id}`)).stream as Obj;
    assert.equal(s.can_send_message_group, EVERYONE);
    assert.equal(s.stream_post_policy, 1);
    const ev = eventsOf("stream", "update")[0]!;
    assert.deepEqual([ev.event.property, ev.event.value], ["can_send_message_group", EVERYONE]);
    err(
      await api("PATCH", `/streams/${id}`, { can_send_message_group: { new: NOBODY, old: ADMINISTRATORS } }),
      "'old' value does not match the expected value.",
      "EXPECTATION_MISMATCH",
    );
    // A member of can_administer_channel_group may edit the channel.
    err(
      await api("PATCH", `/streams/${id}`, { description: "by member" }, member),
      "You do not have permission to administer this channel.",
    );
    ok(
      await api("PATCH", `/streams/${id}`, {
        can_administer_channel_group: { new: { direct_members: [member.userId], direct_subgroups: [] } },
      }),
    );
    ok(await api("PATCH", `/streams/${id}`, { description: "by member" }, member));
    assert.equal((ok(await api("GET", `/streams/${id}`)).stream as Obj).description, "by member");
  });
});
