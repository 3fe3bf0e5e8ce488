// Feature level 89: a settings change sends the legacy
// update_display_settings / update_global_notifications events besides
// user_settings, to queues registered without the user_settings_object
// capability only.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { drain, ok, openQueue, useChat, type Queue, type User } from "./support/index.ts";

const chat = useChat();
let user: User;

before(async () => {
  user = await chat.newUser(400);
});

const queue = (params: Record<string, unknown>): Promise<Queue> => openQueue(chat, user, params);

describe("feature level 89: legacy settings events", () => {
  test("a client without user_settings_object gets both forms; one with it only user_settings", async () => {
    const legacy = await queue({});
    const modern = await queue({ client_capabilities: { user_settings_object: true } });
    const onlyLegacy = await queue({
      event_types: ["update_display_settings", "update_global_notifications"],
    });
    ok(
      await chat.api(
        "PATCH",
        "/settings",
        { default_language: "de", enable_sounds: false, web_mark_read_on_scroll_policy: 2 },
        user,
      ),
    );

    const got = await drain(chat, legacy);
    const byType = (t: string) => got.filter((e) => e.type === t).map(({ id: _id, ...e }) => e);
    assert.deepEqual(
      byType("user_settings")
        .map((e) => e.property)
        .sort(),
      ["default_language", "enable_sounds", "web_mark_read_on_scroll_policy"],
    );
    assert.deepEqual(byType("update_display_settings"), [
      {
        type: "update_display_settings",
        user: user.email,
        setting_name: "default_language",
        setting: "de",
        language_name: "Deutsch",
      },
    ]);
    assert.deepEqual(byType("update_global_notifications"), [
      {
        type: "update_global_notifications",
        user: user.email,
        notification_name: "enable_sounds",
        setting: false,
      },
    ]);

    const mine = await drain(chat, modern);
    assert.deepEqual(mine.map((e) => e.type).sort(), ["user_settings", "user_settings", "user_settings"]);

    // A queue asking for the legacy types alone gets them.
    assert.deepEqual((await drain(chat, onlyLegacy)).map((e) => e.type).sort(), [
      "update_display_settings",
      "update_global_notifications",
    ]);
  });

  test("a timezone change has its legacy display event", async () => {
    const legacy = await queue({ event_types: ["update_display_settings"] });
    ok(await chat.api("PATCH", "/settings", { timezone: "Europe/Paris" }, user));
    assert.deepEqual(
      (await drain(chat, legacy)).map(({ id: _id, ...e }) => e),
      [
        {
          type: "update_display_settings",
          user: user.email,
          setting_name: "timezone",
          setting: "Europe/Paris",
        },
      ],
    );
  });

  test("the away status flips presence_enabled with its legacy event too", async () => {
    const legacy = await queue({ event_types: ["update_global_notifications"] });
    ok(await chat.api("POST", "/users/me/status", { away: true }, user));
    const got = await drain(chat, legacy);
    assert.deepEqual(
      got.map(({ id: _id, ...e }) => e),
      [
        {
          type: "update_global_notifications",
          user: user.email,
          notification_name: "presence_enabled",
          setting: false,
        },
      ],
    );
  });

  test("the event names the user by the API email their visibility gives, as it changes", async () => {
    const legacy = await queue({ event_types: ["update_display_settings"] });
    const users = async (): Promise<string[]> => (await drain(chat, legacy)).map((e) => e.user as string);
    // Everyone may see the address: the real one, twice (the second from what the server kept).
    ok(await chat.api("PATCH", "/settings", { enter_sends: true }, user));
    ok(await chat.api("PATCH", "/settings", { enter_sends: false }, user));
    assert.deepEqual(await users(), [user.email, user.email]);
    // Hidden (admins only) in the same request as a display setting, then alone: the dummy address.
    ok(await chat.api("PATCH", "/settings", { email_address_visibility: 3, enter_sends: true }, user));
    ok(await chat.api("PATCH", "/settings", { enter_sends: false }, user));
    ok(await chat.api("PATCH", "/settings", { timezone: "Asia/Tokyo" }, user));
    const hidden = await users();
    assert.equal(hidden.length, 3);
    assert.match(hidden[1]!, new RegExp(`^user${user.userId}@`));
    assert.equal(hidden[2], hidden[1]);
    // Visible again, with a timezone change in the same request: the real address at once.
    ok(await chat.api("PATCH", "/settings", { email_address_visibility: 1, timezone: "Europe/Paris" }, user));
    ok(await chat.api("PATCH", "/settings", { enter_sends: true }, user));
    assert.deepEqual((await users()).slice(-1), [user.email]);
  });
});
