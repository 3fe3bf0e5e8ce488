// verify_action for every event type the server emits (Zulip's
// test_events.py idea): register, act, apply the queue's events to the
// registered state with a client's rules (test/support/apply-events.ts) and
// compare with a fresh register. Message flags and unread counts have their
// own file (test/events-flags.test.ts); user_settings, user_status and
// realm_user basics are in test/events.test.ts. test/verify-action-coverage.test.ts
// fails for an event type the server emits without a case here.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertSuccess,
  newUser,
  startEmbedded,
  verifyAction,
  type ApiResult,
  type EmbeddedHandle,
  type Ev,
  type Member,
} from "./support/index.ts";
import { uploadFiles } from "./support/uploads.ts";

let srv: EmbeddedHandle;
let owner: Member;
let seq = 0;
// Without this capability a client gets no linkifiers (Zulip's realm_filters is gone).
const LINKIFIERS = { client_capabilities: { linkifier_url_template: true } };
const uniq = (p: string) => `${p}${++seq}x${process.pid % 1000}`;

before(async () => {
  srv = await startEmbedded();
  owner = srv.owner;
});
after(async () => {
  await srv?.stop();
});

async function ok(p: Promise<ApiResult>): Promise<Ev> {
  const r = await p;
  assertSuccess(r);
  return r.body;
}

async function channel(
  name: string,
  members: number[] = [],
  extra: Record<string, unknown> = {},
): Promise<number> {
  await ok(
    srv.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name, ...extra }],
      ...(members.length ? { principals: [owner.userId, ...members] } : {}),
    }),
  );
  const r = await ok(srv.api("GET", "/get_stream_id", { stream: name }));
  return r.stream_id;
}

describe("verify_action: organization", () => {
  test("realm update: PATCH /realm", async () => {
    const u = await newUser(srv);
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(
          srv.api("PATCH", "/realm", {
            enable_read_receipts: false,
            message_edit_history_visibility_policy: "moves",
            emails_restricted_to_domains: true,
          }),
        );
      },
      {
        types: ["realm"],
        keys: [
          "realm_enable_read_receipts",
          "realm_message_edit_history_visibility_policy",
          "realm_emails_restricted_to_domains",
        ],
      },
    );
  });

  test("realm_linkifiers: add, change, remove", async () => {
    const u = await newUser(srv);
    let id = 0;
    await verifyAction(
      srv,
      u,
      async () => {
        id = (
          await ok(
            srv.api("POST", "/realm/filters", {
              pattern: "#(?P<id>[0-9]+)",
              url_template: "https://x.example/{id}",
            }),
          )
        ).id;
      },
      { types: ["realm_linkifiers"], keys: ["realm_linkifiers"], register: LINKIFIERS },
    );
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(
          srv.api("PATCH", `/realm/filters/${id}`, {
            pattern: "T(?P<id>[0-9]+)",
            url_template: "https://t.example/{id}",
          }),
        );
        await ok(srv.api("DELETE", `/realm/filters/${id}`));
      },
      { types: ["realm_linkifiers"], keys: ["realm_linkifiers"], register: LINKIFIERS },
    );
  });

  test("realm_playgrounds: add and remove", async () => {
    const u = await newUser(srv);
    let id = 0;
    await verifyAction(
      srv,
      u,
      async () => {
        id = (
          await ok(
            srv.api("POST", "/realm/playgrounds", {
              name: uniq("Play "),
              pygments_language: "Python",
              url_template: "https://play.example/?code={code}",
            }),
          )
        ).id;
        await ok(srv.api("DELETE", `/realm/playgrounds/${id}`));
      },
      { types: ["realm_playgrounds"], keys: ["realm_playgrounds"] },
    );
  });

  test("realm_user_settings_defaults: PATCH /realm/user_settings_defaults", async () => {
    const u = await newUser(srv);
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(
          srv.api("PATCH", "/realm/user_settings_defaults", { enter_sends: true, web_font_size_px: 16 }),
        );
      },
      { types: ["realm_user_settings_defaults"], keys: ["realm_user_settings_defaults"] },
    );
  });

  test("custom_profile_fields: create, reorder, delete", async () => {
    const u = await newUser(srv);
    await verifyAction(
      srv,
      u,
      async () => {
        const a = (
          await ok(srv.api("POST", "/realm/profile_fields", { name: uniq("Field "), field_type: 1 }))
        ).id;
        const b = (
          await ok(srv.api("POST", "/realm/profile_fields", { name: uniq("Field "), field_type: 2 }))
        ).id;
        const all = (await ok(srv.api("GET", "/realm/profile_fields"))).custom_fields.map((f: Ev) => f.id);
        await ok(
          srv.api("PATCH", "/realm/profile_fields", { order: [b, ...all.filter((x: number) => x !== b)] }),
        );
        await ok(srv.api("DELETE", `/realm/profile_fields/${a}`));
      },
      { types: ["custom_profile_fields"], keys: ["custom_profile_fields"] },
    );
  });

  test("realm_emoji: upload and deactivate", async () => {
    const u = await newUser(srv);
    const name = uniq("emo");
    // A 1×1 PNG.
    const png = Buffer.from(
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
      "base64",
    );
    await verifyAction(
      srv,
      u,
      async () => {
        const form = new FormData();
        form.append("f1", new Blob([new Uint8Array(png)], { type: "image/png" }), "e.png");
        const r = await fetch(`${srv.baseUrl}/api/v1/realm/emoji/${name}`, {
          method: "POST",
          headers: {
            authorization: `Basic ${Buffer.from(`${owner.email}:${owner.apiKey}`).toString("base64")}`,
          },
          body: form,
        });
        assert.equal(r.status, 200, await r.text());
        await ok(srv.api("DELETE", `/realm/emoji/${name}`));
      },
      { types: ["realm_emoji"], keys: ["realm_emoji"] },
    );
  });

  test("default_streams: add and remove", async () => {
    const u = await newUser(srv);
    const id = await channel(uniq("dflt"));
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("POST", "/default_streams", { stream_id: id }));
      },
      { types: ["default_streams"], keys: ["realm_default_streams"] },
    );
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("DELETE", "/default_streams", { stream_id: id }));
      },
      { types: ["default_streams"], keys: ["realm_default_streams"] },
    );
  });
});

describe("verify_action: users and bots", () => {
  test("realm_user: role change, deactivate, reactivate", async () => {
    const watcher = await newUser(srv);
    const target = await newUser(srv);
    const keys = ["realm_users", "realm_non_active_users"];
    await verifyAction(
      srv,
      watcher,
      async () => {
        await ok(srv.api("PATCH", `/users/${target.userId}`, { role: 300 }));
      },
      // A role change moves the user between the role's system groups.
      { types: ["realm_user", "user_group"], keys: [...keys, "realm_user_groups"] },
    );
    await verifyAction(
      srv,
      watcher,
      async () => {
        await ok(srv.api("DELETE", `/users/${target.userId}`));
      },
      // Deactivating a user also unsubscribes them: their channels' peers hear it.
      { types: ["realm_user"], optional: ["subscription"], keys: [...keys, "subscriptions"] },
    );
    await verifyAction(
      srv,
      watcher,
      async () => {
        await ok(srv.api("POST", `/users/${target.userId}/reactivate`));
      },
      // The reactivated user rejoins their groups (level 303).
      { types: ["realm_user", "user_group"], keys: [...keys, "realm_user_groups"] },
    );
  });

  test("realm_user: the user's own role change updates is_moderator", async () => {
    const u = await newUser(srv);
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("PATCH", `/users/${u.userId}`, { role: 300 }));
      },
      {
        types: ["realm_user", "user_group"],
        keys: ["realm_users", "is_moderator", "is_admin", "is_owner", "is_guest"],
      },
    );
  });

  test("realm_bot: create, rename, deactivate", async () => {
    const admin = await newUser(srv, 200);
    let botId = 0;
    await verifyAction(
      srv,
      admin,
      async () => {
        botId = (await ok(srv.api("POST", "/bots", { full_name: uniq("Bot "), short_name: uniq("bot") })))
          .user_id;
      },
      {
        types: ["realm_bot", "realm_user", "user_group"],
        keys: ["realm_bots", "realm_users", "realm_user_groups"],
      },
    );
    await verifyAction(
      srv,
      admin,
      async () => {
        await ok(srv.api("PATCH", `/bots/${botId}`, { full_name: uniq("Renamed bot ") }));
      },
      // realm_user only since feature level 474: bot objects carry no name.
      { types: ["realm_user"], keys: ["realm_bots", "realm_users"] },
    );
    await verifyAction(
      srv,
      admin,
      async () => {
        await ok(srv.api("DELETE", `/bots/${botId}`));
      },
      { types: ["realm_user"], keys: ["realm_bots", "realm_users", "realm_non_active_users"] },
    );
  });

  test("custom profile data: realm_user update", async () => {
    const u = await newUser(srv);
    const field = (await ok(srv.api("POST", "/realm/profile_fields", { name: uniq("Team "), field_type: 1 })))
      .id;
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("PATCH", "/users/me/profile_data", { data: [{ id: field, value: "Platform" }] }, u));
      },
      { types: ["realm_user"], keys: ["realm_users"] },
    );
  });
});

describe("verify_action: a user's own lists", () => {
  test("alert_words: add and remove", async () => {
    const u = await newUser(srv);
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("POST", "/users/me/alert_words", { alert_words: ["deploy", "pager"] }, u));
        await ok(srv.api("DELETE", "/users/me/alert_words", { alert_words: ["pager"] }, u));
      },
      { types: ["alert_words"], keys: ["alert_words"] },
    );
  });

  test("muted_users: mute and unmute", async () => {
    const u = await newUser(srv);
    const other = await newUser(srv);
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("POST", `/users/me/muted_users/${other.userId}`, {}, u));
      },
      { types: ["muted_users"], keys: ["muted_users"] },
    );
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("DELETE", `/users/me/muted_users/${other.userId}`, {}, u));
      },
      { types: ["muted_users"], keys: ["muted_users"] },
    );
  });

  test("drafts: create, edit, delete", async () => {
    const u = await newUser(srv);
    let id = 0;
    await verifyAction(
      srv,
      u,
      async () => {
        const r = await ok(
          srv.api(
            "POST",
            "/drafts",
            {
              drafts: [
                {
                  type: "private",
                  to: [owner.userId],
                  topic: "",
                  content: "draft one",
                  timestamp: 1700000000,
                },
              ],
            },
            u,
          ),
        );
        id = r.ids[0];
      },
      { types: ["drafts"], keys: ["drafts"] },
    );
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(
          srv.api(
            "PATCH",
            `/drafts/${id}`,
            {
              draft: {
                type: "private",
                to: [owner.userId],
                topic: "",
                content: "draft two",
                timestamp: 1700000100,
              },
            },
            u,
          ),
        );
        await ok(srv.api("DELETE", `/drafts/${id}`, {}, u));
      },
      { types: ["drafts"], keys: ["drafts"] },
    );
  });

  test("saved_snippets: create, edit, delete", async () => {
    const u = await newUser(srv);
    await verifyAction(
      srv,
      u,
      async () => {
        const id = (await ok(srv.api("POST", "/saved_snippets", { title: "Greeting", content: "Hello!" }, u)))
          .saved_snippet_id;
        await ok(srv.api("PATCH", `/saved_snippets/${id}`, { content: "Hello there!" }, u));
        const other = (await ok(srv.api("POST", "/saved_snippets", { title: "Bye", content: "Bye!" }, u)))
          .saved_snippet_id;
        await ok(srv.api("DELETE", `/saved_snippets/${other}`, {}, u));
      },
      { types: ["saved_snippets"], keys: ["saved_snippets"] },
    );
  });

  test("scheduled_messages: create, edit, delete", async () => {
    const u = await newUser(srv);
    const later = Math.floor(Date.now() / 1000) + 3600;
    await verifyAction(
      srv,
      u,
      async () => {
        const a = (
          await ok(
            srv.api(
              "POST",
              "/scheduled_messages",
              {
                type: "direct",
                to: JSON.stringify([owner.userId]),
                content: "later",
                scheduled_delivery_timestamp: later,
              },
              u,
            ),
          )
        ).scheduled_message_id;
        const b = (
          await ok(
            srv.api(
              "POST",
              "/scheduled_messages",
              {
                type: "direct",
                to: JSON.stringify([owner.userId]),
                content: "sooner",
                scheduled_delivery_timestamp: later - 60,
              },
              u,
            ),
          )
        ).scheduled_message_id;
        await ok(srv.api("PATCH", `/scheduled_messages/${a}`, { content: "later, edited" }, u));
        await ok(srv.api("DELETE", `/scheduled_messages/${b}`, {}, u));
      },
      { types: ["scheduled_messages"], keys: ["scheduled_messages"] },
    );
  });

  test("user_topic and muted_topics: mute, follow, reset", async () => {
    const u = await newUser(srv);
    const name = uniq("topics");
    const id = await channel(name, [u.userId]);
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("POST", "/user_topics", { stream_id: id, topic: "noise", visibility_policy: 1 }, u));
        await ok(srv.api("POST", "/user_topics", { stream_id: id, topic: "news", visibility_policy: 3 }, u));
        await ok(srv.api("POST", "/user_topics", { stream_id: id, topic: "noise", visibility_policy: 0 }, u));
      },
      { types: ["user_topic", "muted_topics"], keys: ["user_topics", "muted_topics"] },
    );
  });

  test("presence: an update reaches other users' presences", async () => {
    const watcher = await newUser(srv);
    const active = await newUser(srv);
    const params = { client_capabilities: { simplified_presence_events: true } };
    await verifyAction(
      srv,
      watcher,
      async () => {
        await ok(srv.api("POST", "/users/me/presence", { status: "active", new_user_input: true }, active));
      },
      {
        types: ["presence"],
        keys: ["presences"],
        register: params,
        check(events) {
          assert.ok(
            events.some((e) => e.presences && e.presences[String(active.userId)]),
            JSON.stringify(events),
          );
        },
      },
    );
  });
});

describe("verify_action: devices", () => {
  test("device: register and remove a client device", async () => {
    const u = await newUser(srv);
    let id = 0;
    await verifyAction(
      srv,
      u,
      async () => {
        id = (await ok(srv.api("POST", "/register_client_device", {}, u))).device_id;
        const other = (await ok(srv.api("POST", "/register_client_device", {}, u))).device_id;
        await ok(srv.api("POST", "/remove_client_device", { device_id: other }, u));
      },
      { types: ["device"], keys: ["devices"] },
    );
    assert.ok(id > 0);
  });
});

describe("verify_action: channels and groups", () => {
  test("subscription: add, property update, remove", async () => {
    const u = await newUser(srv);
    const name = uniq("subs");
    const keys = ["subscriptions", "unsubscribed", "never_subscribed"];
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] }, u));
      },
      { types: ["subscription", "stream"], keys: [...keys, "streams"] },
    );
    const id = (await ok(srv.api("GET", "/get_stream_id", { stream: name }, u))).stream_id;
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(
          srv.api(
            "POST",
            "/users/me/subscriptions/properties",
            {
              subscription_data: [
                { stream_id: id, property: "color", value: "#abcdef" },
                { stream_id: id, property: "pin_to_top", value: true },
              ],
            },
            u,
          ),
        );
      },
      { types: ["subscription"], keys },
    );
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("DELETE", "/users/me/subscriptions", { subscriptions: [name] }, u));
      },
      { types: ["subscription"], keys },
    );
  });

  test("subscription peer_add and peer_remove reach other subscribers", async () => {
    const u = await newUser(srv);
    const peer = await newUser(srv);
    const name = uniq("peers");
    await channel(name, [u.userId]);
    const keys = ["subscriptions", "unsubscribed", "never_subscribed"];
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] }, peer));
        await ok(srv.api("DELETE", "/users/me/subscriptions", { subscriptions: [name] }, peer));
      },
      { types: ["subscription"], keys },
    );
  });

  test("stream: create, update, archive", async () => {
    const u = await newUser(srv);
    const name = uniq("chan");
    let id = 0;
    const keys = ["streams", "subscriptions", "unsubscribed", "never_subscribed"];
    await verifyAction(
      srv,
      u,
      async () => {
        id = await channel(name);
      },
      // Everyone who can see a public channel's subscribers hears its creator join.
      { types: ["stream", "subscription"], keys },
    );
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("PATCH", `/streams/${id}`, { description: "What we talk about" }));
      },
      { types: ["stream"], keys },
    );
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("DELETE", `/streams/${id}`));
      },
      { types: ["stream"], optional: ["subscription"], keys },
    );
  });

  test("stream: archiving, for a client that keeps archived channels", async () => {
    const u = await newUser(srv);
    const id = await channel(uniq("arch"), [u.userId]);
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("DELETE", `/streams/${id}`));
      },
      {
        types: ["stream"],
        optional: ["subscription"],
        keys: ["streams", "subscriptions", "unsubscribed", "never_subscribed"],
        register: { client_capabilities: { archived_channels: true } },
      },
    );
    const capable = await ok(
      srv.api("POST", "/register", { client_capabilities: { archived_channels: true } }, u),
    );
    const sub = capable.subscriptions.find((x: Ev) => x.stream_id === id);
    assert.equal(sub?.is_archived, true);
    // Feature level 378: `streams` keeps it too, for these clients.
    assert.equal(capable.streams.find((x: Ev) => x.stream_id === id)?.is_archived, true);
    const legacy = await ok(srv.api("POST", "/register", {}, u));
    assert.equal(
      legacy.subscriptions.some((x: Ev) => x.stream_id === id),
      false,
    );
  });

  test("user_group: create, update, members, subgroups, deactivate", async () => {
    const u = await newUser(srv);
    const a = await newUser(srv);
    const b = await newUser(srv);
    let g = 0;
    let h = 0;
    await verifyAction(
      srv,
      u,
      async () => {
        g = (
          await ok(
            srv.api("POST", "/user_groups/create", {
              name: uniq("grp"),
              description: "d",
              members: [a.userId],
            }),
          )
        ).group_id;
        h = (
          await ok(
            srv.api("POST", "/user_groups/create", {
              name: uniq("sub"),
              description: "s",
              members: [b.userId],
            }),
          )
        ).group_id;
      },
      { types: ["user_group"], keys: ["realm_user_groups"] },
    );
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("PATCH", `/user_groups/${g}`, { description: "changed" }));
        await ok(srv.api("POST", `/user_groups/${g}/members`, { add: [b.userId], delete: [a.userId] }));
        await ok(srv.api("POST", `/user_groups/${g}/subgroups`, { add: [h] }));
        await ok(srv.api("POST", `/user_groups/${g}/subgroups`, { delete: [h] }));
        await ok(srv.api("POST", `/user_groups/${h}/deactivate`));
      },
      { types: ["user_group"], keys: ["realm_user_groups"] },
    );
  });
});

describe("verify_action: messages", () => {
  test("update_message: a topic move carries unread messages along", async () => {
    const u = await newUser(srv);
    const id = await channel(uniq("moves"), [u.userId]);
    const m = (
      await ok(srv.api("POST", "/messages", { type: "stream", to: id, topic: "before", content: "move me" }))
    ).id;
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("PATCH", `/messages/${m}`, { topic: "after", propagate_mode: "change_all" }));
      },
      {
        types: ["update_message", "message"],
        keys: ["unread_msgs"],
        // A topic move's Notification Bot post arrives as a message; its unread row is the bot's business.
        check(events) {
          const move = events.find((e) => e.type === "update_message");
          assert.deepEqual(move.message_ids, [m]);
          assert.equal(move.subject, "after");
        },
      },
    );
  });

  test("delete_message: the deleted message leaves unread counts", async () => {
    const u = await newUser(srv);
    const id = await channel(uniq("deletes"), [u.userId]);
    const m = (
      await ok(srv.api("POST", "/messages", { type: "stream", to: id, topic: "t", content: "delete me" }))
    ).id;
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("DELETE", `/messages/${m}`));
      },
      // Deleting the channel's only message also moves its first_message_id (level 256).
      { types: ["delete_message", "stream"], keys: ["unread_msgs", "subscriptions"] },
    );
  });
});

describe("verify_action: events without register state", () => {
  test("reaction, typing, typing_edit_message, attachment, invites_changed, realm_export", async () => {
    const u = await newUser(srv, 200);
    const other = await newUser(srv);
    const id = await channel(uniq("misc"), [u.userId, other.userId]);
    const m = (
      await ok(srv.api("POST", "/messages", { type: "stream", to: id, topic: "t", content: "react" }))
    ).id;
    const events = await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("POST", `/messages/${m}/reactions`, { emoji_name: "smile" }, other));
        await ok(
          srv.api("POST", "/typing", { op: "start", type: "stream", stream_id: id, topic: "t" }, other),
        );
        // Only the sender may edit, so only the sender's edit typing is announced.
        await ok(srv.api("POST", `/messages/${m}/typing`, { op: "start" }));
        const up = await uploadFiles(srv.baseUrl, u, [{ data: Buffer.from("notes"), filename: "notes.txt" }]);
        assert.equal(up.status, 200, JSON.stringify(up.body));
        await ok(
          srv.api("POST", "/invites", { invitee_emails: `${uniq("inv")}@example.com`, stream_ids: "[]" }, u),
        );
      },
      {
        types: ["reaction", "typing", "typing_edit_message", "attachment", "invites_changed"],
        keys: ["unread_msgs"],
        // Channel typing reaches only clients that declare they handle it.
        register: { client_capabilities: { stream_typing_notifications: true } },
      },
    );
    const reaction = events.find((e) => e.type === "reaction");
    assert.equal(reaction.op, "add");
    assert.equal(reaction.message_id, m);
    assert.equal(reaction.user_id, other.userId);
    const attachment = events.find((e) => e.type === "attachment");
    assert.equal(attachment.op, "add");
    assert.equal(attachment.attachment.name, "notes.txt");
    const owners = await verifyAction(
      srv,
      owner,
      async () => {
        await ok(srv.api("POST", "/export/realm", {}));
      },
      { types: ["realm_export"], keys: [] },
    );
    assert.ok(owners.some((e) => e.type === "realm_export"));
  });
});

describe("verify_action: folders, views, reminders, export consent, legacy settings", () => {
  test("channel_folder: create, update, reorder", async () => {
    const u = await newUser(srv);
    await verifyAction(
      srv,
      u,
      async () => {
        const id = (
          await ok(srv.api("POST", "/channel_folders/create", { name: uniq("Folder "), description: "" }))
        ).channel_folder_id;
        await ok(srv.api("PATCH", `/channel_folders/${id}`, { description: "**bold**" }));
        const all = (await ok(srv.api("GET", "/channel_folders", { include_archived: true })))
          .channel_folders;
        await ok(
          srv.api("PATCH", "/channel_folders", {
            order: JSON.stringify([id, ...all.map((f: Ev) => f.id).filter((x: number) => x !== id)]),
          }),
        );
      },
      { types: ["channel_folder"], keys: ["channel_folders"] },
    );
  });

  test("navigation_view: add, update, remove", async () => {
    const u = await newUser(srv);
    const frag = `narrow/channel/${++seq}-views`;
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("POST", "/navigation_views", { fragment: "inbox", is_pinned: false }, u));
        await ok(srv.api("POST", "/navigation_views", { fragment: frag, is_pinned: true, name: "Views" }, u));
        await ok(srv.api("PATCH", "/navigation_views/inbox", { is_pinned: true }, u));
        await ok(srv.api("DELETE", `/navigation_views/${encodeURIComponent(frag)}`, {}, u));
      },
      { types: ["navigation_view"], keys: ["navigation_views"] },
    );
  });

  test("reminders: add and remove", async () => {
    const u = await newUser(srv);
    const dm = (
      await ok(srv.api("POST", "/messages", { type: "private", to: [u.userId], content: "remind me" }, u))
    ).id;
    const at = Math.floor(Date.now() / 1000) + 3600;
    let first = 0;
    await verifyAction(
      srv,
      u,
      async () => {
        first = (
          await ok(
            srv.api("POST", "/reminders", { message_id: dm, scheduled_delivery_timestamp: at + 60 }, u),
          )
        ).reminder_id;
        await ok(srv.api("POST", "/reminders", { message_id: dm, scheduled_delivery_timestamp: at }, u));
      },
      { types: ["reminders"], keys: ["reminders"] },
    );
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(srv.api("DELETE", `/reminders/${first}`, {}, u));
      },
      { types: ["reminders"], keys: ["reminders"] },
    );
  });

  test("realm_export_consent: an administrator hears a member's changed consent", async () => {
    const admin = await newUser(srv, 200);
    const member = await newUser(srv);
    const events = await verifyAction(
      srv,
      admin,
      async () => {
        await ok(srv.api("PATCH", "/settings", { allow_private_data_export: true }, member));
      },
      // Zulip keeps no register state for it: the consents are read with GET /export/realm/consents.
      { types: ["realm_export_consent"], keys: [] },
    );
    const e = events.find((x) => x.type === "realm_export_consent");
    assert.equal(e.user_id, member.userId);
    assert.equal(e.consented, true);
  });

  test("update_display_settings and update_global_notifications: a client without user_settings_object", async () => {
    const u = await newUser(srv);
    await verifyAction(
      srv,
      u,
      async () => {
        await ok(
          srv.api(
            "PATCH",
            "/settings",
            { twenty_four_hour_time: true, left_side_userlist: true, enable_desktop_notifications: false },
            u,
          ),
        );
      },
      {
        types: ["update_display_settings", "update_global_notifications", "user_settings"],
        keys: [
          "twenty_four_hour_time",
          "left_side_userlist",
          "enable_desktop_notifications",
          "user_settings",
        ],
        register: { client_capabilities: { user_settings_object: false } },
      },
    );
  });
});
