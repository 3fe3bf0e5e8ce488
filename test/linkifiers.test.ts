// Linkifiers: GET /realm/linkifiers, POST /realm/filters, PATCH and DELETE
// /realm/filters/{id}, PATCH /realm/linkifiers, the realm_linkifiers events
// and /register key, and the pure applyLinkifiers used by the renderer.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { applyLinkifiers, compilePattern } from "../actors/linkify.ts";
import type { Obj } from "../actors/types.ts";
import { err, newUser, ok, useEmbedded, type Creds } from "./support/index.ts";

const srv = useEmbedded();

async function list(auth: Creds = srv.owner): Promise<Obj[]> {
  const r = await srv.api("GET", "/realm/linkifiers", {}, auth);
  ok(r);
  return r.body.linkifiers;
}

async function add(params: Record<string, unknown>): Promise<number> {
  const r = await srv.api("POST", "/realm/filters", params);
  ok(r);
  assert.equal(typeof r.body.id, "number");
  return r.body.id;
}

async function clear(): Promise<void> {
  for (const l of await list()) ok(await srv.api("DELETE", `/realm/filters/${l.id}`));
}

describe("linkifiers - routes", () => {
  test("add, list, update, delete; Python named groups and RFC 6570 templates", async () => {
    await clear();
    const id = await add({
      pattern: "#(?P<id>[0-9]+)",
      url_template: "https://github.com/zulip/zulip/issues/{id}",
      example_input: "#123",
      reverse_template: "#{id}",
      alternative_url_templates: ["https://github.com/zulip/zulip/pull/{id}"],
    });
    const m = await newUser(srv);
    assert.deepEqual(await list(m), [
      {
        id,
        pattern: "#(?P<id>[0-9]+)",
        url_template: "https://github.com/zulip/zulip/issues/{id}",
        example_input: "#123",
        reverse_template: "#{id}",
        alternative_url_templates: ["https://github.com/zulip/zulip/pull/{id}"],
      },
    ]);
    ok(
      await srv.api("PATCH", `/realm/filters/${id}`, {
        pattern: "T(?P<id>[0-9]+)",
        url_template: "https://trac.example.com/ticket/{id}",
        example_input: "  ",
      }),
    );
    const [l] = await list();
    assert.equal(l!.pattern, "T(?P<id>[0-9]+)");
    assert.equal(l!.example_input, null, "blank example_input resets to null");
    assert.equal(l!.reverse_template, null);
    assert.deepEqual(l!.alternative_url_templates, []);
    ok(await srv.api("DELETE", `/realm/filters/${id}`));
    assert.deepEqual(await list(), []);
    err(await srv.api("DELETE", `/realm/filters/${id}`), "Filter not found");
    err(
      await srv.api("PATCH", `/realm/filters/${id}`, { pattern: "a", url_template: "https://x" }),
      "Linkifier not found.",
    );
    err(await srv.api("DELETE", "/realm/filters/abc"), "Not Found", "NOT_FOUND", 404);
  });

  test("validation errors with Zulip's texts; nothing stored", async () => {
    await clear();
    const post = (params: Record<string, unknown>) => srv.api("POST", "/realm/filters", params);
    const base = { pattern: "#(?P<id>[0-9]+)", url_template: "https://x.example/{id}" };
    err(
      await post({ url_template: base.url_template }),
      "Missing 'pattern' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    err(await post({ pattern: base.pattern }), "Missing 'url_template' argument", "REQUEST_VARIABLE_MISSING");
    let r = await post({ ...base, url_template: "https://x.example/{id" });
    err(r, "Invalid URL template.");
    assert.deepEqual(r.body.errors, { url_template: ["Invalid URL template."] });
    err(await post({ ...base, url_template: "https://x.example/}{id}" }), "Invalid URL template.");
    err(await post({ ...base, alternative_url_templates: ["https://y/{"] }), "Invalid URL template.");
    err(
      await post({ ...base, alternative_url_templates: "x" }),
      "alternative_url_templates is not valid JSON",
    );
    err(
      await post({ ...base, alternative_url_templates: [1] }),
      "alternative_url_templates[0] is not a string",
    );
    r = await post({ ...base, pattern: "#(?P<id>[0-9]+" });
    assert.equal(r.status, 400);
    assert.match(r.body.msg, /^Bad regular expression: /);
    err(
      await post({ ...base, pattern: "(?=x)(?P<id>[0-9]+)" }),
      "Bad regular expression: invalid perl operator: (?=",
    );
    err(
      await post({ ...base, pattern: "(?P<id>[0-9]+)\\1" }),
      "Bad regular expression: invalid escape sequence: \\1",
    );
    err(
      await post({ ...base, url_template: "https://x.example/{id}/{other}" }),
      "Group 'other' in URL template is not present in linkifier pattern.",
    );
    err(
      await post({ ...base, url_template: "https://x.example/" }),
      "Group 'id' in linkifier pattern is not present in URL template.",
    );
    err(await post({ ...base, example_input: "abc" }), "Example input does not match the linkifier pattern.");
    err(
      await post({ ...base, reverse_template: "#{id}" }),
      "Parameter 'Example text' must be set when 'auto-conversion field' is set.",
    );
    err(
      await post({ ...base, example_input: "#12", reverse_template: "#{id}!" }),
      "Example text does not match auto-conversion field.",
    );
    err(
      await post({ ...base, example_input: "#12", reverse_template: "#{id" }),
      "Invalid auto-conversion field: missing '}' character.",
    );
    err(
      await post({ ...base, example_input: "#12", reverse_template: "#{}" }),
      "Invalid auto-conversion field: empty field name.",
    );
    err(
      await post({ ...base, example_input: "#12", reverse_template: "#{nope}" }),
      "Group 'nope' in auto-conversion field is not present in linkifier pattern.",
    );
    assert.deepEqual(await list(), []);
    // '{{' and '}}' are literal braces in the reverse template.
    await add({
      pattern: "\\{(?P<id>[0-9]+)\\}",
      url_template: "https://x.example/{id}",
      example_input: "{7}",
      reverse_template: "{{{id}}}",
    });
    err(
      await post({ pattern: "\\{(?P<id>[0-9]+)\\}", url_template: "https://y.example/{id}" }),
      "Realm filter with this Realm and Pattern already exists.",
    );
    assert.equal((await list()).length, 1);
  });

  test("administrators only; every member may read", async () => {
    await clear();
    const m = await newUser(srv);
    const base = { pattern: "X(?P<id>[0-9]+)", url_template: "https://x.example/{id}" };
    err(
      await srv.api("POST", "/realm/filters", base, m),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    const id = await add(base);
    err(
      await srv.api("PATCH", `/realm/filters/${id}`, base, m),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    err(
      await srv.api("DELETE", `/realm/filters/${id}`, {}, m),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    err(
      await srv.api("PATCH", "/realm/linkifiers", { ordered_linkifier_ids: [id] }, m),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assert.equal((await list(m)).length, 1);
  });

  test("PATCH /realm/linkifiers reorders", async () => {
    await clear();
    const a = await add({ pattern: "A(?P<id>[0-9]+)", url_template: "https://a/{id}" });
    const b = await add({ pattern: "B(?P<id>[0-9]+)", url_template: "https://b/{id}" });
    const c = await add({ pattern: "C(?P<id>[0-9]+)", url_template: "https://c/{id}" });
    assert.deepEqual(
      (await list()).map((l) => l.id),
      [a, b, c],
    );
    ok(await srv.api("PATCH", "/realm/linkifiers", { ordered_linkifier_ids: [c, a, b] }));
    assert.deepEqual(
      (await list()).map((l) => l.id),
      [c, a, b],
    );
    const reorder = (ids: unknown) => srv.api("PATCH", "/realm/linkifiers", { ordered_linkifier_ids: ids });
    err(await reorder([c, a, a]), "The ordered list must not contain duplicated linkifiers");
    err(await reorder([c, a]), "The ordered list must enumerate all existing linkifiers exactly once");
    err(
      await reorder([c, a, b, 9999]),
      "The ordered list must enumerate all existing linkifiers exactly once",
    );
    err(await reorder("x"), "ordered_linkifier_ids is not valid JSON");
    err(
      await srv.api("PATCH", "/realm/linkifiers", {}),
      "Missing 'ordered_linkifier_ids' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assert.deepEqual(
      (await list()).map((l) => l.id),
      [c, a, b],
    );
  });

  test("events and /register follow the linkifier_url_template capability", async () => {
    await clear();
    const m = await newUser(srv);
    const reg = async (caps: Record<string, boolean>) => {
      const r = await srv.api(
        "POST",
        "/register",
        {
          event_types: ["realm_linkifiers"],
          client_capabilities: caps,
          fetch_event_types: ["realm_linkifiers"],
        },
        m,
      );
      ok(r);
      return r.body;
    };
    const modern = await reg({ linkifier_url_template: true });
    const legacy = await reg({});
    const id = await add({ pattern: "E(?P<id>[0-9]+)", url_template: "https://e/{id}" });
    const poll = async (q: Obj) => {
      const r = await srv.api(
        "GET",
        "/events",
        { queue_id: q.queue_id, last_event_id: q.last_event_id, dont_block: true },
        m,
      );
      ok(r);
      return r.body.events as Obj[];
    };
    const ev = await poll(modern);
    assert.equal(ev.length, 1);
    assert.equal(ev[0]!.type, "realm_linkifiers");
    assert.deepEqual(ev[0]!.realm_linkifiers, await list());
    assert.deepEqual(await poll(legacy), []);
    const after1 = await reg({ linkifier_url_template: true });
    assert.deepEqual(after1.realm_linkifiers, [
      {
        id,
        pattern: "E(?P<id>[0-9]+)",
        url_template: "https://e/{id}",
        example_input: null,
        reverse_template: null,
        alternative_url_templates: [],
      },
    ]);
    assert.deepEqual((await reg({})).realm_linkifiers, []);
  });

  test("fuzz: arbitrary patterns and templates never give a 500", async () => {
    await clear();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.constantFrom("(?P<id>", "(?P<id>a)", "[", "(?i)x(?P<id>\\d+)", "(?<id>\\d)", "a{2,1}", "\\"),
        ),
        fc.oneof(fc.string(), fc.constantFrom("https://x/{id}", "{+id}", "{id:3}", "{", "}", "{a,b*}")),
        async (pattern, url_template) => {
          const before = JSON.stringify(await list());
          const r = await srv.api("POST", "/realm/filters", { pattern, url_template });
          assert.ok(r.status === 200 || r.status === 400, JSON.stringify(r.body));
          if (r.status !== 200) assert.equal(JSON.stringify(await list()), before);
        },
      ),
      { numRuns: 120 },
    );
  });
});

describe("linkifiers - applyLinkifiers", () => {
  test("links in order, respects boundaries, expands templates", () => {
    const ls = [
      { pattern: "#(?P<id>[0-9]+)", url_template: "https://x.example/issues/{id}" },
      { pattern: "#(?P<n>[0-9]{2})", url_template: "https://never/{n}" },
      {
        pattern: "(?P<org>[a-z]+)/(?P<repo>[a-z]+)#(?P<num>[0-9]+)",
        url_template: "https://github.com/{org}/{repo}/pull/{num}",
      },
    ];
    assert.deepEqual(applyLinkifiers("see #12, and zulip/zulip#99 or a#5", ls), [
      { text: "see " },
      { text: "#12", url: "https://x.example/issues/12" },
      { text: ", and " },
      { text: "zulip/zulip#99", url: "https://github.com/zulip/zulip/pull/99" },
      { text: " or a#5" },
    ]);
    assert.deepEqual(applyLinkifiers("#12x", ls), [{ text: "#12x" }]);
    assert.deepEqual(applyLinkifiers("(#7)", ls), [
      { text: "(" },
      { text: "#7", url: "https://x.example/issues/7" },
      { text: ")" },
    ]);
    assert.deepEqual(applyLinkifiers("", ls), []);
    // Reserved characters are percent-encoded by simple expansion.
    assert.deepEqual(
      applyLinkifiers("T a/b", [{ pattern: "T (?P<q>\\S+)", url_template: "https://s/?q={q}" }]),
      [{ text: "T a/b", url: "https://s/?q=a%2Fb" }],
    );
  });

  test("pattern translation", () => {
    assert.equal(compilePattern("(?P<id>\\d+)").exec("x12")!.groups!.id, "12");
    assert.ok(compilePattern("(?i)abc").test("ABC"));
    assert.ok(compilePattern("[(?=]").test("="), "a class is not a group");
  });
});
