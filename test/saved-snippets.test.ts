// Black-box HTTP tests of saved snippets: POST/GET /saved_snippets,
// PATCH/DELETE /saved_snippets/{id}, their events and /register.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertError, assertSuccess, eventsUntil, newUser, openQueue, useEmbedded } from "./support/index.ts";

const srv = useEmbedded();

describe("saved snippets", () => {
  test("create, list, edit and delete, with events to the owner only", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const q = await openQueue(srv, me, ["saved_snippets"]);
    const qOther = await openQueue(srv, other, ["saved_snippets"]);
    const before = Math.floor(Date.now() / 1000);
    const created = await srv.api(
      "POST",
      "/saved_snippets",
      { title: "  Welcome  ", content: " **Hi** there " },
      me,
    );
    assertSuccess(created);
    const id = created.body.saved_snippet_id as number;
    assert.equal(typeof id, "number");
    const list = await srv.api("GET", "/saved_snippets", {}, me);
    assertSuccess(list);
    assert.equal(list.body.saved_snippets.length, 1);
    const s = list.body.saved_snippets[0];
    assert.deepEqual(Object.keys(s).sort(), ["content", "date_created", "id", "title"]);
    assert.equal(s.id, id);
    assert.equal(s.title, "Welcome");
    assert.equal(s.content, "**Hi** there");
    assert.ok(s.date_created >= before && s.date_created <= Math.ceil(Date.now() / 1000));
    // Another user sees none of it.
    assert.deepEqual((await srv.api("GET", "/saved_snippets", {}, other)).body.saved_snippets, []);

    assertSuccess(await srv.api("PATCH", `/saved_snippets/${id}`, { title: "Hello" }, me));
    assertSuccess(await srv.api("PATCH", `/saved_snippets/${id}`, { content: "New body" }, me));
    assertSuccess(await srv.api("PATCH", `/saved_snippets/${id}`, {}, me)); // no change, no event
    const after = (await srv.api("GET", "/saved_snippets", {}, me)).body.saved_snippets[0];
    assert.deepEqual(after, { id, title: "Hello", content: "New body", date_created: s.date_created });
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["saved_snippets"] }, me);
    assert.deepEqual(reg.body.saved_snippets, [after]);

    assertSuccess(await srv.api("DELETE", `/saved_snippets/${id}`, {}, me));
    assert.deepEqual((await srv.api("GET", "/saved_snippets", {}, me)).body.saved_snippets, []);

    const evs = await eventsUntil(srv, q, (e) => e.length >= 4);
    assert.deepEqual(
      evs.map((e) => e.op),
      ["add", "update", "update", "remove"],
    );
    assert.deepEqual(evs[0].saved_snippet, s);
    assert.deepEqual(evs[1].saved_snippet, { ...s, title: "Hello" });
    assert.deepEqual(evs[2].saved_snippet, after);
    assert.equal(evs[3].saved_snippet_id, id);
    assert.deepEqual(await eventsUntil(srv, qOther, () => false), []);
  });

  test("errors: lengths, missing fields, unknown and foreign ids change nothing", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const mine = await srv.api("POST", "/saved_snippets", { title: "Mine", content: "Body" }, me);
    const id = mine.body.saved_snippet_id;
    const cases: [Record<string, unknown>, string, string?][] = [
      [{ title: "T" }, "Missing 'content' argument", "REQUEST_VARIABLE_MISSING"],
      [{ content: "C" }, "Missing 'title' argument", "REQUEST_VARIABLE_MISSING"],
      [{ title: "   ", content: "C" }, "title is too short."],
      [{ title: "T", content: " \n " }, "content is too short."],
      [{ title: "x".repeat(61), content: "C" }, "title is too long (limit: 60 characters)"],
      [{ title: "T", content: "x".repeat(10001) }, "content is too long (limit: 10000 characters)"],
    ];
    for (const [params, msg, code] of cases) {
      assertError(await srv.api("POST", "/saved_snippets", params, me), msg, code ?? "BAD_REQUEST");
    }
    // Limits count characters after stripping.
    assertSuccess(
      await srv.api(
        "POST",
        "/saved_snippets",
        { title: ` ${"é".repeat(60)} `, content: "x".repeat(10000) },
        me,
      ),
    );

    const notFound = "Saved snippet does not exist.";
    assertError(
      await srv.api("PATCH", "/saved_snippets/999999", { title: "X" }, me),
      notFound,
      "BAD_REQUEST",
      404,
    );
    assertError(await srv.api("DELETE", "/saved_snippets/999999", {}, me), notFound, "BAD_REQUEST", 404);
    assertError(
      await srv.api("PATCH", `/saved_snippets/${id}`, { title: "Stolen" }, other),
      notFound,
      "BAD_REQUEST",
      404,
    );
    assertError(await srv.api("DELETE", `/saved_snippets/${id}`, {}, other), notFound, "BAD_REQUEST", 404);
    assertError(await srv.api("PATCH", `/saved_snippets/${id}`, { title: "" }, me), "title is too short.");
    assertError(
      await srv.api("PATCH", `/saved_snippets/${id}`, { content: "x".repeat(10001) }, me),
      "content is too long (limit: 10000 characters)",
    );
    assert.equal((await srv.api("PATCH", "/saved_snippets/abc", { title: "X" }, me)).status, 404);
    assert.equal((await srv.api("GET", "/saved_snippets", {}, null)).status, 401);

    const list = (await srv.api("GET", "/saved_snippets", {}, me)).body.saved_snippets;
    assert.equal(list.length, 2);
    assert.equal(list[0].title, "Mine");
    assert.equal(list[0].content, "Body");
  });
});
