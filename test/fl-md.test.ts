// Feature levels 319, 333, 346, 347, 400, 405, 437, 467 and 495: message
// and topic links, user group mentions, uploaded media and Markdown image
// syntax in rendered content (POST /messages/render and sent messages).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ok, startChat, uniq, type Chat } from "./support/chat.ts";

let chat: Chat;
before(async () => {
  chat = await startChat();
});
after(async () => {
  await chat.stop();
});

async function render(content: string): Promise<string> {
  return ok(await chat.api("POST", "/messages/render", { content })).rendered as string;
}

async function newChannel(): Promise<{ name: string; id: number }> {
  const name = uniq("md");
  ok(await chat.api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] }));
  const id = ok(await chat.api("GET", "/get_stream_id", { stream: name })).stream_id as number;
  return { name, id };
}

async function send(to: string, topic: string, content: string): Promise<number> {
  return ok(await chat.api("POST", "/messages", { type: "stream", to, topic, content })).id as number;
}

async function rendered(id: number): Promise<string> {
  return (ok(await chat.api("GET", `/messages/${id}`, {})).message as { content: string }).content;
}

/** Zulip's narrow slug of a channel name (spaces as "-"). */
function chanSlug(name: string): string {
  return name.replace(/ /g, "-");
}

describe("FL 319, 346: message links and the empty topic", () => {
  test("FL 319: #**channel>topic@id** renders a message-link with a /near/ narrow", async () => {
    const ch = await newChannel();
    const base = `/#narrow/channel/${ch.id}-${chanSlug(ch.name)}`;
    assert.equal(
      await render(`see #**${ch.name}>big news@42**`),
      `<p>see <a class="message-link" href="${base}/topic/big.20news/near/42">#${ch.name} &gt; big news @ 💬</a></p>`,
    );
    // Sent: the same markup; an unknown channel stays text.
    const id = await send(ch.name, "t", `#**${ch.name}>x@7**`);
    assert.equal(
      await rendered(id),
      `<p><a class="message-link" href="${base}/topic/x/near/7">#${ch.name} &gt; x @ 💬</a></p>`,
    );
    assert.equal(await render("#**no such channel>x@7**"), "<p>#<strong>no such channel&gt;x@7</strong></p>");
  });

  test("FL 319: only a trailing @digits is a message id", async () => {
    const ch = await newChannel();
    const base = `/#narrow/channel/${ch.id}-${chanSlug(ch.name)}`;
    assert.equal(
      await render(`#**${ch.name}>mail a@b**`),
      `<p><a class="stream-topic" data-stream-id="${ch.id}" href="${base}/topic/mail.20a.40b">#${ch.name} &gt; mail a@b</a></p>`,
    );
  });

  test("FL 346: #**channel>** and #**channel>@id** link the empty topic, shown as <em>general chat</em>", async () => {
    const ch = await newChannel();
    const base = `/#narrow/channel/${ch.id}-${chanSlug(ch.name)}`;
    assert.equal(
      await render(`#**${ch.name}>**`),
      `<p><a class="stream-topic" data-stream-id="${ch.id}" href="${base}/topic/">#${ch.name} &gt; <em>general chat</em></a></p>`,
    );
    assert.equal(
      await render(`#**${ch.name}>@5**`),
      `<p><a class="message-link" href="${base}/topic//near/5">#${ch.name} &gt; <em>general chat</em> @ 💬</a></p>`,
    );
  });
});
