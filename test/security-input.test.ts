// Hostile input over HTTP: every user string is processed in linear time
// (a large adversarial input answers in under a second), linkifier
// patterns are re2 (refused where re2 refuses), linkifier URL templates
// only produce http(s) or relative URLs, and no rendered href has a
// dangerous scheme, whatever made it.
//
// The server runs in its own process: a request that blocks its event loop
// must not block this one, so the 5 s client timeout can fail the test.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startProc, type Proc } from "../bench/procs.ts";
import { basicAuth, formEncode, freePort, makeApi, type ApiResult, type Creds } from "./support/index.ts";

const OWNER = { email: "owner@example.com", password: "owner-password-1" };
/** The bound for one adversarial request. */
const FAST_MS = 1000;
/** The client gives up here, so a blocked server fails the test instead of hanging it. */
const CLIENT_TIMEOUT_MS = 5000;

let dir: string;
let server: Proc;
let base: string;
let owner: Creds;
let seq = 0;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "security-input-"));
  const port = await freePort();
  server = await startProc(
    "embedded",
    "server.ts",
    {
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dir,
      OWNER_EMAIL: OWNER.email,
      OWNER_PASSWORD: OWNER.password,
      REALM_NAME: "Security Org",
      EXTERNAL_HOST: "localhost",
      RATE_LIMIT_PER_MINUTE: "0",
    },
    /listening on port/,
  );
  base = `http://127.0.0.1:${port}`;
  const key = await makeApi(base, null)("POST", "/fetch_api_key", {
    username: OWNER.email,
    password: OWNER.password,
  });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  owner = { email: OWNER.email, apiKey: key.body.api_key };
});

after(async () => {
  await server?.stop("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** One request with a client timeout; `ms` is its wall-clock time. */
async function call(
  method: string,
  path: string,
  params: Record<string, unknown> = {},
): Promise<ApiResult & { ms: number }> {
  const headers: Record<string, string> = { authorization: basicAuth(owner) };
  let url = `${base}/api/v1${path}`;
  let body: string | undefined;
  if (method === "GET") url += `?${formEncode(params)}`;
  else {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = formEncode(params);
  }
  const t0 = performance.now();
  const res = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
  const text = await res.text();
  const ms = performance.now() - t0;
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null, ms };
}

function ok(r: ApiResult): ApiResult["body"] {
  assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
  assert.equal(r.body.result, "success");
  return r.body;
}

function fast(r: { ms: number }, what: string): void {
  assert.ok(r.ms < FAST_MS, `${what} took ${Math.round(r.ms)} ms`);
}

function refused(r: ApiResult, msg: string): void {
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.result, "error");
  assert.equal(r.body.code, "BAD_REQUEST");
  assert.equal(r.body.msg, msg);
}

let channelId = 0;
async function channel(): Promise<number> {
  if (!channelId) {
    const r = ok(await call("POST", "/users/me/subscriptions", { subscriptions: [{ name: "sec" }] }));
    void r;
    const s = ok(await call("GET", "/get_stream_id", { stream: "sec" }));
    channelId = s.stream_id;
  }
  return channelId;
}

async function send(content: string, topic = "t"): Promise<ApiResult & { ms: number }> {
  return call("POST", "/messages", { type: "stream", to: await channel(), topic, content });
}

async function rendered(id: number): Promise<string> {
  const r = ok(await call("GET", `/messages/${id}`, {}));
  return r.message.content as string;
}

async function clearLinkifiers(): Promise<void> {
  const r = ok(await call("GET", "/realm/linkifiers"));
  for (const l of r.linkifiers) ok(await call("DELETE", `/realm/filters/${l.id}`));
}

/** Every href in the HTML, as a browser would read its scheme. */
function hrefs(html: string): string[] {
  return [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]!);
}

function assertNoDangerousHref(html: string): void {
  for (const h of hrefs(html)) {
    // What a browser ignores in a scheme: references it decodes, controls and spaces.
    let folded = "";
    for (const ch of h.replace(/&#x?[0-9a-f]+;?/gi, "")) if (ch > " ") folded += ch;
    folded = folded.toLowerCase();
    assert.ok(
      folded.startsWith("http:") ||
        folded.startsWith("https:") ||
        folded.startsWith("mailto:") ||
        !/^[^/?#]*:/.test(folded),
      `dangerous href ${JSON.stringify(h)} in ${html}`,
    );
  }
  assert.doesNotMatch(html, /<img|<script|<iframe/i);
  // No attribute injected into a tag: only the renderer's own names.
  const allowed = new Set([
    "href",
    "target",
    "rel",
    "title",
    "class",
    "data-stream-id",
    "data-user-id",
    "aria-label",
    "role",
  ]);
  for (const tag of html.matchAll(/<[a-z]+((?:\s[^>]*)?)>/g))
    for (const a of tag[1]!.matchAll(/\s([^\s=]+)=/g))
      assert.ok(allowed.has(a[1]!), `attribute ${a[1]} in ${html}`);
}

describe("security - message content in linear time", () => {
  test("150 KB of spaces then one letter: sent, stripped and truncated in under a second", async () => {
    const content = " ".repeat(150_000) + "a";
    const r = await send(content);
    fast(r, "send of 150 KB of spaces");
    const id = ok(r).id as number;
    const raw = ok(await call("GET", `/messages/${id}`, { apply_markdown: false })).message.content as string;
    assert.equal([...raw].length, 10_000);
    assert.ok(raw.endsWith("\n[message truncated]"));
  });

  test("an edit to 150 KB of spaces then one letter answers in under a second", async () => {
    const id = ok(await send("short")).id as number;
    const r = await call("PATCH", `/messages/${id}`, { content: "\t".repeat(150_000) + "b" });
    fast(r, "edit of 150 KB of tabs");
    ok(r);
  });

  test("trailing whitespace is stripped, leading newlines dropped, truncation counts code points", async () => {
    const id = ok(await send("\n\nhello  \n \t")).id as number;
    assert.equal(
      ok(await call("GET", `/messages/${id}`, { apply_markdown: false })).message.content,
      "hello",
    );
    const emoji = "😀".repeat(10_001);
    const id2 = ok(await send(emoji)).id as number;
    const raw = ok(await call("GET", `/messages/${id2}`, { apply_markdown: false })).message
      .content as string;
    assert.equal([...raw].length, 10_000);
    assert.ok(raw.startsWith("😀😀"));
    const blank = await send(" ".repeat(150_000));
    fast(blank, "send of 150 KB of spaces only");
    refused(blank, "Message must not be empty");
  });
});

describe("security - search in linear time", () => {
  test("a search operand of many words against long messages answers in under a second", async () => {
    const topic = `search ${++seq}`;
    let content = "";
    for (let i = 0; content.length < 9_900; i++) content += `w${i.toString(36)}x `;
    for (let i = 0; i < 10; i++) ok(await send(content, topic));
    const words = content.trim().split(" ");
    // Every word is found, so no message is rejected early.
    let query = "";
    for (let i = 0; query.length < 190_000; i++) query += `${words[(i * 7) % words.length]} `;
    const narrow = [
      ["channel", await channel()],
      ["topic", topic],
      ["search", query],
    ];
    const r = await call("POST", "/messages/flags/narrow", {
      narrow,
      anchor: "oldest",
      num_before: 0,
      num_after: 1000,
      op: "add",
      flag: "starred",
    });
    fast(r, "flags/narrow with a 190 KB search");
    assert.equal(ok(r).processed_count, 10);
    // GET carries the narrow in the URL, bounded by the server's header size.
    const small = query.slice(0, 12_000);
    const g = await call("GET", "/messages", {
      narrow: [
        ["channel", await channel()],
        ["topic", topic],
        ["search", small],
      ],
      anchor: "newest",
      num_before: 100,
      num_after: 0,
    });
    fast(g, "GET /messages with a 12 KB search");
    const msgs = ok(g).messages as { match_content: string }[];
    assert.equal(msgs.length, 10);
    assert.match(msgs[0]!.match_content, /<span class="highlight">w0x<\/span>/);
  });
});

describe("security - narrows in linear time", () => {
  const flagsNarrow = (narrow: unknown) =>
    call("POST", "/messages/flags/narrow", {
      narrow,
      anchor: "oldest",
      num_before: 0,
      num_after: 100,
      op: "add",
      flag: "starred",
    });

  test("a narrow of 60000 search terms (1 MB) answers in under a second", async () => {
    const topic = `terms ${++seq}`;
    ok(await send("hello world", topic));
    const terms: unknown[] = [
      ["channel", await channel()],
      ["topic", topic],
    ];
    for (let i = 0; i < 60_000; i++) terms.push(["search", "hello"]);
    const r = await flagsNarrow(terms);
    fast(r, "a narrow of 60000 search terms");
    assert.equal(ok(r).processed_count, 1);
  });

  test("a dm operand of 300000 ids answers in under a second", async () => {
    const ids = new Array<number>(300_000).fill(1);
    const r = await flagsNarrow([["dm", ids]]);
    fast(r, "a dm operand of 300000 ids");
    ok(r);
  });
});

describe("security - linkifiers are re2", () => {
  const post = (pattern: string, url_template = "https://x.example/{id}") =>
    call("POST", "/realm/filters", { pattern, url_template });

  test("what re2 cannot express is refused with Zulip's texts", async () => {
    await clearLinkifiers();
    refused(await post("(?=x)(?P<id>[0-9]+)"), "Bad regular expression: invalid perl operator: (?=");
    refused(await post("(?!x)(?P<id>[0-9]+)"), "Bad regular expression: invalid perl operator: (?!");
    refused(await post("(?P<id>[0-9]+)\\1"), "Bad regular expression: invalid escape sequence: \\1");
    refused(await post("(?P<id>[0-9]+"), "Bad regular expression: missing ): (?P<id>[0-9]+");
    refused(await post("(?P<id>a**)"), "Bad regular expression: bad repetition operator: **");
    refused(await post("(?P<id>a{1001})"), "Bad regular expression: invalid repetition size: {1001}");
    assert.match((await post("(?<=x)(?P<id>[0-9]+)")).body.msg, /^Bad regular expression: /);
    assert.match((await post("(?<!x)(?P<id>[0-9]+)")).body.msg, /^Bad regular expression: /);
    assert.deepEqual(ok(await call("GET", "/realm/linkifiers")).linkifiers, []);
  });

  test("patterns too large for linear matching are refused quickly", async () => {
    await clearLinkifiers();
    const huge = await post("(?P<id>" + "\\pL".repeat(60_000) + ")");
    fast(huge, "a 180 KB pattern");
    refused(huge, "Bad regular expression: pattern too large - compile failed");
    refused(
      await post("(?P<id>" + "x*".repeat(600) + "y)"),
      "Bad regular expression: pattern too large - compile failed",
    );
  });

  test("a catastrophic-backtracking pattern is matched in linear time", async () => {
    await clearLinkifiers();
    // Exponential in a backtracking engine on a run of a's with no '!'.
    const created = await call("POST", "/realm/filters", {
      pattern: "(?P<id>(a|aa)+)!",
      url_template: "https://x.example/{id}",
      example_input: "aaa!",
    });
    fast(created, "linkifier creation");
    ok(created);
    const r = await send("a".repeat(5_000) + " and " + "a".repeat(40) + "! and end");
    fast(r, "send against a nested-quantifier linkifier");
    const html = await rendered(ok(r).id);
    assert.match(html, /<a href="https:\/\/x\.example\/a{40}"/);
    const topic = await send("x", "a".repeat(59));
    fast(topic, "topic against a nested-quantifier linkifier");
    await clearLinkifiers();
  });
});

describe("security - hrefs", () => {
  const tpl = (url_template: string, pattern = `L${++seq}(?P<id>[0-9]+)`) =>
    call("POST", "/realm/filters", { pattern, url_template });

  test("linkifier URL templates: only http, https and relative URLs", async () => {
    await clearLinkifiers();
    for (const bad of [
      "javascript:alert({id})",
      "JavaScript:alert({id})",
      " javascript:alert({id})",
      "java\tscript:alert({id})",
      "java\nscript:alert({id})",
      "\u0001javascript:alert({id})",
      "&#106;avascript:alert({id})",
      "javascript&colon;alert({id})",
      "data:text/html,{id}",
      "vbscript:msgbox({id})",
      "file:///etc/{id}",
      "ftp://x/{id}",
      "{+id}",
      "java{+id}",
      "{id}:x",
    ]) {
      const r = await tpl(bad);
      assert.equal(r.status, 400, `${JSON.stringify(bad)} accepted`);
      assert.equal(r.body.msg, "Invalid URL template.", JSON.stringify(bad));
    }
    const alt = await call("POST", "/realm/filters", {
      pattern: `A${++seq}(?P<id>[0-9]+)`,
      url_template: "https://x/{id}",
      alternative_url_templates: ["javascript:{id}"],
    });
    refused(alt, "Invalid URL template.");
    for (const good of [
      "https://x.example/{id}",
      "HTTP://x/{id}",
      "/relative/{id}",
      "?q={id}",
      "#n{id}",
      "t/{+id}",
    ])
      ok(await tpl(good));
    await clearLinkifiers();
  });

  test("markdown links and autolinks never carry a dangerous href", async () => {
    const cases = [
      "[x](javascript:alert(1))",
      "[x](java&#x09;script:alert(1))",
      "[x](JAVA&#x0A;SCRIPT:alert(1))",
      "[x](vbscript:msgbox(1))",
      "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
      "<javascript:alert(1)>",
      "<data:image/png;base64,AAAA>",
      "<feed:javascript:alert(1)>",
      "![x](data:image/png;base64,AAAA)",
      "![x](https://tracker.example/pixel.png)",
    ];
    for (const content of cases) {
      const html = await rendered(ok(await send(content)).id);
      assertNoDangerousHref(html);
      assert.doesNotMatch(html, /href="(data|feed|vbscript):/i, content);
    }
    // Safe links still work.
    const html = await rendered(
      ok(await send("[a](https://a.example/) <https://b.example/> x@y.example")).id,
    );
    assert.deepEqual(hrefs(html), ["https://a.example/", "https://b.example/", "mailto:x@y.example"]);
  });

  test("profile field values render their links through the same check", async () => {
    const field = ok(await call("POST", "/realm/profile_fields", { name: `Bio ${++seq}`, field_type: 2 })).id;
    const value =
      "[a](data:image/png;base64,AAAA) [b](java&#x09;script:x) <feed:javascript:x> [c](https://ok.example/)";
    ok(await call("PATCH", "/users/me/profile_data", { data: [{ id: field, value }] }));
    const me = ok(await call("GET", "/users/me", {}));
    const user = ok(await call("GET", `/users/${me.user_id}`, { include_custom_profile_fields: true })).user;
    const html = user.profile_data[field].rendered_value as string;
    assertNoDangerousHref(html);
    assert.deepEqual(hrefs(html), ["https://ok.example/"]);
  });

  test("XSS through a linkifier's captured group", async () => {
    await clearLinkifiers();
    // A reserved expansion at the start would let the group choose the scheme.
    refused(await tpl("{+id}", "go:(?P<id>\\S+)"), "Invalid URL template.");
    ok(await tpl("https://x.example/{+path}", "P(?P<path>\\S+)"));
    ok(await tpl("/t/{id}", "T(?P<id>\\S+)"));
    const html = await rendered(
      ok(
        await send(
          'go:javascript:alert(1) P"><img/src=x/onerror=alert(1)> T"onmouseover="alert(1) Pjavascript:x',
        ),
      ).id,
    );
    assertNoDangerousHref(html);
    assert.ok(
      hrefs(html).every((h) => h.startsWith("https://x.example/") || h.startsWith("/t/")),
      html,
    );
    await clearLinkifiers();
  });
});
