// Feature levels 8, 15 and 16: global times and spoiler blocks in
// rendered message content (POST /messages/render and a sent message).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ok, useChat } from "./support/index.ts";

const chat = useChat();

async function render(content: string): Promise<string> {
  return ok(await chat.api("POST", "/messages/render", { content })).rendered as string;
}

describe("feature levels 8, 16: global times", () => {
  test("render - <time:ISO> becomes a <time> element with the UTC instant, text kept", async () => {
    assert.equal(
      await render("Meet at <time:2024-01-01T10:00:00Z>"),
      '<p>Meet at <time datetime="2024-01-01T10:00:00Z">2024-01-01T10:00:00Z</time></p>',
    );
    // An offset is converted to UTC; a time without a zone is UTC.
    assert.equal(
      await render("<time:2024-01-01T10:00:00+02:00>"),
      '<p><time datetime="2024-01-01T08:00:00Z">2024-01-01T10:00:00+02:00</time></p>',
    );
    assert.equal(
      await render("<time:2024-06-30 23:15>"),
      '<p><time datetime="2024-06-30T23:15:00Z">2024-06-30 23:15</time></p>',
    );
  });

  test("render - a unix timestamp is accepted; an invalid time gives Zulip's error span", async () => {
    assert.equal(
      await render("<time:1704067200>"),
      '<p><time datetime="2024-01-01T00:00:00Z">1704067200</time></p>',
    );
    assert.equal(
      await render("<time:not a time>"),
      '<p><span class="timestamp-error">Invalid time format: not a time</span></p>',
    );
    assert.equal(
      await render("<time:2024-02-30T00:00:00Z>"),
      '<p><span class="timestamp-error">Invalid time format: 2024-02-30T00:00:00Z</span></p>',
    );
  });

  test("render - markup inside the time is escaped, code spans stay literal", async () => {
    assert.equal(
      await render('<time:"x&y">'),
      '<p><span class="timestamp-error">Invalid time format: &quot;x&amp;y&quot;</span></p>',
    );
    assert.equal(await render("`<time:2024-01-01>`"), "<p><code>&lt;time:2024-01-01&gt;</code></p>");
  });

  test("send - a sent message carries the <time> element", async () => {
    const name = `times ${Date.now()}`;
    ok(await chat.api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] }));
    const id = ok(
      await chat.api("POST", "/messages", {
        type: "stream",
        to: name,
        topic: "t",
        content: "at <time:2030-05-05T05:05:05Z>",
      }),
    ).id as number;
    const m = ok(await chat.api("GET", `/messages/${id}`, {})).message as { content: string };
    assert.equal(m.content, '<p>at <time datetime="2030-05-05T05:05:05Z">2030-05-05T05:05:05Z</time></p>');
  });
});

describe("feature level 15: spoilers", () => {
  test("render - a spoiler fence renders header and hidden content as Markdown", async () => {
    assert.equal(
      await render("```spoiler The **answer**\nIt is *42*.\n```"),
      '<div class="spoiler-block"><div class="spoiler-header">\n\n<p>The <strong>answer</strong></p>\n</div>' +
        '<div class="spoiler-content" aria-hidden="true">\n\n<p>It is <em>42</em>.</p>\n</div></div>',
    );
  });

  test("render - a spoiler without a header; other fences stay code blocks", async () => {
    assert.equal(
      await render("```spoiler\nhidden\n```"),
      '<div class="spoiler-block"><div class="spoiler-header">\n</div>' +
        '<div class="spoiler-content" aria-hidden="true">\n\n<p>hidden</p>\n</div></div>',
    );
    assert.equal(
      await render("```python\nx = 1\n```"),
      '<div class="codehilite" data-code-language="python"><pre><span></span><code>x = 1\n</code></pre></div>',
    );
  });

  test("render - HTML in a spoiler is escaped", async () => {
    const html = await render("```spoiler <b>x</b>\n<script>y</script>\n```");
    assert.ok(!html.includes("<script>") && !html.includes("<b>"), html);
  });
});
