// Black-box HTTP tests of custom profile fields: GET/POST/PATCH/DELETE
// /realm/profile_fields, reordering, PATCH /users/me/profile_data, profile_data
// in PATCH /users/{id}, profile_data in user objects, events and /register.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  roleMatrix,
  useEmbedded,
} from "./support/index.ts";

const srv = useEmbedded();
let seq = 0;

async function fields(): Promise<{ id: number; name: string; order: number; [k: string]: unknown }[]> {
  const r = await srv.api("GET", "/realm/profile_fields");
  assertSuccess(r);
  return r.body.custom_fields;
}

const names = new Map<number, string>();
function fieldName(id: number): string {
  return names.get(id)!;
}

async function addField(params: Record<string, unknown>): Promise<number> {
  const name = `Field ${++seq}`;
  const r = await srv.api("POST", "/realm/profile_fields", { name, field_type: 1, ...params });
  assertSuccess(r);
  names.set(r.body.id, name);
  return r.body.id;
}

async function profileData(
  userId: number,
): Promise<Record<string, { value: string; rendered_value?: string }>> {
  const r = await srv.api("GET", `/users/${userId}`, { include_custom_profile_fields: true });
  assertSuccess(r);
  return r.body.user.profile_data;
}

const SELECT_DATA = { a: { text: "Apple", order: "1" }, b: { text: "Banana", order: "2" } };

describe("profile fields - definitions", () => {
  test("POST creates a field; GET lists it; custom_profile_fields event and /register", async () => {
    const member = await newUser(srv);
    const q = await openQueue(srv, member, ["custom_profile_fields"]);
    const r = await srv.api("POST", "/realm/profile_fields", {
      name: "  Phone  ",
      hint: "Your number",
      field_type: 1,
      display_in_profile_summary: true,
      required: true,
      editable_by_user: false,
    });
    assertSuccess(r);
    const id = r.body.id as number;
    const f = (await fields()).find((x) => x.id === id)!;
    assert.deepEqual(f, {
      id,
      name: "Phone",
      type: 1,
      hint: "Your number",
      field_data: "",
      order: f.order,
      required: true,
      editable_by_user: false,
      // FL 455 (test/fl-misc.test.ts).
      use_for_user_matching: false,
      display_in_profile_summary: true,
    });
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "custom_profile_fields"));
    const ev = evs.find((x) => x.type === "custom_profile_fields");
    assert.ok(ev.fields.some((x: { id: number }) => x.id === id));
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["custom_profile_fields"] }, member);
    assertSuccess(reg);
    assert.ok(reg.body.custom_profile_fields.some((x: { id: number }) => x.id === id));
    assert.deepEqual(reg.body.custom_profile_field_types.SHORT_TEXT, { id: 1, name: "Text (short)" });
    assert.equal(reg.body.custom_profile_field_types.PRONOUNS.id, 8);
    // Clean up the summary slot for later tests.
    assertSuccess(await srv.api("DELETE", `/realm/profile_fields/${id}`));
  });

  test("select and external account fields keep their field_data; default external accounts get Zulip's name", async () => {
    const sel = await addField({ field_type: 3, field_data: SELECT_DATA });
    const gh = await srv.api("POST", "/realm/profile_fields", {
      field_type: 7,
      field_data: { subtype: "github" },
    });
    assertSuccess(gh);
    const custom = await addField({
      field_type: 7,
      field_data: { subtype: "custom", url_pattern: "https://example.com/u/%(username)s" },
    });
    const all = await fields();
    assert.equal(all.find((x) => x.id === sel)!.field_data, JSON.stringify(SELECT_DATA));
    const g = all.find((x) => x.id === gh.body.id)!;
    assert.equal(g.name, "GitHub username");
    assert.equal(g.field_data, JSON.stringify({ subtype: "github" }));
    assert.equal(
      all.find((x) => x.id === custom)!.field_data,
      JSON.stringify({ subtype: "custom", url_pattern: "https://example.com/u/%(username)s" }),
    );
    assertError(
      await srv.api("PATCH", `/realm/profile_fields/${gh.body.id}`, { name: "Other" }),
      "Default custom field cannot be updated.",
    );
    assertSuccess(
      await srv.api("PATCH", `/realm/profile_fields/${gh.body.id}`, { display_in_profile_summary: true }),
    );
    assertSuccess(
      await srv.api("PATCH", `/realm/profile_fields/${gh.body.id}`, { display_in_profile_summary: false }),
    );
  });

  test("POST errors with Zulip's texts, each creating nothing", async () => {
    const before = (await fields()).length;
    const cases: [Record<string, unknown>, string, string?][] = [
      [{ name: "X" }, "Missing 'field_type' argument", "REQUEST_VARIABLE_MISSING"],
      [{ name: "X", field_type: 99 }, "Invalid field type."],
      [{ name: "X", field_type: "a" }, "field_type is not valid JSON"],
      [{ name: "   ", field_type: 1 }, "Label cannot be blank."],
      [{ name: "x".repeat(41), field_type: 1 }, "name is too long (limit: 40 characters)"],
      [{ name: "X", hint: "h".repeat(81), field_type: 1 }, "hint is too long (limit: 80 characters)"],
      [{ name: "X", field_type: 3, field_data: {} }, "Field must have at least one choice."],
      [{ name: "X", field_type: 3, field_data: [] }, "field_data is not a dict"],
      [
        { name: "X", field_type: 3, field_data: { a: 5 } },
        "field_data contains a value that is not an allowed_type",
      ],
      [
        { name: "X", field_type: 3, field_data: { a: { text: "A" } } },
        "order key is missing from field_data",
      ],
      [
        { name: "X", field_type: 3, field_data: { a: { text: " ", order: "1" } } },
        'field_data["text"] cannot be blank.',
      ],
      [
        {
          name: "X",
          field_type: 3,
          field_data: { a: { text: "A", order: "1" }, b: { text: "A", order: "2" } },
        },
        "Field must not have duplicate choices.",
      ],
      [{ name: "X", field_type: 7, field_data: { subtype: "myspace" } }, "Invalid external account type"],
      [
        { name: "X", field_type: 7, field_data: { subtype: "custom" } },
        "Custom external account must define URL pattern",
      ],
      [
        { name: "X", field_type: 7, field_data: { subtype: "custom", url_pattern: "https://e.com/" } },
        "URL pattern must contain '%(username)s'.",
      ],
      [
        { name: "X", field_type: 6, display_in_profile_summary: true },
        "Field type not supported for display in profile summary.",
      ],
      [{ name: "X", field_type: 1, required: "yes" }, "required is not valid JSON"],
    ];
    for (const [params, msg, code] of cases) {
      assertError(await srv.api("POST", "/realm/profile_fields", params), msg, code ?? "BAD_REQUEST");
    }
    const taken = await addField({});
    const name = (await fields()).find((x) => x.id === taken)!.name;
    assertError(
      await srv.api("POST", "/realm/profile_fields", { name, field_type: 1 }),
      "A field with that label already exists.",
    );
    assert.equal((await fields()).length, before + 1);
  });

  test("at most 2 fields in the profile summary", async () => {
    const a = await addField({ display_in_profile_summary: true });
    const b = await addField({ display_in_profile_summary: true });
    assertError(
      await srv.api("POST", "/realm/profile_fields", {
        name: "Third",
        field_type: 1,
        display_in_profile_summary: true,
      }),
      "Only 2 custom profile fields can be displayed in the profile summary.",
    );
    const c = await addField({});
    assertError(
      await srv.api("PATCH", `/realm/profile_fields/${c}`, { display_in_profile_summary: true }),
      "Only 2 custom profile fields can be displayed in the profile summary.",
    );
    assertSuccess(await srv.api("PATCH", `/realm/profile_fields/${a}`, { display_in_profile_summary: true }));
    for (const id of [a, b, c]) assertSuccess(await srv.api("DELETE", `/realm/profile_fields/${id}`));
  });

  test("PATCH edits a field; DELETE removes it and its values; unknown ids", async () => {
    const id = await addField({ hint: "old" });
    assertSuccess(
      await srv.api("PATCH", `/realm/profile_fields/${id}`, {
        name: "Renamed Field",
        hint: "new",
        required: true,
      }),
    );
    const f = (await fields()).find((x) => x.id === id)!;
    assert.equal(f.name, "Renamed Field");
    assert.equal(f.hint, "new");
    assert.equal(f.required, true);
    assertError(
      await srv.api("PATCH", `/realm/profile_fields/${id}`, { name: "" }),
      "Label cannot be blank.",
    );
    assertError(
      await srv.api("PATCH", "/realm/profile_fields/99999", { name: "Z" }),
      "Field id 99999 not found.",
    );
    assertError(await srv.api("DELETE", "/realm/profile_fields/99999"), "Field id 99999 not found.");
    assert.equal((await fields()).find((x) => x.id === id)!.name, "Renamed Field");

    assertSuccess(await srv.api("PATCH", "/users/me/profile_data", { data: [{ id, value: "hello" }] }));
    assert.equal((await profileData(srv.owner.userId))[id]!.value, "hello");
    assertSuccess(await srv.api("DELETE", `/realm/profile_fields/${id}`));
    assert.ok(!(await fields()).some((x) => x.id === id));
    assert.equal((await profileData(srv.owner.userId))[id], undefined);
  });

  test("PATCH /realm/profile_fields reorders; every field must be listed", async () => {
    const ids = (await fields()).map((f) => f.id);
    const reversed = [...ids].reverse();
    assertSuccess(await srv.api("PATCH", "/realm/profile_fields", { order: reversed }));
    assert.deepEqual(
      (await fields()).map((f) => f.id),
      reversed,
    );
    assertError(
      await srv.api("PATCH", "/realm/profile_fields", { order: reversed.slice(1) }),
      "Invalid order mapping.",
    );
    assertError(await srv.api("PATCH", "/realm/profile_fields", { order: "x" }), "order is not valid JSON");
    assertError(
      await srv.api("PATCH", "/realm/profile_fields", { order: [1.5] }),
      "order[0] is not an integer",
    );
    assert.deepEqual(
      (await fields()).map((f) => f.id),
      reversed,
    );
  });

  test("authorization matrix: only owners and administrators manage fields", async () => {
    const m = await roleMatrix(srv);
    for (const role of ["owner", "admin", "moderator", "member", "guest", "bot"]) {
      const who = m[role]!;
      const existing = await addField({});
      const create = await srv.api(
        "POST",
        "/realm/profile_fields",
        { name: `M ${role} ${++seq}`, field_type: 1 },
        who,
      );
      const patch = await srv.api("PATCH", `/realm/profile_fields/${existing}`, { hint: `by ${role}` }, who);
      const order = await srv.api(
        "PATCH",
        "/realm/profile_fields",
        { order: (await fields()).map((f) => f.id) },
        who,
      );
      const del = await srv.api("DELETE", `/realm/profile_fields/${existing}`, {}, who);
      if (role === "owner" || role === "admin") {
        for (const r of [create, patch, order, del]) assertSuccess(r);
        continue;
      }
      for (const r of [create, patch, order, del]) {
        assertError(r, "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL");
      }
      const still = (await fields()).find((x) => x.id === existing)!;
      assert.equal(still.hint, "");
      // Everyone signed in may read the list.
      assertSuccess(await srv.api("GET", "/realm/profile_fields", {}, who));
    }
  });
});

describe("profile fields - values", () => {
  test("PATCH /users/me/profile_data validates per type and renders text", async () => {
    const short = await addField({ field_type: 1 });
    const long = await addField({ field_type: 2 });
    const sel = await addField({ field_type: 3, field_data: SELECT_DATA });
    const date = await addField({ field_type: 4 });
    const url = await addField({ field_type: 5 });
    const users = await addField({ field_type: 6 });
    const pron = await addField({ field_type: 8 });
    const member = await newUser(srv);
    const friend = await newUser(srv);
    const q = await openQueue(srv, friend, ["realm_user"]);
    const r = await srv.api(
      "PATCH",
      "/users/me/profile_data",
      {
        data: [
          { id: short, value: "**bold**" },
          { id: long, value: "line one\nline two" },
          { id: sel, value: "b" },
          { id: date, value: "2024-02-29" },
          { id: url, value: "https://zulip.com/x" },
          { id: users, value: [friend.userId] },
          { id: pron, value: "they/them" },
        ],
      },
      member,
    );
    assertSuccess(r);
    const pd = await profileData(member.userId);
    assert.deepEqual(pd[short], { value: "**bold**", rendered_value: "<p><strong>bold</strong></p>" });
    assert.deepEqual(pd[long], {
      value: "line one\nline two",
      rendered_value: "<p>line one<br>\nline two</p>",
    });
    assert.deepEqual(pd[sel], { value: "b" });
    assert.deepEqual(pd[date], { value: "2024-02-29" });
    assert.deepEqual(pd[url], { value: "https://zulip.com/x" });
    assert.deepEqual(pd[users], { value: JSON.stringify([friend.userId]) });
    assert.deepEqual(pd[pron], { value: "they/them" });
    const evs = await eventsUntil(srv, q, (e) => e.filter((x) => x.person?.custom_profile_field).length >= 7);
    const cpf = evs.filter(
      (x) => x.type === "realm_user" && x.op === "update" && x.person.custom_profile_field,
    );
    const shortEv = cpf.find((x) => x.person.custom_profile_field.id === short);
    assert.deepEqual(shortEv.person, {
      user_id: member.userId,
      custom_profile_field: { id: short, value: "**bold**", rendered_value: "<p><strong>bold</strong></p>" },
    });
    // Without the flag, no profile_data; /users/me always has it.
    const plain = await srv.api("GET", `/users/${member.userId}`);
    assert.ok(!("profile_data" in plain.body.user));
    assert.equal((await srv.api("GET", "/users/me", {}, member)).body.profile_data[sel].value, "b");
    // /register realm_users carry it.
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["realm_user"] }, friend);
    const me = reg.body.realm_users.find((u: { user_id: number }) => u.user_id === member.userId);
    assert.equal(me.profile_data[date].value, "2024-02-29");

    const gone = await newUser(srv);
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    const bot = await srv.api("POST", "/bots", { full_name: `PF Bot ${++seq}`, short_name: `pfbot${seq}` });
    const cases: [unknown, string][] = [
      [[{ id: 99999, value: "x" }], "Field id 99999 not found."],
      [[{ id: short, value: "x".repeat(51) }], `${fieldName(short)} is too long (limit: 50 characters)`],
      [[{ id: long, value: "x".repeat(501) }], `${fieldName(long)} is too long (limit: 500 characters)`],
      [[{ id: short, value: [1] }], `${fieldName(short)} is not a string`],
      [[{ id: sel, value: "z" }], `'z' is not a valid choice for '${fieldName(sel)}'.`],
      [[{ id: date, value: "2023-02-29" }], `${fieldName(date)} is not a date`],
      [[{ id: date, value: "29/02/2024" }], `${fieldName(date)} is not a date`],
      [[{ id: url, value: "not a url" }], `${fieldName(url)} is not a URL`],
      [[{ id: users, value: "x" }], "User IDs is not a list"],
      [[{ id: users, value: [99999, 99998] }], "Invalid user IDs: 99999, 99998"],
      [[{ id: users, value: [gone.userId] }], `User with ID ${gone.userId} is deactivated`],
      [[{ id: users, value: [bot.body.user_id] }], `User with ID ${bot.body.user_id} is a bot`],
      [[{ id: short, value: 5 }], 'data[0]["value"] is not an allowed_type'],
      [[{ id: "a", value: "x" }], 'data[0]["id"] is not an integer'],
      [[{ value: "x" }], "id key is missing from data[0]"],
      [[{ id: short, value: "x", extra: 1 }], "Unexpected arguments: extra"],
      [{ id: short }, "data is not a list"],
      [["x"], "data[0] is not a dict"],
    ];
    for (const [data, msg] of cases) {
      assertError(await srv.api("PATCH", "/users/me/profile_data", { data }, member), msg);
    }
    assertError(
      await srv.api("PATCH", "/users/me/profile_data", {}, member),
      "Missing 'data' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("PATCH", "/users/me/profile_data", { data: "[" }, member),
      "data is not valid JSON",
    );
    // Nothing changed, and a batch with one bad entry changed nothing either.
    assertError(
      await srv.api(
        "PATCH",
        "/users/me/profile_data",
        {
          data: [
            { id: short, value: "ok" },
            { id: date, value: "bad" },
          ],
        },
        member,
      ),
      `${fieldName(date)} is not a date`,
    );
    assert.deepEqual(await profileData(member.userId), pd);
    for (const id of [short, long, sel, date, url, users, pron]) {
      assertSuccess(await srv.api("DELETE", `/realm/profile_fields/${id}`));
    }
  });

  test("fields not editable by users: only administrators change them, also through PATCH /users/{id}", async () => {
    const locked = await addField({ editable_by_user: false });
    const member = await newUser(srv);
    const msg = "You are not allowed to change this field. Contact an administrator to update it.";
    assertError(
      await srv.api("PATCH", "/users/me/profile_data", { data: [{ id: locked, value: "x" }] }, member),
      msg,
    );
    assert.equal((await profileData(member.userId))[locked], undefined);
    // An administrator sets it for the member, then clears it with an empty value.
    assertSuccess(
      await srv.api("PATCH", `/users/${member.userId}`, {
        profile_data: [{ id: locked, value: "set by admin" }],
      }),
    );
    assert.equal((await profileData(member.userId))[locked]!.value, "set by admin");
    assertSuccess(
      await srv.api("PATCH", `/users/${member.userId}`, { profile_data: [{ id: locked, value: null }] }),
    );
    assert.equal((await profileData(member.userId))[locked], undefined);
    assertError(
      await srv.api("PATCH", `/users/${member.userId}`, { profile_data: [{ id: 99999, value: "x" }] }),
      "Field id 99999 not found.",
    );
    // A member may not use PATCH /users/{id} on someone else.
    const other = await newUser(srv);
    assertError(
      await srv.api(
        "PATCH",
        `/users/${other.userId}`,
        { profile_data: [{ id: locked, value: "x" }] },
        member,
      ),
      "Insufficient permission",
    );
    // DELETE /users/me/profile_data removes the caller's own values.
    const open = await addField({});
    assertSuccess(
      await srv.api("PATCH", "/users/me/profile_data", { data: [{ id: open, value: "v" }] }, member),
    );
    const q = await openQueue(srv, other, ["realm_user"]);
    assertError(await srv.api("DELETE", "/users/me/profile_data", { data: [locked] }, member), msg);
    assertError(
      await srv.api("DELETE", "/users/me/profile_data", { data: [open, 99999] }, member),
      "Field id 99999 not found.",
    );
    assertError(
      await srv.api("DELETE", "/users/me/profile_data", { data: ["x"] }, member),
      "data[0] is not an integer",
    );
    assertError(await srv.api("DELETE", "/users/me/profile_data", { data: 5 }, member), "data is not a list");
    assert.equal((await profileData(member.userId))[open]!.value, "v");
    assertSuccess(await srv.api("DELETE", "/users/me/profile_data", { data: [open] }, member));
    assert.equal((await profileData(member.userId))[open], undefined);
    assertSuccess(await srv.api("DELETE", "/users/me/profile_data", { data: [open] }, member)); // already gone: no-op
    const evs = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.deepEqual(evs[0].person, {
      user_id: member.userId,
      custom_profile_field: { id: open, value: null },
    });
    assertSuccess(await srv.api("DELETE", `/realm/profile_fields/${open}`));
    // Bots have no profile data of their own.
    const m = await roleMatrix(srv);
    assertError(
      await srv.api("PATCH", "/users/me/profile_data", { data: [{ id: locked, value: "x" }] }, m.bot!),
      "This endpoint does not accept bot requests.",
    );
    // Administrators may change non-editable fields on their own profile.
    assertSuccess(
      await srv.api("PATCH", "/users/me/profile_data", { data: [{ id: locked, value: "mine" }] }, m.admin!),
    );
    assertSuccess(await srv.api("DELETE", `/realm/profile_fields/${locked}`));
  });
});
